"""Record integrity: every acknowledged record is processed; duplicates only where at-least-once allows.

Lost records. Every producer `acked` record of the run's topics (partition, offset) must lie in some
`processed` range [first_offset, last_offset] of that partition, by any member at any time. Offsets
that were never acknowledged (a failed send, a transaction marker) need not be covered. A `drained`
event with ok=false does not excuse anything: records missing then are lost. Witnesses: the first
lost `acked` events.

Duplicates. Reading `processed` events in time order, an offset inside a range processed before is a
duplicate. At-least-once allows it only at or above the *bound*: the offset of the last successful
`committed` (commit offsets are the next offset to read) of that partition, by any member, made
before the re-processing member's current ownership of the partition began (no such commit: every
duplicate is allowed, as the new owner starts from the reset position). A duplicate below the bound
re-reads what the group had already committed: a violation. With `exactly_once`, every duplicate is.

An `acked_unplaced` record (acknowledged without an offset: the broker answered an idempotent producer's
retry as a duplicate of a write whose answer was lost) cannot be looked for: with nothing else wrong the verdict
is `unknown`, naming it. Measurements: `acked`, `lost`, `lost_by_partition`, `duplicates`, `allowed_duplicates`,
`bad_duplicates` (all in records), `unplaced`. `unknown` when the topics have no acknowledged record. Every topic of
the run is judged; with several, partitions are named "topic-p" (see `topics`). A topic a `delete_topic` step
deleted (created later by a `create_topic`, so the workload never wrote to it) starts its offsets again when it is
created anew, so its records are not judged for duplicates here (`topic_changes` judges the group's answer to it).
"""
from __future__ import annotations

from bisect import bisect_right
from itertools import groupby

import numpy as np

from harness.record.history import History
from harness.invariants import timeline
from harness.invariants.core import MAX_WITNESSES, CheckSettings, Verdict, empty, verdict, witness

NAME = "record_integrity"
MAX_LOST_WITNESSES = 10


