"""The cluster backends as data: the names `--backend` takes and what each can do to its cluster.

    local   broker JVMs on loopback, behind Toxiproxy (`harness/cluster/local.py`), the default
    docker  broker containers and a Toxiproxy container (`harness/cluster/docker.py`), images built here

The plan refuses an action a backend cannot take from this table alone; the classes themselves are made in one
place, `harness/cluster/backends.py`, which the plan never imports.
"""
from __future__ import annotations

from harness.base.steps import Ability

#: each backend's class, as `module:attribute` (imported only by harness/cluster/backends.py)
BACKENDS = {
    "local": "harness.cluster.local:LocalCluster",
    "docker": "harness.cluster.docker:DockerCluster",
}
DEFAULT = "local"
#: what each backend can do to its cluster: the optional abilities of harness/cluster/base.py an action may need
#: (harness/plan/actions.py NEEDS), so the plan can refuse an action without importing a backend; "fake" is the unit
#: tests' in-process stand-in (harness/cluster/fake.py), which plans anything. tests/unit/test_actions.py holds
#: the local and docker entries to the protocols their classes implement. "requests" (the request proxy,
#: harness/kproxy/) is in both backends' client path (harness/cluster/client_path.py)
ABILITIES = {
    "local": frozenset(Ability) - {Ability.BROKER_PARTITION},
    "docker": frozenset(Ability),
    "fake": frozenset(Ability),
}
