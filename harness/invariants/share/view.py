"""The view every share-group checker reads (design invariant 10), built once per history.

A *record* is (topic, partition, offset). A *delivery* is one `share_acquired` event: member m got record r at
`acq` with the broker's delivery count. Its *hold* (the lock m has on r) is judged with the group's record lock
duration L (`share.record.lock.duration.ms` as the run's `group_settings` event read it from the group's config,
else the brokers' `group.share.record.lock.duration.ms`; never a constant: without either the checkers are
unknown). The member records `acq` when poll returns it, after the broker took the lock; a client may have taken
it well before (the Java KafkaShareConsumer fetches the next records while the application works on the last
ones, and their locks run meanwhile), so the event may say `since_mono`, the earliest the client may have
acquired it (the start of the member's previous poll). The broker's lock ran out somewhere in
[since + L, acq + L], since = `since_mono`, else acq - S where S (`clock_slack_s`) bounds the time from the
broker's acquisition to poll returning it. Two ends are therefore used:

- the *sure end* (inside the broker's hold): min(the member's first acknowledgement of r asked for after acq,
  the member's exit, since + L); the overlap and in-flight checkers count only sure holds, so what they find
  surely happened;
- the *latest end* (the broker's lock surely gone): min(exit, acq + L, the next delivery of r); an action on r
  after it is on a record the member no longer held.

E, the end of the history, is the last `run_end` (else the last event). A member's *life* runs from its
`member_start` to its `member_exit` (E if none).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from harness.record.history import History
from harness.invariants.core import SettingsDict
from harness.invariants.settings import unread_of
from harness.invariants.clock import run_s

#: event types only share-group members write
SHARE_EVENT_TYPES = frozenset({"share_acquired", "share_processed", "share_acked"})
#: group config -> the brokers' default of it (their group.share.* config), for each setting the checkers use
KEYS = {"lock_ms": ("share.record.lock.duration.ms", "group.share.record.lock.duration.ms"),
        "delivery_limit": ("share.delivery.count.limit", "group.share.delivery.count.limit"),
        "max_record_locks": ("share.partition.max.record.locks", "group.share.partition.max.record.locks"),
        "session_ms": ("share.session.timeout.ms", "group.share.session.timeout.ms"),
        "heartbeat_ms": ("share.heartbeat.interval.ms", "group.share.heartbeat.interval.ms")}


@dataclass(frozen=True, kw_only=True)
class ShareCheckSettings(SettingsDict):
    """The share checkers' tolerances (the group's own settings come from the history, never from here).

    `clock_slack_s`: the longest time from the broker acquiring a record to the member's poll returning it
    (the fetch response's way back and the client's queue). Older runs' `serve_slack_s` (a fixed part of
    `share_served`'s bound, now made of what the run recorded) is ignored."""

    topics: tuple = ()
    clock_slack_s: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", tuple(str(t) for t in self.topics))


class Setting(NamedTuple):
    value: float | None
    source: str

    def says(self, name: str, unit: str = "") -> str:
        return f"{name}={self.value:g}{unit} ({self.source})" if self.value is not None else f"{name} unknown"


class Delivery(NamedTuple):
    record: tuple
    member: str
    acq: float
    count: int
    seq: int  # the share_acquired event's position
    sure_end: float
    latest_end: float
    ended_by: str  # "accept", "reject", "release" (acknowledged, the broker took it), "expiry", "exit", "open"
    ack: dict | None  # the acknowledgement that ended it (ok or not)
    since: float = 0.0  # the start of the member's previous poll (its `since_mono`): the records of one poll share it


def answer_lost(ack: dict | None) -> bool:
    """Whether an acknowledgement's answer was lost rather than given: the member says so (`answer` = `lost`: its
    client gave up without the broker's answer, a disconnect, a timeout or a wakeup), not a broker's refusal.
    A history written before the field says it by librdkafka's local errors (`code=_TRANSPORT`, `_TIMED_OUT`,
    ...: named with a leading underscore) and its REQUEST_TIMED_OUT (its socket timeout on a ShareAcknowledge;
    `harness/members/share_member.py`, `answer_of`). The broker may have taken it: `share-rolling-upgrade` (seed 1,
    4.3.1 -> 4.4.0) saw an accept answered `_TRANSPORT` by a leader shutting down, which had written the record
    acknowledged to `__share_group_state` 0.1 s after the client gave up; the next leader went on from the offset
    after it."""
    if not ack or ack.get("ok"):
        return False
    if ack.get("answer") is not None:
        return ack["answer"] == "lost"
    return any(mark in str(ack.get("error") or "") for mark in ("code=_", "code=REQUEST_TIMED_OUT"))


