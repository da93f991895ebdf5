"""9d. `connect_source_sequence`: the source tasks' records, read back from the source topic after the run
(`connect_record` events, then `connect_read`): per task, no sequence number is missing from 0 to the highest
one written, and none is written twice unless a run of that task ended without a clean stop (its worker
killed or crashed, or the task never said it stopped) or overlapped a pause of its worker (a worker frozen
past its session is fenced, and its task's stop comes after others took the task over): at-least-once allows
such a task to redo what it had not committed. A clean stop commits only the records the broker had
acknowledged: a sequence number from the last offset a run committed (its last `connect_commit`, else its
`resume_seq`) up to the highest one it polled (its `connect_batch` events) was *in flight at the stop*, and
may be written again by the next run (a broker fault stalls the acknowledgements; when the stop outlasts
task.shutdown.graceful.timeout.ms Connect cancels the task and closes its producer, and a record already sent
may still land). A source task's producer is not idempotent (Connect sets enable.idempotence=false unless the
worker says `producer.enable.idempotence=true` or `exactly.once.source.support=enabled`), so a produce request
whose connection a broker fault cut after the broker had written it is sent again and lands twice, within one run:
a sequence number from a run's last commit before a fault that reached a broker (`brokers_affected`) up to the
highest it polled before that fault's end was *resent under a broker fault*, and may come twice. `unknown` when the
read did not reach the topic's end, or no source record was read. Measurements: `records`, `tasks`, `missing`,
`duplicated`, `duplicated_allowed` (of them `in_flight_redone` and `resent_in_broker_fault`).

(The sink direction is `record_integrity` over the run's topic: every record the workload had acknowledged
was delivered to a sink task, a `processed` event.)
"""
from __future__ import annotations

from collections import Counter, defaultdict

from harness.record.history import History
from harness.invariants.connect.view import ConnectCheckSettings, view_of
from harness.invariants.core import Verdict, verdict

NAME = "connect_source_sequence"


def _pauses(history: History) -> list[tuple[str, float, float]]:
    """(member, from, to) of every pause fault of a member (SIGSTOP, then SIGCONT)."""
    starts, out = {}, []
    for _, e in history.control():
        if e.get("type") == "fault_start" and e.get("kind") == "pause":
            starts[e["fault_id"]] = e
        elif e.get("type") == "fault_end" and e.get("fault_id") in starts:
            s = starts.pop(e["fault_id"])
            out += [(m, s["mono"], e["mono"]) for m in s.get("members_affected") or ()]
    return out + [(m, s["mono"], float("inf")) for s in starts.values() for m in s.get("members_affected") or ()]


def _in_flight(v) -> dict[tuple, list[tuple[int, int]]]:
    """Per (connector, task): the [from, to) sequence numbers each cleanly stopped run had polled past its last commit."""
    out: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    by_unit: dict[tuple, list[dict]] = defaultdict(list)
    for e in v.events:
        if e["type"] in ("connect_task_started", "connect_commit", "connect_batch"):
            by_unit[(e.get("member"), e.get("connector"), e.get("task"))].append(e)
    for r in v.runs:
        if r.key[0] != "task" or not r.clean:
            continue
        mine = [e for e in by_unit[(r.member, r.key[1], r.key[2])] if r.start <= e["mono"] <= r.end]
        starts = [e.get("resume_seq") for e in mine if e["type"] == "connect_task_started" and e["mono"] == r.start]
        commits = sorted((e["mono"], int(e["offset"])) for e in mine
                         if e["type"] == "connect_commit" and e.get("offset") is not None)
        lo = commits[-1][1] if commits else int(starts[0] or 0) if starts else 0
        hi = max((int(e["seq_to"]) + 1 for e in mine if e["type"] == "connect_batch"), default=lo)
        if hi > lo:
            out[(r.key[1], r.key[2])].append((lo, hi))
    return out


def _broker_faults(history: History) -> list[tuple[float, float]]:
    """(from, to) of every fault that reached a broker (to: its fault_end, else the history's end)."""
    starts, out = {}, []
    for _, e in history.control():
        if e.get("type") == "fault_start" and e.get("brokers_affected"):
            starts[e["fault_id"]] = e["mono"]
        elif e.get("type") == "fault_end" and e.get("fault_id") in starts:
            out.append((starts.pop(e["fault_id"]), e["mono"]))
    return out + [(s, float("inf")) for s in starts.values()]


def _idempotent(history: History, member: str) -> bool:
    """Whether the worker's recorded config makes its source producers idempotent (Connect's default: not)."""
    conf = next((e.get("settings") or {} for _, e in history.control()
                 if e.get("type") == "started" and e.get("member") == member), {})
    return (str(conf.get("producer.enable.idempotence", "")).lower() == "true"
            or str(conf.get("exactly.once.source.support", "")).lower() == "enabled")


