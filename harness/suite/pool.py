"""`--harness-concurrency N`: the pytest plugin's scenario runs on a pool (harness/drive/pool.py) over the session
cluster, N at a time where they cannot disturb each other (harness/drive/sharing.py).

With N > 1 the pool is set up before the session's first test: it plans the run of every selected test that
runs a scenario through the `run_scenario` fixture, from the test's parameters (`scenario`; `protocol` or
`*_protocol`, or the scenario's one protocol; `member`), with the config the test itself would build (the same
seed from the test id, so `harness replay` and the seeds do not change), and starts them. When the test asks
for its run, it gets the planned run's result when its call is the planned one (else its run is added to the
pool, alone); the Allure attachments and the assertion happen in the test, in the main thread. A test that runs
no planned run (the docker test on its own cluster) goes first, so that its run overlaps the pool's.

Each run's log lines, its plan's among them (said while the pool is set up), are its own (harness/run/progress.py
RunLog): the test that collects the run gets them, no other test does; on the console they start with the run's
label.
"""
from __future__ import annotations

import logging
import os

import pytest

from harness.base.errors import HarnessError
from harness.drive.pool import Job, RunPool
from harness.run.progress import RunLog, capture

log = logging.getLogger("harness.pool")
#: the kinds whose runs take longest start first among the runs that share the cluster (a Streams run waits
#: for a probing rebalance, a Connect run for the scheduled rebalance delay)
SLOW_FIRST = ("streams", "connect", "share")


def add_option(group) -> None:
    group.addoption("--harness-concurrency", dest="harness_concurrency",
                    default=os.environ.get("HARNESS_CONCURRENCY", "1"), metavar="N",
                    help="scenario runs at a time on the session cluster, where they cannot disturb each other "
                         "(default: 1, one after another)")


def concurrency(config) -> int:
    """--harness-concurrency as a count (1 or more); the session ends with one line and exit 2 otherwise."""
    text = str(config.getoption("harness_concurrency"))
    if not text.isdigit() or int(text) < 1:
        pytest.exit(f"harness: --harness-concurrency {text!r}: a count of 1 or more", returncode=2)
    return int(text)


def planned_call(item) -> tuple[str, str, dict] | None:
    """(scenario, protocol, overrides) a selected test will ask `run_scenario` for, read from its parameters;
    None when it runs none through that fixture or its protocol is not one the scenario runs with (it skips)."""
    from harness.plan.config import scenario_of
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "run_scenario" not in getattr(item, "fixturenames", ()) or "scenario" not in params:
        return None
    try:
        sc = scenario_of(params["scenario"])
    except HarnessError:
        return None
    given = [v for k, v in params.items() if k == "protocol" or k.endswith("_protocol")]
    protocol = given[0] if given else (sc.protocols[0] if len(sc.protocols) == 1 else None)
    if protocol not in sc.protocols:
        return None
    return params["scenario"], protocol, ({"member": params["member"]} if "member" in params else {})


def front_unplanned(items) -> None:
    """Suite tests that run no planned run go first (in place, stable): they run while the pool runs."""
    def planned(i):
        return i.path.parent.name != "suites" or planned_call(i) is not None
    items[:] = [i for i in items if not planned(i)] + [i for i in items if planned(i)]


def new_job(key: str, label: str, cfg, cluster, *, rank: int = len(SLOW_FIRST), exclusive: str | None = None,
            own: RunLog | None = None) -> Job:
    """The pool's job of one test's run; its log lines go to `own` (the run's RunLog), and into its run directory
    as soon as it ends."""
    from harness.run.runner import run_scenario
    own = own or RunLog(label, prefix=True)

    def call():
        return keep_log(own, run_scenario(cfg, cluster=cluster))
    return Job(key=key, label=label, call=call, exclusive=exclusive, rank=rank, data=cfg, log=own)


def keep_log(own: RunLog, result):
    """Write the run's lines into its run directory's logs/progress.log (and what comes after); returns result."""
    from harness.record.rundir import RunDir
    from harness.run.progress import PROGRESS_LOG
    if getattr(result, "run_dir", None) is not None:
        own.keep(RunDir(result.run_dir).logs_dir / PROGRESS_LOG)
    return result


def classify(cfg, cluster, *, own: RunLog) -> tuple[str | None, int]:
    """(why the run must run alone or None, its rank); a run its plan refuses runs alone (and fails as it would).
    What planning it says is the run's own (`own`)."""
    from harness.run.resolve import resolve
    from harness.drive.sharing import exclusive_reason
    try:
        with capture(own):
            plan = resolve(cfg, shared=cluster, progress=log.info)
    except HarnessError as e:
        return f"its plan is refused ({e})", 0
    kind = plan.scenario.kind
    return exclusive_reason(plan), SLOW_FIRST.index(kind) if kind in SLOW_FIRST else len(SLOW_FIRST)


def warm_imports() -> list[str]:
    """Import, in this (the main) thread, every module of the harness a run may import on first use (all but the
    analytics job's): under pytest the harness's modules are compiled by its assertion rewriter, and two threads
    compiling at once can upset Python 3.11's AST state ("SystemError: AST constructor recursion depth mismatch",
    seen when runs first imported their kinds together; CPython gh-106905); the modules imported, in order."""
    import importlib
    import pkgutil

    import harness
    names, todo = [], [(harness.__path__, "harness.")]
    while todo:  # pkgutil.walk_packages would import every package to walk it, the analytics one too
        path, prefix = todo.pop(0)
        for m in pkgutil.iter_modules(path, prefix):
            if m.name in ("harness.analytics", "harness.__main__"):
                continue
            names.append(m.name)
            mod = importlib.import_module(m.name)
            if m.ispkg:
                todo.append((mod.__path__, m.name + "."))
    return names


def build(items, *, workers: int, cluster, make_cfg) -> RunPool | None:
    """The pool of the selected tests' runs (None: no test runs one); make_cfg(item, scenario, protocol, overrides)."""
    warm_imports()
    jobs = []
    for item in items:
        call = planned_call(item)
        if call is None:
            continue
        cfg = make_cfg(item, *call)
        own = RunLog(item.callspec.id, prefix=True)
        exclusive, rank = classify(cfg, cluster, own=own)
        jobs.append(new_job(item.nodeid, item.callspec.id, cfg, cluster, rank=rank, exclusive=exclusive, own=own))
    if not jobs:
        return None
    pool = RunPool(jobs, workers=workers)
    pool.cluster = cluster
    alone = [j for j in jobs if j.exclusive]
    log.info(f"{len(jobs)} runs, up to {workers} at a time; {len(alone)} alone: " +
             "; ".join(f"{j.label} ({j.exclusive})" for j in alone))
    return pool


def take(pool: RunPool, key: str, label: str, cfg, cluster) -> Job:
    """The job of the test's run, taken by the test (wait for it with `pool.wait(job.key)`; its RunLog is `job.log`):
    the planned run when the test asks for it, else a run added now (alone)."""
    job = pool.jobs.get(key)
    if job is None or job.data != cfg or job.taken:
        if job is not None:
            key = f"{key}#{len(pool.jobs)}"
            log.warning(f"{label}: the test asked for a run other than its planned one; it runs now, alone")
        own = RunLog(label, prefix=True)
        exclusive, _ = classify(cfg, cluster, own=own)
        pool.add(new_job(key, label, cfg, cluster, exclusive=exclusive or "not planned", own=own))
    job = pool.jobs[key]
    job.taken = True  # a second run the test asks for is a run of its own
    return job
