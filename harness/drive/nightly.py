"""Nightly mode: a seeded random mix of scenarios over a version matrix, for a time budget.

Every pick (scenario, protocol, Kafka version, client version, run seed) comes from one
`random.Random(seed)`, so a night can be rerun. A failing run's schedule is shrunk (harness/drive/shrink.py)
to a shorter one that still fails; the shrunk run directory is the one to replay.
"""
from __future__ import annotations

import functools
import json
import random
import re
import time
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from harness.findings import registry as findings
from harness.plan import scenario_file
from harness.plan.config import brokers_need
from harness.plan import scenarios
from harness.drive import shrink
from harness.cluster.backends import new_backend
from harness.plan.backends import ABILITIES
from harness.cluster.base import BrokerSettings
from harness.base.errors import BadInput
from harness.base.versions import ADDED_PARTITIONS_FROM_ZERO_SINCE, DLQ_SINCE, PROTOCOL_SINCE, newest_major_minor
from harness.base.vocabulary import COMMIT_MODES, CONSUMER_PROTOCOLS, SELF_TEST_COMMIT_MODES
from harness.plan.kinds.share import dlq_topic
from harness.run.progress import log
from harness.run.runner import RunConfig, RunResult, run_scenario
from harness.record.rundir import RunDir, did_not_exercise
from harness.plan.scenarios import Action
from harness.drive.seeds import seeds
from harness.base.steps import Step, refusal

# the shortest a run can take; no new run starts with less budget left
MIN_RUN_S = 60.0


def parse_budget(text: str) -> float:
    """'30m', '90s', '1h', '1h30m' or plain seconds -> seconds."""
    m = re.fullmatch(r"\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s?)?\s*", text or "")
    if not m or not any(m.groups()):
        raise BadInput(f"bad budget {text!r}: use e.g. 30m, 90s, 1h30m")
    h, mi, s = (int(g) if g else 0 for g in m.groups())
    return float(h * 3600 + mi * 60 + s)


@dataclass
class NightlyRun:
    scenario: str
    protocol: str
    kafka_version: str
    client_version: str | None
    seed: int
    run_dir: str
    status: str
    shrunk: dict | None = None
    commit_mode: str | None = None  # drawn by the night for the Python member's consumer-group runs
    index: int | None = None  # the draw's place in the night (shards split the night by it)
    known: dict | None = None  # a failure that is a known finding (harness/findings/registry.py): its id and expected rate
    repeat: int | None = None  # with --repeat N: which of the draw's N seeds (1 is the draw's own)
    #: trigger-to-stable seconds of each disturbance the run's convergence_balance measured (None: never settled)
    rebalance_s: list | None = None
    exercised: bool = True  # False: a step of its schedule did not happen (unknown; counted apart, never a pass)


@dataclass
class NightlyResult:
    out_dir: Path
    runs: list[NightlyRun] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 every run passed; 1 a run failed or was undecided; 2 no run, or a run could not be set up."""
        statuses = {r.status for r in self.runs}
        if not statuses or statuses & {"error", "incomplete"}:
            return 2
        return 0 if statuses == {"pass"} else 1


def parse_shard(text: str | None) -> tuple[int, int]:
    """'K/N' (1 <= K <= N) -> (K, N); None -> (1, 1), the whole night."""
    if not text:
        return 1, 1
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise BadInput(f"bad shard {text!r}: use K/N with 1 <= K <= N, e.g. 2/4")
    return int(m.group(1)), int(m.group(2))


@dataclass(frozen=True)
class Draw:
    """The night's index-th run, as drawn from its seed: the same for every shard of the night."""

    index: int
    scenario: str
    protocol: str
    kafka_version: str
    client_version: str | None
    seed: int
    commit_mode: str | None


def draws(seed: int, kafka_versions, client_versions, protocols, run_options: dict | None = None,
          backend: str = "local"):
    """The night's runs in order, endlessly: every draw comes from one random.Random(seed) and nothing a run
    does changes the next draw, so a night (or any shard of it) can be rerun and split."""
    rng = random.Random(seed)
    index = 0
    while True:
        sc, protocol, kv, cv, run_seed = _pick(rng, kafka_versions, client_versions, protocols, backend)
        mode = _commit_mode(rng, sc, run_options or {})
        yield Draw(index, sc.name, protocol, kv, cv, run_seed, mode)
        index += 1


