"""Commit progress: an owner commits what it processes, by its own commit mode's bound, even while the group moves.

A member that processes records and never commits (or whose commits stop advancing, or all fail) passes
the other invariants: its cost shows only when the partition moves and the next owner starts again from
the last commit. This checker judges every record processed against the commits of the member that
processed it, with the settings that member life ran with (`commit_settings`), through rebalances too.

Terms as in `timeline` (lives, ownership intervals, faults, E); G is `COMMIT_GRACE_S`.

- **Owed**: a `processed` event of member m for partition p at t, last offset L, inside m's ownership of
  p, owes a commit when L + 1 (the next offset to read) is above c0, the offset of the last successful
  commit of p (`committed` with ok=true naming p, by any member) at or before t. Re-processing below the
  committed offset owes nothing new; a partition nobody processed owes nothing.
- **Bound** B of m's life, by its commit mode: `auto`: its own `auto.commit.interval.ms` (the client
  commits what was consumed at its next tick); `sync` and `async`: 0 (the member commits after each
  poll's records); `never`: 0 (it promised nothing; the invariant asks for commits all the same). The
  path the offsets take (`effective.offset_store`: named by the member, or stored in librdkafka's offset
  store automatically, by message or by offsets, and committed by the timer or by `commit()` without
  offsets) changes no bound: each path stores a record's offset by the time it is processed, and the mode
  commits what is stored as it does the offsets it names (`commit_settings`).
- **Deadline** D = min(t + B, g) + G, where g is the end of the ownership when m gave p up gracefully
  (`revoked`, or a graceful exit): what was processed must be committed before the partition is given
  up, or within the mode's own interval, whichever comes first.
- **Excused** (not judged): the ownership ended ungracefully (`lost`, or m killed or crashed) by
  t + B + G (at-least-once: the next owner re-reads), or, under `sync` and `async`, after t with nothing between:
  t was m's last poll of p in it and m recorded no commit outcome after t (it died with the commit that follows the
  poll's records in flight; a member that polls on without committing is judged on its earlier polls); D is past
  E; or in [t, D] a fault affecting m or
  naming brokers is active, or a `broker_event` happens (a pause, a broker restart, a coordinator move or
  a blackhole rightly makes commits fail or wait). Faults that name neither m nor a broker (another
  member's pause, a scale-out, a subscription change, an autoscaler) move the group: they excuse nothing.
- **Kept**: m made a successful commit of p at an offset of at least L + 1 at a time in [t, D] (the
  time a member asked for a commit, `requested_mono`, when it says so, else the `committed` event's own).
  Otherwise the event is a **stall**, a violation. A failed commit (ok=false) counts for nothing, but
- **a refused commit is judged against its retry**: when m asked for a commit of p in [t, D] that failed
  at f, D becomes min(f + B, g) + G (its next commit, after the next poll or at the next tick, retries;
  again for a refused retry; f counts from when m is first seen back from its next poll, its first records
  processed or commit asked for after the refusal (or the start of the revoke handler that asked for it), since
  the retry rides on that poll and the client may hold a poll, as a classic leader fetching metadata for its
  assignment does). In a classic rebalance a commit waits for the join and is refused
  (ILLEGAL_GENERATION) once the generation moved; a partition revoked after that must still be committed
  before it is given up (the members commit in their revoke callback). A member whose revoke handler waits W
  before its commit (its `effective.revoke_delay_ms`) has D = min(f + B + W, g) + G after a refusal: the poll that
  retries may run that handler first.

Tolerance: G = 1 s, a commit's round trip and the poll that records its outcome (an auto-commit's outcome
is recorded from the callback the next poll serves). Under `auto` the bound is the member's own interval,
read from its `started` event's `effective` settings (per life: a restart may change it; `commit_settings`);
older histories without them are judged with the run's `commit_mode` and the interval the member was
given, else the client's default of 5 s, and the messages say so.

Verdicts: `invalid` with witnesses (for the first stalled member and partition pairs, the stalled
`processed` event, m's refused commit of p or its last successful one before the deadline (else its failed
commit of p in the window), and the `revoked` that set the deadline); `unknown` when nothing of the topics
was processed, or when nothing was judged and the history goes on for less than the longest bound plus G
after the first record processed; `skipped` when records were processed but every owed event was excused
(faults throughout); else `valid`. Measurements: `processed`, `owed`, `judged`, `excused` (by reason),
`retried` (kept by a retry after a refusal), `stalls`,
`stalled_partitions`, `commits_ok`, `commits_failed` (commit entries of the topics' partitions),
`grace_s`, `lives` (member life -> its mode, bound and where they came from).
"""
from __future__ import annotations

