"""Commit progress: an owner in good standing that keeps processing a partition keeps committing it.

A member that processes records and never commits (or whose commits stop advancing, or all fail) passes
the other invariants: its cost shows only when the partition moves and the next owner starts again from
the last commit. This checker judges the commits themselves, while nothing disturbs them.

Terms as in `timeline` (good standing, ownership intervals, faults, E); S is `commit_stall_s`.

- A **calm stretch** of member m and partition p of the topic: a stretch of time, up to E, within one
  ownership interval of m and p, during which m is in good standing, no fault of any kind is active and
  no `broker_event` happens. (A fault that names other members or only brokers still counts: a broker
  restart, a coordinator move or a blackhole makes commits fail or wait, whoever it names.)
- A `processed` event of m for p at time t, last offset L, is **judged** when [t, t + S] lies inside one
  calm stretch of m and p. It **owes a commit** when L + 1 (the next offset to read) is above c0, the
  offset of the last successful commit of p (`committed` with ok=true naming p, by any member) at or
  before t; with no commit before, every judged event owes one.
- A judged event that owes a commit is **kept** when m made a successful commit of p at an offset above
  c0 at some time in [t, t + S]; otherwise it is a **stall**, a violation. A failed commit (ok=false)
  counts for nothing. A partition nobody processed owes nothing.

Tolerance: S, `commit_stall_s`, default 10 s: twice the auto-commit interval librdkafka and the Java
client use by default (5 s), as a member that auto-commits commits at the first tick after processing,
plus the commit's round trip; a member that commits after each poll does within milliseconds. A run
whose members auto-commit with a longer `auto.commit.interval.ms` sets S to twice that interval (the
consumer kind derives it). Stretches must be calm because a pause, a broker restart or a coordinator move
rightly makes commits fail or wait longer than any fixed S; a partition that moves away ends the
ownership (what was processed and not committed then is record_integrity's duplicates). Rebalances that
leave the partition where it is are not excluded: its owner commits through them (a commit refused during
a cooperative rebalance is retried, or followed by the next poll's) well within S.

Verdicts: `invalid` with witnesses (for the first stalled member and partition pairs, the stalled
`processed` event and the last successful commit of the partition before it, else a failed commit of
it by the owner within S); `unknown` when nothing of the topic was processed, or when no event was judged
and the history goes on for less than S after the first one processed (too short to tell); `skipped`
when events were processed but none inside a calm stretch of S (disturbed throughout); else `valid`.
Measurements: `judged`, `owed`, `stalls` (processed events), `stalled_partitions`, `commits_ok`,
`commits_failed` (commit entries of the topic's partitions), `commit_stall_s`.
"""
from __future__ import annotations

import numpy as np

from harness.history import History
from harness.invariants import timeline
from harness.invariants.core import MAX_WITNESSES, CheckSettings, Verdict, empty, verdict, witness

