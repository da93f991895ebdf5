"""Invariant 11: the group survives its coordinator.

When the broker that coordinates the group is killed or restarted (the `kill_coordinator` and
`restart_coordinator` actions; the offsets topic possibly compacted before), the new coordinator rebuilds
the group from its partition of `__consumer_offsets`. The group must come back as it was:

(a) **no member fenced**: from the action's start until the failover's aftermath ends, no member that was
    alive and in good standing when it began records `lost` (partitions taken without a revoke: its
    session or epoch was not recognised), a fatal `error`, or a crash; unless the group had no coordinator
    for longer than the session timeout (from the action's start until a broker said "Finished loading of
    metadata from __consumer_offsets-N" and did not give it up again ("Started unloading ...") within the
    aftermath, or, without the brokers' lines, the action's end): a SIGKILLed
    coordinator's partition has no leader until the controller fences the broker (`broker.session.timeout.ms`,
    9 s by default), and members whose session ran out meanwhile are fenced by the protocol's own rules
    (counted as `fenced_explained`);
(b) **no rebalance beyond the one the failover explains**: in that aftermath each such member revokes
    partitions at most once (a classic group rebuilt mid-rebalance asks its members to rejoin once; a
    consumer group rebuilt from its records needs none);
(c) **no offset lost**: from the action's start to the end of the run, a member newly given a partition
    starts reading it at or after the last offset the group had committed for it successfully before the
    assignment (a coordinator that lost a commit, or a member that forgot it, starts below it).

A fencing is explained when no coordinator served the group for longer than the fenced member's own session
timeout (as it ran with it, `settings.member_settings`). The aftermath of a failover runs from its action's end
for the longest session timeout of the members then plus the disturbance bound, cut short by the workload's
end (the final teardown) or the next
action that disturbs the group (anything but `sleep` and `wait_stable`) or the end of the run. Members
under another fault (`members_affected`) during it are not judged by (a) and (b). Skipped when the
history has no coordinator failover; unknown when the history has no member events.
"""
from __future__ import annotations

import re
from collections import defaultdict

from harness.record.history import History
from harness.invariants import timeline
from harness.invariants.core import MAX_WITNESSES, CheckSettings, Verdict, empty, verdict, witness
from harness.invariants.settings import disturbance_bound, member_settings
from harness.base.steps import Step

NAME = "coordinator_survival"
COORDINATOR_ACTIONS = frozenset({Step.KILL_COORDINATOR, Step.RESTART_COORDINATOR})
CALM = frozenset({Step.SLEEP, Step.WAIT_STABLE})


def failovers(history: History) -> list[tuple[dict, float, float]]:
    """(action_start event, action end, aftermath end) of each coordinator failover, in time order."""
    ctl = [e for _, e in history.control()]
    run_end = max((e["mono"] for e in ctl), default=0.0)
    ends = {e.get("action_id"): e["mono"] for e in ctl if e.get("type") == "action_end"}
    starts = [e for e in ctl if e.get("type") == "action_start"]
    out = []
    for i, a in enumerate(starts):
        if a.get("kind") not in COORDINATOR_ACTIONS:
            continue
        end = ends.get(a.get("action_id"), run_end)
        nxt = next((b["mono"] for b in starts[i + 1:] if b.get("kind") not in CALM and b["mono"] >= end), run_end)
        out.append((a, end, nxt))
    return out


#: a coordinator has (re)built the group: the end of its loading of the group's offsets partition
LOADED = re.compile(r"Finished loading of metadata from __consumer_offsets-\d+")
#: a coordinator gives the group up again
UNLOADING = re.compile(r"Started unloading metadata for __consumer_offsets-\d+")


