"""Commit durability: an offset the group's coordinator acknowledged is what it returns afterwards (the design's
invariant 15).

A member records each commit's outcome as it happens (`committed`: ok, its offsets, `requested_mono` when it asked);
the harness reads the group's committed offsets from its coordinator (`offsets_read`, harness/kinds/offsets_read.py)
after each step that acts on brokers (`reads_after`) and after the members' final stop. For each read R that was
answered (asked at a, answered at b) and each partition p of which some member had a commit acknowledged by a (ok,
its outcome recorded at or before a):

- **last**: the acknowledged commit of p whose outcome was recorded last at or before a (by any member: a later
  acknowledged commit replaces an earlier one, whatever its offset);
- **allowed**: last's offset, and the offset of every commit of p (acknowledged or not) asked for at or before b whose
  outcome came at or after last was asked for: a commit in flight while R was asked (the coordinator may have taken
  it before or after it answered R), or racing last (two members' commits whose order the coordinator decided);
- **kept**: R returns an allowed offset for p; or one above last's that no recorded commit asked for (a commit the
  client made without an outcome recorded, as an auto-commit on close: nothing acknowledged was lost);
- otherwise **lost**: R returns less than last's offset (rolled back), or nothing for p. A violation, naming the
  partition, the offsets, the coordinator before (the last read answered before last was acknowledged, else the
  broker the steps between acted on) and after (R's), and the times (seconds from the run's start).

Verdicts: `invalid` with witnesses (the acknowledged commit and the read, for the first read of each partition that
lost it); `unknown` when a read the plan made certain (after each step `reads_after` names, and at the end) is missing
or had no answer, naming it, or when no read judged an acknowledged commit; `skipped` (the plan then decides,
`applies`) when the history holds no read or no acknowledged commit; else `valid`. Measurements: `reads`,
`reads_unanswered`, `commits_acknowledged`, `judged` (partition and read pairs), `kept_in_flight` (kept by a commit in
flight, not last), `above_recorded` (kept above every recorded commit), `lost`, `lost_partitions`.
"""
from __future__ import annotations

from harness.base.steps import Step, spec
from harness.invariants.core import MAX_WITNESSES, CheckSettings, Verdict, empty, verdict, witness
from harness.record.history import History

NAME = "commit_durability"
EVENT = "offsets_read"
END = "end"


def reads_after(kind: str) -> bool:
    """Whether the harness reads the group's committed offsets after a step of this action: one that acts on brokers
    (its row's `brokers`: a coordinator moves, or may) or waits for the offsets partition's compaction."""
    row = spec(kind)
    return row is not None and (bool(row.brokers) or kind == Step.WAIT_OFFSETS_COMPACTED)


def planned_reads(history: History) -> list[tuple[str, str | None]]:
    """(after, step kind) of each read the plan makes certain: after each step `reads_after` names (from run_start's
    `plan`, else the steps' `action_start` events), then at the end."""
    plan = (history.run_start() or {}).get("plan")
    if not isinstance(plan, list):
        plan = [e for _, e in history.control() if e.get("type") == "action_start"]
    return [(str(a.get("action_id")), a.get("kind")) for a in plan if reads_after(str(a.get("kind")))] + [(END, None)]


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge that every acknowledged commit is what each later read of the group's offsets returns (module doc)."""
    if (v := empty(NAME, history)) is not None:
        return v
    ctl = [e for _, e in history.control()]
    reads = [e for e in ctl if e.get("type") == EVENT]
    start = history.run_start()
    t0 = float(start["mono"]) if start else min((e["mono"] for e in ctl), default=0.0)
    commits = _commits(history)
    answered = [r for r in reads if r.get("error") is None and isinstance(r.get("offsets"), list)]
    m = {"reads": len(reads), "reads_unanswered": len(reads) - len(answered),
         "commits_acknowledged": sum(1 for es in commits.values() for e in es if e[3]), "judged": 0,
         "kept_in_flight": 0, "above_recorded": 0, "lost": 0, "lost_partitions": []}
    if not reads:
        return verdict(NAME, "skipped", "the history holds no read of the group's committed offsets (offsets_read)",
                       (), m)
    if not m["commits_acknowledged"]:
        return verdict(NAME, "skipped", f"no member recorded an acknowledged commit ({len(reads)} reads)", (), m)
    lost = _judge(answered, commits, m)
    if lost:
        return _invalid(history, lost, ctl, reads, t0, m)
    gaps = _unread(history, reads, t0)
    if gaps:
        return verdict(NAME, "unknown", "; ".join(gaps), (), m)
    if not m["judged"]:
        return verdict(NAME, "unknown", f"no read of the group's offsets came after an acknowledged commit "
                                        f"({len(answered)} answered reads)", (), m)
    return verdict(NAME, "valid", f"{m['judged']} partition reads after acknowledged commits, from {len(answered)} "
                                  f"reads of the coordinator: each returned the last acknowledged offset "
                                  f"({m['kept_in_flight']} a commit in flight, {m['above_recorded']} one above every "
                                  f"recorded commit)", (), m)


