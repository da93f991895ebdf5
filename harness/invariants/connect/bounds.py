"""The Connect checkers' session-timeout bounds, per worker and per moment: the `session.timeout.ms` of the worker
config the worker ran with then, as its own `started` event recorded it (`settings`, its worker config).

A worker's life in the Connect view is one process (`view`), so its `started` event is the one of its life: the
latest at or before the moment (`settings.started_of`). A worker whose start recorded none is judged with the
run's value (`session_timeout_s`, `zombie_tolerance_s`), and the source says so.
"""
from __future__ import annotations

from harness.invariants.connect.view import ConnectCheckSettings, View
from harness.invariants.settings import session_bound

KEYS = ("session.timeout.ms",)
WHAT = "its worker config"


def detection(v: View, settings: ConnectCheckSettings, member: str, t: float) -> tuple[float, str]:
    """How long the group takes to notice that `member`, killed at t, is gone: its session timeout then."""
    return session_bound(v.events, member, t, KEYS, WHAT, 1, settings.session_timeout_s, "session_timeout_s")


def zombie_tolerance(v: View, settings: ConnectCheckSettings, member: str, t: float) -> tuple[float, str]:
    """How long a frozen `member` may run a unit after it moved at t: twice its session timeout then."""
    return session_bound(v.events, member, t, KEYS, WHAT, 2, settings.zombie_tolerance_s, "zombie_tolerance_s")
