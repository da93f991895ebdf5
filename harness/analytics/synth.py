"""Synthetic run directories with known answers, for the analytics job's tests and benchmark.

``generate(out_dir, n_runs, events_per_run, seed)`` writes ``n_runs`` valid run directories in the
documented layout (docs/run-directory.md, docs/history.md) plus a few corrupt or partial ones, and
returns what the job must find (:class:`Expected`). Every run has 3 members and 6 partitions; its
rebalances are bursts 3 s apart (an initial assignment, then moves of a chosen set of partitions from
one member to another, eager or cooperative style by protocol); the rest of its ``events_per_run``
events are producer ``acked``, member ``processed`` and ``committed`` events spread over the run.
About one run in five fails an invariant, a few are ``unknown``, every tenth run repeats the previous
run's scenario, seed and schedule with the opposite outcome (a flaky pair), and run 1 (when there is
one) has a torn last line in a member file (a SIGKILL; valid, must not be skipped).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import random
from dataclasses import dataclass, field

from harness.base.vocabulary import CONSUMER_PROTOCOLS
from harness.record.format import header
from harness.record.rundir import (HARNESS_HISTORY, HISTORY, PRODUCER_HISTORY, RUN_JSON, STATUS, VERDICTS_JSON,
                            member_history)
from harness.base.steps import Step

SCENARIOS = ("scale-out-in", "member-kill", "rolling-bounce")
KAFKA_VERSIONS = ("3.9.1", "4.1.0")
CLIENT_VERSIONS = ("2.12.0", "2.16.1")
INVARIANTS = ("exclusive_ownership", "coverage_liveness", "bounded_migrations", "convergence_balance",
              "static_membership", "record_integrity", "commit_progress")
MEMBERS = ("m1", "m2", "m3")
PARTITIONS = 6
CORRUPT_KINDS = ("status-incomplete", "status-missing", "run-json-missing", "verdicts-unparsable",
                 "history-garbage-line", "history-wrong-schema")


@dataclass
class Expected:
    """What the aggregation must find in the generated directories."""

    runs: int = 0
    events: int = 0
    skipped: dict = field(default_factory=dict)        # dir name -> corrupt kind
    status: dict = field(default_factory=dict)         # run_id -> STATUS
    violating: set = field(default_factory=set)        # run_ids with an invalid verdict
    violation_rows: int = 0                            # verdicts with status invalid or unknown
    witnesses: dict = field(default_factory=dict)      # run_id -> {invariant: witness count} (non-valid)
    rebalances: dict = field(default_factory=dict)     # run_id -> [(duration_s, moves, longest_unowned_s)]
    rebalance_times: dict = field(default_factory=dict)  # run_id -> [settled_s or None] (convergence_balance's)
    downtime: dict = field(default_factory=dict)       # run_id -> {partition: unowned seconds}
    flaky: set = field(default_factory=set)            # (scenario, protocol, kafka, client, seed) of flaky groups
    group: dict = field(default_factory=dict)          # run_id -> (scenario, kafka, client, protocol)


def _line(d: dict) -> str:
    return json.dumps(d, separators=(",", ":")) + "\n"


def _run_plan(i: int, rng: random.Random, base: _dt.datetime):
    scenario = SCENARIOS[i % 3]
    protocol = CONSUMER_PROTOCOLS[(i // 3) % 3]
    kafka = KAFKA_VERSIONS[(i // 9) % 2]
    client = CLIENT_VERSIONS[(i // 18) % 2]
    run_seed = 100_000 + i
    schedule = [{"kind": Step.SLEEP, "params": {"s": 1.0}},
                {"kind": scenario.replace("-", "_"), "params": {"slot": i % 3, "n": 1 + i % 4}},
                {"kind": Step.WAIT_STABLE, "params": {}}]
    return dict(scenario=scenario, protocol=protocol, kafka=kafka, client=client, seed=run_seed,
                schedule=schedule, started=base + _dt.timedelta(minutes=10 * i))


def _write_run(path: str, plan: dict, events_per_run: int, rng: random.Random, outcome: str, fail_inv: str,
               n_witness: int, torn: bool, exp: Expected | None, shrink_of: str | None = None):
    """Write one run directory from its plan; return its event count (and add what the job must find to `exp`)."""
    hist = os.path.join(path, HISTORY)
    os.makedirs(hist, exist_ok=True)
    run_id = os.path.basename(path)
    topic = "t-" + run_id
    t0 = 1000.0 + rng.random() * 100
    wall0 = plan["started"].timestamp() - t0
    n_reb = 2 + rng.randrange(4)
    own, rebs, down = _ownership(plan["protocol"], rng, n_reb, t0, wall0, topic)
    t_end = t0 + 1.0 + 3.0 * n_reb + 2.0
    # ---- filler events ----------------------------------------------------------------------------
    n_own = sum(len(v) for v in own.values())
    n_harness = 3 + 2 * len(MEMBERS) + 2 + 1
    n_fill = max(0, events_per_run - n_own - n_harness - len(MEMBERS) - 1)
    n_acked = n_fill // 2
    n_proc = (n_fill - n_acked) * 4 // 5
    n_comm = n_fill - n_acked - n_proc
    span = t_end - t0
    _write_producer(hist, n_acked, t0, span, wall0, topic)
    _write_members(hist, own, plan, run_id, topic, n_proc, n_comm, t0, t_end, wall0, torn)
    n_hs = _write_harness(hist, plan, run_id, topic, t0, t_end, wall0, killed=MEMBERS[0] if torn else None)
    # ---- verdicts, run.json, STATUS ---------------------------------------------------------------
    times = _write_verdicts(path, plan, rng, outcome, fail_inv, n_witness, n_reb, t0)
    _write_meta(path, plan, run_id, topic, span, outcome, shrink_of)
    n_events = n_own + n_hs + len(MEMBERS) + n_acked + n_proc + n_comm
    if exp is not None:
        exp.runs += 1
        exp.events += n_events
        exp.status[run_id] = outcome
        exp.group[run_id] = (plan["scenario"], plan["kafka"], plan["client"], plan["protocol"])
        if outcome == "fail":
            exp.violating.add(run_id)
            exp.violation_rows += 1
            exp.witnesses[run_id] = {fail_inv: n_witness}
        if outcome == "unknown":
            exp.violation_rows += 1
            exp.witnesses[run_id] = {"coverage_liveness": 0}
        exp.rebalances[run_id] = rebs
        exp.rebalance_times[run_id] = times
        exp.downtime[run_id] = {p: round(v, 6) for p, v in down.items()}
    return n_events


def _ownership(protocol: str, rng: random.Random, n_reb: int, t0: float, wall0: float, topic: str):
    """The members' ownership event lines of a run's initial assignment and rebalances (member -> [(mono, line)]),
    each rebalance's (duration, moves, longest unowned) and each partition's unowned seconds."""
    own = {m: [] for m in MEMBERS}  # member -> [(mono, line)]
    owner = {}  # partition -> member
    rebs = []
    down = {p: 0.0 for p in range(PARTITIONS)}

    def ev(m, mono, typ, ps):
        own[m].append((mono, '{"type":"%s","mono":%.6f,"wall":%.6f,"member":"%s","partitions":%s}\n'
                       % (typ, mono, mono + wall0, m, json.dumps([[topic, p] for p in ps], separators=(",", ":")))))

    t = t0 + 1.0
    init = {m: [p for p in range(PARTITIONS) if p % 3 == k] for k, m in enumerate(MEMBERS)}
    for k, m in enumerate(MEMBERS):
        ev(m, t + 0.05 * k, "assigned", init[m])
        for p in init[m]:
            owner[p] = m
    rebs.append((0.1, 0, 0.1))
    for r in range(1, n_reb):
        T = t0 + 1.0 + 3.0 * r
        d = round(0.2 + 0.1 * rng.randrange(6), 3)
        src = rng.choice([m for m in MEMBERS if any(o == m for o in owner.values())])
        dst = rng.choice([m for m in MEMBERS if m != src])
        mine = sorted(p for p, o in owner.items() if o == src)
        moved = sorted(rng.sample(mine, rng.randint(1, len(mine))))
        new_owner = dict(owner)
        for p in moved:
            new_owner[p] = dst
        if protocol == "classic-eager":
            lu = 0.0
            for k, m in enumerate(MEMBERS):
                ev(m, T + 0.01 * k, "revoked", sorted(p for p, o in owner.items() if o == m))
            for k, m in enumerate(MEMBERS):
                ev(m, T + d + 0.01 * k, "assigned", sorted(p for p, o in new_owner.items() if o == m))
            for p in range(PARTITIONS):
                gap = (T + d + 0.01 * MEMBERS.index(new_owner[p])) - (T + 0.01 * MEMBERS.index(owner[p]))
                down[p] += gap
                lu = max(lu, gap)
            rebs.append((round(d + 0.02, 6), len(moved), round(lu, 6)))
        else:
            ev(src, T, "revoked", moved)
            ev(src, T + 0.001, "assigned", [])
            ev(dst, T + d, "assigned", moved)
            for p in moved:
                down[p] += d
            rebs.append((d, len(moved), d))
        owner = new_owner
    return own, rebs, down


def _write_producer(hist: str, n_acked: int, t0: float, span: float, wall0: float, topic: str) -> None:
    """The producer's history: `n_acked` acknowledgements spread over the run."""
    with open(os.path.join(hist, PRODUCER_HISTORY), "w") as f:
        f.write(_line(header("producer", member="producer")))
        buf = []
        for j in range(n_acked):
            mono = t0 + span * j / max(1, n_acked)
            p = j % PARTITIONS
            buf.append('{"type":"acked","mono":%.6f,"wall":%.6f,"topic":"%s","partition":%d,"offset":%d,'
                       '"key":"k%d","seq":%d}\n' % (mono, mono + wall0, topic, p, j // PARTITIONS, j % 50, j // 50))
        f.write("".join(buf))


def _write_members(hist: str, own: dict, plan: dict, run_id: str, topic: str, n_proc: int, n_comm: int, t0: float,
                   t_end: float, wall0: float, torn: bool) -> None:
    """Each member's history: its start, its ownership events, `processed` and `committed` events (the first
    member's last line torn when `torn`)."""
    span = t_end - t0
    per_m_proc = n_proc // len(MEMBERS)
    per_m_comm = n_comm // len(MEMBERS)
    extra = (n_proc - per_m_proc * 3) + (n_comm - per_m_comm * 3)
    for k, m in enumerate(MEMBERS):
        lines = list(own[m])
        lines.append((t0 + 0.5 + 0.05 * k, '{"type":"started","mono":%.6f,"wall":%.6f,"member":"%s","pid":%d,'
                      '"protocol":"%s","group_id":"g-%s","topic":"%s","instance_id":null,"rack":null,'
                      '"client":"confluent-kafka %s"}\n' % (t0 + 0.5 + 0.05 * k, t0 + 0.5 + wall0, m, 1000 + k,
                                                             plan["protocol"], run_id, topic, plan["client"])))
        npm = per_m_proc + (extra if k == 0 else 0)
        for j in range(npm):
            mono = t0 + 1.2 + (span - 1.3) * j / max(1, npm)
            p = (j + k) % PARTITIONS
            lines.append((mono, '{"type":"processed","mono":%.6f,"wall":%.6f,"member":"%s","topic":"%s",'
                          '"partition":%d,"first_offset":%d,"last_offset":%d,"count":5}\n'
                          % (mono, mono + wall0, m, topic, p, j * 5, j * 5 + 4)))
        for j in range(per_m_comm):
            mono = t0 + 1.25 + (span - 1.3) * j / max(1, per_m_comm)
            lines.append((mono, '{"type":"committed","mono":%.6f,"wall":%.6f,"member":"%s","offsets":[["%s",%d,%d]],'
                          '"ok":true,"error":null}\n' % (mono, mono + wall0, m, topic, (j + k) % PARTITIONS, j * 5)))
        lines.sort(key=lambda x: x[0])
        with open(member_history(hist, m), "w") as f:
            f.write(_line(header("member", member=m)))
            f.write("".join(x[1] for x in lines))
            if torn and k == 0:
                f.write('{"type":"processed","mono":%.3f,"wa' % (t_end - 0.1))


def _write_harness(hist: str, plan: dict, run_id: str, topic: str, t0: float, t_end: float, wall0: float, *,
                   killed: str | None = None) -> int:
    """The harness's history (run start and end, members, the step, the drain); returns its events. The step the
    history shows is a wait (`sleep`), planned in run_start, whose ok end is its whole proof (`schedule_performed`
    holds it as a real run's); `killed`: the member SIGKILLed at the end (its file may end torn)."""
    s = round(t_end - 1.5 - (t0 + 0.4), 3)
    step = {"action_id": "a1", "kind": Step.SLEEP, "params": {"s": s}}
    hs = [_line({"type": "run_start", "mono": t0, "wall": t0 + wall0, "run_id": run_id,
                 "scenario": plan["scenario"], "seed": plan["seed"], "settings": {"topic": topic},
                 "plan": [step]}),
          # a field named like the header's "version" but a string: must not make the line unparsable
          _line({"type": "broker_event", "mono": t0, "wall": t0 + wall0, "broker": 1, "what": "ready",
                 "version": plan["kafka"]})]
    for k, m in enumerate(MEMBERS):
        hs.append(_line({"type": "member_start", "mono": t0 + 0.1 * k, "wall": t0 + 0.1 * k + wall0, "member": m,
                         "pid": 1000 + k, "instance_id": None, "rack": None}))
    hs.append(_line({"type": "action_start", "mono": t0 + 0.4, "wall": t0 + 0.4 + wall0, **step}))
    hs.append(_line({"type": "action_end", "mono": t_end - 1.5, "wall": t_end - 1.5 + wall0, "action_id": "a1",
                     "kind": Step.SLEEP, "ok": True, "error": None}))
    for k, m in enumerate(MEMBERS):
        t = t_end - 0.5 + 0.01 * k
        hs.append(_line({"type": "member_stop", "mono": t, "wall": t_end + wall0, "member": m}))
        if m == killed:  # its stop ended in a SIGKILL mid-write, as the run ended (its partitions unowned no longer)
            hs.append(_line({"type": "member_exit", "mono": t_end, "wall": t_end + wall0, "member": m,
                             "how": "kill", "code": -9}))
    hs.append(_line({"type": "drained", "mono": t_end - 0.6, "wall": t_end - 0.6 + wall0, "ok": True, "missing": 0}))
    hs.append(_line({"type": "run_end", "mono": t_end, "wall": t_end + wall0, "status": "complete"}))
    with open(os.path.join(hist, HARNESS_HISTORY), "w") as f:
        f.write(_line(header("harness", member=None)))
        f.write("".join(hs))
    return len(hs)


def _write_verdicts(path: str, plan: dict, rng: random.Random, outcome: str, fail_inv: str, n_witness: int,
                    n_reb: int, t0: float) -> list:
    """verdicts.json for the outcome; returns the rebalance times its `convergence_balance` measured."""
    verdicts = {}
    for inv in INVARIANTS:
        st = "skipped" if inv == "static_membership" else "valid"
        ws = []
        if outcome == "fail" and inv == fail_inv:
            st, ws = "invalid", [{"type": "assigned", "mono": t0 + 1.0 + w, "why": "synthetic"} for w in range(n_witness)]
        if outcome == "unknown" and inv == "coverage_liveness":
            st, ws = "unknown", []
        verdicts[inv] = {"name": inv, "status": st, "message": f"synthetic {st}", "witnesses": ws,
                         "measurements": {}}
    # the rebalance times convergence_balance measures: the initial join and one per rebalance; an unknown run's
    # last one never settled
    times = [round(0.5 + 0.25 * rng.randrange(8), 3) for _ in range(n_reb + 1)]
    if outcome == "unknown":
        times[-1] = None
    verdicts["convergence_balance"]["measurements"]["rebalance_time"] = {
        "protocol": plan["protocol"], "assignors": ["range" if plan["protocol"] == "classic-eager" else "sticky"],
        "max_s": max((x for x in times if x is not None), default=None), "unsettled": times.count(None),
        "disturbances": [{"index": i, "kind": "initial" if i == 0 else Step.SCALE_OUT,
                          "trigger": "member_start" if i == 0 else "action_start", "at_s": 10.0 * i,
                          "settled_s": x, "unowned_sum_s": 0.1 * i, "unowned_max_s": 0.05 * i,
                          "partitions_unowned": i, "unowned_open": 0,
                          **({"why": "never settled before the end"} if x is None else {})}
                         for i, x in enumerate(times)]}
    with open(os.path.join(path, VERDICTS_JSON), "w") as f:
        json.dump(verdicts, f, indent=1)
    return times


def _write_meta(path: str, plan: dict, run_id: str, topic: str, span: float, outcome: str,
                shrink_of: str | None) -> None:
    """run.json and STATUS."""
    finished = plan["started"] + _dt.timedelta(seconds=span)
    meta = {"run_id": run_id, "config": {"scenario": plan["scenario"], "seed": plan["seed"],
                                         "protocol": plan["protocol"], "kafka_version": plan["kafka"],
                                         "client_version": plan["client"], "partitions": PARTITIONS,
                                         "shrink_of": shrink_of},
            "started": plan["started"].isoformat(), "scenario": plan["scenario"], "seed": plan["seed"],
            "protocol": plan["protocol"], "topic": topic, "group_id": "g-" + run_id,
            "kafka_version": plan["kafka"], "client_version": plan["client"], "client_library": "confluent-kafka",
            "backend": "synthetic", "brokers": 3, "schedule": plan["schedule"], "schedule_ran": plan["schedule"],
            "replay": f"harness replay {path}", "finished": finished.isoformat(), "duration_s": round(span, 3),
            "status": outcome}
    with open(os.path.join(path, RUN_JSON), "w") as f:
        json.dump(meta, f, indent=2)
    with open(os.path.join(path, STATUS), "w") as f:
        f.write(outcome + "\n")


def _name(plan: dict) -> str:
    return f"{plan['started'].strftime('%Y%m%dT%H%M%S')}-{plan['scenario']}-{plan['protocol']}-{plan['seed']}"


def generate(out_dir: str, n_runs: int, events_per_run: int = 10_000, seed: int = 0,
             corrupt: tuple = CORRUPT_KINDS, start: int = 0, expected: bool = True) -> Expected:
    """Write ``n_runs`` valid run directories and one corrupt/partial directory per kind in ``corrupt``.

    ``start`` offsets the run numbering (to generate a large set in parallel slices: only the slice
    with ``start == 0`` should pass ``corrupt``). Returns the known answers.
    """
    os.makedirs(out_dir, exist_ok=True)
    base = _dt.datetime(2026, 11, 1, tzinfo=_dt.timezone.utc)
    exp = Expected()
    plans, outcomes = {}, {}
    for i in range(start, start + n_runs):
        rng = random.Random(seed * 1_000_003 + i)
        plan = _run_plan(i, rng, base)
        roll = rng.random()
        outcome = "fail" if roll < 0.2 else ("unknown" if roll < 0.23 else "pass")
        fail_inv = INVARIANTS[rng.choice((0, 1, 2, 3, 5))]
        n_witness = 1 + rng.randrange(5)
        if i % 10 == 9 and (i - 1) in plans:
            twin = plans[i - 1]
            for k in ("scenario", "protocol", "kafka", "client", "seed", "schedule"):
                plan[k] = twin[k]
            outcome = "pass" if outcomes[i - 1] != "pass" else "fail"
            fail_inv = "exclusive_ownership"
            exp.flaky.add((plan["scenario"], plan["protocol"], plan["kafka"], plan["client"], plan["seed"]))
        plans[i], outcomes[i] = plan, outcome
        path = os.path.join(out_dir, _name(plan))
        if os.path.exists(path):  # a twin started at another time: unique anyway
            path += f"-{i}"
        _write_run(path, plan, events_per_run, rng, outcome, fail_inv, n_witness, torn=(i == 1),
                   exp=exp if expected else None)
    for j, kind in enumerate(corrupt):
        i = 900_000 + start + j
        rng = random.Random(seed * 7 + j)
        plan = _run_plan(i, rng, base)
        plan["scenario"] = "corrupt-" + kind
        plan["started"] = base - _dt.timedelta(days=1) + _dt.timedelta(minutes=10 * (start + j), seconds=7)
        path = os.path.join(out_dir, _name(plan))
        _write_run(path, plan, min(events_per_run, 500), rng, "pass", INVARIANTS[0], 1, torn=False, exp=None)
        exp.skipped[os.path.basename(path)] = kind
        if kind == "status-incomplete":
            open(os.path.join(path, STATUS), "w").write("incomplete\n")
            os.remove(os.path.join(path, VERDICTS_JSON))
        elif kind == "status-missing":
            os.remove(os.path.join(path, STATUS))
        elif kind == "run-json-missing":
            os.remove(os.path.join(path, RUN_JSON))
        elif kind == "verdicts-unparsable":
            open(os.path.join(path, VERDICTS_JSON), "w").write('{"exclusive_ownership": {"name": "exclu')
        elif kind == "history-garbage-line":
            f = member_history(os.path.join(path, HISTORY), "m2")
            lines = open(f).readlines()
            lines.insert(len(lines) // 2, "this is not json\n")
            open(f, "w").writelines(lines)
        elif kind == "history-wrong-schema":
            f = member_history(os.path.join(path, HISTORY), "m3")
            lines = open(f).readlines()
            lines[0] = '{"type":"header","schema":"something-else","version":7,"source":"member","member":"m3"}\n'
            open(f, "w").writelines(lines)
    return exp


def repeat_cells(out_dir: str, events_per_run: int = 300, seed: int = 0) -> dict:
    """What `harness run --repeat 3` leaves, twice: member-kill (consumer) whose first run failed and was shrunk in 8
    attempts (each a run directory whose config names the failing run in `shrink_of`; each a schedule of its own),
    and rolling-bounce (consumer) whose 3 runs were all unknown. Returns the run ids: `repeat`, `attempts`,
    `unknown`."""
    os.makedirs(out_dir, exist_ok=True)
    base = _dt.datetime(2026, 11, 20, tzinfo=_dt.timezone.utc)
    out: dict = {"repeat": [], "attempts": [], "unknown": []}

    def write(i, scenario, outcome, *, run_seed, shrink_of=None, n=1):
        rng = random.Random(seed * 1_000_003 + 500_000 + i)
        plan = _run_plan(i, rng, base)
        plan.update(scenario=scenario, protocol="consumer", kafka=KAFKA_VERSIONS[-1], client=CLIENT_VERSIONS[-1],
                    seed=run_seed)
        plan["schedule"][1] = {"kind": scenario.replace("-", "_"), "params": {"slot": 0, "n": n}}
        if shrink_of:  # a shorter schedule than the failing run's, different in each attempt
            plan["schedule"] = plan["schedule"][:2]
        path = os.path.join(out_dir, _name(plan))
        _write_run(path, plan, events_per_run, rng, outcome, "exclusive_ownership", 1, torn=False, exp=None,
                   shrink_of=shrink_of)
        return os.path.basename(path)

    for k in range(3):
        out["repeat"].append(write(k, "member-kill", "fail" if k == 0 else "pass", run_seed=200 + k))
    for k in range(8):
        out["attempts"].append(write(10 + k, "member-kill", "fail" if k % 3 == 0 else "pass", run_seed=200,
                                     shrink_of=out["repeat"][0], n=2 + k))
    for k in range(3):
        out["unknown"].append(write(30 + k, "rolling-bounce", "unknown", run_seed=300 + k))
    return out


if __name__ == "__main__":  # python -m harness.analytics.synth OUT N [EVENTS] [SEED]
    import sys
    a = sys.argv[1:]
    e = generate(a[0], int(a[1]), int(a[2]) if len(a) > 2 else 10_000, int(a[3]) if len(a) > 3 else 0)
    print(f"{e.runs} runs, {e.events} events, {len(e.skipped)} corrupt: {sorted(e.skipped)}")