NAME = "commit_progress"
#: the commit entries of a partition with none: (mono, offset, ok, member, seq)
_NONE = (np.zeros(0), np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, np.int64), np.zeros(0, np.int64))


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge that owners in good standing commit what they process, within `commit_stall_s`."""
    if (v := empty(NAME, history)) is not None:
        return v
    tl = timeline.build(history, settings)
    s = float(settings.commit_stall_s)
    proc = history.bulk("processed")
    rows, gpart = tl.layout.columns(proc)  # the run's topics' rows, and each row's global partition
    rows = rows[proc.mono[rows] <= tl.end]
    commits = _Commits(history, tl)
    m = {"judged": 0, "owed": 0, "stalls": 0, "stalled_partitions": [], "commits_ok": commits.n_ok,
         "commits_failed": commits.n_failed, "commit_stall_s": s}
    if not len(rows):
        return verdict(NAME, "unknown", f"no record of {tl.layout.describe()} was processed", (), m)
    calm = _calm(tl)
    stalls: list[tuple[float, str, int, int, int]] = []  # (t, member, partition, row, c0) of each pair's first
    stalled: set[int] = set()
    vals = history.values
    mem, part = proc.member[rows], gpart[rows]
    order = np.lexsort((part, mem))  # stable: each group keeps history order
    rows, mem, part = rows[order], mem[order], part[order]
    cut = np.flatnonzero((mem[1:] != mem[:-1]) | (part[1:] != part[:-1])) + 1
    for rs in np.split(rows, cut):
        member, p = vals[int(proc.member[rs[0]])], int(gpart[rs[0]])
        t = proc.mono[rs]
        spans = _intersect(_intersect(_ownership(tl, member, p), tl.good_standing(member)), calm)
        judged = _inside(spans, t, s)
        c0 = commits.before(p, t)
        owed = judged & (proc.last[rs] + 1 > c0)
        m["judged"] += int(np.count_nonzero(judged))
        m["owed"] += int(np.count_nonzero(owed))
        if not owed.any():
            continue
        best = commits.best_by(member, p, t, t + s)  # the highest successful commit of p by m in [t, t + S]
        bad = np.flatnonzero(owed & ~(best > c0))
        if len(bad):
            m["stalls"] += len(bad)
            stalled.add(p)
            i = int(bad[0])
            stalls.append((float(t[i]), member, p, int(rs[i]), int(c0[i])))
    m["stalled_partitions"] = tl.names(stalled)
    if m["stalls"]:
        return _invalid(tl, commits, stalls, s, m)
    if m["judged"]:
        return verdict(NAME, "valid", f"{m['owed']} processed events owed a commit within {s:g}s in calm stretches; "
                                      f"every one got it ({m['commits_ok']} successful commit entries)", (), m)
    first = float(proc.mono[rows].min())
    if tl.end - first < s:
        return verdict(NAME, "unknown", f"the history ends {tl.end - first:.3f}s after the first record processed: "
                                        f"too short to judge commits within {s:g}s", (), m)
    return verdict(NAME, "skipped", f"no record was processed inside a calm stretch of {s:g}s (an owner in good "
                                    f"standing, no fault, no broker event)", (), m)


def _invalid(tl, commits: "_Commits", stalls: list, s: float, m: dict) -> Verdict:
    stalls.sort()
    t, member, p, r, c0 = stalls[0]
    since = f"offset {c0}" if c0 >= 0 else "none"
    p = tl.name(p)
    msg = (f"{member} processed partition {p} at {t:.3f} and made no successful commit of it beyond the last "
           f"committed ({since}) within {s:g}s; {m['stalls']} stalled processed events on partitions "
           f"{m['stalled_partitions']}")
    proc = tl.history.bulk("processed")
    wits: list[dict] = []
    for t, member, p, r, c0 in stalls[:MAX_WITNESSES // 2]:
        seqs, shown = [int(proc.seq[r])], tl.name(p)
        last = commits.last_ok_seq(p, t)
        why_c = f"the last successful commit of partition {shown} before it (offset {c0})"
        if last is None:
            last = commits.failed_seq(member, p, t, t + s)
            why_c = f"{member}'s commit of partition {shown} within {s:g}s failed"
        if last is not None:
            seqs.append(last)
        evs = tl.history.events_at(seqs)
        done = f"offset {c0}" if c0 >= 0 else "none"
        wits.append(witness(evs[seqs[0]], f"{member} processed partition {shown} up to offset {int(proc.last[r])}; no "
                                          f"successful commit of it by {member} beyond the last committed ({done}) "
                                          f"within {s:g}s"))
        if last is not None:
            wits.append(witness(evs[last], why_c))
    return verdict(NAME, "invalid", msg, wits, m)


class _Commits:
    """The commit entries of the topic up to E, by partition, in time order: (mono, offset, ok, member, seq)."""

    def __init__(self, history: History, tl: timeline.Timeline) -> None:
        c = history.bulk("committed")
        lay = tl.layout
        base = np.array([lay.code_base(int(x)) for x in c.c_topic.tolist()], np.int64) if len(c.c_topic) else \
            np.zeros(0, np.int64)
        sel = np.flatnonzero((base >= 0) & ((c.c_partition >= 0) | (not lay.multi)))
        row = c.c_row[sel]
        keep = c.mono[row] <= tl.end
        sel, row = sel[keep], row[keep]
        ok = c.ok[row] != 0
        self.n_ok, self.n_failed = int(np.count_nonzero(ok)), int(np.count_nonzero(~ok))
        part = c.c_partition[sel] + base[sel]  # global partitions (the partition itself with one topic)
        self.by_p: dict[int, tuple] = {}
        for p in np.unique(part).tolist():
            k = part == p
            self.by_p[p] = (c.mono[row[k]], c.c_offset[sel[k]], ok[k], c.member[row[k]], c.seq[row[k]])
        self.history = history

    def before(self, p: int, t: np.ndarray) -> np.ndarray:
        """For each time, the offset of the last successful commit of p at or before it (-1: none)."""
        mono, off, ok, _, _ = self.by_p.get(p, _NONE)
        mono, off = mono[ok], off[ok]
        i = np.searchsorted(mono, t, "right") - 1
        return np.where(i >= 0, off[np.maximum(i, 0)] if len(off) else -1, -1)

    def best_by(self, member: str, p: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """For each [lo, hi], the highest offset of p the member committed successfully in it (-2: none)."""
        mono, off, ok, mem, _ = self.by_p.get(p, _NONE)
        k = ok & self._of(mem, member)
        mono, off = mono[k], off[k]
        out = np.full(len(lo), -2, np.int64)
        if not len(mono):
            return out
        a, b = np.searchsorted(mono, lo, "left"), np.searchsorted(mono, hi, "right")
        idx = np.empty(2 * len(a), np.int64)
        idx[0::2], idx[1::2] = a, b
        red = np.maximum.reduceat(np.append(off, -2), idx)[0::2]  # over [a, b); a == b gives a row to mask
        return np.where(b > a, red, out)

    def _of(self, mem: np.ndarray, member: str) -> np.ndarray:
        code = self.history.code(member)
        return mem == (-1 if code is None else code)

    def last_ok_seq(self, p: int, t: float) -> int | None:
        mono, _, ok, _, seq = self.by_p.get(p, _NONE)
        k = np.flatnonzero(ok & (mono <= t))
        return int(seq[k[-1]]) if len(k) else None

    def failed_seq(self, member: str, p: int, lo: float, hi: float) -> int | None:
        mono, _, ok, mem, seq = self.by_p.get(p, _NONE)
        k = np.flatnonzero(~ok & self._of(mem, member) & (mono >= lo) & (mono <= hi))
        return int(seq[k[0]]) if len(k) else None


def _calm(tl: timeline.Timeline) -> list[tuple[float, float]]:
    """The stretches up to E with no fault active and no broker event."""
    cur = [(tl.start, tl.end)] if tl.end > tl.start else []
    for f in tl.faults:
        cur = [x for a, b in cur for x in ((a, min(b, f.start)), (max(a, f.end), b)) if x[0] < x[1]]
    for _, e in tl.control:
        if e["type"] == "broker_event" and e["mono"] <= tl.end:
            b0 = e["mono"]
            cur = [x for a, b in cur for x in (((a, b0), (b0, b)) if a < b0 < b else ((a, b),)) if x[0] < x[1]]
    return cur


def _ownership(tl: timeline.Timeline, member: str, p: int) -> list[tuple[float, float]]:
    return sorted((o.start, min(o.end, tl.end)) for o in tl.by_member.get((member, p), ()) if o.start < tl.end)


def _intersect(xs: list[tuple[float, float]], ys: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The intersection of two sorted lists of disjoint intervals."""
    out, i, j = [], 0, 0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if a < b:
            out.append((a, b))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


def _inside(spans: list[tuple[float, float]], t: np.ndarray, s: float) -> np.ndarray:
    """Whether [t, t + s] lies inside one of the sorted disjoint spans, for each t."""
    if not spans:
        return np.zeros(len(t), bool)
    a = np.array([x[0] for x in spans])
    b = np.array([x[1] for x in spans])
    i = np.searchsorted(a, t, "right") - 1
    return (i >= 0) & (t + s <= b[np.maximum(i, 0)])
