"""Rebalances and per-partition downtime of one run, from its ownership events. Pure Python, no Spark.

Input: the run's ownership events as tuples ``(mono, seq, type, member, partitions)`` where ``type``
is ``assigned``, ``revoked``, ``lost`` (member events, ``partitions`` a list of ``[topic, partition]``)
or ``member_exit`` (harness event: the member process is gone, so it owns nothing from then on), plus
the end of the run's observation (``run_end``'s mono, else the last event's).

A Streams run has no ``assigned`` events of its own: a task's ``task_active`` (its processor starts, after
its restore) counts as its input partition assigned to the instance, and ``task_active_end`` as revoked,
so a partition is owned while a task is processing it. One group rebalance whose restores end at
different times shows as several bursts there.

Definitions (docs/analytics.md):

* A **rebalance** is a maximal burst of ``assigned`` / ``revoked`` / ``lost`` events (of any member)
  in which consecutive events are less than ``GAP_S`` (1 s) apart; a quiet gap of at least 1 s ends it.
* Its **duration** is the time from its first to its last event.
* Its **moves** are the partitions that had an owner before the burst and a different, non-empty set
  of owners after it (first assignments and partitions left unowned are not moves).
* Its **longest unowned** time is the longest stretch, ending inside the burst or still running at its
  end (then cut at the burst's end), in which a partition had no owner. A stretch that began before
  the burst (a killed member's partitions wait for the session timeout) counts from its real start;
  for a partition never owned before, from the burst's start.
* A partition's **downtime** is the total time it had no owner after its first assignment, up to the
  end of the run.
"""
from __future__ import annotations

GAP_S = 1.0
REBALANCE_TYPES = frozenset({"assigned", "revoked", "lost"})
OWNERSHIP_TYPES = REBALANCE_TYPES | {"member_exit"}
STREAMS_TYPES = {"task_active": "assigned", "task_active_end": "revoked"}  # a Streams run's counterparts


def _parts(ps) -> list[tuple[str, int]]:
    out = []
    for p in ps or ():
        if p is None or len(p) < 2:
            continue
        try:
            out.append((str(p[0]), int(p[1])))
        except (TypeError, ValueError):
            continue
    return out


def derive(events, end_mono: float | None = None, gap_s: float = GAP_S):
    """(rebalances, downtime) of one run.

    rebalances: list of dicts ``index, start_mono, end_mono, duration_s, events, members, moves,
    assigned, revoked, lost, longest_unowned_s, longest_unowned_topic, longest_unowned_partition``.
    downtime: list of dicts ``topic, partition, first_assigned_mono, unowned_s, unowned_stretches,
    longest_unowned_s``.
    """
    evs = sorted(((e[0], e[1], STREAMS_TYPES.get(e[2], e[2]), e[3], e[4]) for e in events
                  if (e[2] in OWNERSHIP_TYPES or e[2] in STREAMS_TYPES) and e[0] is not None),
                 key=lambda e: (e[0], e[1] if e[1] is not None else 0))
    if not evs:
        return [], []
    if end_mono is None or end_mono < evs[-1][0]:
        end_mono = evs[-1][0]
    walk = _Walk()
    for mono, _seq, typ, member, ps in evs:
        walk.event(mono, typ, member, _parts(ps), gap_s)
    if walk.cur is not None:
        walk.finish(walk.cur)
    return walk.rebalances, walk.downtime(end_mono)


