"""Share groups, per partition (design invariant 10); the terms are those of `view`.

- `share_inflight`: no poll acquires records of a partition while that partition already has as many records
  held (sure holds, over every member, the poll's own apart) as the group's `share.partition.max.record.locks`
  (the brokers' `group.share.partition.max.record.locks` when the group has none), the cap on a
  share-partition's in-flight records. The broker checks the cap before an acquisition and acquires whole
  batches (KIP-1206: the fetch's record count is a soft limit), so one poll may take the count past it:
  `share-leader-restart` (seed 1, Kafka 4.4.0) saw 122 records of a partition acquired in one poll, a batch the
  producer had held back while the partition was offline, with none held before. A poll that took back a
  record delivered before (delivery count 2 or more) is not judged: the broker lets a fetch re-acquire records
  inside its window whatever the count (`SharePartition.canAcquireRecords`). The most held at once is measured
  (`max_inflight`).
- `share_served`: every subscribed partition is served while the group has members: a record the producer
  acknowledged that waits longer than B for its first delivery is a violation when its partition had no
  delivery at all for longer than B meanwhile (no member was serving it), B = the share session timeout (a
  departed member's partitions go to others after it) + the record lock duration (its fetched records come back
  after it) + the heartbeat interval (the next owner learns its assignment at its next heartbeat) + twice the
  longest a poll may keep a member from fetching again (a member works through one poll's records before it
  fetches again, so a partition newly its own waits that long, once with its first owner and once with the next),
  each as the run recorded it: the poll's part by each delivered member's own `started` settings (`_poll_bound`:
  in explicit mode the record lock, since a member that honours its locks works on a poll's records only while
  it surely holds them and releases the rest; in implicit mode its `processing_ms` for each record of its largest
  poll; a member that recorded neither makes the verdict `unknown`), never by the slowest poll the same run saw
  (measured: `longest_poll_s`). A record never delivered waited until the members' final stop (`serving_end`), and
  is judged so, but for one the group skipped by its reset policy, or one surely lost (never delivered and below
  the first offset delivered in its added partition, or passed by the start offset after the run): no wait but
  `share_completion`'s to judge (`skipped.py`; measured: `skipped_by_reset_policy`, `lost_surely`). A record that waits behind a backlog while its partition is served is slow, not
  unserved: measured, not judged. Records produced while the group had no live member are not judged, nor is
  the time before the group coordinator first gave any member a partition (its log line "new assignment state:
  ... assignedPartitions=[...]"; before it the share partitions' state is being initialized and nobody can be
  given them: measured, `first_assignment_s` after the first member started), nor the time a partition had no
  leader (a `restart_partition_leader` action's `offline` partitions, from its start to its end: nothing could
  serve them): they are taken off the wait and the gap.
  Second, in the coordinator's own words (the `share_assignment` events, its answers to ShareGroupDescribe,
  harness/kinds/share_watch.py; the clients report no assignment): while it lists a live member, every partition
  of the run's topics is assigned to at least one live member (alive in the history: started, not exited), but
  for gaps of at most A = the share session timeout (a member gone without leaving keeps its partitions until its
  session expires) + the heartbeat interval (the others take them at their next heartbeat) + the watch's interval
  (a change is seen that much later) + the clock slack. A gap is measured per departure: when the coordinator
  gives the partition to other members that are gone as well (a poison record killing each member it reaches), a
  new gap starts there, judged against A again (each of them keeps it until its own session expires; a member named
  before the history saw it start does not start one). Not judged: before the coordinator first assigned any
  partition (the share partitions being initialized), an added partition before its first assignment (measured:
  `added_partition_first_assigned_s`), after the members' final stop, where the watch got no answer (blind, it ends
  a gap: measured, `assignment_blind_s`), a partition without a leader (above), and a gap that overlaps a fault of
  the brokers (the coordinator's failover restarts its members' sessions: measured,
  `assignment_gap_max_in_broker_faults_s`). When the coordinator names a member the history does not know (a
  program whose client.id is not its member id) or the history has no `share_assignment` event, this half is not
  judged and the verdict is `unknown` (naming why), never a pass.
"""
from __future__ import annotations