import numpy as np

from harness.record.history import History
from harness.invariants import causes, timeline
from harness.invariants.commit_settings import CommitSettings, LifeSettings
from harness.invariants.core import MAX_WITNESSES, CheckSettings, Verdict, empty, verdict, witness
from harness.invariants.terms import INF

NAME = "commit_progress"
#: a commit's round trip and the poll that records its outcome, after the deadline of the member's mode
COMMIT_GRACE_S = 1.0
#: the commit entries of a partition with none: (mono, offset, ok, member, seq, key)
_NONE = (np.zeros(0), np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, np.int64), np.zeros(0, np.int64),
         np.zeros(0))
_EXCUSES = ("lost_or_killed", "fault", "end")


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge that members commit what they process by the bound of their own commit mode."""
    if (v := empty(NAME, history)) is not None:
        return v
    tl = timeline.build(history, settings)
    proc = history.bulk("processed")
    _, gpart = tl.layout.columns(proc)  # each row's global partition
    pairs = tl.processed_pairs()  # the run's topics' rows up to E, by member and partition
    j = _Judgment(tl)
    m = j.m
    if not pairs:
        return verdict(NAME, "unknown", f"no record of {tl.layout.describe()} was processed", (), m)
    vals = history.values
    for rs in pairs:
        j.pair(vals[int(proc.member[rs[0]])], int(gpart[rs[0]]), rs)
    m["stalled_partitions"] = tl.names(j.stalled)
    m["lives"] = {f"{s.member}@{s.start:.3f}": {"mode": s.mode, "bound_s": s.bound_s, "source": s.source,
                                                **({"offset_store": s.store} if s.store else {}),
                                                **({"interval_source": s.interval_source} if s.mode == "auto" else {})}
                  for s in sorted(j.used.values(), key=lambda s: (s.start, s.member))}
    if m["stalls"]:
        return _invalid(tl, j.commits, j.stalls, m)
    g = COMMIT_GRACE_S
    if m["judged"]:
        modes = _summary(j.used.values())
        return verdict(NAME, "valid", f"{m['judged']} processed events owed a commit and were judged ({_excused(m)}); "
                                      f"every one was committed by its member's own bound ({modes}; grace {g:g} s)",
                       (), m)
    first = float(min(proc.mono[rs].min() for rs in pairs))
    longest = max([s.bound_s for s in j.lives.all()] or [0.0]) + g
    if tl.end - first < longest:
        return verdict(NAME, "unknown", f"the history ends {tl.end - first:.3f}s after the first record processed: "
                                        f"too short to judge commits within {longest:g}s", (), m)
    return verdict(NAME, "skipped", f"{m['processed']} processed events, none judged: {m['owed']} owed a commit and "
                                    f"every one was excused ({_excused(m)})", (), m)


class _Judgment:
    """The judgment of one history, member and partition pair by pair: measurements, stalls, lives judged."""

    def __init__(self, tl) -> None:
        self.tl, self.commits, self.lives, self.bad = tl, _Commits(tl.history, tl), LifeSettings(tl), _Excusing(tl)
        self.m = {"processed": 0, "owed": 0, "judged": 0, "excused": dict.fromkeys(_EXCUSES, 0), "retried": 0,
                  "stalls": 0, "stalled_partitions": [], "commits_ok": self.commits.n_ok,
                  "commits_failed": self.commits.n_failed, "grace_s": COMMIT_GRACE_S}
        #: the first stall of each stalled pair: (t, member, partition, row, c0, deadline, settings, cut event,
        #: why the deadline, the refused commit's seq)
        self.stalls: list[tuple] = []
        self.stalled: set[int] = set()
        self.used: dict[tuple[str, float], CommitSettings] = {}

    def pair(self, member: str, p: int, rs: np.ndarray) -> None:
        """Judge the processed events `rs` (rows, in time order) of one member and partition."""
        tl, m, g, proc = self.tl, self.m, COMMIT_GRACE_S, self.tl.history.bulk("processed")
        m["processed"] += len(rs)
        owns = sorted((o for o in tl.by_member.get((member, p), ()) if o.start <= tl.end), key=lambda o: o.start)
        if not owns:
            return  # processing without holding: exclusive_ownership's to judge
        t, last = proc.mono[rs], proc.last[rs]
        i = np.searchsorted(np.array([o.start for o in owns]), t, "right") - 1
        ii = np.maximum(i, 0)
        per = [_ownership_terms(self.lives, o) for o in owns]  # (bound, graceful end, ungraceful end, settings)
        bound, g_end, u_end = (np.array([x[n] for x in per])[ii] for n in range(3))
        retry = np.array([x[3].retry_bound_s for x in per])[ii]
        c0 = self.commits.before(p, t)
        owed = (i >= 0) & (t < np.array([o.end for o in owns])[ii]) & (last + 1 > c0)
        deadline = np.minimum(t + bound, g_end) + g
        lost = owed & ((u_end <= t + bound + g) | self._died_committing(member, p, per, ii, t, u_end))
        late = owed & ~lost & (deadline > tl.end)
        faulted = owed & ~lost & ~late & self.bad.overlaps(member, t, deadline)
        judged = owed & ~lost & ~late & ~faulted
        for k, n in zip(_EXCUSES, (lost, faulted, late)):
            m["excused"][k] += int(np.count_nonzero(n))
        m["owed"] += int(np.count_nonzero(owed))
        m["judged"] += int(np.count_nonzero(judged))
        self.used.update({(s.member, s.start): s for s in (per[x][3] for x in set(ii[judged].tolist()))})
        best = self.commits.best_by(member, p, t, deadline)  # m's highest successful commit of p asked for in [t, D]
        missed = judged & (best < last + 1)
        refused = missed & self.commits.refused_in(member, p, t, deadline)  # only these can be saved by a retry
        stall, refusals = np.flatnonzero(missed & ~refused).tolist(), {}
        for k in np.flatnonzero(refused).tolist():
            d, refusals[k] = self.commits.after_refusals(member, p, float(t[k]), float(deadline[k]), float(retry[k]),
                                                         float(g_end[k]))
            if d > deadline[k]:  # the member's commit was refused: judged again against its retry
                why = "lost_or_killed" if u_end[k] <= d else "end" if d > tl.end else \
                    "fault" if self.bad.overlaps(member, t[k:k + 1], np.array([d]))[0] else None
                if why is not None:
                    m["excused"][why] += 1
                    m["judged"] -= 1
                    continue
                deadline[k] = d
                if self.commits.best_by(member, p, t[k:k + 1], deadline[k:k + 1])[0] >= last[k] + 1:
                    m["retried"] += 1
                    continue
            stall.append(k)
        if stall:
            m["stalls"] += len(stall)
            self.stalled.add(p)
            k = min(stall)
            s, o = per[int(ii[k])][3], owns[int(ii[k])]
            why, cut = _why(s, float(g_end[k]), float(deadline[k]), refusals.get(k), o.end_event)
            self.stalls.append((float(t[k]), member, p, int(rs[k]), int(c0[k]), float(deadline[k]), s, cut, why,
                                refusals[k][0] if refusals.get(k) else None, len(stall), float(t[max(stall)])))


    def _died_committing(self, member: str, p: int, per: list, ii: np.ndarray, t: np.ndarray,
                         u_end: np.ndarray) -> np.ndarray:
        """For each processed event of (member, p) at t: whether it was the member's last poll of p before its
        ownership ended ungracefully and, under `sync` or `async`, the member recorded no commit outcome after it:
        it died with the commit that follows each poll's records in flight (a kill mid-commit), at-least-once."""
        modes = np.array([x[3].mode in ("sync", "async") for x in per])[ii]
        later = np.append(t[1:], INF)  # when the member next processed records of p
        return modes & np.isfinite(u_end) & (later >= u_end) & ~self.commits.outcome_in(member, t, u_end)


