"""The runs of `harness run SCENARIO --explore N` (harness/drive/explore.py says what they are) and the shrinking of
the first failure's perturbations: drop one, shorten a hold to a delay, move one a position later; a candidate is
kept when its run still fails and it is no larger (fewer perturbations, or as many with less held), as
harness/drive/shrink.py keeps a shorter schedule.

Every run is an ordinary run directory in `<runs-root>/explore-<time>-<scenario>-<seed>/`, beside the shared cluster's
`cluster/` and `explore.json` (the strategy, the bounds, each run's planned perturbations, status and invariants, the
shrunk perturbations); each run's own explore.json holds what it planned and applied.
"""
from __future__ import annotations

import json
import sys
import time
from contextlib import ExitStack
from dataclasses import asdict, replace
from datetime import datetime, timezone
from pathlib import Path

from harness.base.errors import BadInput
from harness.cluster.backends import new_backend
from harness.cluster.base import BrokerSettings
from harness.drive import explore as ex
from harness.drive.repeat import Outcome, Repeat, _new_dir, table
from harness.kproxy.perturb import Perturbation
from harness.record.rundir import CLUSTER
from harness.run.progress import log
from harness.run.resolve import resolve
from harness.run.runner import run_scenario


def _describe(ps) -> str:
    return "; ".join(f"{p.pid} {p.member}'s {p.api} #{p.nth} {p.side} "
                     + (f"held until {', '.join(p.until)} sent" if p.action == "hold" else f"delayed {p.delay_s:g} s")
                     for p in ps) or "none"


class Explore(Repeat):
    """An exploration's runs (a repeat's table) and its perturbations."""

    def write(self, extra: dict) -> None:
        d = {**asdict(self), "out_dir": str(self.out_dir), "failures_by_invariant": self.failures_by_invariant(),
             **extra}
        (self.out_dir / ex.EXPLORE_JSON).write_text(json.dumps(d, indent=2, default=str))


def explore(cfg, *, count: int, depth: int = ex.DEPTH, until_fail: bool = False, shrink_attempts: int = 8,
            progress=log.info, make_cluster=new_backend, run=run_scenario) -> Explore:
    """N explored runs of cfg on one cluster with the request proxy (`until_fail`: up to the first failing one); the
    first failure's perturbations shrunk."""
    plan = resolve(cfg, progress=progress)
    if plan.scenario.initial_kafka is not None:
        raise BadInput(f"scenario {cfg.scenario} upgrades its brokers: --explore runs on one cluster")
    limits = ex.bounds(cfg, plan.broker_settings)
    sched = ex.schedule(cfg.seed, count, members=ex.members_of(plan), apis=ex.apis_of(cfg.protocol), limits=limits,
                        depth=depth)
    out = _new_dir(Path(cfg.runs_root), f"explore-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{cfg.scenario}-{cfg.seed}")
    rep = Explore(cfg.scenario, cfg.protocol, cfg.seed, count, until_fail, True, out)
    extra = {"strategy": "pct", "depth": depth, "bounds": limits, "apis": list(ex.apis_of(cfg.protocol)),
             "members": ex.members_of(plan), "runs": [[p.to_dict() for p in ps] for ps in sched]}
    rep.write(extra)
    progress(f"bounds: holds at most {limits['hold_bound_s']:g} s, delays at most {limits['delay_max_s']:g} s "
             f"({'; '.join(limits['from'].values())})")
    try:
        with ExitStack() as stack:
            cluster = make_cluster(cfg.backend, work_dir=out / CLUSTER, version=plan.kafka_version, brokers=cfg.brokers,
                                   progress=progress, request_faults=True,
                                   settings=BrokerSettings.for_brokers(cfg.brokers, {**plan.broker_settings,
                                                                               **dict(cfg.broker_settings)}))
            stack.callback(cluster.stop)
            cluster.start()
            one = lambda ps, number: _one(cfg, cluster, ps, number=number, out=out, limits=limits, run=run)  # noqa
            first = None
            for number, ps in enumerate(sched, 1):
                progress(f"run {number}/{count}: {_describe(ps)}")
                o = one(ps, number)
                rep.outcomes.append(o)
                rep.write(extra)
                progress(f"  -> {o.status} in {o.seconds:.1f}s" + (f": {', '.join(o.failed)}" if o.failed else "")
                         + f"  [{Path(o.run_dir).name}]")
                first = first or (ps if o.status == "fail" else None)
                if first is not None and until_fail:
                    break
            if first is not None and shrink_attempts:
                extra["shrunk"] = shrink(first, lambda ps: one(ps, 0).status == "fail", max_attempts=shrink_attempts,
                                         progress=progress)
    except KeyboardInterrupt:
        rep.interrupted = True
    rep.write(extra)
    rep.shrunk = extra.get("shrunk")
    return rep