import re
from bisect import bisect_left

from harness.record.history import History
from harness.invariants.brokers import said
from harness.invariants.core import Verdict, secs, verdict
from harness.invariants.share.records import (_view, _w, added_partitions, broker_fault_windows, serving_end,
                                              start_offsets)
from harness.invariants.share.skipped import Skips
from harness.invariants.share.view import ShareCheckSettings, group_setting
from harness.invariants.clock import run_s


def check_inflight(history: History, s: ShareCheckSettings) -> Verdict:
    name = "share_inflight"
    v, bad = _view(name, history, s)
    if bad:
        return bad
    cap = group_setting(history, "max_record_locks")
    if cap.value is None:
        return verdict(name, "unknown", f"the record-lock limit is unknown: {cap.source}")
    by_part: dict = {}
    for (topic, p, _), ds in v.deliveries.items():
        for d in ds:
            if d.sure_end > d.acq:
                by_part.setdefault((topic, p), []).append(d)
    worst, before, ws = {}, {}, []
    for tp, ds in by_part.items():
        marks = sorted([(d.acq, 1) for d in ds] + [(d.sure_end, -1) for d in ds])  # an end before a start
        held, top = 0, 0
        for _, step in marks:
            held += step
            top = max(top, held)
        worst[f"{tp[0]}-{tp[1]}"] = top
        polls: dict = {}
        for d in ds:
            polls.setdefault((d.member, d.since), []).append(d)
        for key, mine in polls.items():
            if any(d.count > 1 for d in mine):
                continue  # a re-acquisition inside the window: the broker does not hold it to the cap
            t0 = min(d.acq for d in mine)
            n = sum(1 for d in ds if d.acq <= t0 < d.sure_end and (d.member, d.since) != key)
            before[f"{tp[0]}-{tp[1]}"] = max(before.get(f"{tp[0]}-{tp[1]}", 0), n)
            if n >= cap.value and len(ws) < 4:
                first = min(mine, key=lambda d: d.acq)
                ws.append(_w(history, first, f"a poll acquired {len(mine)} record(s) of {tp[0]}-{tp[1]} while {n} "
                                             f"were held"))
    meas = {"max_inflight": max(worst.values(), default=0), "per_partition": worst, "limit": cap.value,
            "max_held_at_acquisition": max(before.values(), default=0)}
    if not by_part:
        return verdict(name, "unknown", "no held records", measurements=meas)
    if meas["max_held_at_acquisition"] >= cap.value:
        return verdict(name, "invalid", f"a poll acquired records of a partition that already had "
                                        f"{meas['max_held_at_acquisition']} held, at or over {cap.says('the limit')}",
                       ws, meas)
    return verdict(name, "valid", f"no poll acquired records of a partition holding {cap.says('limit')} or more "
                                  f"(at most {meas['max_held_at_acquisition']} held at an acquisition, "
                                  f"{meas['max_inflight']} at once)", measurements=meas)


def _longest_gap(times: list, a: float, b: float) -> float:
    """The longest stretch of [a, b] without one of the (sorted) times in it."""
    inside = [x for x in times[bisect_left(times, a):bisect_left(times, b)] if a < x < b]
    marks = [a, *inside, b]
    return max(y - x for x, y in zip(marks, marks[1:]))


def _offline_windows(history: History) -> dict:
    """(topic, partition) -> the (start, end) of each action that left it without a leader (its `offline`)."""
    ctl = [e for _, e in history.control()]
    starts = {e.get("action_id"): e["mono"] for e in ctl if e.get("type") == "action_start"}
    out: dict = {}
    for e in ctl:
        if e.get("type") == "action_end" and e.get("offline") and e.get("action_id") in starts:
            for p in e["offline"]:
                out.setdefault((e.get("topic"), int(p)), []).append((starts[e["action_id"]], e["mono"]))
    return out


