"""One synthetic run directory that a correct consumer group writes: every invariant that applies holds on it.

`write(out_dir, shape)` plays `synth_group`'s story (N members start in waves, the group settles, `scale_in` stops a
third of them gracefully, the survivors take their partitions, the producer stops, the harness waits for the drain
and stops the rest) and `synth_records`' records, and writes the run directory in the documented layout
(docs/run-directory.md, docs/history.md): the harness's, producer's, members' and brokers' files, run.json and
STATUS. The run records what a real run records for the checkers to judge by: each member's effective settings in
its `started`, the brokers' group settings (`group_settings`), the group's committed offsets read after the members'
final stop (`offsets_read`), and the plan's facts (`run_start`'s settings and its
`applies`, decided by the same function the runner asks). `judge` finds every invariant that applies `valid` (the
others `skipped` as the plan says); `broken="double_owner"` gives one member a partition another holds, for a
while, which `exclusive_ownership` must find.

    python -m harness.analytics.synth_run OUT_DIR --members 300 --partitions 1000 --events 100000

bench/judge.py judges it (`--members`, `--partitions`); it is no recording of a real cluster: the timings are drawn,
not measured, and only the broker lines the checkers read are written.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import random
import sys
from pathlib import Path

import numpy as np

from harness.analytics import synth_group as g
from harness.analytics import synth_records
from harness.invariants.applies import PlanFacts, applicability
from harness.record.format import header
from harness.record.rundir import (BROKERS_HISTORY, HARNESS_HISTORY, HISTORY, PRODUCER_HISTORY, RUN_JSON, STATUS,
                                   member_history)
from harness.base.steps import Step

SCENARIO = "synthetic-scale-in"
BROKEN = ("double_owner",)
#: the brokers' group settings as a 4.4 cluster of the harness reports them (DescribeConfigs)
GROUP_BROKER = {"group.consumer.session.timeout.ms": "6000", "group.consumer.heartbeat.interval.ms": "500",
                "group.consumer.min.session.timeout.ms": "1000", "group.consumer.max.session.timeout.ms": "60000",
                "group.min.session.timeout.ms": "1000", "group.max.session.timeout.ms": "1800000",
                "group.initial.rebalance.delay.ms": "1000", "group.consumer.migration.policy": "bidirectional",
                "group.consumer.assignors": "uniform,range"}
GROUP_CONFIG = {"consumer.session.timeout.ms": "6000", "consumer.heartbeat.interval.ms": "500",
                "consumer.assignment.interval.ms": "1000"}


def settings(shape: g.Shape, topic: str) -> dict:
    """The checkers' settings of the run (run_start's `settings`), as the runner writes them."""
    return {"topic": topic, "partitions": shape.partitions, "topics": [], "protocol": shape.protocol,
            "session_timeout_s": 6.0, "heartbeat_interval_s": 0.5, "max_poll_interval_s": 20.0, "migration_slack": 0,
            "quiet_period_s": 3.0, "static_grace_s": 2.0, "exactly_once": False, "expect_broker": ""}


def schedule(shape: g.Shape, steady_s: float) -> list[tuple[str, dict]]:
    half = round(steady_s / 2, 2)
    return [(Step.SLEEP, {"s": half}), (Step.SCALE_IN, {"pick": "newest", "count": shape.members // 3}),
            (Step.WAIT_STABLE, {}), (Step.SLEEP, {"s": half})]


def steady_s(shape: g.Shape) -> float:
    """How long the group runs steady (split around the scale-in), so that the run has about `shape.events`
    events: each poll of a member writes about one `processed` per partition it holds, and one commit."""
    control = 12 * shape.members
    polls = max(30.0, (shape.events * 0.55 - control) / (shape.partitions + shape.members))
    return polls * shape.poll_s


def run_start(s: g.Story, sched: list) -> None:
    shape = s.shape
    facts = PlanFacts(kind="consumer", protocol=shape.protocol, members=shape.members, schedule=tuple(sched))
    applies = applicability(facts)
    s.emit("harness", s.t0, "run_start", run_id=s.run_id, scenario=SCENARIO, seed=shape.seed, kind="consumer",
           backend="local", settings=settings(shape, s.topic), client_settings={}, broker_settings={},
           group_settings={}, commit_mode="sync", applies=applies)
    s.emit("harness", s.t0 + 0.13, "group_settings", group_id=s.group, via="DescribeConfigs", broker=GROUP_BROKER,
           brokers={str(b): GROUP_BROKER for b in (1, 2, 3)}, group=GROUP_CONFIG)


def action(s: g.Story, n: int, at: float, kind: str, params: dict, end: float, **result) -> None:
    s.emit("harness", at, "action_start", action_id=f"a{n}", kind=kind, params=params)
    s.emit("harness", end, "action_end", action_id=f"a{n}", kind=kind, ok=True, error=None, **result)


def play(shape: g.Shape, run_id: str) -> g.Story:
    """The story of the run (synth_group): waves of starts, a steady stretch, the scale-in, another, the end."""
    rng = random.Random(shape.seed)
    s = g.Story(shape, run_id, "t-" + run_id, "g-" + run_id, t0=5000.0, wall0=1_795_000_000.0)
    steady = steady_s(shape)
    sched = schedule(shape, steady)
    run_start(s, sched)
    members = [f"m{i}" for i in range(1, shape.members + 1)]
    waves = min(g.WAVES, shape.members)
    at = s.t0 + 0.4
    for w in range(waves):
        at = g.join_wave(s, rng, members[w * len(members) // waves:(w + 1) * len(members) // waves], at) + 0.5
    half = sched[0][1]["s"]
    action(s, 1, at, Step.SLEEP, {"s": half}, at + half)
    at += half + 0.0002
    leavers = members[len(members) - shape.members // 3:][::-1]
    first_line, last_line, last_exit = g.stop_members(s, rng, leavers, at + 0.001)
    ready = g.reassign(s, rng, last_line + 0.01, leavers[0], first_line + 0.0005)
    action(s, 2, at, Step.SCALE_IN, sched[1][1], last_exit + 0.0002,
           **({"member": leavers[0]} if len(leavers) == 1 else {"members": leavers}))
    at = max(last_exit + 0.0003, at)
    stable = max(ready, at) + 2.4
    action(s, 3, at, Step.WAIT_STABLE, {}, stable, stable=True)
    action(s, 4, stable + 0.0001, Step.SLEEP, {"s": half}, stable + 0.0001 + half)
    s.prod = (s.t0 + 0.5, stable + half)
    drained = s.prod[1] + shape.poll_s + 0.3
    s.emit("harness", drained, "drained", ok=True, missing=0)
    survivors = sorted(s.held, key=lambda m: s.lives[m][0])
    first_line, last_line, s.end = g.stop_members(s, rng, survivors, drained + 1.0)
    g.empty_lines(s, survivors[0], first_line, last_line)
    s.end = max(s.end, last_line + 0.002)
    g.watch_answers(s)
    s.emit("harness", s.end + 0.01, "run_end", status="complete")
    return s


def double_owner(s: g.Story) -> None:
    """Breaks the run: a surviving member is also given a partition another one holds, for a second, mid-run."""
    at, p = s.prod[1] - 2.0, 0
    holder = next(m for m, a, r in s.owners[p] if a < at and (r is None or r > at + 1.0))
    other = next(m for m, (start, stop) in s.lives.items() if m != holder and start < at and stop > at + 1.0)
    s.emit(other, at, "assigned", member=other, partitions=s.tps([p]))
    s.emit(other, at + 1.0, "revoked", member=other, partitions=s.tps([p]))


def write(out_dir: str | os.PathLike, shape: g.Shape, broken: str | None = None) -> Path:
    """Write the run directory of `shape` under `out_dir`; returns its path."""
    if (problem := shape.problem()) or (broken is not None and broken not in BROKEN):
        raise ValueError(problem or f"broken must be one of {', '.join(BROKEN)}, not {broken!r}")
    started = _dt.datetime(2026, 11, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(minutes=shape.seed % 1000)
    run_id = f"{started.strftime('%Y%m%dT%H%M%S')}-{SCENARIO}-{shape.protocol}-{shape.seed}"
    s = play(shape, run_id)
    nrng = np.random.default_rng(shape.seed)
    acked, ack = synth_records.producer(s, max(shape.partitions, int(shape.events * 0.45)), nrng)
    if broken == "double_owner":
        double_owner(s)
    files = {HARNESS_HISTORY: ("harness", None, s.files.get("harness", [])), PRODUCER_HISTORY: ("producer", "producer", acked),
             BROKERS_HISTORY: ("broker-log", None, s.files.get("brokers", []))}
    for m, lines in synth_records.processing(s, ack, nrng).items():
        files[member_history(Path(HISTORY), m).name] = ("member", m, s.files.get(m, []) + lines)
    # the harness's read of the committed offsets after the members' final stop: each partition's last commit, the
    # count of its records (every record processed once and committed, synth_records)
    s.emit("harness", s.end + 0.008, "offsets_read", group_id=s.group, after="end", step_kind=None,
           asked_mono=round(s.end + 0.007, 6), coordinator=1, partition_errors=[], tries=1, error=None,
           offsets=[[s.topic, p, len(ack[p])] for p in range(shape.partitions) if len(ack[p])])
    path = Path(out_dir) / run_id
    (path / HISTORY).mkdir(parents=True, exist_ok=True)
    for name, (source, member, lines) in files.items():
        extra = {"backend": "local"} if source == "harness" else (
            {"group_id": s.group, "offsets_partition": 0} if source == "broker-log" else {})
        lines.sort(key=lambda x: x[0])
        with open(path / HISTORY / name, "w") as f:
            f.write(json.dumps(header(source, member=member, **extra), separators=(",", ":")) + "\n")
            f.writelines(line for _, line in lines)
    meta = {"run_id": run_id, "scenario": SCENARIO, "seed": shape.seed, "protocol": shape.protocol,
            "topic": s.topic, "topics": [[s.topic, shape.partitions]], "group_id": s.group, "kafka_version": "4.4.0",
            "client_version": "2.16.1", "client_library": "confluent-kafka", "backend": "local", "brokers": 3,
            "started": started.isoformat(), "duration_s": round(s.end - s.t0, 3), "status": "pass",
            "synthetic": {"members": shape.members, "partitions": shape.partitions, "events": shape.events,
                          "broken": broken}}
    (path / RUN_JSON).write_text(json.dumps(meta, indent=2))
    (path / STATUS).write_text(("fail" if broken else "pass") + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.analytics.synth_run", description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--members", type=int, default=3)
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--events", type=int, default=10_000)
    p.add_argument("--protocol", default="consumer")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--broken", choices=BROKEN)
    a = p.parse_args(argv)
    shape = g.Shape(a.members, a.partitions, a.events, a.protocol, a.seed)
    if problem := shape.problem():
        print(f"synth_run: {problem}", file=sys.stderr)
        return 2
    print(write(a.out_dir, shape, a.broken))
    return 0


if __name__ == "__main__":
    sys.exit(main())
