"""`group_settled` for Kafka Streams: the rule every kind is judged by (harness/invariants/settled.py), with what a
Streams group's "settled" and its bound are.

- *Settled* at t (`balance.streams`, the runner's stable rule): every live instance RUNNING, each task of its
  snapshot's active set running on it (its `task_active` seen, its restore done), every task active exactly once,
  standbys in place and no warmup left, counts within the slacks, under one of the assignor candidates then
  (`assignor`).
- *Bound* after a disturbance at T: the session timeout of an instance killed or crashed at T (`bounds`: the group
  has to notice it, as its own start recorded it), then (ceil(tasks / max.warmup.replicas) + 1) probing rebalances
  (`probing.rebalance.interval.ms`, the loosest assignor candidate at T: every task may have to warm up somewhere
  first, max.warmup.replicas at a time, KIP-441), then restoring the state: tasks x the records seeded per task
  (`state_seeded`) at the slowest restore rate an instance recorded (`restore_records_per_second`, its start; none
  recorded or 0: not bounded by a rate, nothing added). The runner's own wait is this and 30 s more
  (harness/kinds/streams.py `stable_timeout`), so a group that never settles outlasts the bound.
"""
from __future__ import annotations

import math

from harness.record.history import History
from harness.invariants import balance
from harness.invariants.core import Verdict
from harness.invariants.settled import judge_settled, stretches, workload_end
from harness.invariants.streams.assignor import assignors_at
from harness.invariants.streams.bounds import zombie_tolerance
from harness.invariants.streams.view import INF, StreamsCheckSettings, _empty, _task_ids, _View, view

NAME = "group_settled"
#: what a settled Streams group is, for the messages
RULE = "every instance RUNNING with its active tasks restored, each task active once, standbys in place, no warmup " \
       "left (balance.streams)"


def _running(vw: _View) -> dict[str, list[tuple[float, float, str]]]:
    """member -> (from, to, task) of each task it ran active (task_active to task_active_end or its end of life)."""
    out: dict[str, list] = {}
    opened: dict[tuple, float] = {}
    for e in vw.own(("task_active", "task_active_end")):
        key = (e["member"], e.get("task"))
        if e["type"] == "task_active":
            opened.setdefault(key, e["mono"])
        elif key in opened:
            out.setdefault(key[0], []).append((opened.pop(key), e["mono"], key[1]))
    for (m, task), s in opened.items():
        out.setdefault(m, []).append((s, vw.end_of(m), task))
    return out


def settled_stretches(vw: _View, settings: StreamsCheckSettings) -> list[tuple[float, float]]:
    """(from, to) of every stretch in which the group was settled (module docstring)."""
    running = _running(vw)
    times = {e["mono"] for e in vw.events if e.get("member") in vw.start} | set(vw.start.values()) \
        | {t for t, _ in vw.stop.values()} | {t for r in running.values() for a, b, _ in r for t in (a, b)}
    return stretches(times, vw.end, lambda t: _settled_at(vw, settings, running, t))


def _settled_at(vw: _View, settings: StreamsCheckSettings, running: dict, t: float) -> bool:
    live = vw.live(t)
    if not live or any(vw.state(x, t) != "RUNNING" for x in live):
        return False
    snaps = {x: vw.snap(x, t) for x in live}
    if any(s is None for s in snaps.values()):
        return False
    for x, s in snaps.items():
        now = {task for a, b, task in running.get(x, ()) if a <= t < b}
        if not s.active <= now:
            return False  # an active task still restoring
    tasks = _task_ids(settings, {k for s in snaps.values() for k in s.active})
    return any(balance.streams({x: s.active for x, s in snaps.items()}, {x: s.standby for x, s in snaps.items()}, tasks,
                               a.standby_replicas, settings.active_balance_slack, settings.stateful_balance_slack).settled
               for a in assignors_at(vw, settings, t))


def bound_at(vw: _View, settings: StreamsCheckSettings, T: float) -> tuple[float, str]:
    """How long the group may take to settle after a disturbance at T (module docstring). (seconds, why)."""
    parts, why = 0.0, []
    for m, (t, e) in sorted(vw.stop.items()):
        if abs(t - T) < 1e-6 and e["type"] == "member_exit" and e.get("how") in ("kill", "crash"):
            tol, src = zombie_tolerance(vw, settings, m, t - 1e-6)
            if tol / 2 > parts:
                parts, why = tol / 2, [f"{m}'s session timeout {tol / 2:g}s (half of {src})"]
    cands = assignors_at(vw, settings, T)
    seen = {k for ss in vw.snaps.values() for s in ss for k in s.active}
    n = settings.tasks or len(seen)
    rounds = max(math.ceil(n / max(1, a.max_warmup_replicas)) + 1 for a in cands)
    probing = max(a.probing_interval_s for a in cands)
    parts += rounds * probing
    why.append(f"{rounds} probing rebalances of {probing:g}s (ceil({n} tasks / "
               f"{'; '.join(dict.fromkeys(a.value('max_warmup_replicas') for a in cands))}) + 1)")
    seeded = next((e for e in vw.events if e["type"] == "state_seeded"), None)
    rates = [float(e.get("restore_records_per_second") or 0) for e in vw.events if e["type"] == "started"
             and e.get("member") in vw.live(T)]
    rate = min((r for r in rates if r > 0), default=0.0)
    if seeded is not None and rate > 0:
        restore = n * int(seeded.get("records_per_task") or 0) / rate
        parts += restore
        why.append(f"restoring {n} x {seeded.get('records_per_task')} records at {rate:g}/s ({restore:.0f}s: "
                   f"state_seeded, the slowest restore_records_per_second an instance recorded)")
    return parts, " + ".join(why)


def check_group_settled(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge that the Streams group settled within its bound (harness/invariants/settled.py)."""
    if (v := _empty(NAME, history)) is not None:
        return v
    vw = view(history)
    faults = {t for s, e, _, _ in vw.faults for t in (s, e) if t < INF}
    times = sorted({e["mono"] for e in vw.events if e["type"] in ("member_start", "member_exit")} | faults)
    start = rs["mono"] if (rs := history.run_start()) else min(vw.start.values(), default=0.0)
    return judge_settled(history, settled=settled_stretches(vw, settings), disturbances=times, start=start,
                         end=workload_end(history), bound_at=lambda T: bound_at(vw, settings, T), what=RULE,
                         quiet_s=settings.settle_s)
