"""The shapes the timeline is made of (lives, faults, ownership intervals, snapshots) and the small
helpers that read events; the definitions are in `timeline`'s docstring."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.record.history import BULK_TYPES as BULK
from harness.record.history import History

INF = math.inf
OWNERSHIP_TYPES = frozenset({"assigned", "revoked", "lost"})
#: the many per-record events, stored as columns by the reader; the timeline's own views read only the rest
#: ("control" events)
BULK_TYPES = frozenset(BULK)
#: fault kinds that stop a member's process (SIGSTOP): it can do nothing while one is active
FREEZING_FAULT_KINDS = frozenset({"pause"})


class TimelineError(ValueError):
    """The history cannot be read as a timeline of the run's topics (bad input, not an indeterminate outcome)."""


@dataclass(frozen=True)
class Life:
    member: str
    start: float
    end: float  # inf: alive at the end of the history
    instance_id: str | None
    how: str | None
    start_event: dict
    exit_event: dict | None


@dataclass(frozen=True)
class Fault:
    fault_id: str
    kind: str
    start: float
    end: float  # inf: never lifted
    members: frozenset
    start_event: dict
    end_event: dict | None

    def active(self, t: float) -> bool:
        return self.start <= t < self.end


@dataclass(frozen=True)
class Ownership:
    member: str
    partition: int
    start: float
    end: float  # inf: still held at the end of the history
    start_seq: int  # index of the start event in history.events
    end_seq: int  # index of the end event; len(events) when open
    start_event: dict
    end_event: dict | None
    end_reason: str  # revoked, lost, exit, end


@dataclass(frozen=True)
class Snapshot:
    start: float
    end: float
    owners: dict  # partition -> member

    def held(self) -> dict[str, set[int]]:
        out: dict[str, set[int]] = {}
        for p, m in self.owners.items():
            out.setdefault(m, set()).add(p)
        return out


def topic_partitions(ev: dict, topic: str) -> list[int]:
    """Partitions of topic named by an assigned/revoked/lost event."""
    return [int(p) for t, p in (ev.get("partitions") or ()) if t == topic]


def commit_offsets(ev: dict, topic: str) -> dict[int, int]:
    """Partition -> committed offset (next to read) of topic in a `committed` event."""
    return {int(p): int(o) for t, p, o in (ev.get("offsets") or ()) if t == topic}


def resolve_topic(history: History, topic: str) -> str:
    """The checked topic when the settings name no `topics`: the given one, else the only topic the history
    names (TimelineError when it names several: the run's topics must then be set)."""
    if topic:
        return topic
    seen: set[str] = set()
    for _, e in history.control():
        ty = e.get("type")
        if ty in OWNERSHIP_TYPES:
            seen.update(t for t, _ in (e.get("partitions") or ()))
        elif ty == "started" and e.get("topic"):
            seen.add(e["topic"])
    vals = history.values
    for ty in ("processed", "acked"):
        seen.update(vals[c] for c in np.unique(history.bulk(ty).topic).tolist() if vals[c])
    if len(seen) > 1:
        raise TimelineError(f"the history names several topics ({', '.join(sorted(seen))}); set the topic "
                            f"to check, or the run's topics (CheckSettings.topics)")
    return next(iter(seen), "")


def rows_of(column, code: int | None):
    """The rows (a numpy array) of a code column that hold the code."""
    if code is None or not len(column):
        return np.zeros(0, np.int64)
    return np.flatnonzero(column == code)


def faults_of(control: list[tuple[int, dict]], end: float) -> list[Fault]:
    """The fault windows of a history's control events up to E, by start."""
    open_: dict[str, dict] = {}
    out: list[Fault] = []
    for _, e in control:
        if e["mono"] > end:
            break
        if e["type"] == "fault_start":
            open_[e.get("fault_id")] = e
        elif e["type"] == "fault_end" and e.get("fault_id") in open_:
            s = open_.pop(e["fault_id"])
            out.append(Fault(s.get("fault_id"), s.get("kind", ""), s["mono"], e["mono"],
                             frozenset(s.get("members_affected") or ()), s, e))
    for s in open_.values():
        out.append(Fault(s.get("fault_id"), s.get("kind", ""), s["mono"], INF,
                         frozenset(s.get("members_affected") or ()), s, None))
    out.sort(key=lambda f: f.start)
    return out


def covers(start: float, end: float, t: float, before: bool = False) -> bool:
    """Whether [start, end) holds at t, or just before t when `before`."""
    return start < t <= end if before else start <= t < end


def sweep_owners(ownerships, times, end: float):
    """(t, partition -> members holding it at t) for each of the sorted `times`, as `Timeline.owners_at(t)` gives it
    (a partition may map to an empty list), in one sweep over the ownership intervals; the dict is reused."""
    starts = sorted(ownerships, key=lambda o: o.start)
    ends = sorted((o for o in ownerships if o.end <= end), key=lambda o: o.end)
    owners: dict[int, list[str]] = {}
    si = ei = 0
    for t in times:
        while si < len(starts) and starts[si].start <= t:
            owners.setdefault(starts[si].partition, []).append(starts[si].member)
            si += 1
        while ei < len(ends) and ends[ei].end <= t:
            owners[ends[ei].partition].remove(ends[ei].member)
            ei += 1
        yield t, owners