#: the group coordinator's line giving a member a non-empty assignment (Kafka 4.x GroupMetadataManager)
FIRST_ASSIGNED = re.compile(r"new assignment state: .*assignedPartitions=\[[^\]]")


def _first_assignment(history: History) -> float | None:
    """When the group coordinator first gave a member any partition; None without the brokers' logs or such a line."""
    return next((e["mono"] for e in said(history) if ".coordinator." in e.get("logger", "")
                 and FIRST_ASSIGNED.search(e.get("message", ""))), None)


def _longest_poll(v, history: History) -> tuple[float, str]:
    """The longest a poll kept its member busy: from its first acquisition to the last thing the member did with
    that poll's records (processed, or asked to acknowledge; the records of one poll share the member's `since`)."""
    acted: dict = {}
    for m, t, _, r, _ in v.actions:
        acted.setdefault((m, r), []).append(t)
    polls: dict = {}
    for ds in v.deliveries.values():
        for d in ds:
            ts = [t for t in acted.get((d.member, d.record), ()) if d.acq <= t <= d.latest_end]
            if ts:
                a, b = polls.get((d.member, d.since), (d.acq, d.acq))
                polls[(d.member, d.since)] = (min(a, d.acq), max(b, *ts))
    if not polls:
        return 0.0, "no poll's records acted on"
    (m, _), (a, b) = max(polls.items(), key=lambda kv: kv[1][1] - kv[1][0])
    return b - a, f"{m}'s poll at {run_s(history, a)}"


def _poll_bound(history: History, v) -> tuple[float | None, str]:
    """How long one poll's records may keep a member from fetching again, by what each member that was delivered
    records recorded at its start (`started`.`effective`): in explicit mode the record lock L (a member that
    honours its locks works on a poll's records only while they are surely held and releases the rest, as both
    built-in members do: share_member.py `_in_time`, ShareMember.java `inTime`); in implicit mode it works through
    every record of the poll, its `processing_ms` each (the most records one of its polls got). (seconds, source);
    None when a member recorded neither, with whom."""
    starts = {e["member"]: e for _, e in history.control() if e.get("type") == "started" and e.get("member")}
    polls: dict = {}
    for ds in v.deliveries.values():
        for d in ds:
            polls[(d.member, d.since)] = polls.get((d.member, d.since), 0) + 1
    worst, src = 0.0, "no member was delivered records"
    for m in sorted({m for m, _ in polls}):
        eff = (starts.get(m) or {}).get("effective")
        eff = eff if isinstance(eff, dict) else {}
        mode, work = eff.get("share.acknowledgement.mode"), eff.get("processing_ms")
        if mode == "explicit":
            got, why = v.lock_s, f"{m} acknowledges explicitly (its start): within its record lock {v.lock_s:g}s"
        elif mode == "implicit" and isinstance(work, (int, float)):
            n = max(c for (x, _), c in polls.items() if x == m)
            got, why = n * work / 1000, f"{m} acknowledges implicitly (its start): {n} records x processing_ms={work:g}"
        else:
            return None, (f"{m}'s start recorded no share.acknowledgement.mode (with processing_ms when implicit): how "
                          f"long its polls keep it from fetching is unknown")
        if got >= worst:
            worst, src = got, why
    return worst, src


def _assignment_timeline(history: History, stop_t: float) -> tuple[list, list, float]:
    """The coordinator's answers as steps: (from, to, {(topic, partition): members} or None where blind), the
    `share_assignment` events themselves, and the watch's interval (the longest any event says)."""
    evs = [e for _, e in history.control() if e.get("type") == "share_assignment"]
    steps = []
    for e, nxt in zip(evs, [*evs[1:], None]):
        to = min(nxt["mono"] if nxt else stop_t, stop_t)
        if e["mono"] >= to:
            continue
        held = None
        if e.get("members") is not None:
            held = {}
            for m in e["members"]:
                for topic, p in m["partitions"]:
                    held.setdefault((topic, int(p)), set()).add(m["member"])
        steps.append((e["mono"], to, held, {m["member"] for m in e.get("members") or ()}))
    return steps, evs, max((float(e.get("interval_s") or 0) for e in evs), default=0.0)


