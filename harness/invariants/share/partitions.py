"""Share groups, per partition (design invariant 10); the terms are those of `view`.

- `share_inflight`: at no time does a partition have more records held (sure holds, over every member) than the
  group's `share.partition.max.record.locks` (the brokers' `group.share.partition.max.record.locks` when the
  group has none), the cap on a share-partition's in-flight records.
- `share_served`: every subscribed partition is served while the group has members: a record the producer
  acknowledged that waits longer than B for its first delivery is a violation when its partition had no
  delivery at all for longer than B meanwhile (no member was serving it), B = the share session timeout (a
  departed member's partitions go to others after it) + the record lock duration (its fetched records come back
  after it) + `serve_slack_s` (a heartbeat and the assignment). A record that waits behind a backlog while its
  partition is served is slow, not unserved: measured, not judged. Records produced while the group had no live
  member are not judged. The client reports no assignment (neither confluent-kafka's ShareConsumer nor the Java
  KafkaShareConsumer has one), so a partition left without a member is seen by the records that wait on it.
"""
from __future__ import annotations

from bisect import bisect_left

from harness.history import History
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
                by_part.setdefault((topic, p), []).extend([(d.acq, 1, d), (d.sure_end, -1, d)])
    worst, ws = {}, []
    for tp, marks in by_part.items():
        held, top = 0, 0
        for t, step, d in sorted(marks, key=lambda x: (x[0], x[1])):  # an end before a start at the same time
            held += step
            if held > top:
                top = held
                if held > cap.value and len(ws) < 4:
                    ws.append(_w(history, d, f"{held} records of {tp[0]}-{tp[1]} held at once"))
        worst[f"{tp[0]}-{tp[1]}"] = top
    meas = {"max_inflight": max(worst.values(), default=0), "per_partition": worst, "limit": cap.value}
    if not by_part:
        return verdict(name, "unknown", "no held records", measurements=meas)
    if meas["max_inflight"] > cap.value:
        return verdict(name, "invalid", f"{meas['max_inflight']} records of one partition held at once, over "
                                        f"{cap.says('the limit')}", ws, meas)
    return verdict(name, "valid", f"at most {meas['max_inflight']} records of a partition held at once "
                                  f"({cap.says('limit')})", measurements=meas)


def _longest_gap(times: list, a: float, b: float) -> float:
    """The longest stretch of [a, b] without one of the (sorted) times in it."""
    inside = [x for x in times[bisect_left(times, a):bisect_left(times, b)] if a < x < b]
    marks = [a, *inside, b]
    return max(y - x for x, y in zip(marks, marks[1:]))


def check_served(history: History, s: ShareCheckSettings) -> Verdict:
    name = "share_served"
    v, bad = _view(name, history, s)
    if bad:
        return bad
    session = group_setting(history, "session_ms")
    if session.value is None:
        return verdict(name, "unknown", f"the share session timeout is unknown: {session.source}")
    bound = session.value / 1000 + v.lock_s + s.serve_slack_s
    ack, topics = history.bulk("acked"), set(s.topics)
    lives = sorted(v.lives.values())
    served: dict = {}  # (topic, partition) -> the times of its deliveries, sorted
    for (tp, pn, _), ds in v.deliveries.items():
        served.setdefault((tp, pn), []).extend(d.acq for d in ds)
    for times in served.values():
        times.sort()
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
        wait = first - t
        key = f"{topic}-{p}"
        waits[key] = max(waits.get(key, 0.0), wait)
        gap = _longest_gap(served.get((topic, p), []), t, first)
        if wait > bound and gap > bound:
            late.append({"topic": topic, "partition": p, "offset": o, "acked_mono": t, "wait_s": secs(wait),
                         "why": ("never delivered" if not ds else f"first delivered {wait:.1f}s after it was produced")
                         + f"; no record of its partition delivered for {gap:.1f}s meanwhile"})
    said = (f"bound {bound:g}s = {session.says('share session timeout', ' ms')} + lock {v.lock_s:g}s "
            f"({v.lock.source}) + slack {s.serve_slack_s:g}s")
    meas = {"max_wait_s": secs(max(waits.values(), default=0.0)), "per_partition_max_wait_s": waits,
            "late": len(late), "not_judged": skipped, "bound_s": bound}
    if not waits:
        return verdict(name, "unknown", "no produced record to judge", measurements=meas)
    if late:
        return verdict(name, "invalid", f"{len(late)} record(s) waited past the bound for a first delivery while "
                                        f"their partition was not served ({said})", late, meas)
    return verdict(name, "valid", f"no partition left unserved past the bound while records waited; the longest "
                                  f"wait for a first delivery {meas['max_wait_s']}s ({said})", measurements=meas)