class Ranges:
    """A set of integers kept as sorted, disjoint, inclusive ranges."""

    def __init__(self) -> None:
        self.lo: list[int] = []
        self.hi: list[int] = []

    def overlap(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The parts of [lo, hi] already in the set."""
        out = []
        i = max(0, bisect_right(self.lo, lo) - 1)
        while i < len(self.lo) and self.lo[i] <= hi:
            a, b = max(lo, self.lo[i]), min(hi, self.hi[i])
            if a <= b:
                out.append((a, b))
            i += 1
        return out

    def add(self, lo: int, hi: int) -> None:
        i = max(0, bisect_right(self.lo, lo) - 1)
        j = i
        while j < len(self.lo) and self.lo[j] <= hi + 1:
            if self.hi[j] >= lo - 1:
                lo, hi = min(lo, self.lo[j]), max(hi, self.hi[j])
                del self.lo[j], self.hi[j]
            else:
                j += 1
        k = bisect_right(self.lo, lo)
        self.lo.insert(k, lo)
        self.hi.insert(k, hi)

    def __contains__(self, x: int) -> bool:
        i = bisect_right(self.lo, x) - 1
        return i >= 0 and x <= self.hi[i]


#: a partition's processed offsets are tracked in a bytearray (a byte per offset) when they span at most
#: this many offsets per batch processed (plus DENSE_MIN); else as Ranges
DENSE_PER_BATCH = 64
DENSE_MIN = 1 << 16


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge lost and duplicated records of the run's topics."""
    if (v := empty(NAME, history)) is not None:
        return v
    tl = timeline.build(history, settings)
    ack, proc = history.bulk("acked"), history.bulk("processed")
    arows, apart = tl.layout.columns(ack)
    if not len(arows):
        return verdict(NAME, "unknown", f"no acknowledged record of {tl.layout.describe()}")
    prows, ppart = tl.layout.columns(proc)
    prows = _without_deleted_topics(tl, prows, ppart)
    if tl.layout.multi:  # the partition columns as global partitions (see `topics`)
        ack, proc = _Global(ack, apart), _Global(proc, ppart)
    seen = _Disjoint.of(ack, arows, proc, prows)  # no batch overlaps another: no duplicate, no loop over batches
    if seen is None:
        ack, proc = _lists(ack, "partition", "offset", "seq"), _lists(proc, *_PROC)
        arows, prows = arows.tolist(), prows.tolist()
        seen = _Seen(ack, arows, proc, prows)
    else:
        prows = ()
    (dups, allowed, bad, n_problems), problems, wits = _duplicates(history, tl, settings, seen, proc, prows)
    lost, by_p = seen.lost()
    n_acked = len(arows)
    m = {"acked": n_acked, "lost": lost, "lost_by_partition": {tl.name(p): n for p, n in sorted(by_p.items())},
         "duplicates": dups, "allowed_duplicates": allowed, "bad_duplicates": bad}
    drained_bad = any(e["type"] == "drained" and e.get("ok") is False for _, e in history.control())
    if lost:
        problems.insert(0, f"{lost} of {n_acked} acknowledged records were never processed"
                           + (" (the drain did not finish)" if drained_bad else ""))
        n_problems += 1
        firsts = history.events_at(ack.seq[r] for r in seen.first_lost(MAX_LOST_WITNESSES))
        wits = [witness(e, f"acknowledged record {e.get('key')}#{e.get('seq')} at offset {e['offset']} of "
                           f"partition {tl.layout.event_name(e)} never processed") for e in firsts.values()] + wits
    unplaced = [e for _, e in history.control() if e["type"] == "acked_unplaced" and e.get("topic") in tl.topics]
    m["unplaced"] = len(unplaced)
    if n_problems:
        more = f" (and {n_problems - 1} more)" if n_problems > 1 else ""
        return verdict(NAME, "invalid", problems[0] + more, wits, m)
    if unplaced:
        e = unplaced[0]
        return verdict(NAME, "unknown", f"all {n_acked} acknowledged records with an offset processed, but "
                       f"{len(unplaced)} more were acknowledged without one (the broker answered an idempotent retry "
                       f"as a duplicate of a write whose answer was lost), so whether they were processed cannot be "
                       f"told: first {e.get('key')}#{e.get('seq')} of partition {e.get('partition')}", unplaced, m)
    return verdict(NAME, "valid", f"all {n_acked} acknowledged records processed; {dups} duplicates, all allowed",
                   (), m)


def _duplicates(history: History, tl, settings: CheckSettings, seen, proc, prows) -> tuple:
    """Judge every processed batch that re-processes offsets: a duplicate is allowed at or above the offset committed
    before its member's ownership began (none under exactly-once). Returns ((duplicates, allowed, not allowed,
    problems), the first problems' messages, their witnesses)."""
    dups = allowed = bad = n_problems = 0
    problems, wits = [], []
    commits: dict[int, list[tuple[float, int, int]]] | None = None
    batches: dict[int, list[int]] = {}  # partition -> processed rows so far (kept once a duplicate is seen)
    part, first, last = proc.partition, proc.first, proc.last
    for r in prows:
        p, lo, hi = part[r], first[r], last[r]
        n_dup, a0 = seen.add(p, lo, hi)
        if not n_dup:
            if batches:
                batches.setdefault(p, []).append(r)
            continue
        if not batches:  # the first duplicate: the batches before it, for witnesses
            for r2 in prows:
                if r2 == r:
                    break
                batches.setdefault(part[r2], []).append(r2)
        if commits is None:
            commits = _commits(history, tl)
        mem, i = history.values[proc.member[r]], proc.seq[r]
        mine = [o for o in tl.by_member.get((mem, p), ()) if o.start_seq < i]
        began = mine[-1].start if mine else proc.mono[r]
        before = [c for c in commits.get(p, ()) if c[0] < began]
        bound, c_seq = (before[-1][1], before[-1][2]) if before else (None, None)
        dups += n_dup
        ok = 0 if settings.exactly_once else (n_dup if bound is None else seen.dups_at_or_above(bound))
        allowed += ok
        n_bad = n_dup - ok
        if n_bad:
            bad += n_bad
            n_problems += 1
            if len(problems) < MAX_WITNESSES:
                why = "exactly-once: no duplicate allowed" if settings.exactly_once else \
                    f"below offset {bound}, committed before {mem}'s ownership began"
                problems.append(f"{n_bad} records of partition {tl.name(p)} processed again by {mem} at "
                                f"{proc.mono[r] - tl.start:.3f}s ({why})")
                evs = history.events_at([i] + ([c_seq] if c_seq is not None else []))
                wits.append(witness(evs[i], f"re-processes offsets from {a0} of partition {tl.name(p)}: {why}"))
                earlier = next((x for x in batches.get(p, ()) if first[x] <= a0 <= last[x]), None)
                if earlier is not None:
                    wits.append(witness(history.events_at([proc.seq[earlier]])[proc.seq[earlier]],
                                        f"offset {a0} of partition {tl.name(p)} was processed here first"))
                if c_seq is not None and not settings.exactly_once:
                    wits.append(witness(evs[c_seq], f"committed partition {tl.name(p)} at offset {bound}"))
        batches.setdefault(p, []).append(r)
    return (dups, allowed, bad, n_problems), problems, wits


_PROC = ("partition", "first", "last", "member", "seq", "mono")


class _Global:
    """A bulk type's columns with `partition` replaced by the global partitions of a run of several topics."""

    def __init__(self, bulk, partition) -> None:
        self._bulk, self.partition = bulk, partition

    def __getattr__(self, name: str):
        return getattr(self._bulk, name)


class _lists:
    """Some columns as lists (read one row at a time)."""

    def __init__(self, bulk, *fields: str) -> None:
        self.__dict__.update({f: getattr(bulk, f).tolist() for f in fields})


class _Disjoint:
    """The processed offsets when no batch overlaps another (so none is a duplicate): `lost` and `first_lost`
    as `_Seen` has them, computed on the columns at once."""

    @classmethod
    def of(cls, ack, arows, proc, prows) -> "_Disjoint | None":
        p, lo, hi = proc.partition[prows], proc.first[prows], proc.last[prows]
        o = np.lexsort((lo, p))
        p, lo, hi = p[o], lo[o], hi[o]
        if (lo > hi).any() or ((p[1:] == p[:-1]) & (lo[1:] <= hi[:-1])).any():
            return None
        self = cls()
        ap, ao = ack.partition[arows], ack.offset[arows]
        self.ap, self.arows, self.covered = ap, arows, np.zeros(len(arows), bool)
        for q in np.unique(ap):
            sel = np.flatnonzero(ap == q)
            a, b = np.searchsorted(p, q, "left"), np.searchsorted(p, q, "right")
            i = np.searchsorted(lo[a:b], ao[sel], "right") - 1
            self.covered[sel] = (i >= 0) & (ao[sel] <= hi[a:b][np.maximum(i, 0)]) if b > a else False
        return self

    def lost(self) -> tuple[int, dict[int, int]]:
        q, n = np.unique(self.ap[~self.covered], return_counts=True)
        return int(n.sum()), dict(zip(q.tolist(), n.tolist()))

    def first_lost(self, k: int) -> list[int]:
        return self.arows[np.flatnonzero(~self.covered)[:k]].tolist()


def _commits(history: History, tl: timeline.Timeline) -> dict[int, list[tuple[float, int, int]]]:
    """Partition -> (mono, offset, seq) of every successful commit of the run's topics, in history order."""
    c, lay = history.bulk("committed"), tl.layout
    last: dict[int, dict[int, int]] = {}  # row -> partition -> offset (the last pair naming it wins)
    ok, mono, seq = c.ok.tolist(), c.mono.tolist(), c.seq.tolist()
    for row, t, p, off in zip(c.c_row.tolist(), c.c_topic.tolist(), c.c_partition.tolist(), c.c_offset.tolist()):
        base = lay.code_base(t)
        if base >= 0 and ok[row] and (p >= 0 or not lay.multi):
            last.setdefault(row, {})[base + p] = off
    out: dict[int, list[tuple[float, int, int]]] = {}
    for row in sorted(last):
        for p, off in last[row].items():
            out.setdefault(p, []).append((mono[row], off, seq[row]))
    return out


class _Seen:
    """The offsets of each partition processed so far: a bytearray per partition when they are dense
    enough, else Ranges. `add` returns the number of offsets of a batch seen before and the first of them."""

    def __init__(self, ack, arows: list[int], proc, prows: list[int]) -> None:
        self.ack, self.arows = ack, arows
        lo: dict[int, int] = {}
        hi: dict[int, int] = {}
        n: dict[int, int] = {}
        for p, a, b in zip(map(proc.partition.__getitem__, prows), map(proc.first.__getitem__, prows),
                           map(proc.last.__getitem__, prows)):
            if p in lo:
                if a < lo[p]:
                    lo[p] = a
                if b > hi[p]:
                    hi[p] = b
                n[p] += 1
            else:
                lo[p], hi[p], n[p] = a, b, 1
        self.base: dict[int, int] = {}
        self.bits: dict[int, bytearray] = {}
        self.ranges: dict[int, Ranges] = {}
        for p in lo:
            span = hi[p] - lo[p] + 1
            if 0 < span <= DENSE_MIN + DENSE_PER_BATCH * n[p] and lo[p] >= 0:
                self.base[p], self.bits[p] = lo[p], bytearray(span)
            else:
                self.ranges[p] = Ranges()
        self._seg = b""
        self._lo = 0

    def add(self, p: int, lo: int, hi: int) -> tuple[int, int | None]:
        bits = self.bits.get(p)
        if bits is not None and lo <= hi:
            a, b = lo - self.base[p], hi - self.base[p] + 1
            seg = bits[a:b]
            n = seg.count(1)
            bits[a:b] = b"\x01" * (b - a)
            if n:
                self._seg, self._lo = seg, lo
                return n, lo + seg.find(1)
            return 0, None
        rs = self.ranges.setdefault(p, Ranges())
        over = rs.overlap(lo, hi)
        rs.add(lo, hi)
        if not over:
            return 0, None
        self._seg, self._lo = _bytes_of(over, lo, hi), lo
        return sum(y - x + 1 for x, y in over), over[0][0]

    def dups_at_or_above(self, bound: int) -> int:
        """Of the last batch's duplicates, those at or above an offset."""
        return self._seg[max(0, bound - self._lo):].count(1)

    def _covered(self, p: int, o: int) -> bool:
        bits = self.bits.get(p)
        if bits is not None:
            i = o - self.base[p]
            return 0 <= i < len(bits) and bits[i] == 1
        rs = self.ranges.get(p)
        return rs is not None and o in rs

    def lost(self) -> tuple[int, dict[int, int]]:
        """How many acknowledged records were never processed, in all and by partition."""
        by_p: dict[int, int] = {}
        for p, rows in self._by_partition().items():
            offs = list(map(self.ack.offset.__getitem__, rows))
            bits = self.bits.get(p)
            if bits is not None and offs and min(offs) >= self.base[p] and max(offs) < self.base[p] + len(bits):
                b = self.base[p]
                got = bytes(map(bits.__getitem__, [o - b for o in offs])) if b else bytes(map(bits.__getitem__, offs))
                n = len(offs) - got.count(1)
            else:
                n = sum(1 for o in offs if not self._covered(p, o))
            if n:
                by_p[p] = n
        return sum(by_p.values()), by_p

    def first_lost(self, k: int) -> list[int]:
        """The first k acked rows never processed, in history order."""
        out = []
        part, off = self.ack.partition, self.ack.offset
        for r in self.arows:
            if not self._covered(part[r], off[r]):
                out.append(r)
                if len(out) == k:
                    break
        return out

    def _by_partition(self) -> dict[int, list[int]]:
        part = self.ack.partition
        ps = set(map(part.__getitem__, self.arows))
        if len(ps) == 1:
            return {ps.pop(): self.arows}
        keyed = sorted(self.arows, key=part.__getitem__)
        return {p: list(g) for p, g in groupby(keyed, key=part.__getitem__)}


def _bytes_of(over: list[tuple[int, int]], lo: int, hi: int) -> bytes:
    """A batch's offsets lo..hi as bytes, 1 where the ranges `over` cover them."""
    seg = bytearray(hi - lo + 1)
    for a, b in over:
        seg[a - lo:b - lo + 1] = b"\x01" * (b - a + 1)
    return bytes(seg)


def _without_deleted_topics(tl, prows, ppart):
    """The processed rows but those of a topic a `delete_topic` step deleted (its offsets begin again when it is
    created anew: a record at an offset seen before is another record)."""
    gone = [i for i, st in tl.growth.steps.items() if i in tl.growth.later and any(c == 0 for _, _, c in st)]
    if not gone or not len(prows):
        return prows
    parts = ppart[prows]
    keep = np.ones(len(prows), bool)
    for i in gone:
        lo = tl.layout.base[i]
        hi = tl.layout.base[i + 1] if i + 1 < len(tl.layout.base) else np.iinfo(np.int64).max
        keep &= ~((parts >= lo) & (parts < hi))
    return prows[keep]