def _unassigned(history: History, v, s: ShareCheckSettings, session, beat, offline: dict) -> dict | None:
    """Partitions the coordinator assigned to no live member while it listed one (module docstring,
    `share_served`'s second part); None when the history has no `share_assignment` event."""
    stop_t = serving_end(history, v)  # the members' final stop: they leave one after another
    steps, evs, interval = _assignment_timeline(history, stop_t)
    if not evs:
        return None
    strangers = sorted({m["member"] for e in evs for m in e.get("members") or () if m["member"] not in v.lives})
    if strangers:
        return {"skipped": f"the coordinator named members the history does not know ({', '.join(strangers[:4])}): "
                           f"a member whose client.id is not its member id; whether each partition was given to a "
                           f"live member is not judged"}
    bound = session.value / 1000 + beat.value / 1000 + interval + s.clock_slack_s
    init = next((a for a, _, held, _ in steps if held), None)
    added = added_partitions(history)
    topics = set(s.topics)
    ack = history.bulk("acked")
    parts = {(history.values[c], int(p)) for c, p in zip(ack.topic.tolist(), ack.partition.tolist())}
    parts |= {tp for _, _, held, _ in steps if held for tp in held}
    parts = sorted(tp for tp in parts if not topics or tp[0] in topics)
    lives = v.lives
    live = lambda m, t: m in lives and lives[m][0] <= t < lives[m][1]  # noqa: E731
    cuts = sorted({t for a, b, _, _ in steps for t in (a, b)} | {x for a, b, _ in lives.values() for x in (a, b)})
    broker_faults = broker_fault_windows(history, v)
    first_seen = {}
    for a, _, held, _ in steps:
        for tp in held or ():
            first_seen.setdefault(tp, a)
    gaps, blind = [], sum(b - a for a, b, held, _ in steps if held is None and init is not None and a >= init)
    for tp in parts:
        since = first_seen.get(tp) if tp in added else init  # an added partition: from when it was first assigned
        if since is None:
            continue
        cur, i = None, 0
        for a, b in zip(cuts, cuts[1:]):
            while i < len(steps) and steps[i][1] <= a:
                i += 1
            step = steps[i] if i < len(steps) and steps[i][0] <= a else None
            t = (a + b) / 2
            bad = (a >= since and step is not None and step[2] is not None
                   and any(live(m, t) for m in step[3])
                   and not any(live(m, t) for m in step[2].get(tp, ()))
                   and not any(x <= t <= y for x, y in offline.get(tp, ())))
            named = step[2].get(tp, set()) if bad else set()
            gone = bool(named) and all(m in lives and lives[m][1] <= a for m in named)  # started and since gone
            if cur and gone and named != cur[2][2].get(tp, set()):
                gaps.append((tp, *cur))  # given to other members, gone too: each departure has its own bound
                cur = None
            if bad:
                cur = [cur[0] if cur else a, b, cur[2] if cur else step]
            elif cur:
                gaps.append((tp, *cur))
                cur = None
        if cur:
            gaps.append((tp, *cur))
    judged, in_faults = [], []
    for tp, a, b, step in gaps:
        (in_faults if any(x < b and a < y for x, y in broker_faults) else judged).append((tp, a, b, step))
    over = []
    for tp, a, b, step in sorted(judged, key=lambda g: g[1] - g[2]):
        if b - a > bound:
            had = sorted(step[2].get(tp, ()))
            over.append({"type": "share_assignment", "mono": a, "topic": tp[0], "partition": tp[1], "from_mono": a,
                         "to_mono": b, "gap_s": secs(b - a),
                         "why": f"the coordinator assigned it to no live member for {b - a:.1f}s "
                                + (f"(it named {', '.join(had)}, gone: " + ", ".join(
                                    f"{m} {lives[m][2]} at {run_s(history, lives[m][1])}" for m in had if m in lives) + ")"
                                   if had else "(it named no member for it)")
                                + f" while it listed live members ({', '.join(sorted(m for m in step[3] if live(m, a)))})"})
    said = (f"assignment bound {bound:.1f}s = {session.says('share session timeout', ' ms')} + "
            f"{beat.says('heartbeat interval', ' ms')} + the watch's interval {interval:g}s (its events) + clock "
            f"slack {s.clock_slack_s:g}s")
    return {"over": over, "said": said, "bound": bound,
            "meas": {"assignment_bound_s": secs(bound), "assignment_events": len(evs),
                     "assignment_gap_max_s": secs(max((b - a for _, a, b, _ in judged), default=0.0)),
                     "assignment_gaps_over_bound": len(over),
                     "assignment_gap_max_in_broker_faults_s": secs(max((b - a for _, a, b, _ in in_faults), default=0.0)),
                     "assignment_blind_s": secs(blind),
                     "added_partition_first_assigned_s": {f"{tp[0]}-{tp[1]}": secs(first_seen[tp] - t)
                                                          for tp, t in added.items() if tp in first_seen}}}


