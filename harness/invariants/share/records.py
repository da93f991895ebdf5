"""Share groups, per record (design invariant 10); the terms are those of `view`.

- `share_exclusive`: no record is held by two deliveries at overlapping times (sure holds: what surely
  overlapped). A hold ends, too, when its share-partition's leader changed with it unacknowledged and the next
  delivery kept its count (`kept_across_leader_change`, as `share_redelivery` allows it): the lock lived in the old
  leader's memory. `share-leader-move` (Kafka 4.4.0, seed 507308347) saw m3 handed offsets 61-62 of partition 3
  with count 1 by broker 1 as its leadership moved to broker 2; m3's accepts were refused (UNKNOWN_TOPIC_OR_PART)
  and broker 2 handed them to m3 again with count 1, 54 ms after the first. Measured:
  `holds_ended_by_leader_change`.
- `share_held_when_acting`: a member processes (`share_processed`) and accepts or rejects (`share_acked`, when
  asked for) only records it holds: after it acquired the record and before its latest end (the lock surely
  gone, it left, or the record was delivered again). A release of a record it no longer holds is not judged: it
  claims no work (a member paused past its locks releases what it had, and the broker refuses it).
- `share_redelivery`: a record comes back only after its delivery ended by a release, a lock expiry or its
  holder's exit, never after an accept or reject the broker took; its delivery count rises by one each time
  (more only when a member that exited may have been delivered it unrecorded: records its client fetched and
  never handed over, which a kill leaves to expire and a graceful close releases, each delivery counted by the
  broker all the same); no delivery past the group's delivery count limit. A count that does not rise is
  allowed only after a delivery no acknowledgement ended when a broker went down or gave up leadership
  meanwhile (a fault with `brokers_affected` between the two): the next share-partition leader knows the state
  in `__share_group_state`, which records no acquisition (`share-rack-outage --member java`, seed 1: offset 78 of
  partition 3, held by the killed member when its broker, the leader, was killed, came back with count 1, the
  new leader's persisted batch from 78 with delivery count 1). Measured: `count_kept_after_leader_change`.
- `share_completion`: every record the producer had acknowledged and due to the group ends accepted, rejected or
  archived (its last delivery, at the delivery count limit, released or expired); none is lost through member
  churn. Records the group skipped by its own `share.auto.offset.reset=latest` are not due, and a record surely
  lost fails the run though it did not drain: `skipped.py` (by the recorded policy and the start offsets after
  the run; measured: `skipped_by_reset_policy`, `lost_surely`). Every record of a partition added while the group
  runs (an `add_partitions` action's result: the topic, its count before and after) is due: a record there that
  was never delivered was skipped, and its witness says the partition was added and when;
  `added_partition_records` and `added_partition_completed` count them. A record whose last recorded delivery ended with its holder's
  exit (a member killed right after it asked for an accept leaves no answer, and the record may never come back
  because the broker took the accept) is done when the brokers say so: it lies below its partition's start
  offset after the run (the `share_start_offsets` event, ListShareGroupOffsets: every record below it is
  acknowledged or archived); `done_by_start_offset` counts them. A record never delivered is never settled so. An accept
  or reject whose answer was lost (`no_broker_answer`: `view.answer_lost`, a client-side error, not the broker's
  refusal; or an error the client made up itself, CLIENT_MADE, whatever `answer` the member wrote) on a
  record that never came back counts as taken only when its lock surely ran out (acquisition + the lock
  duration) before the members' final stop (`serving_end`): had the broker not taken it, the lock's expiry would
  then have brought the record back (measured: `answer_lost`); or when the start offset after the run passes it.
  A start offset after the run that is the record's own offset says the brokers hold it not done: lost, as any
  other record not done. Otherwise the history cannot tell whether the broker took it: `unknown`, naming the
  records (`answer_lost_unsettled`). `share-subscription-change --member java` (seed 1, Kafka 4.4.0) had 8
  accepts the broker took (acknowledged in `__share_group_state`) reported by the client as refused with
  CLIENT_MADE, after its new subscription dropped their topic; the start offset after the run passed them.
"""
from __future__ import annotations

from harness.record.history import History
from harness.invariants.core import Verdict, secs, verdict, witness
from harness.invariants.share.skipped import Skips, skipped_summary
from harness.invariants.share.view import ShareCheckSettings, answer_lost, build, group_setting
from harness.invariants.terms import faults_of
from harness.base.steps import Step
from harness.invariants.clock import run_s, run_t0