def has_share_events(history: History) -> bool:
    return history.derived("has_share_events", lambda: any(e.get("type") in SHARE_EVENT_TYPES
                                                          for _, e in history.control()))


def group_setting(history: History, key: str) -> Setting:
    """One of KEYS as the run recorded it: the group's config, else the brokers' default; (None, why) if neither."""
    group_key, broker_key = KEYS[key]
    ev = next((e for _, e in reversed(history.control()) if e.get("type") == "group_settings"), None)
    if ev is None:
        return Setting(None, "no group_settings event")
    unread = unread_of(ev)
    for where, k, what in (("group", group_key, "the group's config"), ("broker", broker_key, "the brokers' default")):
        v = (ev.get(where) or {}).get(k)
        if v not in (None, ""):
            return Setting(float(v), f"{k}, {what} read at {run_s(history, ev['mono'])}")
        if where == "group" and "group" in unread:  # a group config may be set: the brokers' value is no stand-in
            return Setting(None, f"the group's {group_key} could not be read at {run_s(history, ev['mono'])} "
                                 f"({unread['group']})")
    return Setting(None, f"neither {group_key} nor {broker_key} in the group_settings event"
                   + (f" (unread: {'; '.join(f'{k}: {w}' for k, w in sorted(unread.items()))})" if unread else ""))


class ShareView(NamedTuple):
    end: float
    lock_s: float
    lock: Setting
    deliveries: dict  # record -> [Delivery] by acq
    actions: list  # (member, t, what, record, event): share_processed and share_acked (t: requested_mono)
    lives: dict  # member -> (start, end, how)
    exits: list  # (t, member, how)


def build(history: History, s: ShareCheckSettings) -> ShareView | str:
    """The view, or why it cannot be built (then the checkers are unknown)."""
    lock = group_setting(history, "lock_ms")
    if lock.value is None:
        return f"the record lock duration is unknown: {lock.source}"
    return history.derived(("share_view", lock, s.clock_slack_s), lambda: _build(history, s, lock))


def _build(history: History, s: ShareCheckSettings, lock: Setting) -> ShareView:
    evs = history.control()
    end = next((e["mono"] for _, e in reversed(evs) if e.get("type") == "run_end"), evs[-1][1]["mono"] if evs else 0.0)
    L, S = lock.value / 1000, s.clock_slack_s
    lives, exits, acqs, actions, acks = {}, [], {}, [], {}
    for seq, e in evs:
        t, ty, m = e["mono"], e.get("type"), e.get("member")
        if ty == "member_start":
            lives[m] = (t, end, "open")
        elif ty == "member_exit" and m in lives and lives[m][2] == "open":
            lives[m] = (lives[m][0], t, e.get("how") or "exit")
            exits.append((t, m, e.get("how")))
        elif ty in SHARE_EVENT_TYPES:
            r = (e["topic"], int(e["partition"]), int(e["offset"]))
            if ty == "share_acquired":
                since = float(e["since_mono"]) if e.get("since_mono") is not None else t - S
                acqs.setdefault(r, []).append((t, m, int(e["delivery_count"]), seq, min(since, t)))
            else:
                at = float(e.get("requested_mono", t)) if ty == "share_acked" else t
                actions.append((m, at, ty, r, e))
                if ty == "share_acked":
                    acks.setdefault((r, m), []).append((at, e))
    deliveries = {}
    for r, lst in acqs.items():
        # in the broker's order: by delivery count (the broker raises it at each acquisition), then time. A client
        # may hand over a record long after the broker gave it: `share-member-pause --member java` (seed 1) had a
        # member stopped mid-poll hand over offset 12 with count 3 on resuming, after the broker had given it to
        # another member with count 4 (accepted); the broker refused the late member's release
        lst.sort(key=lambda x: (x[2], x[0], x[3]))
        out = []
        for i, (t, m, count, seq, since) in enumerate(lst):
            nxt = lst[i + 1][0] if i + 1 < len(lst) else float("inf")
            exit_t = lives.get(m, (0, end, "open"))[1] if lives.get(m, (0, end, "open"))[2] != "open" else float("inf")
            ack = next(((at, a) for at, a in acks.get((r, m), []) if t <= at < nxt), None)
            ends = [(since + L, "expiry" if since + L <= end else "open"), (exit_t, "exit")]
            if ack and ack[1].get("ok"):  # a refused acknowledgement ends nothing the broker still held
                ends.append((ack[0], ack[1]["ack"]))
            sure, how = min(ends, key=lambda x: x[0])
            out.append(Delivery(r, m, t, count, seq, max(sure, t), min(exit_t, t + L, nxt), how, ack and ack[1], since))
        deliveries[r] = out
    return ShareView(end, L, lock, deliveries, sorted(actions, key=lambda x: x[1]), lives, sorted(exits))