def _why(s: CommitSettings, given_up: float, deadline: float, refused, end_event) -> tuple[str, dict | None]:
    """Why a stalled record's deadline was what it was, and the give-up event when that set it."""
    g = COMMIT_GRACE_S
    if refused is not None:
        why = f"its commit of it was refused at {refused[1] - s.t0:.3f}s, and no retry succeeded within " \
              f"{s.retry_bound_s + g:g} s"
        if given_up > refused[2] > refused[1]:
            why += f" of its next poll (seen back at {refused[2] - s.t0:.3f}s)"
        if given_up <= deadline:
            return why + f"; it gave the partition up at {given_up - s.t0:.3f}s without committing it again", end_event
        return why, None
    if given_up + g <= deadline + 1e-9:
        return f"it gave the partition up at {given_up - s.t0:.3f}s, plus {g:g} s grace", end_event
    return _why_deadline(s), None


def _excused(m: dict) -> str:
    e = m["excused"]
    what = {"lost_or_killed": "lost or killed before the bound", "fault": "under a fault of the member or a broker",
            "end": "too near the end"}
    parts = [f"{n} {what[k]}" for k, n in e.items() if n]
    return "excused: " + (", ".join(parts) if parts else "none")


def _summary(used) -> str:
    """The modes judged with, grouped: "sync (run-wide, ...): m1, m2; auto every 5 s (...): m3"."""
    groups: dict[str, list[str]] = {}
    for s in sorted(used, key=lambda s: (s.start, s.member)):
        key = (f"auto-commit every {s.auto_commit_s:g} s ({s.interval_source})" if s.mode == "auto" else
               f"commit_mode {s.mode} ({s.source})") + (f", offset_store {s.store}" if s.store else "")
        groups.setdefault(key, []).append(s.member)
    return "; ".join(f"{k}: {', '.join(dict.fromkeys(v))}" for k, v in groups.items()) or "no member life judged"


