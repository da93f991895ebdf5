"""Repeat a run until it fails: one scenario under many seeds drawn from one, on one cluster where it can.

    harness run member-kill --repeat 20 --seed 1       # 20 runs, seeds drawn from 1 (harness/drive/seeds.py)
    harness run member-kill --until-fail --seed 1       # until the first failing run, UNTIL_FAIL_CAP runs at most
    harness run member-kill --until-fail --repeat 5 --misbehave process-after-revoke   # a self-test: stops at run 1

Every run is an ordinary run directory, in one folder `<runs-root>/repeat-<time>-<scenario>-<seed>/` beside
the shared cluster's `cluster/` and `repeat.json` (each run's seed, status, invariants and time; the shrunk
failure). The runs share one cluster, started once on the run's backend, Kafka version and broker settings
and healed after every run (as the suites' session cluster is); each run has its own topics and group. A
scenario that starts on another Kafka and upgrades its brokers (`broker-upgrade`) cannot share one: each of
its runs starts and stops its own, and the output says so.

The first failing run (an invariant violated) is shrunk on the same cluster as nightly shrinks
(`nightly.shrink_failure`, harness/drive/shrink.py), and its replay command is printed with the shrunk one's. A
run that could not be judged counts as unknown (or error, when it could not be set up), never as a pass.
Ctrl-C (or SIGTERM) stops the repeat: the run in progress is marked incomplete and its processes end (the
runner's own cleanup), the cluster stops, and the table of the runs done so far is printed.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from harness.plan.actions import needs_requests
from harness.cluster.backends import new_backend
from harness.cluster.base import BrokerSettings
from harness.base.errors import BadInput
from harness.drive.nightly import shrink_failure
from harness.plan.config import RunConfig
from harness.run.resolve import resolve
from harness.run.progress import log
from harness.record.rundir import CLUSTER, SHRUNK_SCHEDULE_JSON, did_not_exercise
from harness.record.rundir import exit_code as status_exit_code
from harness.report.headline import headline, run_t0
from harness.run.runner import run_scenario
from harness.drive.seeds import seeds

#: the most runs `--until-fail` makes without `--repeat N`
UNTIL_FAIL_CAP = 100
#: runs spent shrinking the first failure unless `--shrink-attempts` says otherwise (nightly's default too)
SHRINK_ATTEMPTS = 12
#: the exit code of a repeat stopped by Ctrl-C or SIGTERM (the CLI's for an interrupted run)
INTERRUPTED = 130


@dataclass
class Outcome:
    """One run of a repeat: its number (from 1), seed, status, wall time and what its verdicts said."""

    number: int
    seed: int
    status: str
    seconds: float
    run_dir: str
    failed: tuple[str, ...] = ()  # the invariants it violated
    undecided: tuple[str, ...] = ()  # the invariants that could not be decided
    error: str | None = None
    exercised: bool = True  # False: a step of its schedule did not happen (unknown, counted apart)
    headline: str = ""  # what went wrong in one line (harness/report/headline.py); "" for a pass

    @classmethod
    def of(cls, number: int, seed: int, result, seconds: float) -> "Outcome":
        names = lambda status: tuple(sorted(n for n, v in result.verdicts.items() if v.status == status))  # noqa: E731
        said = "" if result.status == "pass" else headline(result.verdicts, t0=run_t0(result.run_dir),
                                                            status=result.status, error=result.error)
        return cls(number, seed, result.status, round(seconds, 1), str(result.run_dir), names("invalid"),
                   names("unknown"), result.error, not did_not_exercise(result.status, result.verdicts), said)


@dataclass
class Repeat:
    """A repeat's runs so far, and how it ended."""

    scenario: str
    protocol: str
    seed: int
    limit: int  # the most runs it would make
    until_fail: bool
    shared: bool  # one cluster for every run (False: each run started its own)
    out_dir: Path
    outcomes: list[Outcome] = field(default_factory=list)
    interrupted: bool = False
    interrupted_during: str | None = None  # what Ctrl-C stopped: 'the run of seed S', 'shrinking', or None
    shrunk: dict | None = None

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    def not_exercised(self) -> int:
        """Runs in which a step of the schedule did not happen (unknown: their scenario was not exercised)."""
        return sum(not o.exercised for o in self.outcomes)

    def failures_by_invariant(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.outcomes:
            for name in o.failed:
                out[name] = out.get(name, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))

    def first_failure(self) -> Outcome | None:
        return next((o for o in self.outcomes if o.status == "fail"), None)

    @property
    def exit_code(self) -> int:
        return exit_code([o.status for o in self.outcomes], interrupted=self.interrupted)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["out_dir"] = str(self.out_dir)
        d["failures_by_invariant"] = self.failures_by_invariant()
        return d


def exit_code(statuses, *, interrupted: bool = False) -> int:
    """130 when interrupted; 1 when any run failed; otherwise the worst of the runs' own exit codes (0 pass,
    1 unknown, 2 a run that could not be set up); 2 when no run was made."""
    statuses = list(statuses)
    if interrupted:
        return INTERRUPTED
    if "fail" in statuses:
        return 1
    return max((status_exit_code(s) for s in statuses), default=2)