def _one(cfg, cluster, ps, *, number: int, out: Path, limits: dict, run) -> Outcome:
    ctl = ex.explorer_for(cluster, ps)
    ex.with_controller(cluster, ctl)
    t0 = time.monotonic()
    try:
        result = run(replace(cfg, runs_root=str(out)), cluster=cluster, progress=lambda *_: None)
    finally:
        ex.with_controller(cluster, None)
    ex.explored_run(result.run_dir, seed=cfg.seed, number=number, limits=limits, planned=ps, applied=ctl.applied)
    return Outcome.of(number, cfg.seed, result, time.monotonic() - t0)


def _size(ps) -> tuple:
    return len(ps), sum(p.bound_s if p.action == "hold" else p.delay_s for p in ps), -sum(p.nth for p in ps)


def _candidates(ps: list[Perturbation]):
    for i, p in enumerate(ps):
        if len(ps) > 1:
            yield f"drop {p.pid}", ps[:i] + ps[i + 1:]
    for i, p in enumerate(ps):
        if p.action == "hold":
            yield f"shorten {p.pid} to a delay", ps[:i] + [replace(p, action="delay", until=(),
                                                                   delay_s=round(p.bound_s / 2, 3))] + ps[i + 1:]
        elif p.delay_s > 0.05:
            yield f"shorten {p.pid}", ps[:i] + [replace(p, delay_s=round(p.delay_s / 2, 3))] + ps[i + 1:]
    for i, p in enumerate(ps):
        yield f"move {p.pid} later", ps[:i] + [replace(p, nth=p.nth + 1)] + ps[i + 1:]


def shrink(ps: list[Perturbation], fails, *, max_attempts: int, progress=log.info) -> dict:
    """The fewest, shortest perturbations found that `fails` still holds for (`fails(ps)` assumed true)."""
    cur, attempts, steps = list(ps), 0, []
    changed = True
    while changed and attempts < max_attempts:
        changed = False
        for why, cand in _candidates(cur):
            if attempts >= max_attempts:
                break
            if _size(cand) > _size(cur) and not why.startswith("move"):
                continue
            attempts += 1
            ok = fails(cand)
            steps.append(f"{why}: {'still fails' if ok else 'passes'}")
            progress(f"  shrink {attempts}/{max_attempts}: {why}: {'still fails' if ok else 'passes'}")
            if ok:
                cur, changed = cand, True
                break
    return {"from": [p.to_dict() for p in ps], "to": [p.to_dict() for p in cur], "attempts": attempts, "log": steps}


def report(rep: Explore, *, out=None) -> None:
    """The runs' table, the first failure's perturbations, their shrunk form and the exact replay's command."""
    w = (out or sys.stdout).write
    w("\n" + "\n".join(table(rep)) + "\n")
    first = rep.first_failure()
    if rep.interrupted:
        w(f"interrupted after {len(rep.outcomes)} of {rep.limit} runs\n")
    if first:
        w(f"first failure: run {first.number}: {first.headline or ', '.join(first.failed)}\n")
        w(f"replay exactly: harness replay {first.run_dir} --exact\n")
        if rep.shrunk:
            to = [Perturbation.of(d) for d in rep.shrunk["to"]]
            w(f"shrunk in {rep.shrunk['attempts']} runs to: {_describe(to)}\n")
    w(f"runs: {rep.out_dir} ({ex.EXPLORE_JSON})\n")


def run_explored(cfg, args, *, progress=log.info) -> int:
    """`harness run --explore N`: the runs and their report; the exit code (as a repeat's)."""
    ex.check(cfg, args)
    progress(f"scenario {cfg.scenario}, protocol {cfg.protocol}: {args.explore} explored runs under seed {cfg.seed}")
    rep = explore(cfg, count=args.explore, depth=args.explore_depth or ex.DEPTH, progress=progress,
                  until_fail=bool(args.until_fail),
                  shrink_attempts=8 if args.shrink_attempts is None else args.shrink_attempts)
    report(rep)
    return rep.exit_code