def _waits(history: History, v, s: ShareCheckSettings, bound: float, init: float | None, lives: list,
           offline: dict) -> tuple[dict, dict, list, dict]:
    """Each produced record's wait for its first delivery and its partition's longest time without a delivery
    meanwhile (the partition offline and the time before the first assignment left out): the longest of each per
    partition, the records over the bound on both, and how many were not judged: no live member at one end
    (`not_judged`), skipped by the group's reset policy or surely lost (share_completion's, `skipped.py`)."""
    serving = serving_end(history, v)
    ack, topics = history.bulk("acked"), set(s.topics)
    served: dict = {}  # (topic, partition) -> the times of its deliveries, sorted
    for (tp, pn, _), ds in v.deliveries.items():
        served.setdefault((tp, pn), []).extend(d.acq for d in ds)
    for times in served.values():
        times.sort()
    waits, gaps, late, skipped = {}, {}, [], 0
    skips = Skips(history, v, added=added_partitions(history), starts=start_offsets(history),
                  limit=group_setting(history, "delivery_limit"), slack_s=s.clock_slack_s)
    gone = {"policy": 0, "sure": 0}
    for c, p, o, t in zip(ack.topic.tolist(), ack.partition.tolist(), ack.offset.tolist(), ack.mono.tolist()):
        topic = history.values[c]
        if topics and topic not in topics:
            continue
        ds = v.deliveries.get((topic, p, o))
        how = None if ds else skips.classify(topic, p, o, t, ds)[0]
        if how in gone:  # skipped by the group's reset policy, or surely lost: share_completion's, no wait
            gone[how] += 1
            continue
        first = ds[0].acq if ds else serving  # never delivered: it waited as long as the members served
        if not all(any(a <= x <= b for a, b, _ in lives) for x in (t, first)):
            skipped += 1  # the group had no live member at one end: not judged
            continue
        away = sum(max(0.0, min(b, first) - max(a, t)) for a, b in offline.get((topic, p), ()))
        away += max(0.0, min(init, first) - t) if init is not None else 0.0  # nobody could be given it before
        wait = first - t - away
        key = f"{topic}-{p}"
        waits[key] = max(waits.get(key, 0.0), wait)
        gap = _longest_gap(served.get((topic, p), []), t, first) - away
        gaps[key] = max(gaps.get(key, 0.0), gap)
        if wait > bound and gap > bound:
            late.append({"topic": topic, "partition": p, "offset": o, "acked_mono": t, "wait_s": secs(wait),
                         "why": ("never delivered" if not ds else f"first delivered {wait:.1f}s after it was produced")
                         + f"; no record of its partition delivered for {gap:.1f}s meanwhile"})
    return waits, gaps, late, {"not_judged": skipped, "skipped_by_reset_policy": gone["policy"],
                               "lost_surely": gone["sure"]}