def shard_draws(seed: int, kafka_versions, client_versions, protocols, run_options: dict | None = None, *,
                shard: tuple[int, int] = (1, 1), runs: int | None = None, backend: str = "local"):
    """Shard K of N of the night: the draws whose index is K-1 modulo N, among the first `runs` (None: all).
    The N shards are disjoint and together are the unsharded night."""
    k, n = shard
    for d in draws(seed, kafka_versions, client_versions, protocols, run_options, backend):
        if runs is not None and d.index >= runs:
            return
        if d.index % n == k - 1:
            yield d


@functools.cache
def moved_to(name: str) -> frozenset[str]:
    """The group protocols a scenario's steps move members to (a migration), read off its schedule for one
    seed: a step's protocol is written in the scenario, never drawn."""
    ctx = scenarios.ScenarioContext(session_timeout_s=6.0, brokers=3, racks=3)
    return frozenset(a.params["protocol"] for a in scenarios.schedule(scenarios.get(name), seed=0, ctx=ctx)
                     if a.params.get("protocol"))


@functools.cache
def kafka_since(name: str) -> tuple[int, int]:
    """The oldest Kafka (major, minor) a scenario's own settings need beyond its protocol's: a share group with a
    dead-letter topic (its file's `[group] settings`) needs 4.4; a share group under share.auto.offset.reset=latest
    whose topic grows is drawn only on brokers with KAFKA-20742's fix (before, it fails on that known bug every
    time: run it there by name to see it); (0, 0) for the others."""
    text = scenarios.builtin_text(name)
    if text is None:
        return (0, 0)
    parsed = scenario_file.parse(text, f"{name}.toml")
    group = parsed.group.settings
    if dlq_topic(group):
        return DLQ_SINCE
    grows = any(step.action == Step.ADD_PARTITIONS for step in parsed.steps)
    if str(group.get("share.auto.offset.reset", "")).lower() == "latest" and grows:
        return ADDED_PARTITIONS_FROM_ZERO_SINCE
    return (0, 0)


def _newest_of(kv: str) -> tuple[int, int]:
    """The newest major.minor a Kafka version name can stand for ('latest': any 4.x, 'latest-3': any 3.x)."""
    newest = newest_major_minor(kv)
    if newest is None:
        raise ValueError(f"not a Kafka version: {kv!r}")
    return newest


def _speaks(kv: str, protocols) -> bool:
    """Whether brokers of that version run every one of these group protocols (PROTOCOL_SINCE)."""
    return all(_newest_of(kv) >= PROTOCOL_SINCE.get(p, (0, 0)) for p in protocols)


def _pick(rng: random.Random, kafka_versions, client_versions, protocols, backend: str = "local"):
    able = ABILITIES.get(backend, frozenset())
    names = [n for n, s in scenarios.SCENARIOS.items() if n != "broker-upgrade" and s.backend in (None, backend)
             and "requests" not in s.needs]
    # the race scenarios (request faults, where the backend has the proxy) after the mix's weight: a draw below the
    # former length picks what it picked before they came
    names += ["random-mix"] * 3 + [n for n, s in scenarios.SCENARIOS.items() if "requests" in s.needs and
                                   s.backend in (None, backend) and s.needs <= able]
    while True:
        sc = scenarios.get(rng.choice(names))
        kv = rng.choice(kafka_versions)
        if sc.initial_kafka and _newest_of(kv) <= _newest_of(sc.initial_kafka):
            continue  # a roll from the scenario's own start (share-rolling-upgrade: 4.3.1) only onto a newer release
        # a migration runs only on brokers of both its protocols (protocol-migration: 4.0+; Streams: 4.2+)
        allowed = [p for p in protocols if p in sc.protocols and _speaks(kv, {p} | moved_to(sc.name))
                   and _newest_of(kv) >= kafka_since(sc.name)]
        if allowed:
            # client versions are confluent-kafka's; a Streams (Connect) run takes the brokers' kafka-streams
            # (connect-runtime)
            cv = None if sc.kind in ("streams", "connect", "share") else rng.choice(client_versions)
            return sc, rng.choice(allowed), kv, cv, rng.randrange(1 << 31)


def _shared_or_own(cluster, cfg):
    """The night's cluster of that version, or None (the run starts its own) when the run needs broker settings
    that cluster was not started with: the scenario's own (the coordinator-* and migration-policy scenarios) or its
    kind's on that version (a share group's on 4.2, harness/plan/config.py `brokers_need`)."""
    have = cluster.settings.properties()
    need = brokers_need(cfg, cluster.version)
    return None if any(have.get(k) != v for k, v in need.items()) else cluster