def _resent(history: History, v) -> dict[tuple, list[tuple[int, int]]]:
    """Per (connector, task): the [from, to) sequence numbers a run had unacknowledged or polled during a broker
    fault (from its last commit before the fault, else its resume_seq, to the highest polled before its end)."""
    out: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    faults = _broker_faults(history)
    if not faults:
        return out
    mine: dict[tuple, list[dict]] = defaultdict(list)
    for e in v.events:
        if e["type"] in ("connect_task_started", "connect_commit", "connect_batch"):
            mine[(e.get("member"), e.get("connector"), e.get("task"))].append(e)
    for r in v.runs:
        if r.key[0] != "task" or _idempotent(history, r.member):
            continue
        evs = [e for e in mine[(r.member, r.key[1], r.key[2])] if r.start <= e["mono"] <= r.end]
        resume = next((e.get("resume_seq") for e in evs if e["type"] == "connect_task_started"), None)
        for s, end in faults:
            if s > r.end or end < r.start:
                continue
            before = sorted((e["mono"], int(e["offset"])) for e in evs if e["type"] == "connect_commit"
                            and e["mono"] <= s and e.get("offset") is not None)
            lo = before[-1][1] if before else int(resume or 0)
            hi = max((int(e["seq_to"]) + 1 for e in evs if e["type"] == "connect_batch" and e["mono"] <= end),
                     default=lo)
            if hi > lo:
                out[(r.key[1], r.key[2])].append((lo, hi))
    return out


def check_source_sequence(history: History, settings: ConnectCheckSettings) -> Verdict:
    reads = [e for _, e in history.control() if e.get("type") == "connect_read"]
    if not reads and not settings.source_connectors:
        return verdict(NAME, "skipped", "no source connector ran")
    if not reads:
        return verdict(NAME, "unknown", "the source topic was not read back (no connect_read event)")
    if not reads[-1].get("complete"):
        return verdict(NAME, "unknown", f"the read of the source topic stopped before its end ({reads[-1].get('records')} records)")
    seqs: dict[tuple, list[int]] = defaultdict(list)
    for _, e in history.control():
        if e.get("type") == "connect_record":
            seqs[(e["connector"], e["task"])].append(int(e["seq"]))
    if not seqs:
        return verdict(NAME, "unknown", "no source record was read back")
    v = view_of(history)
    paused = _pauses(history)
    unclean = {(r.key[1], r.key[2]) for r in v.runs if r.key[0] == "task" and (
        (not r.clean and r.how != "open")
        or any(m == r.member and s < r.end and e > r.start for m, s, e in paused))}
    flight, resent = _in_flight(v), _resent(history, v)
    bad, missing, dup, dup_ok, redone, retried = [], 0, 0, 0, 0, 0
    for (c, t), xs in sorted(seqs.items()):
        have = set(xs)
        gaps = sorted(set(range(max(have) + 1)) - have)
        twice = len(xs) - len(have)
        if twice and (c, t) not in unclean and flight.get((c, t)):
            counts = Counter(xs)
            ok = sum(n - 1 for x, n in counts.items() if n > 1 and any(lo <= x < hi for lo, hi in flight[(c, t)]))
            redone, dup_ok, twice = redone + ok, dup_ok + ok, twice - ok
            xs = [x for x in xs if not any(lo <= x < hi for lo, hi in flight[(c, t)])]
        if twice and (c, t) not in unclean and resent.get((c, t)):
            counts = Counter(xs)
            ok = sum(n - 1 for x, n in counts.items() if n > 1 and any(lo <= x < hi for lo, hi in resent[(c, t)]))
            retried, dup_ok, twice = retried + ok, dup_ok + ok, twice - ok
            xs = [x for x in xs if not any(lo <= x < hi for lo, hi in resent[(c, t)])]
        missing += len(gaps)
        if gaps:
            bad.append({"task": f"{c}-{t}", "missing": len(gaps), "first_missing": gaps[:5],
                        "why": f"task {c}-{t}: {len(gaps)} sequence number(s) missing below {max(have)}"})
        if twice and (c, t) in unclean:
            dup_ok += twice
        elif twice:
            dup += twice
            first = sorted(x for x in have if xs.count(x) > 1)[:5] if len(xs) < 200000 else []
            bad.append({"task": f"{c}-{t}", "duplicated": twice, "first_duplicated": first,
                        "why": f"task {c}-{t}: {twice} record(s) written twice though every run of it stopped cleanly"
                               + (f" (in flight at its stops: {_spans(flight[(c, t)])})" if flight.get((c, t)) else "")
                               + (f" (unacknowledged under a broker fault: {_spans(resent[(c, t)])})"
                                  if resent.get((c, t)) else "")})
    m = {"records": sum(map(len, seqs.values())), "tasks": len(seqs), "missing": missing, "duplicated": dup,
         "duplicated_allowed": dup_ok, "in_flight_redone": redone, "resent_in_broker_fault": retried}
    if bad:
        return verdict(NAME, "invalid", f"{missing} missing, {dup} duplicated source record(s)", bad, m)
    return verdict(NAME, "valid", f"{m['records']} source records of {len(seqs)} tasks: none missing"
                                  + (f", {dup_ok} redone after an unclean stop, in flight at a stop or resent under a broker fault"
                                     if dup_ok else ", none twice"),
                   measurements=m)


def _spans(spans: list[tuple[int, int]]) -> str:
    return ", ".join(f"{lo}..{hi - 1}" for lo, hi in spans)
