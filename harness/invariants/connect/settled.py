"""`group_settled` for Kafka Connect: the rule every kind is judged by (harness/invariants/settled.py), with what a
Connect cluster's "settled" and its bound are.

- *Settled* at t (`balance.connect`, the runner's stable rule): every configured connector and task runs on exactly
  one live worker (by the tasks' own started and stopped events), nothing else runs, and connectors and tasks per
  worker are each within `balance_slack`.
- *Bound* after a disturbance at T: for a worker that departed at T, its detection (after a kill or crash its own
  session timeout, `bounds.detection`) and the longest scheduled delay that may hold its work (`bounds.
  scheduled_delay`: the leader's, as recorded); then two rebalance rounds of the longest `rebalance.timeout.ms` the
  live workers' configs recorded (the run's `rebalance_timeout_s` for a worker that recorded none, said so). The
  runner's own wait is this and 30 s more (harness/kinds/connect.py `stable_timeout`).
"""
from __future__ import annotations

from harness.record.history import History
from harness.invariants import balance
from harness.invariants.connect.bounds import detection, scheduled_delay
from harness.invariants.connect.view import INF, ConnectCheckSettings, View, view_of
from harness.invariants.core import Verdict, verdict
from harness.invariants.settings import recorded_ms, started_of
from harness.invariants.settled import judge_settled, stretches, workload_end

NAME = "group_settled"
RULE = "every connector and task running once on a live worker, balanced (balance.connect)"
REBALANCE_KEY = "rebalance.timeout.ms"


def _live(v: View, t: float) -> set[str]:
    return {m for m, b in v.born.items() if b <= t and (m not in v.died or v.died[m][0] > t)}


def settled_stretches(v: View, settings: ConnectCheckSettings) -> list[tuple[float, float]]:
    """(from, to) of every stretch in which every unit ran once on a live worker, balanced."""
    def settled_at(t: float) -> bool:
        live = _live(v, t)
        held: dict[str, list] = {m: [] for m in live}
        for r in v.runs_at(t):
            if r.member in live:
                held[r.member].append(r.key)
        return bool(live) and balance.connect(held, settings.connectors, settings.tasks or {},
                                              settings.balance_slack).ok

    times = {r.start for r in v.runs} | {r.end for r in v.runs if r.end < INF} | set(v.born.values()) \
        | {t for t, _ in v.died.values()}
    return stretches(times, v.end, settled_at)


def bound_at(v: View, settings: ConnectCheckSettings, T: float) -> tuple[float, str]:
    """How long the cluster may take to settle after a disturbance at T (module docstring). (seconds, why)."""
    total, why = 0.0, []
    for m, (t, how) in sorted(v.died.items()):
        if abs(t - T) < 1e-6:
            det, dsrc = detection(v, settings, m, t - 1e-6) if how in ("kill", "crash") else (0.0, "")
            _, delay, delay_src = scheduled_delay(v, settings, m, t)
            if det + delay > total:
                total = det + delay
                why = [f"{m} left ({how}): detection {det:g}s" + (f" ({dsrc})" if dsrc else "")
                       + f", delay {delay:g}s ({delay_src})"]
    rto, src = 0.0, ""
    for m in sorted(_live(v, T) or v.born):
        got = recorded_ms(started_of(v.events, m, T), (REBALANCE_KEY,))
        s, s_src = (got[0] / 1000, f"{m}'s {REBALANCE_KEY}={got[0]}") if got else \
            (settings.rebalance_timeout_s, f"the run's rebalance_timeout_s={settings.rebalance_timeout_s:g}s: "
                                           f"{m}'s start recorded no {REBALANCE_KEY}")
        if s > rto:
            rto, src = s, s_src
    why.append(f"2 rebalance rounds of {rto:g}s ({src})")
    return total + 2 * rto, "; ".join(why)


def check_group_settled(history: History, settings: ConnectCheckSettings) -> Verdict:
    """Judge that the Connect cluster settled within its bound (harness/invariants/settled.py)."""
    v = view_of(history)
    if not v.born:
        return verdict(NAME, "unknown", "no worker started")
    faults = {t for f in v.faults for t in (f.start, f.end) if t < INF}
    times = sorted(set(v.born.values()) | {t for t, _ in v.died.values()} | faults)
    start = rs["mono"] if (rs := history.run_start()) else min(v.born.values())
    return judge_settled(history, settled=settled_stretches(v, settings), disturbances=times, start=start,
                         end=workload_end(history), bound_at=lambda T: bound_at(v, settings, T), what=RULE,
                         quiet_s=settings.quiet_period_s)