def _invalid(tl, commits: "_Commits", stalls: list, m: dict) -> Verdict:
    stalls.sort(key=lambda x: x[0])
    proc = tl.history.bulk("processed")
    t, member, p, r, c0, d, s, cut, why, *_ = stalls[0]
    since = f"offset {c0}" if c0 >= 0 else "none"
    msg = (f"{s.describe()}: processed partition {tl.name(p)} up to offset {int(proc.last[r])} at {t - tl.start:.3f}s and did "
           f"not commit it by {d - tl.start:.3f}s ({why}); last committed before it: {since}; "
           f"{m['stalls']} stalled processed events on partitions {m['stalled_partitions']}")
    wits: list[dict] = []
    for t, member, p, r, c0, d, s, cut, why, refused, n, last_t in stalls[:MAX_WITNESSES // 3]:
        shown, lastoff = tl.name(p), int(proc.last[r])
        seqs = [int(proc.seq[r])]
        prev = refused if refused is not None else commits.last_ok_seq(member, p, d)
        why_c = f"{member}'s commit of partition {shown}, refused" if refused is not None else \
            f"{member}'s last successful commit of partition {shown} before {d - tl.start:.3f}s, not past offset " \
            f"{lastoff}"
        if prev is None:
            prev = commits.failed_seq(member, p, t, d)
            why_c = f"{member}'s commit of partition {shown} in [{t - tl.start:.3f}s, {d - tl.start:.3f}s] failed"
        if prev is not None:
            seqs.append(prev)
        evs = tl.history.events_at(seqs)
        # the pair's first stall, standing for its `stalls` stalled events up to `until_mono` (a known bug's marks must
        # hold them all: harness/findings/match.py)
        wits.append({**witness(evs[seqs[0]], f"{s.describe()}: processed partition {shown} up to offset {lastoff}; no "
                                             f"successful commit of it past that by {d - tl.start:.3f}s ({why})"
                                             + (f"; {n} stalled events of it up to {last_t - tl.start:.3f}s" if n > 1 else "")),
                     "stalls": n, "until_mono": last_t})
        if prev is not None:
            wits.append(witness(evs[prev], why_c))
        if cut is not None:
            wits.append(witness(cut, f"{member} gave partition {shown} up here, before its bound ran out"))
    return verdict(NAME, "invalid", msg, wits, m)


def _why_deadline(s: CommitSettings) -> str:
    g = f"plus {COMMIT_GRACE_S:g} s grace"
    if s.mode == "auto":
        return f"its auto-commit interval of {s.auto_commit_s:g} s {g}"
    return f"{g} after processing: it commits after each poll" if s.mode != "never" else f"{g} after processing"


def _ownership_terms(lives: LifeSettings, o) -> tuple[float, float, float, CommitSettings]:
    """(bound B, graceful end g or inf, ungraceful end or inf, settings) of an ownership interval."""
    s = lives.at(o.member, o.start)
    end = o.end
    graceful = o.end_reason == "revoked" or (o.end_reason == "exit" and (o.end_event or {}).get("how") == "graceful")
    ungraceful = o.end_reason == "lost" or (o.end_reason == "exit" and not graceful)
    return s.bound_s, end if graceful else INF, end if ungraceful else INF, s


class _Excusing:
    """Per member, the spans in which commits may rightly fail or wait: faults affecting it or naming brokers,
    and each broker event (a point)."""

    def __init__(self, tl) -> None:
        self.tl = tl
        self.points = sorted(e["mono"] for _, e in tl.control if e["type"] == "broker_event" and e["mono"] <= tl.end)
        self.by_member: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _spans(self, member: str) -> tuple[np.ndarray, np.ndarray]:
        got = self.by_member.get(member)
        if got is None:
            reached = causes.build(self.tl).reached  # the members each fault reached (`causes`)
            raw = [(f.start, f.end) for f in self.tl.faults
                   if member in reached(f) or (f.start_event or {}).get("brokers_affected")]
            raw += [(x, x) for x in self.points]
            merged: list[list[float]] = []
            for a, b in sorted(raw):
                if merged and a <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], b)
                else:
                    merged.append([a, b])
            got = (np.array([x[0] for x in merged]), np.array([x[1] for x in merged]))
            self.by_member[member] = got
        return got

    def overlaps(self, member: str, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Whether [lo, hi] meets one of the member's excusing spans, for each pair."""
        a, b = self._spans(member)
        if not len(a):
            return np.zeros(len(lo), bool)
        k = np.searchsorted(a, hi, "right") - 1
        return (k >= 0) & (b[np.maximum(k, 0)] >= lo)


class _Commits:
    """The commit entries of the topics up to E, by partition, in time order: (mono, offset, ok, member, seq, key);
    key: when the commit was asked for (`requested_mono`), else when it finished."""

    def __init__(self, history: History, tl: timeline.Timeline) -> None:
        c = history.bulk("committed")
        lay = tl.layout
        base = lay.code_bases(c.c_topic)
        sel = np.flatnonzero((base >= 0) & ((c.c_partition >= 0) | (not lay.multi)))
        row = c.c_row[sel]
        keep = c.mono[row] <= tl.end
        sel, row = sel[keep], row[keep]
        ok = c.ok[row] != 0
        self.n_ok, self.n_failed = int(np.count_nonzero(ok)), int(np.count_nonzero(~ok))
        part = c.c_partition[sel] + base[sel]  # global partitions (the partition itself with one topic)
        self.by_p: dict[int, tuple] = {}
        order = np.argsort(part, kind="stable")  # by partition, each in time order: one slice per partition
        part, row, sel, ok = part[order], row[order], sel[order], ok[order]
        mono, key = c.mono[row], np.minimum(c.requested[row], c.mono[row])
        off, member, seq = c.c_offset[sel], c.member[row], c.seq[row]
        cut = np.flatnonzero(np.diff(part)) + 1
        for a, b in zip([0, *cut.tolist()], [*cut.tolist(), len(part)]) if len(part) else ():
            k = slice(a, b)
            self.by_p[int(part[a])] = (mono[k], off[k], ok[k], member[k], seq[k], key[k])
        self.history = history
        self.outcomes = (c.mono, c.member)  # every commit outcome a member recorded, of any partition
        proc = history.bulk("processed")
        self.processed_at = (proc.mono, proc.member)
        self.asked_at = (np.minimum(c.requested, c.mono), c.member, c.seq)  # every commit asked for, any partition
        self._seen: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._outcome_times: dict[str, np.ndarray] = {}  # member -> when its commit outcomes were recorded, sorted

    def outcome_in(self, member: str, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """For each (lo, hi]: whether the member recorded a commit outcome (ok or not, any partition) in it."""
        if (mono := self._outcome_times.get(member)) is None:  # sorted once per member, not per partition
            mono, mem = self.outcomes
            mono = self._outcome_times[member] = np.sort(mono[self._of(mem, member)])
        return np.searchsorted(mono, hi, "right") > np.searchsorted(mono, lo, "right")

    def before(self, p: int, t: np.ndarray) -> np.ndarray:
        """For each time, the offset of the last successful commit of p at or before it (-1: none)."""
        mono, off, ok, _, _, _ = self.by_p.get(p, _NONE)
        mono, off = mono[ok], off[ok]
        i = np.searchsorted(mono, t, "right") - 1
        return np.where(i >= 0, off[np.maximum(i, 0)] if len(off) else -1, -1)

    def best_by(self, member: str, p: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """For each [lo, hi], the highest offset of p the member committed successfully, its key in it (-2: none)."""
        _, off, ok, mem, _, key = self.by_p.get(p, _NONE)
        k = ok & self._of(mem, member)
        key, off = key[k], off[k]
        out = np.full(len(lo), -2, np.int64)
        if not len(key):
            return out
        order = np.argsort(key, kind="stable")
        key, off = key[order], off[order]
        a, b = np.searchsorted(key, lo, "left"), np.searchsorted(key, hi, "right")
        idx = np.empty(2 * len(a), np.int64)
        idx[0::2], idx[1::2] = a, b
        red = np.maximum.reduceat(np.append(off, -2), idx)[0::2]  # over [a, b); a == b gives a row to mask
        return np.where(b > a, red, out)

    def _of(self, mem: np.ndarray, member: str) -> np.ndarray:
        code = self.history.code(member)
        return mem == (-1 if code is None else code)

    def refused_in(self, member: str, p: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """For each [lo, hi], whether the member asked for a commit of p in it that failed."""
        _, _, ok, mem, _, key = self.by_p.get(p, _NONE)
        key = np.sort(key[~ok & self._of(mem, member)])
        return np.searchsorted(key, hi, "right") > np.searchsorted(key, lo, "left")

    def after_refusals(self, member: str, p: int, t: float, deadline: float, bound: float,
                       given_up: float) -> tuple[float, tuple[int, float] | None]:
        """(the deadline, (seq, outcome time) of the last refusal or None) of a record processed at t once the
        member's refused commits of p are retried: a commit of p it asked for in [t, D] that failed (ok=false,
        its outcome at f) is retried by its next commit (after the next poll's records; auto: at the next tick),
        so D becomes min(f + bound, given_up) + G, again for a refused retry (`bound`: the life's retry bound, its
        revoke handler's wait included); D itself when none was refused."""
        mono, _, ok, mem, seq, key = self.by_p.get(p, _NONE)
        k = ~ok & self._of(mem, member)
        mono, key, seq = mono[k], key[k], seq[k]
        last = None
        while True:
            asked = np.flatnonzero((key >= t) & (key <= deadline))
            if not len(asked):
                return deadline, last
            j = asked[np.argmax(mono[asked])]
            back = self.back_from_poll(member, float(mono[j]))
            last = (int(seq[j]), float(mono[j]), back)
            nd = min(back + bound, given_up) + COMMIT_GRACE_S
            if nd <= deadline:
                return deadline, last
            deadline = nd

    def back_from_poll(self, member: str, f: float) -> float:
        """When the member, refused at f, was first seen back from its next poll: its first records processed or
        commit asked for after f, or the start of the revoke handler that asked for that commit (the retry rides on
        that poll; the client may hold a poll, as a leader fetching metadata for its assignment does, and so may a
        loaded machine); f itself when nothing follows."""
        if member not in self._seen:  # each member's times, sorted once (a run may hold many refusals)
            pm, pmem = self.processed_at
            am, amem, aseq = self.asked_at
            k = np.flatnonzero(self._of(amem, member))
            k = k[np.argsort(am[k], kind="stable")]
            self._seen[member] = (np.sort(pm[self._of(pmem, member)]), am[k], aseq[k])
        proc, asked, seq = self._seen[member]
        i = np.searchsorted(proc, f, "right")
        first = float(proc[i]) if i < len(proc) else INF
        j = np.searchsorted(asked, f, "right")
        if j < len(asked):
            began = self.history.events_at([int(seq[j])])[int(seq[j])].get("revoke_began")
            # a commit from the revoke handler: the member's own code ran from the handler's start
            first = min(first, float(asked[j]), max(f, began) if isinstance(began, (int, float)) else INF)
        return first if first < INF else f

    def last_ok_seq(self, member: str, p: int, t: float) -> int | None:
        mono, _, ok, mem, seq, _ = self.by_p.get(p, _NONE)
        k = np.flatnonzero(ok & self._of(mem, member) & (mono <= t))
        return int(seq[k[-1]]) if len(k) else None

    def failed_seq(self, member: str, p: int, lo: float, hi: float) -> int | None:
        mono, _, ok, mem, seq, _ = self.by_p.get(p, _NONE)
        k = np.flatnonzero(~ok & self._of(mem, member) & (mono >= lo) & (mono <= hi))
        return int(seq[k[0]]) if len(k) else None