#: acknowledgement errors a client makes up itself, having read no answer of the broker's for the partition,
#: whatever the member's `answer` says: kafka-clients' INVALID_RESPONSE (4.4.0, ShareConsumeRequestManager), given
#: when the broker's answer lacks the partition or names a topic id the client can no longer name (its metadata
#: dropped the topic after a subscription change), though the broker may have taken the acknowledgement
#: (docs/findings.md, "Kafka's Java share consumer (4.4.0): accepts the broker took reported as INVALID_RECORD_STATE")
CLIENT_MADE = ("Acknowledgement not successful due to invalid response from broker",)


def no_broker_answer(ack: dict | None) -> bool:
    """Whether the broker's answer to an acknowledgement is unknown: `view.answer_lost` (the member says so), or an
    error the client made up itself (CLIENT_MADE), which a Java member before the fix recorded as `given`."""
    return answer_lost(ack) or bool(ack and not ack.get("ok")
                                    and any(mark in str(ack.get("error") or "") for mark in CLIENT_MADE))


def _view(name: str, history: History, s: ShareCheckSettings):
    v = build(history, s)
    return (v, None) if not isinstance(v, str) else (None, verdict(name, "unknown", v))


def _w(history: History, d, why: str) -> dict:
    return witness(history.events_at([d.seq])[d.seq], why)


def broker_fault_windows(history: History, v) -> list[tuple[float, float]]:
    """(start, end) of every fault that took a broker down or moved leadership off it (`brokers_affected`)."""
    return [(f.start, f.end) for f in faults_of(history.control(), v.end) if f.start_event.get("brokers_affected")]


def kept_across_leader_change(a, b, broker_faults: list) -> bool:
    """Delivery b took a's record back with no higher count, a unacknowledged (nothing the broker took ended it),
    and a broker went down or gave up leadership between the two: the next share-partition leader knew the record
    only from `__share_group_state`, which records no acquisition, and a's lock went with the old leader."""
    return b.count <= a.count and a.ended_by in ("expiry", "exit", "open") and any(
        fs <= b.acq and fe >= a.acq for fs, fe in broker_faults)


def check_exclusive(history: History, s: ShareCheckSettings) -> Verdict:
    name = "share_exclusive"
    v, bad = _view(name, history, s)
    if bad:
        return bad
    ws, n, gone = [], 0, 0
    broker_faults = broker_fault_windows(history, v)
    for r, ds in v.deliveries.items():
        for a, b in zip(ds, ds[1:]):  # in the broker's order (view: by delivery count)
            # a delivery handed over after the next one (a client that held it back) overlaps it only where their
            # sure holds meet
            if (b.acq < a.sure_end) if b.acq >= a.acq else (a.acq < min(a.sure_end, b.sure_end)):
                if kept_across_leader_change(a, b, broker_faults):
                    gone += 1  # a's lock ended with its leader's leadership (the module docstring)
                    continue
                n += 1
                ws += [_w(history, a, f"held {r} until {run_s(history, a.sure_end)} (surely: {a.ended_by})"),
                       _w(history, b, f"{b.member} acquired {r} {a.sure_end - b.acq:.3f}s before {a.member}'s hold "
                                      f"ended")]
    meas = {"records": len(v.deliveries), "deliveries": sum(map(len, v.deliveries.values())), "overlaps": n,
            "lock_s": v.lock_s, "holds_ended_by_leader_change": gone}
    said = f"{v.lock.says('record lock', ' ms')}, clock slack {s.clock_slack_s:g}s"
    if not v.deliveries:
        return verdict(name, "unknown", "no share_acquired events", measurements=meas)
    if n:
        return verdict(name, "invalid", f"{n} record(s) held by two deliveries at once ({said})", ws, meas)
    gone_said = f"; {gone} hold(s) ended by a leader change, the record handed over again" if gone else ""
    return verdict(name, "valid", f"no record held twice at once over {meas['deliveries']} deliveries "
                                  f"({said}){gone_said}", measurements=meas)


