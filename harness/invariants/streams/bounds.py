"""The Streams checkers' zombie tolerance, per instance and per moment: twice the session timeout the instance ran
with then, as its own `started` event recorded it (`settings`, every Streams setting it ran with).

Under the classic protocol the session timeout is the instance's consumer's: `session.timeout.ms` (or its
`consumer.`/`main.consumer.` prefixed form). Under the `streams` protocol (KIP-1071; `group.protocol` in its
settings, else the event's `protocol`) it is the group's: the latest `group_settings` event's
`streams.session.timeout.ms`, else the brokers' `group.streams.session.timeout.ms` (`settings.GROUP_KEYS`).
An instance whose start recorded none is judged with the run's `zombie_tolerance_s`, and the source says so; a
group session timeout the history cannot tell (no `group_settings` event, or unread) is `MissingSetting`: unknown.
An instance's life in the Streams view is one process (`view`), so its `started` event is the one of its life:
the latest at or before the moment (`settings.latest_at`).
"""
from __future__ import annotations

from harness.invariants.clock import run_t0
from harness.invariants.settings import group_setting_ms, latest_at, session_bound, started_of
from harness.invariants.streams.view import StreamsCheckSettings, _View

#: where a Streams instance's settings hold its consumer's session timeout under the classic protocol
SESSION_KEYS = ("session.timeout.ms", "consumer.session.timeout.ms", "main.consumer.session.timeout.ms")


def zombie_tolerance(vw: _View, settings: StreamsCheckSettings, member: str, t: float) -> tuple[float, str]:
    """How long `member` may outlive its tasks' move at t: twice its session timeout then. (seconds, source)."""
    return vw.history.derived(("streams-zombie-tolerance", member, round(t, 6)),
                              lambda: _zombie_tolerance(vw, settings, member, t))


def unsettled_after_kills(vw: _View, settings: StreamsCheckSettings) -> list[tuple[float, float]]:
    """(kill, kill + its session timeout) for every instance killed or crashed: until the group can notice it is
    gone, the others run on with its tasks unowned and its standbys missing, which is no settled assignment
    (half of `zombie_tolerance`: one session timeout, the instance's own just before it died)."""
    return [(t, t + zombie_tolerance(vw, settings, m, t - 1e-6)[0] / 2) for m, (t, e) in vw.stop.items()
            if e["type"] == "member_exit" and e.get("how") in ("kill", "crash")]


def _zombie_tolerance(vw: _View, settings: StreamsCheckSettings, member: str, t: float) -> tuple[float, str]:
    st = started_of(vw.events, member, t)
    sets = (st or {}).get("settings") if isinstance((st or {}).get("settings"), dict) else {}
    if (sets.get("group.protocol") or (st or {}).get("protocol")) == "streams":
        gev = latest_at([e for e in vw.events if e["type"] == "group_settings"], t)
        # MissingSetting when the history cannot tell it
        ms, src = group_setting_ms(gev, "streams", "session", t0=run_t0(vw.history))
        return 2 * ms / 1000, f"twice the session timeout of {member} on the streams protocol: {src}"
    return session_bound(vw.events, member, t, SESSION_KEYS, "its Streams settings", 2,
                         settings.zombie_tolerance_s, "zombie_tolerance_s")
