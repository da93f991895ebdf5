"""The Connect checkers' session-timeout bounds, per worker and per moment: the `session.timeout.ms` of the worker
config the worker ran with then, as its own `started` event recorded it (`settings`, its worker config).

A worker's life in the Connect view is one process (`view`), so its `started` event is the one of its life: the
latest at or before the moment (`settings.started_of`). A worker whose start recorded none is judged with the
run's value (`session_timeout_s`, `zombie_tolerance_s`), and the source says so.
"""
from __future__ import annotations

from harness.invariants.connect.view import ConnectCheckSettings, View
from harness.invariants.settings import recorded_ms, session_bound, started_of
from harness.invariants.clock import events_t0

KEYS = ("session.timeout.ms",)
WHAT = "its worker config"


def detection(v: View, settings: ConnectCheckSettings, member: str, t: float) -> tuple[float, str]:
    """How long the group takes to notice that `member`, killed at t, is gone: its session timeout then."""
    return session_bound(v.events, member, t, KEYS, WHAT, 1, settings.session_timeout_s, "session_timeout_s")


def zombie_tolerance(v: View, settings: ConnectCheckSettings, member: str, t: float) -> tuple[float, str]:
    """How long a frozen `member` may run a unit after it moved at t: twice its session timeout then."""
    return session_bound(v.events, member, t, KEYS, WHAT, 2, settings.zombie_tolerance_s, "zombie_tolerance_s")


DELAY = "scheduled.rebalance.max.delay.ms"


def scheduled_delay(v: View, settings: ConnectCheckSettings, departed: str, t: float) -> tuple[float, float, str]:
    """The scheduled delay that held `departed`'s work at t: the leader's `scheduled.rebalance.max.delay.ms`, as its
    own worker config recorded it (the delay lives in the leader's assignor). When no worker named the leader then,
    or the departed worker was the leader (a new one hands out at once), any worker alive at t may lead: the
    shortest and the longest of their delays bound the two directions. (shortest s, longest s, source)."""
    leader = v.leader_at(t)
    whom = [leader] if leader and leader != departed else \
        [m for m, b in v.born.items() if b <= t and m != departed and (m not in v.died or v.died[m][0] >= t)]
    got = {}
    for m in whom:
        st = started_of(v.events, m, t)
        if (ms := recorded_ms(st, (DELAY,))) is not None:
            got.setdefault(ms[0], []).append(f"{m} (its worker config at its start at {st['mono'] - events_t0(v.events):.1f}s)")
    if not got:
        d = settings.scheduled_delay_s
        why = f"the leader {leader}" if whom == [leader] else "no worker alive then"
        return d, d, f"the run's scheduled_delay_s={d:g}s: {why} recorded no {DELAY}"
    if whom == [leader]:
        (ms, (who,)), = got.items()
        return ms / 1000, ms / 1000, f"the leader {who}: {DELAY}={ms}"
    lo, hi = min(got) / 1000, max(got) / 1000
    what = "; ".join(f"{DELAY}={ms} on {', '.join(ws)}" for ms, ws in sorted(got.items()))
    lead = "the leader left" if leader == departed else "no worker named the leader"
    return lo, hi, f"{lead}, so any worker alive then may lead: {what}"