def repeat(cfg: RunConfig, *, count: int, until_fail: bool = False, shrink_attempts: int = SHRINK_ATTEMPTS,
           progress=log.info, make_cluster=new_backend, run=run_scenario, clock=time.monotonic) -> Repeat:
    """Run `cfg` under `count` seeds drawn from cfg.seed (stopping at the first failing run when `until_fail`),
    on one cluster unless the scenario needs its own; shrink the first failure. Raises BadInput before anything
    starts when a run of cfg could not work; returns with `interrupted` set on Ctrl-C."""
    plan = resolve(cfg, progress=progress)  # every check a single run makes, before anything starts
    shared = plan.scenario.initial_kafka is None
    out = _new_dir(Path(cfg.runs_root), f"repeat-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{cfg.scenario}-{cfg.seed}")
    rep = Repeat(cfg.scenario, cfg.protocol, cfg.seed, count, until_fail, shared, out)
    quiet = lambda *_: None  # noqa: E731  (a run's own progress lines; the repeat says one line per run)
    going = None
    try:
        with ExitStack() as stack:
            cluster = None
            if shared:
                progress(f"starting a {cfg.brokers}-broker Kafka {plan.kafka_version} cluster ({cfg.backend}) "
                         f"for every run of the repeat")
                cluster = make_cluster(cfg.backend, work_dir=out / CLUSTER, version=plan.kafka_version,
                                       brokers=cfg.brokers, progress=progress,
                                       settings=BrokerSettings.for_brokers(cfg.brokers, {**plan.broker_settings,
                                                                                   **dict(cfg.broker_settings)}),
                                       **({"request_faults": True} if needs_requests(plan.schedule) else {}))
                stack.callback(cluster.stop)
                cluster.start()
            else:
                progress(f"scenario {cfg.scenario} starts on Kafka {plan.scenario.initial_kafka} and upgrades its "
                         f"brokers: it cannot share a cluster, so each run starts a cluster of its own")
            first_failure = None
            for number, seed in enumerate(seeds(cfg.seed, count), 1):
                run_cfg = replace(cfg, seed=seed, runs_root=str(out))
                progress(f"run {number}/{count}{' (until one fails)' if until_fail else ''}: seed {seed}")
                t0, going = clock(), f"the run of seed {seed}"
                result = run(run_cfg, cluster=cluster, progress=quiet)
                o, going = Outcome.of(number, seed, result, clock() - t0), None
                rep.outcomes.append(o)
                _write(rep)
                progress(f"  -> {o.status} in {o.seconds:.1f}s" + (f": {', '.join(o.failed)}" if o.failed else "")
                         + (f" ({o.error})" if o.error else "") + f"  [{Path(o.run_dir).name}]")
                if o.status == "fail" and first_failure is None:
                    first_failure = (result, run_cfg)
                    if until_fail:
                        break
            if first_failure is not None and shrink_attempts:
                going = "shrinking the first failure"
                progress(f"shrinking the schedule of run {rep.first_failure().number} (seed "
                         f"{rep.first_failure().seed}), {shrink_attempts} runs at most ...")
                rep.shrunk = shrink_failure(*first_failure, cluster=cluster, max_attempts=shrink_attempts,
                                            deadline=float("inf"), progress=progress)
    except KeyboardInterrupt:
        rep.interrupted, rep.interrupted_during = True, going
    _write(rep)
    return rep


def _new_dir(root: Path, name: str) -> Path:
    path, n = root / name, 1
    while path.exists():
        n += 1
        path = root / f"{name}-{n}"
    path.mkdir(parents=True)
    return path


def _write(rep: Repeat) -> None:
    (rep.out_dir / "repeat.json").write_text(json.dumps(rep.to_dict(), indent=2, default=str))


def table(rep: Repeat) -> list[str]:
    """The repeat's table: a row per run (a run that did not pass: its one line, `headline`), then the counts, the
    failures by invariant and the time per run."""
    lines = [f"{'run':>4}  {'seed':<11} {'status':<8} {'time':>7}  invariants"]
    for o in rep.outcomes:
        what = o.headline or ", ".join(o.failed) or (f"undecided: {', '.join(o.undecided)}" if o.undecided else "")
        what = what if o.exercised else f"did not exercise the scenario; {what}"
        if o.error and not o.headline:
            what = (what + "; " if what else "") + f"error: {o.error[:80]}"
        lines.append(f"{o.number:>4}  {o.seed:<11} {o.status:<8} {o.seconds:>6.1f}s  {what}".rstrip())
    n = len(rep.outcomes)
    where = "on one cluster" if rep.shared else "each on a cluster of its own (the scenario upgrades its brokers)"
    idle = rep.not_exercised()
    lines.append(f"runs: {n} ({where}); passed {rep.count('pass')}, failed {rep.count('fail')}, unknown "
                 f"{rep.count('unknown') - idle}, did not exercise {idle}, error "
                 f"{n - rep.count('pass') - rep.count('fail') - rep.count('unknown')}")
    by = rep.failures_by_invariant()
    lines.append("failures by invariant: " + (", ".join(f"{k} {v}/{n}" for k, v in by.items()) or "none"))
    times = [o.seconds for o in rep.outcomes]
    if times:
        lines.append(f"time per run: median {statistics.median(times):.1f}s, max {max(times):.1f}s")
    return lines