def check_served(history: History, s: ShareCheckSettings) -> Verdict:
    name = "share_served"
    v, bad = _view(name, history, s)
    if bad:
        return bad
    session = group_setting(history, "session_ms")
    if session.value is None:
        return verdict(name, "unknown", f"the share session timeout is unknown: {session.source}")
    beat = group_setting(history, "heartbeat_ms")
    if beat.value is None:
        return verdict(name, "unknown", f"the share heartbeat interval is unknown: {beat.source}")
    poll_s, poll_src = _poll_bound(history, v)
    if poll_s is None:
        return verdict(name, "unknown", f"the bound on a poll's work is unknown: {poll_src}")
    longest, longest_at = _longest_poll(v, history)  # measured, not the bound
    bound = session.value / 1000 + v.lock_s + beat.value / 1000 + 2 * poll_s
    init = _first_assignment(history)
    lives = sorted(v.lives.values())
    offline = _offline_windows(history)
    waits, gaps, late, unjudged_records = _waits(history, v, s, bound, init, lives, offline)
    started = min((a for a, _, _ in lives), default=None)
    said = (f"bound {bound:.1f}s = {session.says('share session timeout', ' ms')} + lock {v.lock_s:g}s "
            f"({v.lock.source}) + {beat.says('heartbeat interval', ' ms')} + twice the longest a poll may take "
            f"{poll_s:g}s ({poll_src}); "
            + (f"waits counted from the coordinator's first assignment at {run_s(history, init)} (its log)" if init is not None
               else "the coordinator's first assignment unknown (no such line in the brokers' logs): waits counted "
                    "from each record's production"))
    meas = {"max_wait_s": secs(max(waits.values(), default=0.0)), "per_partition_max_wait_s": waits,
            "max_unserved_while_waiting_s": secs(max(gaps.values(), default=0.0)),
            "late": len(late), **unjudged_records, "bound_s": secs(bound), "poll_bound_s": secs(poll_s),
            "longest_poll_s": secs(longest), "longest_poll": longest_at,
            "first_assignment_s": secs(init - started) if init is not None and started is not None else None}
    unassigned = _unassigned(history, v, s, session, beat, offline)
    unjudged = None
    if unassigned is None:
        unjudged = "the coordinator's assignment was not recorded (no share_assignment event): whether each " \
                   "partition was given to a live member is not judged"
    elif "skipped" in unassigned:
        unjudged = unassigned["skipped"]
    else:
        meas.update(unassigned["meas"])
    if not waits:
        return verdict(name, "unknown", "no produced record to judge", measurements=meas)
    over = (unassigned or {}).get("over") or []
    if late or over:
        parts = ([f"{len(late)} record(s) waited past the bound for a first delivery while their partition was not "
                  f"served ({said})"] if late else []) + \
                ([f"{len(over)} time(s) a partition was assigned to no live member past the bound "
                  f"({unassigned['said']})"] if over else [])
        return verdict(name, "invalid", "; ".join(parts), [*over, *late], meas)
    if unjudged:  # half of the invariant went unjudged: no pass
        return verdict(name, "unknown", f"{unjudged}; records served within the bound ({said})", measurements=meas)
    assigned = (f"; every partition assigned to a live member by the coordinator but for at most "
                f"{meas['assignment_gap_max_s']}s ({unassigned['said']})")
    return verdict(name, "valid", f"no partition left unserved past the bound while records waited: at most "
                                  f"{meas['max_unserved_while_waiting_s']}s without a delivery ({said}); the longest "
                                  f"wait for a first delivery {meas['max_wait_s']}s (a backlog on a served partition "
                                  f"is measured, not judged){assigned}",
                   measurements=meas)