def _commits(history: History) -> dict[tuple[str, int], list[tuple]]:
    """(topic, partition) -> its commit entries in outcome order: (outcome mono, asked mono, offset, ok, member, seq)."""
    c, vals = history.bulk("committed"), history.values
    out: dict[tuple[str, int], list[tuple]] = {}
    for j in range(len(c.c_row)):
        r = int(c.c_row[j])
        mono = float(c.mono[r])
        asked = min(float(c.requested[r]), mono)
        out.setdefault((vals[int(c.c_topic[j])], int(c.c_partition[j])), []).append(
            (mono, asked, int(c.c_offset[j]), bool(c.ok[r]), vals[int(c.member[r])], int(c.seq[r])))
    for es in out.values():
        es.sort(key=lambda e: (e[0], e[5]))
    return out


def _judge(answered: list[dict], commits: dict, m: dict) -> list[tuple]:
    """The first lost commit of each partition: (partition, last entry, the read, its offset or None); counts in m."""
    lost: dict[tuple[str, int], tuple] = {}
    for r in sorted(answered, key=lambda r: r["mono"]):
        a, b = float(r.get("asked_mono", r["mono"])), float(r["mono"])
        got = {(t, int(p)): int(o) for t, p, o in r["offsets"]}
        for key, es in commits.items():
            acked = [e for e in es if e[3] and e[0] <= a]
            if not acked:
                continue
            last = acked[-1]
            m["judged"] += 1
            allowed = {e[2] for e in es if e[1] <= b and e[0] >= last[1]}
            v = got.get(key)
            if v == last[2]:
                continue
            if v in allowed:
                m["kept_in_flight"] += 1
            elif v is not None and v > last[2] and all(v != e[2] for e in es):
                m["above_recorded"] += 1
            else:
                m["lost"] += 1
                lost.setdefault(key, (key, last, r, v))
    m["lost_partitions"] = [f"{t}-{p}" for t, p in sorted(lost)]
    return sorted(lost.values(), key=lambda x: (x[2]["mono"], x[0]))


def _coordinator_before(last: tuple, read: dict, ctl: list[dict], reads: list[dict], t0: float) -> str:
    """The coordinator when `last` was acknowledged: the last read answered before it, else the broker the steps
    between it and `read` acted on (a coordinator killed or restarted names it), else unknown."""
    prior = [r for r in reads if r["mono"] <= last[0] and r.get("coordinator") is not None]
    if prior:
        return f"broker {prior[-1]['coordinator']} (read at {prior[-1]['mono'] - t0:.3f} s)"
    acted = [e for e in ctl if e.get("type") == "action_end" and last[0] <= e["mono"] <= read["mono"]
             and reads_after(str(e.get("kind"))) and e.get("broker") is not None]
    if acted:
        return f"broker {acted[0]['broker']} (the one {acted[0].get('kind')} acted on at {acted[0]['mono'] - t0:.3f} s)"
    return "not read before"


def _invalid(history: History, lost: list[tuple], ctl: list[dict], reads: list[dict], t0: float, m: dict) -> Verdict:
    parts, wits = [], []
    seqs = history.events_at([x[1][5] for x in lost[:MAX_WITNESSES // 2]])
    for (t, p), last, r, v in lost:
        shown = "nothing" if v is None else f"offset {v} (rolled back)" if v < last[2] else \
            f"offset {v} (an earlier commit's)"
        after = r.get("after")
        when = "at the end" if after == END else f"after step {after} ({r.get('step_kind')})"
        parts.append(f"{t}-{p}: offset {last[2]} acknowledged to {last[4]} at {last[0] - t0:.3f} s (coordinator "
                     f"{_coordinator_before(last, r, ctl, reads, t0)}), then read as {shown} at {r['mono'] - t0:.3f} s "
                     f"from coordinator broker {r.get('coordinator')} (the read {when})")
        if last[5] in seqs and len(wits) < MAX_WITNESSES:
            wits += [witness(seqs[last[5]], f"the last acknowledged commit of {t}-{p} ({last[2]})"),
                     witness(r, f"the coordinator returned {shown} for {t}-{p}")]
    return verdict(NAME, "invalid", f"{len(lost)} partition(s) lost an acknowledged commit: " + "; ".join(parts[:3])
                   + ("; ..." if len(parts) > 3 else ""), wits, m, found=2 * len(lost))


def _unread(history: History, reads: list[dict], t0: float) -> list[str]:
    """What the plan made certain that no answered read shows: a read missing, or one that had no answer."""
    by_after = {}
    for r in reads:
        by_after.setdefault(str(r.get("after")), []).append(r)
    out = []
    for after, kind in planned_reads(history):
        what = "the read at the end" if after == END else f"the read after step {after} ({kind})"
        got = by_after.get(after)
        if not got:
            out.append(f"{what} of the group's committed offsets is missing (no offsets_read)")
        elif all(r.get("error") is not None or r.get("offsets") is None for r in got):
            out.append(f"{what} had no answer from the coordinator at {got[-1]['mono'] - t0:.3f} s: "
                       f"{got[-1].get('error')}")
    return out