#: the commit modes a night draws from for the harness's Python member (`never` is a self-test that must fail)
NIGHT_COMMIT_MODES = tuple(m for m in COMMIT_MODES if m not in SELF_TEST_COMMIT_MODES)


def _commit_mode(rng: random.Random, sc, run_options: dict) -> str | None:
    """A commit mode for a consumer-group run of the Python member, unless the night fixes one (or runs the
    Java member or a command of its own, which take their own ways)."""
    if sc.kind != "consumer" or run_options.get("commit_mode") or run_options.get("member_command") \
            or run_options.get("slot_commands") or run_options.get("member", "python") != "python":
        return None
    return rng.choice(NIGHT_COMMIT_MODES)


def _invalid(result: RunResult) -> set[str]:
    return {n for n, v in result.verdicts.items() if v.status == "invalid"}


def shrink_failure(result: RunResult, cfg: RunConfig, *, cluster, max_attempts: int, deadline: float,
                   progress=log.info) -> dict:
    """Shrink a failing run's schedule: a candidate still fails when an invariant that failed first fails again."""
    meta = RunDir(result.run_dir).meta()
    schedule = [Action.from_dict(a) for a in meta["schedule"]]
    target = _invalid(result)
    last_failing = {"run_dir": str(result.run_dir)}

    def fails(cand: list[Action]) -> bool:
        if time.monotonic() > deadline:
            return False
        # a cut that leaves a step out of its bounds (a slot an earlier step no longer adds) is no schedule the plan
        # takes: it does not fail as the run did, and no run is started for it
        if why := refusal(cand, members=cfg.scenario_spec.members, brokers=cfg.brokers):
            progress(f"  shrink: {len(cand)} actions -> refused by the plan ({why})")
            return False
        r = run_scenario(replace(cfg, schedule=tuple(a.to_dict() for a in cand), shrink_of=result.run_dir.name),
                         cluster=cluster, progress=lambda *_: None)
        still = bool(_invalid(r) & target)
        progress(f"  shrink: {len(cand)} actions -> {'still fails' if still else r.status} ({r.run_dir.name})")
        if still:
            last_failing["run_dir"] = str(r.run_dir)
        return still

    res = shrink.shrink(schedule, fails, max_attempts=max_attempts)
    shrunk = [a.to_dict() for a in res.schedule]
    RunDir(result.run_dir).write_shrunk_schedule(shrunk)
    return {"from_actions": len(schedule), "to_actions": len(shrunk), "attempts": res.attempts,
            "schedule": shrunk, "run_dir": last_failing["run_dir"],
            "replay": f"harness replay {last_failing['run_dir']}", "log": res.log}