def unserved_until(history: History, start: float, end: float, until: float | None = None) -> float:
    """When a coordinator served the group again for good after a failover began at `start`: the end of the
    last load of its offsets partition up to `until` that the loading broker did not unload again, else the
    action's end. A SIGKILLed broker that is back before the controller fenced it loads the partition as
    its leader still, then loses it to another broker seconds later, not having served the members
    meanwhile (Kafka 4.4.0: loaded at +3.2 s, unloaded at +8.9 s, the next coordinator loaded at +9.1 s)."""
    served = None  # (broker, when)
    for _, e in history.control():
        if e.get("type") != "broker" or e["mono"] <= start:
            continue
        if until is not None and e["mono"] > until:
            break
        msg = e.get("message", "")
        if LOADED.search(msg):
            served = (e.get("broker"), e["mono"])
        elif served is not None and e.get("broker") == served[0] and UNLOADING.search(msg):
            served = None
    return end if served is None else served[1]


def _aftermath_end(tl, end: float, nxt: float) -> float:
    """The failover's aftermath: the disturbance bound after its end (`settings.disturbance_bound`: the members'
    recorded session timeouts and rebalance timeouts), cut short by the next action or the workload's end (the
    final teardown stops every member)."""
    bound, _ = disturbance_bound(tl, end)
    longest = max((member_settings(tl, x, end).session_timeout_s for x in tl.alive_members(end)), default=0.0)
    w = tl.workload_end if tl.workload_end is not None and tl.end_before else float("inf")
    return min(end + longest + bound, nxt, w)


def _judged_members(ctl: list[dict], start: float, until: float) -> set[str]:
    """Members alive at `start` and through `until`, under no other fault meanwhile."""
    alive: set[str] = set()
    for e in ctl:
        if e["mono"] > start:
            break
        if e.get("type") == "member_start":
            alive.add(e["member"])
        elif e.get("type") == "member_exit":
            alive.discard(e.get("member"))
    faults = {e.get("fault_id"): e for e in ctl if e.get("type") == "fault_start"}
    fault_end = {e.get("fault_id"): e["mono"] for e in ctl if e.get("type") == "fault_end"}
    for fid, f in faults.items():
        if f["mono"] <= until and fault_end.get(fid, float("inf")) >= start:
            alive -= set(f.get("members_affected") or ())
    gone = {e.get("member") for e in ctl if e.get("type") in ("member_exit", "member_stop") and start < e["mono"] < until}
    return alive - gone


def _fencing(ctl, start, until, judged, crashed_ok) -> list[dict]:
    out = []
    for e in ctl:
        if not start <= e["mono"] <= until:
            continue
        t, m = e.get("type"), e.get("member")
        if t == "lost" and m in judged and e.get("partitions"):
            out.append(witness(e, f"{m} lost its partitions during the coordinator failover (fenced)"))
        elif t == "error" and e.get("fatal") and m in crashed_ok:
            out.append(witness(e, f"{m} had a fatal error during the coordinator failover"))
        elif t == "member_exit" and e.get("how") == "crash" and m in crashed_ok:
            out.append(witness(e, f"{m} crashed during the coordinator failover"))
    return out


def _rebalances(ctl, start, until, judged) -> list[dict]:
    revokes: dict[str, list[dict]] = defaultdict(list)
    for e in ctl:
        if start <= e["mono"] <= until and e.get("type") == "revoked" and e.get("partitions") and e.get("member") in judged:
            revokes[e["member"]].append(e)
    return [witness(e, f"{m} revoked partitions a {i + 2}. time after the coordinator failover (one is explained)")
            for m, evs in revokes.items() for i, e in enumerate(evs[1:])]


