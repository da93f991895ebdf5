"""Small builders of hand-made history events (docs/history.md) for the invariant tests.

Times are `mono` seconds; partitions are plain ints of the topic TOPIC unless a topic is given. For runs of
several topics, a partition may also be given as a (topic, partition) pair, and `started` may carry a
subscription (a list of topic names and `^` regexes).
"""
from __future__ import annotations

from harness.record.history import History
from harness.invariants import CheckSettings

TOPIC = "t"
WALL0 = 1_700_000_000.0


def ev(type_: str, t: float, source: str, **fields) -> dict:
    return {"type": type_, "mono": float(t), "wall": WALL0 + t, "source": source, **fields}


def _tps(parts, topic):
    return [list(p) if isinstance(p, (tuple, list)) else [topic, p] for p in parts]


# -- harness events
def run_start(t: float = 0.0, **fields) -> dict:
    return ev("run_start", t, "harness", **{"run_id": "r1", "scenario": "test", "seed": 1, "settings": {}, **fields})


def run_end(t: float, status: str = "complete") -> dict:
    return ev("run_end", t, "harness", status=status)


def member_start(m: str, t: float, instance_id: str | None = None, rack: str | None = None) -> dict:
    return ev("member_start", t, "harness", member=m, pid=1000, instance_id=instance_id, rack=rack)


def member_exit(m: str, t: float, how: str = "graceful", code: int = 0) -> dict:
    return ev("member_exit", t, "harness", member=m, how=how, code=-9 if how == "kill" else code)


def fault_start(t: float, fid: str, members=(), kind: str = "pause", brokers=()) -> dict:
    return ev("fault_start", t, "harness", fault_id=fid, kind=kind, targets=list(members) or list(brokers),
              members_affected=list(members), brokers_affected=list(brokers))


def fault_end(t: float, fid: str) -> dict:
    return ev("fault_end", t, "harness", fault_id=fid)


def broker_event(t: float, broker: int, what: str) -> dict:
    return ev("broker_event", t, "harness", broker=broker, what=what, version="4.0.0")


def drained(t: float, ok: bool = True, missing: int = 0) -> dict:
    return ev("drained", t, "harness", ok=ok, missing=missing)


def stable_wait(t: float, stable: bool = True) -> dict:
    """The end of a `wait_stable` step: the runner's observer found the group settled (or gave up: `stable` false)."""
    return ev("action_end", t, "harness", action_id=f"w{t:g}", kind="wait_stable", ok=True, error=None, stable=stable)


# -- member events
def started(m: str, t: float, instance_id: str | None = None, protocol: str = "classic-cooperative",
            subscription: list[str] | None = None, topic: str = TOPIC, effective: dict | None = None) -> dict:
    extra = {} if subscription is None else {"subscription": list(subscription)}
    if effective is not None:
        extra["effective"] = effective
    return ev("started", t, "member", member=m, pid=1000, protocol=protocol, group_id="g", topic=topic,
              instance_id=instance_id, rack=None, client="test", **extra)


def assigned(m: str, t: float, parts, topic: str = TOPIC) -> dict:
    return ev("assigned", t, "member", member=m, partitions=_tps(parts, topic))


def revoked(m: str, t: float, parts, topic: str = TOPIC) -> dict:
    return ev("revoked", t, "member", member=m, partitions=_tps(parts, topic))


def lost(m: str, t: float, parts, topic: str = TOPIC) -> dict:
    return ev("lost", t, "member", member=m, partitions=_tps(parts, topic))


def stopped(m: str, t: float) -> dict:
    return ev("stopped", t, "member", member=m, reason="sigterm")


def processed(m: str, t: float, partition: int, first: int, last: int, topic: str = TOPIC) -> dict:
    return ev("processed", t, "member", member=m, topic=topic, partition=partition, first_offset=first,
              last_offset=last, count=last - first + 1)


def committed(m: str, t: float, offsets: dict, ok: bool = True, topic: str = TOPIC) -> dict:
    return ev("committed", t, "member", member=m, ok=ok, error=None if ok else "ILLEGAL_GENERATION",
              offsets=[[topic, p, o] for p, o in offsets.items()])


def effective(session_ms: int = 6000, heartbeat_ms: int = 500, max_poll_ms: int = 300000, protocol: str = "classic",
              instance_id: str | None = None, commit_mode: str = "sync", auto_commit_ms: int = 5000) -> dict:
    """A `started` event's `effective` settings (what the member's client runs with)."""
    return {"group.protocol": protocol, "partition.assignment.strategy": "cooperative-sticky"
            if protocol == "classic" else None, "group.instance.id": instance_id, "session.timeout.ms": session_ms,
            "heartbeat.interval.ms": heartbeat_ms, "max.poll.interval.ms": max_poll_ms,
            "enable.auto.commit": commit_mode == "auto", "auto.commit.interval.ms": auto_commit_ms,
            "commit_mode": commit_mode, "client": "test"}


def group_settings(t: float, group: dict | None = None, broker: dict | None = None) -> dict:
    """The harness's `group_settings` event: the group's configs and the brokers' group defaults."""
    return ev("group_settings", t, "harness", group_id="g", group=group or {}, broker=broker or {},
              via="DescribeConfigs")


# -- producer events
def acked(t: float, partition: int, offset: int, topic: str = TOPIC) -> dict:
    return ev("acked", t, "producer", topic=topic, partition=partition, offset=offset, key=f"k{offset}", seq=0)


# -- whole pieces
def join(m: str, t: float, parts=(), instance_id: str | None = None, subscription: list[str] | None = None,
         topic: str = TOPIC, effective: dict | None = None) -> list[dict]:
    """A member that starts at t (subscribed to `subscription`, when given; with `effective` settings, when
    given) and is assigned `parts` half a second later."""
    out = [member_start(m, t, instance_id=instance_id),
           started(m, t + 0.1, instance_id=instance_id, subscription=subscription, topic=topic, effective=effective)]
    if parts:
        out.append(assigned(m, t + 0.5, parts))
    return out


def history(*items) -> History:
    """A History from events and lists of events, in any order."""
    flat: list[dict] = []
    for it in items:
        if isinstance(it, dict):
            flat.append(it)
        else:
            flat.extend(history(*it).events)
    return History.from_events(flat)


def settings(**kw) -> CheckSettings:
    kw.setdefault("topic", TOPIC)
    kw.setdefault("partitions", 4)
    return CheckSettings(**kw)


def steady(end: float = 20.0) -> list[dict]:
    """Two members a:[0,1] and b:[2,3] from t=1 to the end, no fault."""
    return [run_start(0.0), *join("a", 0.1, [0, 1]), *join("b", 0.2, [2, 3]), run_end(end)]


def broker_said(t: float, message: str, broker: int = 1, level: str = "INFO",
                logger: str = "org.apache.kafka.coordinator.group.GroupMetadataManager") -> dict:
    """A `broker` event: a line of a broker's log about the group (history/brokers.jsonl)."""
    return ev("broker", t, "broker-log", broker=broker, level=level, logger=logger, message=message)