def report(rep: Repeat, *, out=None) -> None:
    """The table, and on a failure its replay command and the shrunk schedule's; what an interruption left."""
    out = out or sys.stdout
    w = lambda line="": out.write(line + "\n")  # noqa: E731
    w()
    for line in table(rep):
        w(line)
    if rep.interrupted:
        w(f"interrupted after {len(rep.outcomes)} of at most {rep.limit} runs"
          + (f", during {rep.interrupted_during} (its run directory is marked incomplete)"
             if rep.interrupted_during else "") + "; every process it started ended"
          + (", the shared cluster too" if rep.shared else ""))
    elif rep.until_fail and not rep.first_failure():
        w(f"no run failed in {len(rep.outcomes)}")
    first = rep.first_failure()
    if first:
        w(f"first failure: run {first.number}, seed {first.seed}: {first.headline or ', '.join(first.failed)}")
        w(f"replay: harness replay {first.run_dir}")
        s = rep.shrunk
        tries = f"{s['attempts']} attempt{'s' if s['attempts'] != 1 else ''}" if s else ""
        if s and s["to_actions"] < s["from_actions"]:
            w(f"shrunk: {s['from_actions']} -> {s['to_actions']} actions in {tries} ({SHRUNK_SCHEDULE_JSON} in the "
              f"failing run's directory):")
            for a in s["schedule"]:
                w(f"  {a['kind']} {json.dumps(a.get('params') or {}, default=str)}")
            w(f"replay the shrunk: {s['replay']}")
        elif s:
            w(f"not shrunk: every shorter schedule of the {tries} passed; the failing run's {s['from_actions']} "
              f"actions are the shortest found")
    w(f"runs: {rep.out_dir} (repeat.json)")


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """`harness run`'s repeat options."""
    p.add_argument("--repeat", type=_at_least(1), default=None, metavar="N",
                   help="run the scenario N times, under distinct seeds drawn from --seed (the first is --seed "
                        "itself), on one cluster (a scenario that upgrades its brokers starts one per run, and says "
                        "so); ends with a table: runs, passes, failures by invariant, unknowns, time per run (median "
                        "and max), and on a failure the shrunk schedule and the replay command. Exit code 0 when "
                        "every run passed, 1 when one failed (or none failed and one was undecided), 2 when none "
                        "failed and one could not be set up, 130 on Ctrl-C (the table so far is printed)")
    p.add_argument("--until-fail", action="store_true",
                   help=f"stop at the first failing run: at most --repeat N runs, or {UNTIL_FAIL_CAP} without it")
    p.add_argument("--shrink-attempts", type=_at_least(0), default=None, metavar="N",
                   help=f"with --repeat or --until-fail: runs spent shrinking the first failure's schedule "
                        f"(default: {SHRINK_ATTEMPTS}; 0: no shrinking)")


def add_nightly_argument(p: argparse.ArgumentParser) -> None:
    """`harness nightly`'s repeat option."""
    p.add_argument("--repeat", type=_at_least(1), default=1, metavar="N",
                   help="run each draw under N seeds drawn from its own (the first is the draw's); the summary gives "
                        "each scenario x protocol x version's failures as a rate of its runs (e.g. 1/20 failed)")


def _at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is less than {low}")
        return value
    return parse


def run_repeated(cfg: RunConfig, args, *, progress=log.info, **kw) -> int:
    """`harness run --repeat/--until-fail`: the repeat, its report; the exit code."""
    if not (args.repeat or args.until_fail):
        raise BadInput("--shrink-attempts applies to --repeat and --until-fail (a single run is not shrunk)")
    count = args.repeat or UNTIL_FAIL_CAP
    progress(f"scenario {cfg.scenario}{f' (file {cfg.scenario_file})' if cfg.scenario_file else ''}, protocol "
             f"{cfg.protocol}: {count} runs{' at most, until one fails' if args.until_fail else ''}, seeds drawn from "
             f"{cfg.seed}")
    rep = repeat(cfg, count=count, until_fail=args.until_fail, progress=progress,
                 shrink_attempts=SHRINK_ATTEMPTS if args.shrink_attempts is None else args.shrink_attempts, **kw)
    report(rep)
    _timeline(rep)
    return rep.exit_code


def _timeline(rep: Repeat) -> None:
    """The first failing run's timeline chart (a convenience: its failure is only said)."""
    first = rep.first_failure()
    if first is None:
        return
    from harness.report.allure_run import timeline_svg
    from harness.record.rundir import RunDir
    try:
        svg = timeline_svg(Path(first.run_dir), RunDir(first.run_dir).meta())
        if svg:
            print(f"timeline of the first failure: {svg}")
    except Exception as e:
        print(f"no timeline chart for {first.run_dir}: {type(e).__name__}: {e}")