def check_held_when_acting(history: History, s: ShareCheckSettings) -> Verdict:
    name = "share_held_when_acting"
    v, bad = _view(name, history, s)
    if bad:
        return bad
    ws, n = [], 0
    for m, t, what, r, e in v.actions:
        if what == "share_acked" and e.get("ack") == "release":
            continue  # claims no work (the module docstring)
        held = [d for d in v.deliveries.get(r, ()) if d.member == m and d.acq <= t]
        d = held[-1] if held else None
        if d is None or t > d.latest_end + 1e-9:
            n += 1
            why = (f"{m} never acquired {r}" if d is None else
                   f"{what} of {r} {t - d.acq:.3f}s after {m} acquired it, {t - d.latest_end:.3f}s after its hold "
                   f"surely ended (lock {v.lock_s:g}s, its exit or the next delivery)")
            if what == "share_acked" and not e.get("ok"):  # the broker's own answer to it, or none
                why += (f"; its answer was lost: {e.get('error')}" if no_broker_answer(e) else
                        f"; the broker refused it: {e.get('error') or 'no reason given'}")
            ws.append(witness(e, why))
    meas = {"actions": len(v.actions), "outside_hold": n}
    said = v.lock.says("record lock", " ms")
    if not v.actions:
        return verdict(name, "unknown", "no share_processed or share_acked events", measurements=meas)
    if n:
        return verdict(name, "invalid", f"{n} processing or acknowledgement(s) of records the member no longer "
                                        f"held ({said})", ws, meas)
    return verdict(name, "valid", f"{len(v.actions)} processings and acknowledgements all within their holds "
                                  f"({said})", measurements=meas)


def check_redelivery(history: History, s: ShareCheckSettings) -> Verdict:
    name = "share_redelivery"
    v, bad = _view(name, history, s)
    if bad:
        return bad
    limit = group_setting(history, "delivery_limit")
    if limit.value is None:  # no delivery is judged against a limit nobody could read
        return verdict(name, "unknown", f"the delivery count limit is unknown: {limit.source}")
    ws, n, jumps, back, after_exit, kept = [], 0, 0, 0, 0, 0
    broker_faults = broker_fault_windows(history, v)
    for r, ds in v.deliveries.items():
        for i, b in enumerate(ds):
            a = ds[i - 1] if i else None
            since = a.acq if a else -1e18
            # any exit, a graceful one too: `share-scale-out-in` (seed 1, Kafka 4.4.0, confluent-kafka 2.16.1) saw
            # a member scaled in 2.7 s after it joined close with a record its client had fetched ahead, the next
            # of a partition it was being handed one by one; the record came back 0.5 s later with count 2
            exited = any(since < t <= b.acq for t, _, _ in v.exits)
            want = a.count + 1 if a else 1
            if a and a.ended_by in ("accept", "reject"):
                n += 1
                ws += [_w(history, a, f"{a.ended_by}ed by {a.member}, the broker took it"),
                       _w(history, b, f"{r} delivered again after it was {a.ended_by}ed")]
            elif a and kept_across_leader_change(a, b, broker_faults):
                kept += 1  # the leader changed with the delivery unacknowledged: the count it persisted stands
            elif b.count < want or (b.count > want and not exited):
                n += 1
                ws.append(_w(history, b, f"delivery count {b.count}, expected {want}"
                                         + (" (no member exited since the last delivery)" if b.count > want else "")))
            elif limit.value is not None and b.count > limit.value:
                n += 1
                ws.append(_w(history, b, f"delivered past the limit: {limit.says('delivery count limit')}"))
            jumps += b.count > want
            back += bool(a)
            after_exit += bool(a) and a.ended_by == "exit" and b.count == 2
    meas = {"redeliveries": back, "unrecorded_deliveries": jumps, "back_after_holder_exit_count2": after_exit,
            "count_kept_after_leader_change": kept,
            "max_delivery_count": max((d.count for ds in v.deliveries.values() for d in ds), default=0),
            "delivery_limit": limit.value}
    if not v.deliveries:
        return verdict(name, "unknown", "no share_acquired events", measurements=meas)
    said = f"{limit.says('delivery count limit')}; {v.lock.says('record lock', ' ms')}"
    if n:
        return verdict(name, "invalid", f"{n} delivery(ies) against the rules ({said})", ws, meas)
    kept_said = f", {kept} keeping their count across a leader change" if kept else ""
    return verdict(name, "valid", f"{back} redeliveries, each after a release, an expiry or its holder leaving, "
                                  f"counts rising by one{kept_said} ({said})", measurements=meas)


def lost_answer(last, starts: dict | None, topic: str, p: int, o: int) -> bool:
    """Whether `last` (a record's last delivery) ended in an accept or reject the broker's answer to which is unknown
    (`no_broker_answer`), so that the broker may have taken it; not when the start offset after the run is the
    record's own offset: the brokers hold it not done (every record below that offset is acknowledged or archived,
    and the one at it is not, or the offset would have moved past it)."""
    return bool(last and no_broker_answer(last.ack) and last.ack.get("ack") in ("accept", "reject")
                and not (starts and starts.get((topic, p)) == o))


