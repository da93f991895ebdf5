"""Commit durability: an offset the group's coordinator acknowledged is what it returns afterwards (the design's
invariant 15).

A member records each commit's outcome as it happens (`committed`: ok, its offsets, `requested_mono` when it asked;
a Kafka Streams instance or a Connect worker `group_commit` (ACKED): each commit of a group its coordinator
acknowledged, seen by the consumer's interceptor (`onCommit`) or, under exactly-once, a committed transaction that
carried the offsets, with the group it names and `requested_mono`, the earliest it can have been asked); the harness
reads each group's committed offsets from its coordinator (`offsets_read`, harness/kinds/offsets_read.py) after
each step that acts on brokers (`reads_after`) and after the members' final stop. A `committed` event is of the
run's group (the reads' one); a `group_commit` is of the group it names, judged by the reads of that group. For each
read R that was answered (asked at a, answered at b) and each partition p of which some member had a commit
acknowledged by a (ok, its outcome recorded at or before a):

- **last**: the acknowledged commit of p whose outcome was recorded last at or before a (by any member: a later
  acknowledged commit replaces an earlier one, whatever its offset);
- **allowed**: last's offset, and the offset of every commit of p (acknowledged or not) asked for at or before b whose
  outcome came at or after last was asked for: a commit in flight while R was asked (the coordinator may have taken
  it before or after it answered R), or racing last (two members' commits whose order the coordinator decided);
- **kept**: R returns an allowed offset for p; or one above last's that no recorded commit asked for (a commit the
  client made without an outcome recorded, as an auto-commit on close: nothing acknowledged was lost); or, when last
  is a committed transaction (exactly-once, `via` TRANSACTION), the offset of the acknowledged commit of p before it:
  the transaction coordinator answers EndTxn once the commit is decided and writes the markers after, and the group's
  coordinator shows the offsets only once their marker came; it starts no next transaction of the producer until
  they are written (CONCURRENT_TRANSACTIONS), so an answer is at most one transaction behind (`markers_pending`);
- otherwise **lost**: R returns less than last's offset (rolled back), or nothing for p. A violation, naming the
  partition, the offsets, the coordinator before (the last read answered before last was acknowledged, else the
  broker the steps between acted on) and after (R's), and the times (seconds from the run's start).

Verdicts: `invalid` with witnesses (the acknowledged commit and the read, for the first read of each partition that
lost it); `unknown` when a read the plan made certain (after each step `reads_after` names, and at the end, of each
group read or committed to) is missing, or had no answer and no answered read of the group came after it (a later
answer still reads after that step: a commit lost at it and not replaced shows there), naming it, or when no read
judged an acknowledged commit; `skipped` (the plan then decides, `applies`) when the history holds no read or no
acknowledged commit; else `valid`. A read of the run's group answered by a coordinator already deposed when asked
(`deposed_at`: another broker had loaded the group's partition of __consumer_offsets at a newer leader epoch; a
broker cut off from the others answers its stale record) counts as unanswered. Measurements: `reads`,
`reads_unanswered`, `reads_deposed` (answered by a deposed coordinator, counted unanswered), `commits_acknowledged`,
`judged` (partition and read pairs), `kept_in_flight` (kept by a commit in flight, not last), `markers_pending` (one
transaction behind), `above_recorded` (kept above every recorded commit),
`refused` (a partition the read's answer refused, `partition_errors`: not judged by it), `lost`, `lost_partitions`.
"""
from __future__ import annotations

from harness.base.steps import Step, spec
from harness.invariants import brokers
from harness.invariants.coordinator_log import deposed_at, offsets_loads
from harness.invariants.core import MAX_WITNESSES, CheckSettings, Verdict, empty, verdict, witness
from harness.record.history import History

