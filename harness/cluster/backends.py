"""Which cluster backend a run uses, by name: the one place that maps `--backend` to a class.

    local   broker JVMs on loopback, behind Toxiproxy (`harness/cluster/local.py`), the default
    docker  broker containers and a Toxiproxy container (`harness/cluster/docker.py`), images built here

The names and what each backend can do are data in `harness/plan/backends.py` (the plan reads them there).
The runner, nightly, the pytest plugin and the benchmarks construct clusters only through `new_backend`;
what they then do with one is the interface in `harness/cluster/base.py`. A backend class may define a
`preflight()` classmethod: checks that need no cluster (an engine that answers, images that can be built),
run before any run directory exists, raising BadInput (one line, exit 2) when the backend cannot work.
"""
from __future__ import annotations

from importlib import import_module

from harness.base.errors import BadInput
from harness.plan.backends import ABILITIES, BACKENDS, DEFAULT  # noqa: F401 - the names, as data

def backend_class(name: str):
    """The class of backend `name`; BadInput for a name no backend has."""
    where = BACKENDS.get(name)
    if where is None:
        raise BadInput(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")
    module, _, attr = where.partition(":")
    try:
        return getattr(import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise BadInput(f"the {name} backend cannot be loaded: {e}") from None


def preflight(name: str, *, progress=print) -> None:
    """Everything a backend can check before it starts (BadInput when it cannot work here)."""
    cls = backend_class(name)
    check = getattr(cls, "preflight", None)
    if check is not None:
        check(progress=progress)


def new_backend(name: str = DEFAULT, *, request_faults: bool = False, **kwargs):
    """A cluster of backend `name`, not started; kwargs as `LocalCluster` takes them (work_dir, version,
    brokers, racks, settings, on_event, progress); `request_faults`: with the request proxy in the client path
    (BadInput on a backend without the "requests" ability)."""
    if request_faults and "requests" not in ABILITIES.get(name, frozenset()):
        raise BadInput(f"the {name} backend cannot put faults on Kafka requests (no request proxy); use --backend local")
    return backend_class(name)(**kwargs, **({"request_faults": True} if request_faults else {}))