def _settle(produced: list, v, limit, skips: Skips, starts: dict | None, serving: float, *, t0: float = 0.0) -> tuple:
    """How each produced record ended: (counts of accepted, rejected, archived and done by the start offset, the
    records ended otherwise by their class (`Skips.classify`: policy, policy_unknown, sure, lost), the times to
    acknowledge, [records in added partitions, of them completed], how many answers were lost, the records whose
    answer was lost and whose lock could outlive the members)."""
    counts = {"accept": 0, "reject": 0, "archived": 0, "start_offset": 0}
    ended = {"policy": [], "policy_unknown": [], "sure": [], "lost": []}
    ttas, in_added, unanswered, open_ = [], [0, 0], 0, []
    for topic, p, o, t in produced:
        ds = v.deliveries.get((topic, p, o))
        last = ds[-1] if ds else None
        new = (topic, p) in skips.added
        in_added[0] += new
        if last and last.ended_by in ("accept", "reject"):
            counts[last.ended_by] += 1
            ttas.append(last.ack["requested_mono"] - t)
        elif lost_answer(last, starts, topic, p, o):
            if starts and o < starts.get((topic, p), -1):
                counts["start_offset"] += 1  # the brokers say it is done
            elif last.acq + v.lock_s <= serving:
                counts[last.ack["ack"]] += 1  # never came back though its lock ran out: the broker took it
                unanswered += 1
                ttas.append(last.ack["requested_mono"] - t)
            else:  # its lock may have outlived the members: the history cannot tell whether the broker took it
                open_.append({"topic": topic, "partition": p, "offset": o, "acked_mono": t,
                              "why": f"{last.member}'s {last.ack['ack']} at {last.ack['requested_mono'] - t0:.1f} s got no "
                                     f"answer; its lock (acquired by {last.acq - t0:.1f} s, {v.lock_s:g}s) could still run "
                                     f"at the members' final stop at {serving - t0:.1f} s, and the start offset after the run "
                                     f"({'none' if starts is None else starts.get((topic, p), 'none')}) does not pass "
                                     f"it"})
                continue
        elif last and limit.value is not None and last.count >= limit.value and last.ended_by in ("release", "expiry",
                                                                                                  "exit"):
            counts["archived"] += 1
        elif last and last.ended_by == "exit" and starts and o < starts.get((topic, p), -1):
            counts["start_offset"] += 1  # done in the brokers' words (the module docstring)
        else:
            how, said = skips.classify(topic, p, o, t, ds)
            why = ("never delivered" if not ds else
                   f"its last delivery (count {last.count}, {last.member}) ended by {last.ended_by}")
            if last and no_broker_answer(last.ack):
                why += f" ({last.ack.get('ack')} got no answer of the broker's: {last.ack.get('error')})"
            ended[how].append({"topic": topic, "partition": p, "offset": o, "acked_mono": t, "why": why + said})
            continue
        in_added[1] += new
    return counts, ended, ttas, in_added, unanswered, open_


def check_completion(history: History, s: ShareCheckSettings) -> Verdict:
    name = "share_completion"
    v, bad = _view(name, history, s)
    if bad:
        return bad
    limit = group_setting(history, "delivery_limit")
    if limit.value is None:  # an archived record cannot be told from a lost one
        return verdict(name, "unknown", f"the delivery count limit is unknown: {limit.source}")
    ack = history.bulk("acked")
    topics = set(s.topics)
    produced = [(history.values[c], int(p), int(o), float(t))
                for c, p, o, t in zip(ack.topic.tolist(), ack.partition, ack.offset, ack.mono)]
    produced = [x for x in produced if not topics or x[0] in topics]
    if not produced:
        return verdict(name, "unknown", "no record acknowledged by the producer")
    drained = next((e for _, e in history.control() if e.get("type") == "drained"), None)
    added, starts = added_partitions(history), start_offsets(history)
    skips = Skips(history, v, added=added, starts=starts, limit=limit, slack_s=s.clock_slack_s)
    serving = serving_end(history, v)
    t0 = run_t0(history)
    counts, ended, ttas, in_added, unanswered, open_ = _settle(produced, v, limit, skips, starts, serving, t0=t0)
    meas = {"produced": len(produced), "accepted": counts["accept"], "rejected": counts["reject"],
            "archived": counts["archived"], "done_by_start_offset": counts["start_offset"],
            "lost": len(ended["lost"]) + len(ended["sure"]), "lost_surely": len(ended["sure"]),
            "skipped_by_reset_policy": len(ended["policy"]), "answer_lost": unanswered,
            **({"added_partition_records": in_added[0], "added_partition_completed": in_added[1]} if added else {}),
            "redelivered_records": sum(len(ds) > 1 for ds in v.deliveries.values()),
            "max_time_to_ack_s": secs(max(ttas, default=None)), "delivery_limit": limit.value,
            "answer_lost_unsettled": len(open_), "reset_policy": skips.policy.value}
    return _completion_verdict(name, produced, counts, ended, unanswered, open_, meas, drained=drained, limit=limit,
                               skips=skips, lock=v.lock, serving=serving, t0=t0)