NAME = "commit_durability"
EVENT = "offsets_read"
#: a Streams or Connect member's commit its group's coordinator acknowledged (the consumer members' is `committed`)
ACKED = "group_commit"
#: a `group_commit`'s `via` when its offsets went through a transaction (exactly-once) that committed
TRANSACTION = "transaction"
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
    reads, deposed = _from_deposed(history, reads)
    answered = [r for r in reads if r.get("error") is None and isinstance(r.get("offsets"), list)]
    m = {"reads": len(reads), "reads_unanswered": len(reads) - len(answered), "reads_deposed": deposed,
         "commits_acknowledged": sum(1 for es in commits.values() for e in es if e[3]), "judged": 0,
         "kept_in_flight": 0, "markers_pending": 0, "above_recorded": 0, "refused": 0, "lost": 0, "lost_partitions": []}
    if not reads:
        return verdict(NAME, "skipped", "the history holds no read of the group's committed offsets (offsets_read)",
                       (), m)
    if not m["commits_acknowledged"]:
        return verdict(NAME, "skipped", f"no member recorded an acknowledged commit ({len(reads)} reads)", (), m)
    lost = _judge(answered, commits, m)
    if lost:
        return _invalid(history, lost, ctl, reads, t0, m)
    gaps = _unread(history, reads, commits, t0)
    if gaps:
        return verdict(NAME, "unknown", "; ".join(gaps), (), m)
    if not m["judged"]:
        return verdict(NAME, "unknown", f"no read of the group's offsets came after an acknowledged commit "
                                        f"({len(answered)} answered reads)", (), m)
    deposed = f" ({m['reads_deposed']} from a deposed coordinator)" if m["reads_deposed"] else ""
    later = (f"; {m['reads_unanswered']} read(s) had no answer{deposed}, a later answered read of the group came after "
             f"each" if m["reads_unanswered"] else "")
    return verdict(NAME, "valid", f"{m['judged']} partition reads after acknowledged commits, from {len(answered)} "
                                  f"reads of the coordinator{later}: each returned the last acknowledged offset "
                                  f"({m['kept_in_flight']} a commit in flight, {m['markers_pending']} a transaction's markers "
                                  f"pending, {m['above_recorded']} one above every recorded commit)", (), m)


def judged(history: History, settings: CheckSettings) -> Verdict:
    """`check`, or `unknown` naming the exception a checker raised (a Streams or Connect run's, judged beside its
    kind's own checkers)."""
    try:
        return check(history, settings)
    except Exception as e:  # noqa: BLE001 - a checker that fails decides nothing
        return verdict(NAME, "unknown", f"checker raised {type(e).__name__}: {e}")


def _commits(history: History) -> dict[tuple[str | None, str, int], list[tuple]]:
    """(group, topic, partition) -> its commit entries in outcome order: (outcome mono, asked mono, offset, ok, member,
    seq, a committed transaction); group None for `committed` (the run's group), the named one for `group_commit`."""
    c, vals = history.bulk("committed"), history.values
    out: dict[tuple[str | None, str, int], list[tuple]] = {}
    for j in range(len(c.c_row)):
        r = int(c.c_row[j])
        mono = float(c.mono[r])
        asked = min(float(c.requested[r]), mono)
        out.setdefault((None, vals[int(c.c_topic[j])], int(c.c_partition[j])), []).append(
            (mono, asked, int(c.c_offset[j]), bool(c.ok[r]), vals[int(c.member[r])], int(c.seq[r]), False))
    for seq, e in history.control():
        if e.get("type") != ACKED or not isinstance(e.get("offsets"), list):
            continue
        mono = float(e["mono"])
        asked = min(float(e.get("requested_mono", mono)), mono)
        for t, p, o in e["offsets"]:
            out.setdefault((e.get("group_id"), t, int(p)), []).append(
                (mono, asked, int(o), bool(e.get("ok", True)), e.get("member"), seq, e.get("via") == TRANSACTION))
    for es in out.values():
        es.sort(key=lambda e: (e[0], e[5]))
    return out


def _from_deposed(history: History, reads: list[dict]) -> tuple[list[dict], int]:
    """The reads, each of the run's group answered by a coordinator already deposed when asked (`deposed_at`: a
    broker cut off from the others answers its stale record) taken as unanswered, its reason as its error; and how
    many."""
    loads, group = offsets_loads(history), brokers.group_of(history)
    out, n = [], 0
    for r in reads:
        why = deposed_at(loads, r.get("coordinator"), float(r.get("asked_mono", r["mono"]))) \
            if r.get("error") is None and r.get("group_id") in (group, None) else None
        n += why is not None
        out.append(r if why is None else {**r, "offsets": None, "error": f"answered by a deposed coordinator: {why}"})
    return out, n


def _name(key: tuple) -> str:
    """A partition as messages name it: `topic-p`, after its group when a `group_commit` named one."""
    g, t, p = key
    return f"{t}-{p}" if g is None else f"{g}: {t}-{p}"


