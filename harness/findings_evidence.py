"""What a run's history must show before a failure is taken for a known finding (harness/findings.py).

A finding names the invariants it fails; that alone would excuse any failure of those invariants in its scenario.
A finding with an `evidence` reads the run's history for the mark of the bug itself and says what it saw, or None.
Read from the run's history files directly (small: it runs only on a failed run that matched the rest).
"""
from __future__ import annotations

from pathlib import Path

from harness.history_format import HistoryFormatError, read_file
from harness.invariants.settings import group_value, latest_at
from harness.rundir import HARNESS_HISTORY, HISTORY, member_histories

#: what a member's history says about its assignment: after one of these it has heard from the group
HEARD = frozenset({"assigned", "revoked", "lost", "started", "stopped"})


def commits_refused_unheard(run_dir: str | Path) -> str | None:
    """librdkafka-848-commit-starves-heartbeat's mark: a consumer-protocol member whose commits the group refused
    with UNKNOWN_MEMBER_ID for longer than its session timeout (the group's, as recorded) without hearing from the
    group meanwhile (no assigned, revoked or lost). A member's heartbeat would tell it within a heartbeat interval
    that it was fenced: the members that pass write `lost` at their first refused commit (docs/findings.md)."""
    hist = Path(run_dir) / HISTORY
    try:
        settings = [e for e in read_file(hist / HARNESS_HISTORY)[1] if e.get("type") == "group_settings"]
    except (OSError, HistoryFormatError):
        return None
    for path in member_histories(hist):
        try:
            events = read_file(path)[1]
        except (OSError, HistoryFormatError):
            continue
        streak: list[dict] = []
        for e in events + [{"type": "stopped", "mono": float("inf")}]:
            if e.get("type") == "committed" and not e.get("ok") and "UNKNOWN_MEMBER_ID" in str(e.get("error")):
                streak.append(e)
            elif e.get("type") in HEARD:
                if seen := _longer_than_session(streak, settings):
                    return seen
                streak = []
    return None


def _longer_than_session(streak: list[dict], settings: list[dict]) -> str | None:
    if len(streak) < 2:
        return None
    first, last = streak[0], streak[-1]
    ms, source = group_value(latest_at(settings, first["mono"]), "consumer", "session")
    if ms is None or last["mono"] - first["mono"] <= ms / 1000:
        return None
    return (f"{first.get('member')}'s commits refused with UNKNOWN_MEMBER_ID {len(streak)} times over "
            f"{last['mono'] - first['mono']:.1f}s without a word from the group (longer than its session timeout, "
            f"{source})")


def illegal_generation_lost(run_dir: str | Path) -> str | None:
    """librdkafka-4059-commit-during-cooperative-rebalance's mark: a member's commit refused with
    ILLEGAL_GENERATION and, at once (before any other event of that member), its whole assignment `lost`: the
    client took a commit racing a second join for a lost assignment and rejoined, a rebalance nothing drove."""
    for path in member_histories(Path(run_dir) / HISTORY):
        try:
            events = read_file(path)[1]
        except (OSError, HistoryFormatError):
            continue
        for e, nxt in zip(events, events[1:]):
            if e.get("type") == "committed" and not e.get("ok") and "ILLEGAL_GENERATION" in str(e.get("error")) \
                    and nxt.get("type") == "lost":
                return (f"{e.get('member')}'s commit refused with ILLEGAL_GENERATION at {e['mono']:.3f}, then its "
                        f"assignment lost at {nxt['mono']:.3f}")
    return None


#: how soon after its connection was closed a member's two deliveries with one count are taken for the finding
RECONNECT_WINDOW_S = 5.0


def share_count_kept_after_reconnect(run_dir: str | Path) -> str | None:
    """share-count-kept-after-reconnect's mark: a share member whose connection a request fault left to be closed
    (the fault's end says `closed`: the client gave it up at its request timeout) was handed one record twice with
    the same delivery count, both within RECONNECT_WINDOW_S after that close: the broker counted one of the two
    deliveries not at all, though the application got both."""
    hist = Path(run_dir) / HISTORY
    try:
        control = read_file(hist / HARNESS_HISTORY)[1]
    except (OSError, HistoryFormatError):
        return None
    member_of = {e.get("fault_id"): e.get("member") for e in control if e.get("type") == "fault_start" and e.get("api")}
    closed = [(member_of[e["fault_id"]], e["mono"]) for e in control
              if e.get("type") == "fault_end" and e.get("outcome") == "closed" and member_of.get(e.get("fault_id"))]
    for path in member_histories(hist):
        try:
            events = read_file(path)[1]
        except (OSError, HistoryFormatError):
            continue
        seen: dict = {}
        for e in events:
            if e.get("type") != "share_acquired":
                continue
            key = (e.get("topic"), e.get("partition"), e.get("offset"), e.get("delivery_count"))
            if key in seen:
                first = seen[key]
                for m, t in closed:
                    if m == e.get("member") and t <= first["mono"] and e["mono"] - t <= RECONNECT_WINDOW_S:
                        return (f"{m} was handed offset {key[2]} of {key[0]}-{key[1]} twice with delivery count "
                                f"{key[3]} ({first['mono']:.3f}, {e['mono']:.3f}), {first['mono'] - t:.3f}s after its "
                                f"connection was closed at {t:.3f}")
            seen[key] = e
    return None