def nightly(*, budget_s: float, seed: int, kafka_versions=("latest",), client_versions=(None,),
            protocols=CONSUMER_PROTOCOLS, runs_root: str = "runs", shrink_attempts: int = 12,
            run_options: dict | None = None, backend: str = "local", shard: tuple[int, int] = (1, 1),
            runs: int | None = None, repeat: int = 1, progress=log.info, make_cluster=new_backend,
            run=run_scenario) -> NightlyResult:
    """Run the night's draws (its shard K of N of them; the first `runs` draws at most), each under `repeat`
    seeds drawn from its own (harness/drive/seeds.py), until the budget is spent; shrink the first failure of each
    draw; write nightly.json. `run_options` are RunConfig fields every run of the night takes (members,
    client/broker/group settings); the night's clusters start with its broker settings on `backend`."""
    run_options = dict(run_options or {})
    broker_settings = BrokerSettings.for_brokers(3, dict(run_options.get("broker_settings") or ()))
    start = time.monotonic()
    deadline = start + budget_s
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    k, n = shard
    out = Path(runs_root) / (f"nightly-{stamp}-{seed}" + (f"-shard{k}of{n}" if n > 1 else ""))
    out.mkdir(parents=True)
    result = NightlyResult(out)
    summary = {"seed": seed, "budget_s": budget_s, "kafka_versions": list(kafka_versions),
               "client_versions": list(client_versions), "protocols": list(protocols), "backend": backend,
               "shard": [k, n], "runs_limit": runs, "repeat": repeat, "runs": []}
    with ExitStack() as stack:
        clusters: dict = {}
        draws_left = shard_draws(seed, kafka_versions, client_versions, protocols, run_options, shard=shard, runs=runs,
                                 backend=backend)
        runs_left = ((d, j, run_seed) for d in draws_left for j, run_seed in enumerate(seeds(d.seed, repeat), 1))
        shrunk_draws: set[int] = set()  # the draws whose first failure was shrunk (their other seeds' are not)
        for d, j, run_seed in runs_left:
            if deadline - time.monotonic() <= MIN_RUN_S:
                break
            kv, mode = d.kafka_version, d.commit_mode
            if kv not in clusters:
                progress(f"starting a Kafka {kv} cluster ({backend})")
                # with the request proxy wherever the backend has one: the race scenarios are among the draws
                c = make_cluster(backend, work_dir=out / f"cluster-{kv}", version=kv, settings=broker_settings,
                                 progress=progress, **({"request_faults": True} if "requests" in ABILITIES.get(
                                     backend, ()) and backend != "fake" else {}))
                stack.callback(c.stop)
                c.start()
                clusters[kv] = c
            cfg = RunConfig.for_scenario(d.scenario, seed=run_seed, protocol=d.protocol, kafka_version=kv,
                                         client_version=d.client_version, runs_root=str(out), backend=backend,
                                         **run_options, **({"commit_mode": mode} if mode else {}))
            left = deadline - time.monotonic()
            progress(f"[{time.monotonic() - start:6.0f}s, {left:5.0f}s left] #{d.index}"
                     + (f" ({j}/{repeat})" if repeat > 1 else "") + f" {d.scenario} {d.protocol} "
                     f"kafka={kv} client={d.client_version or 'default'} seed={run_seed}"
                     + (f" commit={mode}" if mode else ""))
            r = run(cfg, cluster=_shared_or_own(clusters[kv], cfg), progress=lambda *_: None)
            excuse = findings.known(r.run_dir, r.verdicts) if r.status == "fail" else None
            known = excuse.finding if excuse else None
            progress(f"  -> {r.status}" + (f": {', '.join(sorted(_invalid(r)))}" if r.status == "fail" else "")
                     + (f" (known finding {known.id}, expected: {known.expected_rate}; {known.doc})" if known else ""))
            entry = NightlyRun(d.scenario, d.protocol, kv, d.client_version, run_seed, str(r.run_dir), r.status,
                               commit_mode=mode, index=d.index,
                               known={"id": known.id, "expected_rate": known.expected_rate, "doc": known.doc,
                                      "this_run": excuse.says, "marks": [m.to_dict() for m in excuse.marks]}
                               if known else None, repeat=j if repeat > 1 else None,
                               rebalance_s=rebalance_times(r), exercised=not did_not_exercise(r.status, r.verdicts))
            if r.status == "fail" and not known and d.index not in shrunk_draws \
                    and deadline - time.monotonic() > MIN_RUN_S:  # a known one is written up
                progress("  shrinking the failing schedule ...")
                shrunk_draws.add(d.index)
                entry.shrunk = shrink_failure(r, cfg, cluster=clusters[kv], max_attempts=shrink_attempts,
                                              deadline=deadline, progress=progress)
                progress(f"  shrunk {entry.shrunk['from_actions']} -> {entry.shrunk['to_actions']} actions; "
                         f"{entry.shrunk['replay']}")
            result.runs.append(entry)
            summary["runs"].append(entry.__dict__)
            summary["rates"] = rates(result.runs)
            (out / "nightly.json").write_text(json.dumps(summary, indent=2, default=str))
    summary["rates"] = rates(result.runs)
    (out / "nightly.json").write_text(json.dumps(summary, indent=2, default=str))
    report(out, result, progress=progress)
    return result


def rebalance_times(result: RunResult) -> list | None:
    """The trigger-to-stable seconds of each disturbance of a run (None for one that never settled), from its
    convergence_balance verdict's `rebalance_time` measurement; None when the run has none."""
    v = (getattr(result, "verdicts", None) or {}).get("convergence_balance")
    rt = (getattr(v, "measurements", None) or {}).get("rebalance_time")
    return [d.get("settled_s") for d in rt.get("disturbances") or ()] if isinstance(rt, dict) else None


def _median(xs: list[float]) -> float | None:
    xs = sorted(xs)
    if not xs:
        return None
    mid = len(xs) // 2
    return round(xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2, 3)