def _offsets_lost(history: History, ctl: list[dict], since: float) -> list[dict]:
    """Assignments after `since` whose first read starts below the last successful commit before them."""
    vals, c, p = history.values, history.bulk("committed"), history.bulk("processed")
    commits: dict[tuple, list[tuple[float, int]]] = defaultdict(list)  # (topic, partition) -> [(mono, offset)]
    rows = c.c_row.tolist()
    for r, t, part, off in zip(rows, c.c_topic.tolist(), c.c_partition.tolist(), c.c_offset.tolist()):
        if c.ok[r]:
            commits[(vals[t], part)].append((float(c.mono[r]), off))
    reads: dict[tuple, list[tuple[float, int, int]]] = defaultdict(list)  # (member, topic, partition) -> [(mono, first, seq)]
    for mono, m, t, part, first, seq in zip(p.mono.tolist(), p.member.tolist(), p.topic.tolist(), p.partition.tolist(),
                                            p.first.tolist(), p.seq.tolist()):
        reads[(vals[m], vals[t], part)].append((mono, first, seq))
    out = []
    for e in ctl:
        if e.get("type") != "assigned" or e["mono"] < since:
            continue
        for topic, part in e.get("partitions") or ():
            before = [o for mono, o in commits.get((topic, part), ()) if mono < e["mono"]]
            first = next(((f, s) for mono, f, s in reads.get((e["member"], topic, part), ()) if mono >= e["mono"]), None)
            if before and first is not None and first[0] < before[-1]:
                proc = history.events_at([first[1]])[first[1]]
                out += [witness(e, f"{e['member']} was given {topic}-{part} after the coordinator failover"),
                        witness(proc, f"and read it from offset {first[0]}, below the group's last successful "
                                      f"commit {before[-1]} before the assignment: an offset lost")]
    return out


def check(history: History, settings: CheckSettings) -> Verdict:
    """Invariant 11 (see the module docstring)."""
    if (e := empty(NAME, history)) is not None:
        return e
    fos = failovers(history)
    if not fos:
        return verdict(NAME, "skipped", "no coordinator failover in this run")
    ctl = [e for _, e in history.control()]
    fenced, extra, explained, gaps, members = [], [], 0, [], 0
    tl = timeline.build(history, settings)
    for a, end, nxt in fos:
        until = _aftermath_end(tl, end, nxt)
        judged = _judged_members(ctl, a["mono"], until)
        members += len(judged)
        alive_at_start = _judged_members(ctl, a["mono"], a["mono"])
        gaps.append(gap := unserved_until(history, a["mono"], end, until) - a["mono"])
        for w in _fencing(ctl, a["mono"], until, judged, alive_at_start):
            ms = member_settings(tl, w.get("member") or "", a["mono"])
            if gap > ms.session_timeout_s:  # no coordinator for longer than its session: fencing is the rule
                explained += 1
            else:
                fenced.append(dict(w, why=f"{w.get('why', '')}; the group was unserved {gap:.1f}s, within "
                                          f"{w.get('member')}'s {ms.session()}".lstrip("; ")))
        extra += _rebalances(ctl, a["mono"], until, judged)
    lost = _offsets_lost(history, ctl, fos[0][0]["mono"])
    m = {"failovers": len(fos), "fenced": len(fenced), "fenced_explained": explained,
         "extra_rebalances": len(extra), "offsets_lost": len(lost) // 2,
         "unserved_s": [round(g, 3) for g in gaps]}
    if fenced or extra or lost:
        what = [f"{len(fenced)} member(s) fenced" if fenced else "", f"{len(extra)} rebalance(s) beyond the one "
                "a failover explains" if extra else "", f"{len(lost) // 2} assignment(s) read below the last "
                "committed offset" if lost else ""]
        wits = (fenced[:4] + extra[:4] + lost)[:MAX_WITNESSES]
        return verdict(NAME, "invalid", f"the group did not survive its coordinator: {', '.join(w for w in what if w)}",
                       wits, m)
    if not members:  # no member went through a failover in good standing: (a) and (b) judged nobody
        return verdict(NAME, "unknown", f"{len(fos)} coordinator failover(s), but no member was alive and in good "
                                        f"standing through any of them: nothing to judge", (), m)
    return verdict(NAME, "valid", f"{len(fos)} coordinator failover(s): no member fenced, no rebalance beyond the one "
                                  f"explained, no assignment read below its last committed offset", (), m)