def _judge(answered: list[dict], commits: dict, m: dict) -> list[tuple]:
    """The first lost commit of each partition: ((group, topic, partition), last entry, the read, its offset or None);
    counts in m."""
    lost: dict[tuple[str | None, str, int], tuple] = {}
    for r in sorted(answered, key=lambda r: r["mono"]):
        a, b = float(r.get("asked_mono", r["mono"])), float(r["mono"])
        got = {(t, int(p)): int(o) for t, p, o in r["offsets"]}
        refused = {(t, int(p)) for t, p, _ in r.get("partition_errors") or ()}
        for key, es in commits.items():
            if key[0] is not None and key[0] != r.get("group_id"):
                continue  # another group's commit: judged by that group's reads
            acked = [e for e in es if e[3] and e[0] <= a]
            if not acked:
                continue
            if key[1:] in refused:
                m["refused"] += 1  # the answer has an error for it, no offset: not judged by this read
                continue
            last = acked[-1]
            m["judged"] += 1
            allowed = {e[2] for e in es if e[1] <= b and e[0] >= last[1]}
            v = got.get(key[1:])
            if v == last[2]:
                continue
            if v in allowed:
                m["kept_in_flight"] += 1
            elif last[6] and len(acked) > 1 and v == acked[-2][2]:
                m["markers_pending"] += 1  # the last transaction's markers not yet written (module doc)
            elif v is not None and v > last[2] and all(v != e[2] for e in es):
                m["above_recorded"] += 1
            else:
                m["lost"] += 1
                lost.setdefault(key, (key, last, r, v))
    m["lost_partitions"] = [_name(k) for k in sorted(lost, key=lambda k: (k[0] or "", k[1], k[2]))]
    return sorted(lost.values(), key=lambda x: (x[2]["mono"], x[0][0] or "", x[0][1:]))


def _coordinator_before(last: tuple, read: dict, ctl: list[dict], reads: list[dict], t0: float) -> str:
    """The coordinator when `last` was acknowledged: the last read answered before it, else the broker the steps
    between it and `read` acted on (a coordinator killed or restarted names it), else unknown."""
    prior = [r for r in reads if r["mono"] <= last[0] and r.get("coordinator") is not None
             and r.get("group_id") == read.get("group_id")]
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
    for key, last, r, v in lost:
        shown = "nothing" if v is None else f"offset {v} (rolled back)" if v < last[2] else \
            f"offset {v} (an earlier commit's)"
        after = r.get("after")
        when = "at the end" if after == END else f"after step {after} ({r.get('step_kind')})"
        parts.append(f"{_name(key)}: offset {last[2]} acknowledged to {last[4]} at {last[0] - t0:.3f} s (coordinator "
                     f"{_coordinator_before(last, r, ctl, reads, t0)}), then read as {shown} at {r['mono'] - t0:.3f} s "
                     f"from coordinator broker {r.get('coordinator')} (the read {when})")
        if last[5] in seqs and len(wits) < MAX_WITNESSES:
            wits += [witness(seqs[last[5]], f"the last acknowledged commit of {_name(key)} ({last[2]})"),
                     witness(r, f"the coordinator returned {shown} for {_name(key)}")]
    return verdict(NAME, "invalid", f"{len(lost)} partition(s) lost an acknowledged commit: " + "; ".join(parts[:3])
                   + ("; ..." if len(parts) > 3 else ""), wits, m, found=2 * len(lost))


def _unread(history: History, reads: list[dict], commits: dict, t0: float) -> list[str]:
    """What the plan made certain that no answered read shows, for each group read or committed to: a read missing,
    or one that had no answer."""
    groups = sorted({str(r.get("group_id")) for r in reads} | {g for g, _, _ in commits if g is not None})
    by_after: dict[tuple[str, str], list[dict]] = {}
    for r in reads:
        by_after.setdefault((str(r.get("after")), str(r.get("group_id"))), []).append(r)
    out = []
    for after, kind in planned_reads(history):
        for g in groups:
            what = ("the read at the end" if after == END else f"the read after step {after} ({kind})") + \
                (f" of group {g}" if len(groups) > 1 else "")
            got = by_after.get((after, g))
            if not got:
                out.append(f"{what} of the group's committed offsets is missing (no offsets_read)")
            elif all(r.get("error") is not None or r.get("offsets") is None for r in got) and not any(
                    str(r.get("group_id")) == g and r.get("error") is None and isinstance(r.get("offsets"), list)
                    and r["mono"] > got[-1]["mono"] for r in reads):  # a later answer still reads after that step
                out.append(f"{what} had no answer from the coordinator at {got[-1]['mono'] - t0:.3f} s: "
                           f"{got[-1].get('error')}")
    return out