def _completion_verdict(name, produced, counts, ended, unanswered, open_, meas, *, drained, limit, skips, lock,
                        serving, t0: float = 0.0) -> Verdict:
    lost = ended["sure"] + ended["lost"]
    said = f"{limit.says('delivery count limit')}; {skips.policy.says()}"
    if ended["policy"]:
        said += f"; {len(ended['policy'])} more skipped by it, not counted"
    due = f"{len(produced) - len(ended['policy'])} produced records" + (" due to the group" if ended["policy"] else "")
    if ended["sure"] or (lost and drained and drained.get("ok") is not False):
        drain_said = "" if drained and drained.get("ok") is not False else (
            f"; the run did not drain, but {len(ended['sure'])} of them surely lost (passed by the start offset "
            f"after the run or skipped in a partition added while the group ran)")
        sure = skipped_summary([(r["topic"], r["partition"], r["offset"]) for r in ended["sure"]])
        return verdict(name, "invalid", f"{len(lost)} of {due} neither accepted, rejected nor archived ({said})"
                                        f"{drain_said}" + (f"; surely lost: {sure}" if sure else ""), lost, meas)
    if lost:
        return verdict(name, "unknown", f"{len(lost)} of {due} neither accepted, rejected nor archived ({said}); the "
                                        f"run did not drain", lost, meas)
    if ended["policy_unknown"]:
        return verdict(name, "unknown", f"{len(ended['policy_unknown'])} record(s) never delivered, written before "
                                        f"the first delivery of their partition: skipped by the reset policy or lost, "
                                        f"the history cannot tell ({skips.policy.says()})", ended["policy_unknown"],
                       meas)
    if open_:
        return verdict(name, "unknown", f"{len(open_)} record(s) whose accept or reject got no answer and whose lock "
                                        f"had not surely run out before the members' final stop at {serving - t0:.1f} s "
                                        f"({lock.says('record lock', ' ms')}), nor does the start offset after the "
                                        f"run pass them: whether the broker took them the history cannot tell",
                       open_, meas)
    settled = (f"; {counts['start_offset']} whose answer never came (the holder left, or the answer was lost), below "
               f"the start offsets the brokers gave after the run" if counts["start_offset"] else "")
    settled += f"; {unanswered} of them whose answer was lost, never back" if unanswered else ""
    if ended["policy"]:
        skipped = [(r["topic"], r["partition"], r["offset"]) for r in ended["policy"]]
        settled += (f"; {len(skipped)} written before the group first initialised their partition, skipped by "
                    f"{skips.policy.says()}: {skipped_summary(skipped)}")
    return verdict(name, "valid", f"all {due} accepted ({counts['accept']}), "
                                  f"rejected ({counts['reject']}) or archived ({counts['archived']}){settled}",
                   measurements=meas)


def serving_end(history: History, v) -> float:
    """When the members stopped serving: the first `member_stop` at or after `drained` (the final stop: they leave
    one after another), else the last moment a member was alive, else the end of the history."""
    drained = next((e["mono"] for _, e in history.control() if e.get("type") == "drained"), None)
    stop = next((e["mono"] for _, e in history.control() if e.get("type") == "member_stop" and drained is not None
                 and e["mono"] >= drained), None)
    if stop is not None:
        return stop
    return max((b for _, b, _ in v.lives.values()), default=v.end)


def added_partitions(history: History) -> dict:
    """(topic, partition) -> when it was added, for each partition an `add_partitions` action added (its result)."""
    out = {}
    for _, e in history.control():
        if e.get("type") == "action_end" and e.get("kind") == Step.ADD_PARTITIONS and isinstance(e.get("count"), int):
            for p in range(int(e.get("before") or 0), e["count"]):
                out.setdefault((e.get("topic"), p), e["mono"])
    return out


def start_offsets(history: History) -> dict | None:
    """(topic, partition) -> the share-partition start offset the brokers gave after the run (the last
    `share_start_offsets` event), or None when none was read."""
    ev = next((e for _, e in reversed(history.control()) if e.get("type") == "share_start_offsets"), None)
    if ev is None or ev.get("start_offsets") is None:
        return None
    return {(t, int(p)): int(o) for t, p, o in ev["start_offsets"]}