def rates(runs: list[NightlyRun]) -> list[dict]:
    """The night's failures per scenario x protocol x Kafka version x client version, as a rate of that cell's runs
    (a 1-in-20 race reads 1/20), with the runs that could not be judged apart (those in which a step of the schedule
    did not happen as `not_exercised`, not among `unknown`); the highest rate first. A cell whose
    runs measured rebalance times has `rebalance_p50_s`, `rebalance_max_s` (of the disturbances that settled) and
    `rebalance_unsettled` (that never did)."""
    names = ("scenario", "protocol", "kafka_version", "client_version")
    key_of = lambda c: tuple(c[n] for n in names)  # noqa: E731
    cells: dict[tuple, dict] = {}
    for r in runs:
        key = (r.scenario, r.protocol, r.kafka_version, r.client_version or "default")
        c = cells.setdefault(key, dict(zip(names, key), runs=0, failed=0, unknown=0, not_exercised=0, error=0))
        c["runs"] += 1
        if r.status != "pass":
            c["not_exercised" if not r.exercised else {"fail": "failed", "unknown": "unknown"}.get(r.status, "error")] += 1
        if r.rebalance_s is not None:
            c.setdefault("_times", []).extend(r.rebalance_s)
    for c in cells.values():
        if (ts := c.pop("_times", None)) is not None:
            done = [t for t in ts if t is not None]
            c.update(rebalance_p50_s=_median(done), rebalance_max_s=max(done) if done else None,
                     rebalance_unsettled=len(ts) - len(done))
    return sorted(cells.values(), key=lambda c: (-c["failed"] / c["runs"], *key_of(c)))


def summary_lines(result: NightlyResult) -> list[str]:
    """What `harness nightly` prints at the end: the count of runs by status, the failure rate of every scenario x
    protocol x version, the shrunk failures and the known findings."""
    counts: dict[str, int] = {}
    for r in result.runs:
        key = r.status if r.exercised else "did not exercise"  # an unknown run whose schedule did not all happen
        counts[key] = counts.get(key, 0) + 1
    lines = [f"nightly: {len(result.runs)} runs ({', '.join(f'{v} {k}' for k, v in sorted(counts.items()))}); "
             f"summary {result.out_dir / 'nightly.json'}"]
    for c in rates(result.runs):
        undecided = ", ".join(f"{c[k]} {k.replace('not_exercised', 'did not exercise')}"
                              for k in ("unknown", "not_exercised", "error") if c[k])
        took = "" if "rebalance_p50_s" not in c else (
            f"; rebalance time p50 {c['rebalance_p50_s']}s, max {c['rebalance_max_s']}s"
            + (f", {c['rebalance_unsettled']} never settled" if c["rebalance_unsettled"] else ""))
        lines.append(f"  {c['scenario']} {c['protocol']} kafka={c['kafka_version']} client={c['client_version']}: "
                     f"{c['failed']}/{c['runs']} failed" + (f" ({undecided})" if undecided else "") + took)
    for r in result.runs:
        if r.shrunk:
            lines.append(f"shrunk failure: {r.scenario} {r.protocol}: {r.shrunk['from_actions']} -> "
                         f"{r.shrunk['to_actions']} actions; {r.shrunk['replay']}")
        if r.known:  # a failure that is a written-up finding (harness/findings/registry.py), with its expected rate
            lines.append(f"known finding: {r.scenario} {r.protocol} client={r.client_version or 'default'}: "
                         f"{r.known['id']} (expected: {r.known['expected_rate']}; {r.known['doc']})")
    return lines


def report(out: Path, result: NightlyResult, *, progress=log.info) -> None:
    """After the night: a timeline chart in every run directory, then the PySpark aggregation over them
    (Parquet tables and `analytics/summary.html`, the night's report)."""
    from harness.report.allure_run import timeline_svg
    for r in result.runs:
        run_dir = Path(r.run_dir)
        try:
            timeline_svg(run_dir, RunDir(run_dir).meta())
        except Exception as e:  # a chart is a convenience; the verdicts stand without it
            progress(f"  no timeline for {run_dir.name}: {e}")
    if result.runs:
        from harness.analytics.job import aggregate
        progress("aggregating the night's runs (PySpark) ...")
        aggregate([str(out)], str(out / "analytics"), log=progress)
        progress(f"report: {out / 'analytics' / 'summary.html'}")
