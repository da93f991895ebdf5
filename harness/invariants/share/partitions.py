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
  longest poll of the run (from a poll's first acquisition to the last thing its member did with its records: a
  member works through one poll's records before it fetches again, so a partition newly its own waits that long,
  once with its first owner and once with the next), each as the run recorded it. A record that waits behind a backlog while its partition is served is slow, not
  unserved: measured, not judged. Records produced while the group had no live member are not judged, nor is
  the time before the group coordinator first gave any member a partition (its log line "new assignment state:
  ... assignedPartitions=[...]"; before it the share partitions' state is being initialized and nobody can be
  given them: measured, `first_assignment_s` after the first member started), nor the time a partition had no
  leader (a `restart_partition_leader` action's `offline` partitions, from its start to its end: nothing could
  serve them): they are taken off the wait and the gap. The client reports no assignment (neither
  confluent-kafka's ShareConsumer nor the Java KafkaShareConsumer has one), so a partition left without a member
  is seen by the records that wait on it.
"""
from __future__ import annotations

import re
from bisect import bisect_left

from harness.history import History
from harness.invariants.brokers import said
from harness.invariants.core import Verdict, secs, verdict
from harness.invariants.share.records import _view, _w
from harness.invariants.share.view import ShareCheckSettings, group_setting


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


def _longest_poll(v) -> tuple[float, str]:
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
    return b - a, f"{m}'s poll at {a:.1f}s"


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
    poll_s, poll_src = _longest_poll(v)
    bound = session.value / 1000 + v.lock_s + beat.value / 1000 + 2 * poll_s
    init = _first_assignment(history)
    ack, topics = history.bulk("acked"), set(s.topics)
    lives = sorted(v.lives.values())
    served: dict = {}  # (topic, partition) -> the times of its deliveries, sorted
    for (tp, pn, _), ds in v.deliveries.items():
        served.setdefault((tp, pn), []).extend(d.acq for d in ds)
    for times in served.values():
        times.sort()
    offline = _offline_windows(history)
    waits, late, skipped = {}, [], 0
    for c, p, o, t in zip(ack.topic.tolist(), ack.partition.tolist(), ack.offset.tolist(), ack.mono.tolist()):
        topic = history.values[c]
        if topics and topic not in topics:
            continue
        ds = v.deliveries.get((topic, p, o))
        first = ds[0].acq if ds else v.end
        if not all(any(a <= x <= b for a, b, _ in lives) for x in (t, first)):
            skipped += 1  # the group had no live member at one end: not judged
            continue
        away = sum(max(0.0, min(b, first) - max(a, t)) for a, b in offline.get((topic, p), ()))
        away += max(0.0, min(init, first) - t) if init is not None else 0.0  # nobody could be given it before
        wait = first - t - away
        key = f"{topic}-{p}"
        waits[key] = max(waits.get(key, 0.0), wait)
        gap = _longest_gap(served.get((topic, p), []), t, first) - away
        if wait > bound and gap > bound:
            late.append({"topic": topic, "partition": p, "offset": o, "acked_mono": t, "wait_s": secs(wait),
                         "why": ("never delivered" if not ds else f"first delivered {wait:.1f}s after it was produced")
                         + f"; no record of its partition delivered for {gap:.1f}s meanwhile"})
    started = min((a for a, _, _ in lives), default=None)
    said = (f"bound {bound:.1f}s = {session.says('share session timeout', ' ms')} + lock {v.lock_s:g}s "
            f"({v.lock.source}) + {beat.says('heartbeat interval', ' ms')} + twice the longest poll {poll_s:.1f}s "
            f"({poll_src}); "
            + (f"waits counted from the coordinator's first assignment at {init:.1f}s (its log)" if init is not None
               else "the coordinator's first assignment unknown (no such line in the brokers' logs): waits counted "
                    "from each record's production"))
    meas = {"max_wait_s": secs(max(waits.values(), default=0.0)), "per_partition_max_wait_s": waits,
            "late": len(late), "not_judged": skipped, "bound_s": secs(bound), "longest_poll_s": secs(poll_s),
            "first_assignment_s": secs(init - started) if init is not None and started is not None else None}
    if not waits:
        return verdict(name, "unknown", "no produced record to judge", measurements=meas)
    if late:
        return verdict(name, "invalid", f"{len(late)} record(s) waited past the bound for a first delivery while "
                                        f"their partition was not served ({said})", late, meas)
    return verdict(name, "valid", f"no partition left unserved past the bound while records waited; the longest "
                                  f"wait for a first delivery {meas['max_wait_s']}s ({said})", measurements=meas)
