"""Record integrity: every acknowledged record is processed; duplicates only where at-least-once allows.

Lost records. Every producer `acked` record of the checked topic (partition, offset) must lie in some
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

Measurements: `acked`, `lost`, `lost_by_partition`, `duplicates`, `allowed_duplicates`,
`bad_duplicates` (all in records). `unknown` when the topic has no acknowledged record.
"""
from __future__ import annotations

from bisect import bisect_right

from harness.history import History
from harness.invariants import timeline
from harness.invariants.core import CheckSettings, Verdict, empty, verdict, witness

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


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge lost and duplicated records of the settings' topic."""
    if (v := empty(NAME, history)) is not None:
        return v
    tl = timeline.build(history, settings)
    evs = tl.events
    acked = [e for e in evs if e["type"] == "acked" and e.get("topic") == tl.topic]
    if not acked:
        return verdict(NAME, "unknown", f"no acknowledged record of topic {tl.topic!r}")
    commits: dict[int, list[tuple[float, int, dict]]] = {}
    for e in evs:
        if e["type"] == "committed" and e.get("ok"):
            for p, off in timeline.commit_offsets(e, tl.topic).items():
                commits.setdefault(p, []).append((e["mono"], off, e))

    seen: dict[int, Ranges] = {}
    batches: dict[int, list[dict]] = {}
    dups = allowed = bad = 0
    problems, wits = [], []
    for i, e in enumerate(evs):
        if e["type"] != "processed" or e.get("topic") != tl.topic:
            continue
        p, lo, hi, mem = int(e["partition"]), int(e["first_offset"]), int(e["last_offset"]), e.get("member")
        rs = seen.setdefault(p, Ranges())
        over = rs.overlap(lo, hi)
        if over:
            mine = [o for o in tl.by_member.get((mem, p), ()) if o.start_seq < i]
            began = mine[-1].start if mine else e["mono"]
            before = [c for c in commits.get(p, ()) if c[0] < began]
            bound, c_ev = (before[-1][1], before[-1][2]) if before else (None, None)
            n_bad = 0
            for a, b in over:
                n = b - a + 1
                dups += n
                ok = 0 if settings.exactly_once else (n if bound is None else max(0, b - max(a, bound) + 1))
                allowed += ok
                n_bad += n - ok
            if n_bad:
                bad += n_bad
                a = over[0][0]
                why = "exactly-once: no duplicate allowed" if settings.exactly_once else \
                    f"below offset {bound}, committed before {mem}'s ownership began"
                problems.append(f"{n_bad} records of partition {p} processed again by {mem} at {e['mono']:.3f} ({why})")
                wits.append(witness(e, f"re-processes offsets from {a} of partition {p}: {why}"))
                earlier = next((x for x in batches.get(p, ()) if x["first_offset"] <= a <= x["last_offset"]), None)
                if earlier is not None:
                    wits.append(witness(earlier, f"offset {a} of partition {p} was processed here first"))
                if c_ev is not None and not settings.exactly_once:
                    wits.append(witness(c_ev, f"committed partition {p} at offset {bound}"))
        rs.add(lo, hi)
        batches.setdefault(p, []).append(e)

    lost = [e for e in acked if int(e["offset"]) not in seen.get(int(e["partition"]), Ranges())]
    by_p: dict[int, int] = {}
    for e in lost:
        by_p[int(e["partition"])] = by_p.get(int(e["partition"]), 0) + 1
    m = {"acked": len(acked), "lost": len(lost), "lost_by_partition": dict(sorted(by_p.items())),
         "duplicates": dups, "allowed_duplicates": allowed, "bad_duplicates": bad}
    drained_bad = any(e["type"] == "drained" and e.get("ok") is False for e in evs)
    if lost:
        problems.insert(0, f"{len(lost)} of {len(acked)} acknowledged records were never processed"
                           + (" (the drain did not finish)" if drained_bad else ""))
        wits = [witness(e, f"acknowledged record {e.get('key')}#{e.get('seq')} at offset {e['offset']} of "
                           f"partition {e['partition']} never processed") for e in lost[:MAX_LOST_WITNESSES]] + wits
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return verdict(NAME, "invalid", problems[0] + more, wits, m)
    return verdict(NAME, "valid", f"all {len(acked)} acknowledged records processed; {dups} duplicates, all allowed",
                   (), m)