class _Walk:
    """The ownership of one run's partitions, walked event by event: the bursts and the unowned stretches."""

    def __init__(self) -> None:
        self.owners: dict[tuple, set] = {}           # partition -> members owning it now
        self.held: dict[str, set] = {}               # member -> partitions it owns now
        self.first_assigned: dict[tuple, float] = {}
        self.unowned_since: dict[tuple, float] = {}  # partition -> when it lost its last owner (after first assignment)
        self.down_total: dict[tuple, float] = {}
        self.down_n: dict[tuple, int] = {}
        self.down_max: dict[tuple, float] = {}
        self.rebalances: list[dict] = []
        self.cur: dict | None = None  # the burst being built

    def close_gap(self, p, t) -> None:
        """Partition p has an owner again at t: its open unowned stretch ends."""
        since = self.unowned_since.pop(p, None)
        if since is not None:
            d = max(0.0, t - since)
            self.down_total[p] = self.down_total.get(p, 0.0) + d
            self.down_n[p] = self.down_n.get(p, 0) + 1
            self.down_max[p] = max(self.down_max.get(p, 0.0), d)

    def drop(self, member, p, t) -> None:
        """The member no longer owns partition p from t."""
        o = self.owners.get(p)
        if o and member in o:
            o.discard(member)
            if not o:
                self.unowned_since[p] = t
        self.held.get(member, set()).discard(p)

    def snapshot(self) -> dict:
        """Every partition's owners now."""
        return {p: frozenset(o) for p, o in self.owners.items()}

    def finish(self, b) -> None:
        """Close burst b: count its moves and its longest unowned stretch, and record it."""
        before, after = b["before"], self.snapshot()
        moves = 0
        for p in set(before) | set(after):
            ob, oa = before.get(p, frozenset()), after.get(p, frozenset())
            if ob and oa and ob != oa:
                moves += 1
        # stretches still open at the burst's end count up to the end
        for p, since in self.unowned_since.items():
            start = since if p in b["owned_before"] else max(since, b["start"])
            d = b["end"] - start
            if since <= b["end"] and d > b["lu"]:
                b["lu"], b["lu_p"] = d, p
        lu_p = b["lu_p"]
        self.rebalances.append({
            "index": len(self.rebalances), "start_mono": b["start"], "end_mono": b["end"],
            "duration_s": round(b["end"] - b["start"], 6), "events": b["n"],
            "members": len(b["members"]), "moves": moves, "assigned": b["assigned"],
            "revoked": b["revoked"], "lost": b["lost"], "longest_unowned_s": round(max(0.0, b["lu"]), 6),
            "longest_unowned_topic": lu_p[0] if lu_p else None,
            "longest_unowned_partition": lu_p[1] if lu_p else None,
        })

    def event(self, mono, typ, member, parts, gap_s) -> None:
        """One ownership event: it opens, extends or follows a burst, and changes who owns what."""
        cur = self.cur
        if typ in REBALANCE_TYPES:
            if cur is not None and mono - cur["end"] >= gap_s:
                self.finish(cur)
                cur = None
            if cur is None:
                cur = {"start": mono, "end": mono, "n": 0, "members": set(), "assigned": 0, "revoked": 0,
                       "lost": 0, "lu": 0.0, "lu_p": None, "before": self.snapshot(),
                       "owned_before": set(self.first_assigned)}
            cur["end"] = mono
            cur["n"] += 1
            cur["members"].add(member)
        elif cur is not None and mono - cur["end"] >= gap_s:
            self.finish(cur)
            cur = None
        self.cur = cur
        if typ == "assigned":
            for p in parts:
                self.assign(member, p, mono)
            cur["assigned"] += len(parts)
        elif typ in ("revoked", "lost"):
            for p in parts:
                self.drop(member, p, mono)
            cur[typ] += len(parts)
        elif typ == "member_exit":
            for p in list(self.held.get(member, ())):
                self.drop(member, p, mono)

    def assign(self, member, p, mono) -> None:
        """The member owns partition p from mono (inside the current burst)."""
        cur = self.cur
        if p not in self.first_assigned:
            self.first_assigned[p] = mono
        o = self.owners.setdefault(p, set())
        if not o and p in self.unowned_since:
            since = self.unowned_since[p]
            if cur is not None:
                start = since if p in cur["owned_before"] else max(since, cur["start"])
                if mono - start > cur["lu"]:
                    cur["lu"], cur["lu_p"] = mono - start, p
            self.close_gap(p, mono)
        elif not o and cur is not None and p not in cur["owned_before"]:
            # never owned before this burst: unowned from the burst's start
            if mono - cur["start"] > cur["lu"]:
                cur["lu"], cur["lu_p"] = mono - cur["start"], p
        o.add(member)
        self.held.setdefault(member, set()).add(p)

    def downtime(self, end_mono: float) -> list[dict]:
        """Each partition's unowned time after its first assignment, up to the end of the run."""
        downtime = []
        for p in sorted(self.first_assigned):
            total, n, mx = self.down_total.get(p, 0.0), self.down_n.get(p, 0), self.down_max.get(p, 0.0)
            since = self.unowned_since.get(p)
            if since is not None:
                d = max(0.0, end_mono - since)
                total, n, mx = total + d, n + 1, max(mx, d)
            downtime.append({"topic": p[0], "partition": p[1], "first_assigned_mono": self.first_assigned[p],
                             "unowned_s": round(total, 6), "unowned_stretches": n, "longest_unowned_s": round(mx, 6)})
        return downtime
