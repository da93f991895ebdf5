"""Derived views of a history that every invariant reads: lives, faults, ownership, snapshots.

Times are `mono` seconds on the shared clock. E, the end of the history, is the last `run_end`, else
the last event; events after E are not read.

- **Life** of a member: from its `member_start` (or its first own event, when that comes earlier or
  there is no `member_start`) to its `member_exit`, [start, end); still alive at E when it has no exit.
  A kill is recorded once the process is gone, after the signal; own events outside a life are still not
  read as ownership.
- **Fault window**: `fault_start` .. the `fault_end` of the same fault_id, [start, end); a fault never
  lifted lasts past E. It affects the members it reaches, as the one model of causes says (`causes`):
  those in its `members_affected` and, for a network or rack fault, those started inside its window.
- **Good standing**: alive and affected by no active fault.
- **Ownership interval** of member m and partition p: from m's `assigned` naming p to m's `revoked` or
  `lost` naming p, or m's `member_exit`, [start, end); open (end = inf) when it lasts past E.
- **Taint** of an ownership interval: the first time within it at which a fault affecting its member
  is active. From then until the interval ends the owner may be a zombie: fenced without knowing it.
- **Disturbance**: a fault start or end (a fault still active counts at every moment), a member start
  or exit, a `broker_event`: the moments of the one model of causes (`causes.Causes.moments`). After
  one, the group may rebalance; settle and convergence count from it.
- **Workload end** W, the moment the final state is judged at: E when some member is alive then and
  there is no `drained` event. After a `drained` event the runner stops every member, and each
  graceful stop revokes: W is then the start of the first shutdown after the last `drained` (its first
  trailing `revoked`/`stopped`, or its exit), judged just before it; E when no member stops after it.
  None when no member is alive at E and there is no `drained` event (no end state to judge).
- **Partitions** are those of every topic of the run, each a global index (`topics`: partition p of the
  i-th topic is base[i] + p; with one topic, p itself). A member subscribes to some of the topics
  (`topics.Subscriptions`: every one unless its `started` says otherwise). The partitions *required* at
  t are those of the topics some member alive at t subscribes to (all of them when no member is
  alive): a topic nobody alive subscribes to need not be owned.
- **Stable snapshot**: a maximal stretch of positive length over which the ownership map does not
  change and is complete: every required partition has exactly one owner (owners are alive by
  construction). Snapshots are separated by a change of the map or by an incomplete stretch.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import replace

import numpy as np

from harness.record.history import History
from harness.invariants.core import MEMBER_EVENT_TYPES, CheckSettings
from harness.invariants.terms import (BULK_TYPES, FREEZING_FAULT_KINDS, INF, OWNERSHIP_TYPES, Fault, Life,  # noqa: F401
                                      Ownership, Snapshot, TimelineError, commit_offsets, covers, faults_of,
                                      resolve_topic, rows_of, sweep_owners, topic_partitions)
from harness.invariants.topics import Growth, Layout, Subscriptions, raw_spans


class Timeline:
    """The derived views of one history over the run's topics; build with `build(history, settings)`."""

    def __init__(self, history: History, settings: CheckSettings) -> None:
        self.history = history
        self.settings = settings
        #: (seq, event) of every event not of BULK_TYPES, in history order; bulk ones are history.bulk(type)
        self.control = history.control()
        self.n_events = len(history)
        self.first_seen = self._first_seen()  # each member's first own event
        if settings.topics:
            names, declared = [t for t, _ in settings.topics], [int(n) for _, n in settings.topics]
        else:
            names, declared = [resolve_topic(history, settings.topic)], [settings.partitions]
        #: partitions added while the run went on (`topics.Growth`); the layout takes the final counts
        self.growth = Growth(self.control, names)
        declared = [max(d, self.growth.final(i, 0)) for i, d in enumerate(declared)]
        spans = raw_spans(history, names, self.control) if len(names) > 1 else [0]
        #: the run's topics and the global index of their partitions (see `topics`)
        self.layout = Layout(history, names, [max(d, s) for d, s in zip(declared, spans)])
        self.topics = names
        self.topic = names[0]  # the first topic (the only one of a single-topic run)
        self.topic_code = history.code(self.topic)
        runs = [e for _, e in self.control if e["type"] == "run_end"]
        first, last = history.mono_range
        self.end = runs[-1]["mono"] if runs else last
        self.start = start["mono"] if (start := history.run_start()) else first
        self.lives = self._lives()
        self._life_bounds: list[float] | None = None
        self._alive_between: dict[tuple, frozenset] = {}  # (next life bound, on it, before) -> who lives then
        self.subscriptions = Subscriptions(self.control, names, self.end)
        self.faults = self._faults()
        self.ownerships = self._ownerships()
        self.by_partition: dict[int, list[Ownership]] = {}
        self.by_member: dict[tuple[str, int], list[Ownership]] = {}
        for o in self.ownerships:
            self.by_partition.setdefault(o.partition, []).append(o)
            self.by_member.setdefault((o.member, o.partition), []).append(o)
        self.layout.counts, self.partitions_inferred = self._partition_counts(declared)
        #: how many partitions the run's topics have in all; every one of them, as global indices
        self.partitions = sum(self.layout.counts)
        self.all_partitions = self.layout.partitions()
        self._by_member: dict[str, list[tuple[int, dict]]] | None = None  # member_events' index
        self._points: list[float] | None = None  # last_disturbance_time's index
        self._pairs: list[np.ndarray] | None = None  # processed_pairs'
        self.workload_end, self.end_before = self._workload_end()

    def _first_seen(self) -> dict[str, dict]:
        """Each member's first event of MEMBER_EVENT_TYPES, in history order (bulk ones read as dicts)."""
        first: dict[str, tuple[int, dict | None]] = {}
        for i, e in self.control:
            if e["type"] in MEMBER_EVENT_TYPES and e.get("member") and e["member"] not in first:
                first[e["member"]] = (i, e)
        vals = self.history.values
        for ty in ("processed", "committed"):
            b = self.history.bulk(ty)
            codes, at = np.unique(b.member, return_index=True)  # each member's first row
            for c, i in zip(codes.tolist(), b.seq[at].tolist()):
                m = vals[c]
                if m and isinstance(m, str):
                    if m not in first or i < first[m][0]:
                        first[m] = (i, None)
        got = self.history.events_at([i for i, e in first.values() if e is None])
        return {m: e if e is not None else got[i] for m, (i, e) in sorted(first.items(), key=lambda x: x[1][0])}

    # -- building
    def _lives(self) -> dict[str, list[Life]]:
        lives: dict[str, list[Life]] = {}
        pending: dict[str, dict] = {}
        first = {m: e for m, e in self.first_seen.items() if e["mono"] <= self.end}
        iid: dict[str, str | None] = {}
        for _, e in self.control:
            if e["mono"] > self.end:
                break
            ty, m = e["type"], e.get("member")
            if not m:
                continue
            if ty in MEMBER_EVENT_TYPES:
                if ty == "started" and e.get("instance_id"):
                    iid.setdefault(m, e["instance_id"])
            elif ty == "member_start":
                if m in pending:  # a second start without an exit ends the previous life
                    s = pending[m]
                    lives.setdefault(m, []).append(Life(m, s["mono"], e["mono"], s.get("instance_id"), None, s, None))
                pending[m] = e
            elif ty == "member_exit":
                s = pending.pop(m, None) or first.get(m) or e
                lives.setdefault(m, []).append(
                    Life(m, s["mono"], e["mono"], s.get("instance_id"), e.get("how"), s, e))
        for m, s in pending.items():
            lives.setdefault(m, []).append(Life(m, s["mono"], INF, s.get("instance_id"), None, s, None))
        for m, e in first.items():
            ls = lives.setdefault(m, [])
            if not ls:
                ls.append(Life(m, e["mono"], INF, None, None, e, None))
            ls.sort(key=lambda lf: lf.start)
            if e["mono"] < ls[0].start:
                ls[0] = replace(ls[0], start=e["mono"], start_event=e)
        for m, ls in lives.items():
            for i, lf in enumerate(ls):
                if lf.instance_id is None and iid.get(m):
                    ls[i] = replace(lf, instance_id=iid[m])
        return lives

    def _faults(self) -> list[Fault]:
        return faults_of(self.control, self.end)

    def _ownerships(self) -> list[Ownership]:
        open_: dict[tuple[str, int], tuple[float, int, dict]] = {}
        out: list[Ownership] = []

        def close(key, t, i, e, reason):
            s, si, se = open_.pop(key)
            out.append(Ownership(key[0], key[1], s, t, si, i, se, e, reason))

        for i, e in self.control:
            t, ty, m = e["mono"], e["type"], e.get("member")
            if t > self.end:
                break
            if ty == "assigned" and self.alive(m, t):
                for p in self.layout.of_event(e):
                    open_.setdefault((m, p), (t, i, e))
            elif ty in ("revoked", "lost"):
                for p in self.layout.of_event(e):
                    if (m, p) in open_:
                        close((m, p), t, i, e, ty)
            elif ty == "member_exit":
                for key in [k for k in open_ if k[0] == m]:
                    close(key, t, i, e, "exit")
        for key in list(open_):
            close(key, INF, self.n_events, None, "end")
        out.sort(key=lambda o: o.start_seq)
        return out

    def _partition_counts(self, declared: list[int]) -> tuple[list[int], bool]:
        """Each topic's partition count: the declared one, else its highest partition seen + 1 (inferred), which may
        not exceed the history's number of events (TimelineError: the checkers' work stays bounded by the history)."""
        counts, inferred = [], False
        for i, (name, n) in enumerate(zip(self.topics, declared)):
            if n > 0:
                counts.append(n)
                continue
            inferred = True
            base = self.layout.base[i]
            seen = {o.partition - base for o in self.ownerships if self.layout.topic_of(o.partition) == i}
            for ty in ("processed", "acked"):
                b = self.history.bulk(ty)
                rows = rows_of(b.topic, self.history.code(name))
                if len(rows):
                    seen.add(int(b.partition[rows].max()))
            if seen and max(seen) >= len(self.history):  # every bound from the history: its own size here
                raise TimelineError(f"partition {max(seen)} of topic {name} is named, but the history records no "
                                    f"partition count for the topic and holds {len(self.history)} events: an "
                                    f"inferred count is at most the history's events")
            counts.append(max(seen) + 1 if seen else 0)
        return counts, inferred

    # -- partitions of several topics
    def name(self, p: int):
        """A partition as messages, witnesses and measurements show it (see `topics.Layout.name`)."""
        return self.layout.name(p)

    def names(self, ps) -> list:
        """Partitions, sorted, as shown to people."""
        return self.layout.names_of(ps)

    def event_partitions(self, ev: dict) -> list[int]:
        """The partitions of the run's topics an assigned/revoked/lost event names."""
        return self.layout.of_event(ev)

    def subscribed(self, member: str, t: float, before: bool = False) -> frozenset:
        """The indices of the topics a member subscribes to at t."""
        return self.subscriptions.of(member, t, before)

    def required(self, t: float, before: bool = False) -> list[int]:
        """The partitions that must be owned at t: those of the topics some live member subscribes to
        (every partition when no member is alive, or no member wrote a subscription) that exist at t."""
        alive = self.alive_members(t, before) if self.subscriptions.declared else None
        topics = frozenset().union(*(self.subscribed(m, t, before) for m in alive)) if alive else None
        out = self.all_partitions if topics is None or len(topics) == len(self.topics) else \
            self.layout.partitions(topics)
        return [p for p in out if self.exists(p, t, before)] if self.growth.steps else out

    def counts_at(self, t: float, before: bool = False) -> dict[str, int]:
        """Each topic's partition count at t (partitions added while the run went on count from then)."""
        return {n: self.growth.count_at(i, t, c, before) for i, (n, c) in enumerate(zip(self.topics, self.layout.counts))}

    def exists(self, p: int, t: float, before: bool = False) -> bool:
        """Whether global partition p exists at t."""
        i = self.layout.topic_of(p)
        return p - self.layout.base[i] < self.growth.count_at(i, t, self.layout.counts[i], before)

    def born(self, p: int) -> float:
        """When global partition p came to exist (-inf: from the start)."""
        i = self.layout.topic_of(p)
        return self.growth.born(i, p - self.layout.base[i])

    def shutdown_start(self, life: Life) -> float:
        """When a member's graceful stop began: its member_stop (SIGTERM), else its first trailing revoked/stopped."""
        if life.how != "graceful" or life.exit_event is None:
            return life.end
        stops = [e["mono"] for _, e in self.member_events(life.member, ("member_stop",))
                 if life.start <= e["mono"] <= life.end]
        if stops:
            return stops[-1]
        from harness.invariants.settings import MissingSetting, member_settings  # it reads this timeline
        try:
            lo = max(life.start, life.end - member_settings(self, life.member, life.end - 1e-6).session_timeout_s)
        except MissingSetting:  # its session timeout unknown: the trailing events of its whole life are read
            lo = life.start
        begin = life.end
        for _, e in self.member_events(life.member, ("assigned", "lost", "revoked", "stopped")):
            if not lo <= e["mono"] <= life.end:
                continue
            if e["type"] in ("assigned", "lost"):
                begin = life.end  # a later assignment: what came before it was no shutdown
            elif e["type"] in ("revoked", "stopped") and begin == life.end:
                begin = e["mono"]
        return begin

    def _workload_end(self) -> tuple[float | None, bool]:
        drained = [e for _, e in self.control if e["type"] == "drained" and e["mono"] <= self.end]
        if drained:
            d = drained[-1]["mono"]
            stops = [max(d, self.shutdown_start(lf)) for ls in self.lives.values() for lf in ls
                     if d < lf.end <= self.end]
            if stops and min(stops) < self.end:
                return min(stops), True
            return self.end, False
        if any(self.alive(m, self.end) for m in self.lives):
            return self.end, False
        return None, False

    # -- questions
    def alive(self, member: str | None, t: float, before: bool = False) -> bool:
        return any(covers(lf.start, lf.end, t, before) for lf in self.lives.get(member or "", ()))

    def given_by(self, member: str, t: float) -> bool:
        """Whether the member's life alive at t (else its last begun by t) recorded an `assigned` event, empty ones
        too, by t: one given nothing yet may not have joined the group."""
        since = max((lf.start for lf in self.lives.get(member, ()) if lf.start <= t), default=self.start)
        return any(since <= e["mono"] <= t for _, e in self.member_events(member, ("assigned",)))

    def with_instance(self, instance_id: str | None, t: float) -> str | None:
        """The member whose life under group.instance.id `instance_id` started last by `t` (None: none had)."""
        if not instance_id:
            return None
        index = self.__dict__.get("_instances")
        if index is None:
            index = {}
            for ls in self.lives.values():
                for lf in ls:
                    if lf.instance_id:
                        index.setdefault(lf.instance_id, []).append((lf.start, lf.member))
            index = self.__dict__["_instances"] = {k: sorted(v) for k, v in index.items()}
        started = [x for s, x in index.get(instance_id, ()) if s <= t]
        return started[-1] if started else None

    def alive_members(self, t: float, before: bool = False) -> set[str]:
        if self._life_bounds is None:  # the lives' starts and ends: between two of them the live set stays the same
            self._life_bounds = sorted({x for ls in self.lives.values() for lf in ls for x in (lf.start, lf.end)})
        i = bisect_left(self._life_bounds, t)
        on_bound = i < len(self._life_bounds) and self._life_bounds[i] == t  # then `before` matters
        key = (i, on_bound, on_bound and before)
        if key not in self._alive_between:  # hundreds of members, asked at thousands of moments
            self._alive_between[key] = frozenset(m for m in self.lives if self.alive(m, t, before))
        return set(self._alive_between[key])

    def reaching(self, member: str) -> list:
        """The faults and request faults that reached the member, by start, from the one model of causes
        (`causes`: those that list it and, for a network or rack fault, those it started inside of)."""
        from harness.invariants import causes  # it reads this timeline
        index = self.__dict__.setdefault("_reaching", {})
        if member not in index:
            index[member] = [c for c in causes.build(self).of("faulted", "request") if c.concerns(member)]
        return index[member]

    def affected(self, member: str, t: float) -> bool:
        """Whether a fault that reached the member (`reaching`) is active at t."""
        return any(c.start <= t < c.end for c in self.reaching(member))

    def in_good_standing(self, member: str, t: float) -> bool:
        return self.alive(member, t) and not self.affected(member, t)

    def good_standing(self, member: str) -> list[tuple[float, float]]:
        """The intervals during which a member is alive and reached by no active fault (clipped to the history)."""
        out = []
        for lf in self.lives.get(member, ()):
            cur = [(lf.start, min(lf.end, self.end))]
            for f in self.reaching(member):
                cur = [piece for a, b in cur for piece in ((a, min(b, f.start)), (max(a, f.end), b))
                       if piece[0] < piece[1]]
            out.extend(cur)
        return sorted(out)

    def taint(self, o: Ownership) -> float:
        """The first time in an ownership interval at which a fault that reached its member (`reaching`) is active
        (inf: none)."""
        return min((max(c.start, o.start) for c in self.reaching(o.member) if c.start < o.end and c.end > o.start),
                   default=INF)

    def frozen_time(self, member: str, a: float, b: float) -> float:
        """Seconds of [a, b) during which a freezing fault (pause) affected the member."""
        spans = sorted((max(a, f.start), min(b, f.end)) for f in self.faults
                       if member in f.members and f.kind in FREEZING_FAULT_KINDS and f.start < b and f.end > a)
        total, reach = 0.0, a
        for s, e in spans:
            s = max(s, reach)
            if e > s:
                total += e - s
                reach = e
        return total

    def owners_at(self, t: float, before: bool = False) -> dict[int, list[str]]:
        """Partition -> members holding it at t (after the events at t), or just before t."""
        out: dict[int, list[str]] = {}
        for o in self.ownerships:
            if covers(o.start, o.end, t, before):
                out.setdefault(o.partition, []).append(o.member)
        return out

    def complete(self, owners: dict[int, list[str]], required: list[int] | None = None) -> bool:
        """Whether every required partition (all by default) has exactly one owner."""
        required = self.all_partitions if required is None else required
        return len(required) > 0 and all(len(owners.get(p, ())) == 1 for p in required)

    def disturbances(self, until: float, before: bool = False) -> list[tuple[float, dict]]:
        """(time, event) of every disturbance up to `until`, by time; a fault active then counts at `until`. What a
        disturbance is, the one model of causes decides (`causes.Causes.moments`)."""
        from harness.invariants import causes  # it reads this timeline
        return causes.build(self).moments(until, before)

    def last_disturbance_time(self, until: float) -> float | None:
        """The time of `last_disturbance(until)` (None: none), from an index built once: for many lookups."""
        self._points = self._points or sorted([t for t, e in self.disturbances(self.end) if e is not None
                                               and not (e["type"] == "fault_start" and t == self.end)])
        if any(f.start <= until < f.end for f in self.faults):
            return until  # a fault active then counts at that moment
        k = bisect_right(self._points, until)
        return self._points[k - 1] if k else None

    def last_disturbance(self, until: float, before: bool = False) -> tuple[float, dict] | None:
        d = self.disturbances(until, before)
        return d[-1] if d else None

    def snapshots(self) -> list[Snapshot]:
        """The stable assignment snapshots over the whole history, in time order."""
        times = sorted({o.start for o in self.ownerships} | {o.end for o in self.ownerships if o.end <= self.end})
        out: list[Snapshot] = []
        for i, (t, owners) in enumerate(sweep_owners(self.ownerships, times, self.end)):
            nxt = times[i + 1] if i + 1 < len(times) else self.end
            if nxt <= t:
                continue
            required = self.required(t)
            if not self.complete(owners, required):
                continue
            m = {p: owners[p][0] for p in required}
            if out and out[-1].owners == m and out[-1].end == t:
                out[-1] = replace(out[-1], end=nxt)
            else:
                out.append(Snapshot(t, nxt, m))
        return out

    def member_events(self, member: str, types: frozenset | set | tuple) -> list[tuple[int, dict]]:
        """(seq, event) of a member's control events of these types up to E."""
        if set(types) & BULK_TYPES:
            raise ValueError("member_events reads control events only; bulk ones are history.bulk(type)")
        if self._by_member is None:  # each member's control events, indexed once (hundreds of members)
            self._by_member = {}
            for i, e in self.control:
                if e.get("member") and e["mono"] <= self.end:
                    self._by_member.setdefault(e["member"], []).append((i, e))
        return [(i, e) for i, e in self._by_member.get(member, ()) if e["type"] in types]

    def processed_pairs(self) -> list[np.ndarray]:
        """The rows of the `processed` events of the run's topics up to E, one array per member and (global)
        partition, each in history order, the arrays by member code then partition (shared by the checkers)."""
        if self._pairs is None:
            b = self.history.bulk("processed")
            rows, gpart = self.layout.columns(b)
            rows = rows[b.mono[rows] <= self.end]
            mem, part = b.member[rows], gpart[rows]
            order = np.lexsort((part, mem))  # stable: each group keeps history order
            rows, mem, part = rows[order], mem[order], part[order]
            cut = np.flatnonzero((mem[1:] != mem[:-1]) | (part[1:] != part[:-1])) + 1
            self._pairs = np.split(rows, cut) if len(rows) else []
        return self._pairs


def build(history: History, settings: CheckSettings) -> Timeline:
    """The timeline of a history for the settings' topics: built once per history and settings, then shared by
    every checker of the judgment (the history does not change)."""
    return history.derived(("timeline", settings), lambda: Timeline(history, settings))
