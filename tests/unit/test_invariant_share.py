"""Share-group invariants (design invariant 10): each on histories that must pass and ones that must fail.

The group's record lock is 5 s, its delivery count limit 3, its record-lock limit 4 and its share session
timeout 6 s (heartbeat 0.5 s), as the run's `group_settings` event reads them (the checkers take them from there, never from a
constant); the clock slack is the default 1 s.
"""
from histbuild import (acked, broker_said, drained, ev, fault_end, fault_start, group_settings, history, member_exit, member_start,
                       run_end, run_start)

from harness.invariants import judge
from harness.invariants.share import SHARE_CHECKERS, ShareCheckSettings, check_share

GROUP = {"share.record.lock.duration.ms": "5000", "share.delivery.count.limit": "3",
         "share.partition.max.record.locks": "4", "share.session.timeout.ms": "6000",
         "share.heartbeat.interval.ms": "500"}
S = ShareCheckSettings()


def acq(m, t, off, count=1, p=0):
    return ev("share_acquired", t, "member", member=m, topic="t", partition=p, offset=off, delivery_count=count)


def done(m, t, off, p=0):
    return ev("share_processed", t, "member", member=m, topic="t", partition=p, offset=off)


def ack(m, t, off, kind="accept", ok=True, p=0, answered=0.05):
    return ev("share_acked", t + answered, "member", member=m, topic="t", partition=p, offset=off, ack=kind, ok=ok,
              error=None if ok else "INVALID_RECORD_STATE", requested_mono=t)


EXPLICIT = {"share.acknowledgement.mode": "explicit", "processing_ms": 0.0, "client": "test"}


def base(group=None, end=60.0, members=("m1", "m2"), effective=EXPLICIT):
    """A share run's frame: its settings, members m1 and m2 from 1.0 (each writing its `started` with `effective`, on
    topic t), drained 5 s before the end."""
    return [run_start(0.0, kind="share", share_settings={"topics": ["t"]}),
            group_settings(0.5, group=GROUP if group is None else group),
            *[member_start(m, 1.0) for m in members],
            *[ev("started", 1.05, "member", member=m, protocol="share", effective=effective, subscription=["t"])
              for m in members],
            drained(end - 5), run_end(end)]


def watched(t=1.5, members=("m1", "m2"), partitions=(0, 1)):
    """The coordinator's answer (ShareGroupDescribe) giving every member every partition: share_served's second half
    holds, so a test of the first half judges that half alone."""
    return ev("share_assignment", t, "harness", asked_mono=t - 0.01, interval_s=0.5, error=None, group_epoch=1,
              assignment_epoch=1, state="Stable",
              members=[{"member": m, "consumer_id": f"id-{m}", "epoch": 1, "partitions": [["t", p] for p in partitions]}
                       for m in members])


def consumed(m, t, off, p=0):
    """A record produced at t, acquired, processed and accepted by m."""
    return [acked(t, p, off), acq(m, t + 0.2, off, p=p), done(m, t + 0.3, off, p=p), ack(m, t + 0.4, off, p=p)]


def verdicts(*items, names=None):
    return check_share(history(*items), S, names)


def test_checker_names():
    assert list(SHARE_CHECKERS) == ["share_exclusive", "share_held_when_acting", "share_redelivery",
                                    "share_completion", "share_inflight", "share_served", "group_settled",
                                    "share_dead_letter", "share_poison", "share_subscribed_only",
                                    "share_rebalance_cause"]


def test_a_clean_run_is_valid_and_judge_picks_the_share_checkers():
    h = history(base(), watched(), consumed("m1", 2.0, 0), consumed("m2", 2.5, 1), consumed("m1", 3.0, 2))
    vs = judge(h)
    assert set(vs) == {"schedule_performed", *SHARE_CHECKERS}
    # the group has no dead-letter topic, but this run_start does not say the plan knew (an older run's): not a pass
    assert vs.pop("share_dead_letter").status == "unknown"
    assert vs.pop("share_poison").status == "unknown"
    assert all(v.status == "valid" for v in vs.values()), {n: v.message for n, v in vs.items()}
    assert "share.record.lock.duration.ms" in vs["share_exclusive"].message


def test_without_a_lock_duration_every_checker_that_needs_it_is_unknown():
    vs = verdicts(base(group={}), consumed("m1", 2.0, 0))
    assert vs.pop("share_dead_letter").status == "skipped"  # no dead-letter topic either
    assert vs.pop("share_poison").status == "skipped"  # nor a poison record
    assert vs.pop("share_subscribed_only").status == "valid"  # judged by the subscriptions alone: no lock in it
    assert vs.pop("share_rebalance_cause").status == "skipped"  # nor an answer of the group watch
    assert {v.status for v in vs.values()} == {"unknown"}
    assert "lock duration is unknown" in vs["share_exclusive"].message


def test_the_brokers_default_is_used_when_the_group_has_none():
    b = {"group.share.record.lock.duration.ms": "5000"}
    h = history(base(group={}), group_settings(0.6, group={}, broker=b), consumed("m1", 2.0, 0))
    v = check_share(h, S, ["share_exclusive"])["share_exclusive"]
    assert v.status == "valid" and "the brokers' default" in v.message


def test_an_empty_history_is_unknown():
    assert {v.status for v in verdicts(base()).values()} == {"unknown"}


# -- exclusive
def test_exclusive_passes_when_a_record_comes_back_after_its_lock_expired():
    h = [base(), acked(2.0, 0, 0), acq("m1", 2.2, 0), acq("m2", 6.5, 0, 2), done("m2", 6.6, 0), ack("m2", 6.7, 0)]
    assert verdicts(h, names=["share_exclusive"])["share_exclusive"].status == "valid"  # 6.5 >= 2.2 + 5 - 1


def test_exclusive_fails_when_two_members_hold_a_record_at_once():
    h = [base(), acked(2.0, 0, 0), acq("m1", 2.2, 0), acq("m2", 4.0, 0, 2), ack("m2", 4.5, 0)]
    v = verdicts(h, names=["share_exclusive"])["share_exclusive"]
    assert v.status == "invalid" and v.measurements["overlaps"] == 1 and "record lock=5000 ms" in v.message


def test_exclusive_fails_when_a_record_is_given_again_before_its_release_was_asked():
    h = [base(), acked(2.0, 0, 0), acq("m1", 2.2, 0), acq("m2", 3.0, 0, 2), ack("m1", 3.5, 0, "release")]
    assert verdicts(h, names=["share_exclusive"])["share_exclusive"].status == "invalid"


def test_exclusive_passes_after_a_release_and_after_the_holder_exits():
    h = [base(members=("m1", "m2", "m3")), acked(2.0, 0, 0), acq("m1", 2.2, 0), ack("m1", 2.4, 0, "release"),
         acq("m2", 2.6, 0, 2), member_exit("m2", 3.0, how="kill"), acq("m3", 3.1, 0, 3), ack("m3", 3.2, 0, "reject")]
    assert verdicts(h, names=["share_exclusive"])["share_exclusive"].status == "valid"


# -- held when acting
def test_acting_fails_on_an_acknowledgement_after_the_lock_expired():
    h = [base(), acked(2.0, 0, 0), acq("m1", 2.2, 0), done("m1", 3.0, 0), ack("m1", 7.5, 0, ok=False)]
    v = verdicts(h, names=["share_held_when_acting"])["share_held_when_acting"]
    assert v.status == "invalid" and v.witnesses[0]["type"] == "share_acked"
    assert v.witnesses[0]["why"].endswith("the broker refused it: INVALID_RECORD_STATE"), v.witnesses[0]["why"]


def test_acting_fails_on_processing_after_the_record_went_to_another_member():
    h = [base(), acked(2.0, 0, 0), acq("m1", 2.2, 0), acq("m2", 6.5, 0, 2), done("m1", 6.8, 0), ack("m2", 7.0, 0)]
    v = verdicts(h, names=["share_held_when_acting"])["share_held_when_acting"]
    assert v.status == "invalid" and v.witnesses[0]["member"] == "m1"


def test_acting_fails_on_a_record_never_acquired():
    h = [base(), consumed("m1", 2.0, 0), done("m2", 3.0, 0)]
    assert verdicts(h, names=["share_held_when_acting"])["share_held_when_acting"].status == "invalid"


def test_acting_passes_when_processing_ends_just_inside_the_lock():
    h = [base(), acked(2.0, 0, 0), acq("m1", 2.2, 0), done("m1", 7.1, 0), ack("m1", 7.15, 0)]
    assert verdicts(h, names=["share_held_when_acting"])["share_held_when_acting"].status == "valid"


# -- redelivery
def test_redelivery_after_a_kill_counts_two():
    h = [base(members=("m1", "m2")), acked(2.0, 0, 0), acq("m1", 2.2, 0), member_exit("m1", 3.0, how="kill"),
         acq("m2", 7.5, 0, 2), done("m2", 7.6, 0), ack("m2", 7.7, 0)]
    v = verdicts(h, names=["share_redelivery"])["share_redelivery"]
    assert v.status == "valid" and v.measurements["back_after_holder_exit_count2"] == 1


def test_redelivery_fails_after_an_accept_the_broker_took():
    h = [base(), consumed("m1", 2.0, 0), acq("m2", 9.0, 0, 2), ack("m2", 9.1, 0)]
    v = verdicts(h, names=["share_redelivery"])["share_redelivery"]
    assert v.status == "invalid" and "accepted" in v.witnesses[1]["why"]


def test_redelivery_passes_after_an_accept_the_broker_refused():
    h = [base(), acked(2.0, 0, 0), acq("m1", 2.2, 0), ack("m1", 2.4, 0, ok=False), acq("m2", 7.5, 0, 2),
         ack("m2", 7.6, 0)]
    assert verdicts(h, names=["share_redelivery"])["share_redelivery"].status == "valid"


def test_redelivery_fails_when_the_count_does_not_rise_by_one():
    h = [base(), acked(2.0, 0, 0), acq("m1", 2.2, 0), ack("m1", 2.4, 0, "release"), acq("m2", 2.6, 0, 3),
         ack("m2", 2.7, 0)]
    v = verdicts(h, names=["share_redelivery"])["share_redelivery"]
    assert v.status == "invalid" and "expected 2" in v.witnesses[0]["why"]


def test_redelivery_allows_a_jump_when_a_member_was_killed_meanwhile():
    h = [base(members=("m1", "m2", "m3")), acked(2.0, 0, 0), acq("m1", 2.2, 0), ack("m1", 2.4, 0, "release"),
         member_exit("m3", 2.5, how="kill"), acq("m2", 8.6, 0, 3), ack("m2", 8.7, 0)]
    v = verdicts(h, names=["share_redelivery"])["share_redelivery"]
    assert v.status == "valid" and v.measurements["unrecorded_deliveries"] == 1


def test_redelivery_allows_a_jump_when_a_member_stopped_gracefully_meanwhile():
    # share-dead-letter --member java, seed 3: m2 stopped (a bounce) at 34245.70 with offset 189 fetched ahead and
    # never handed to it; m4 got it at 34250.01 with delivery count 2, its first recorded delivery
    h = [base(members=("m1", "m2", "m4")), acked(2.0, 0, 0), member_exit("m2", 2.5, how="graceful"),
         acq("m4", 6.8, 0, 2), ack("m4", 6.9, 0)]
    v = verdicts(h, names=["share_redelivery"])["share_redelivery"]
    assert v.status == "valid" and v.measurements["unrecorded_deliveries"] == 1


def test_redelivery_allows_a_jump_after_a_graceful_exit_whose_client_had_fetched_ahead():
    # share-scale-out-in, seed 1 (Kafka 4.4.0, confluent-kafka 2.16.1): m2, scaled in, had been handed offsets 0-1
    # of partition 0 one by one; its client had fetched offset 2 too, and the broker released it on the graceful
    # close: offset 2 came to m1 with delivery count 2, its first delivery never recorded
    h = [base(), acked(2.0, 0, 0), acked(2.0, 0, 1), acked(2.0, 0, 2),
         acq("m2", 2.2, 0), ack("m2", 2.3, 0), acq("m2", 2.4, 1), ack("m2", 2.5, 1),
         member_exit("m2", 2.6, how="graceful"), acq("m1", 3.1, 2, 2), ack("m1", 3.2, 2)]
    v = verdicts(h, names=["share_redelivery"])["share_redelivery"]
    assert v.status == "valid" and v.measurements["unrecorded_deliveries"] == 1


def test_redelivery_fails_on_a_jump_when_no_member_exited():
    h = [base(), acked(2.0, 0, 0), acq("m2", 6.8, 0, 2), ack("m2", 6.9, 0)]
    v = verdicts(h, names=["share_redelivery"])["share_redelivery"]
    assert v.status == "invalid" and "no member exited" in v.witnesses[0]["why"]


def test_redelivery_fails_on_a_jump_when_the_only_exit_came_after_it():
    h = [base(), acked(2.0, 0, 0), acq("m1", 3.1, 0, 2), ack("m1", 3.2, 0), member_exit("m2", 3.5, how="graceful")]
    v = verdicts(h, names=["share_redelivery"])["share_redelivery"]
    assert v.status == "invalid" and "no member exited" in v.witnesses[0]["why"]


def test_redelivery_fails_past_the_delivery_limit():
    h = [base(), acked(2.0, 0, 0)] + [x for n in (1, 2, 3, 4) for x in
                                      (acq("m1", 2.0 * n, 0, n), ack("m1", 2.0 * n + 0.1, 0, "release"))]
    v = verdicts(h, names=["share_redelivery"])["share_redelivery"]
    assert v.status == "invalid" and "delivery count limit=3" in v.witnesses[0]["why"]


# -- completion
def test_completion_counts_an_archived_record():
    h = [base(), acked(2.0, 0, 0)] + [x for n in (1, 2, 3) for x in
                                      (acq("m1", 2.0 * n, 0, n), ack("m1", 2.0 * n + 0.1, 0, "release"))]
    v = verdicts(h, names=["share_completion"])["share_completion"]
    assert v.status == "valid" and v.measurements["archived"] == 1


def test_completion_fails_on_a_record_never_delivered():
    v = verdicts(base(), consumed("m1", 2.0, 0), acked(3.0, 0, 1), names=["share_completion"])["share_completion"]
    assert v.status == "invalid" and v.witnesses[0]["offset"] == 1 and v.witnesses[0]["why"] == "never delivered"


def test_completion_fails_on_a_record_released_and_never_taken_again():
    h = [base(), acked(2.0, 0, 0), acq("m1", 2.2, 0), ack("m1", 2.4, 0, "release")]
    assert verdicts(h, names=["share_completion"])["share_completion"].status == "invalid"


def test_completion_is_unknown_when_the_run_did_not_drain():
    h = [base(), drained(50.0, ok=False), acked(2.0, 0, 0)]
    h = [e for e in h if not (isinstance(e, dict) and e.get("type") == "drained" and e.get("ok"))]
    assert verdicts(h, names=["share_completion"])["share_completion"].status == "unknown"


# -- in flight
def test_inflight_passes_within_the_limit_and_fails_on_a_poll_made_at_it():
    four = [acq("m1", 2.0, o) for o in range(4)] + [ack("m1", 2.5, o) for o in range(4)]
    assert verdicts(base(), four, names=["share_inflight"])["share_inflight"].status == "valid"
    five = four + [acq("m2", 2.1, 4), ack("m2", 2.5, 4)]
    v = verdicts(base(), five, names=["share_inflight"])["share_inflight"]
    assert v.status == "invalid" and v.measurements["max_held_at_acquisition"] == 4 and "limit=4" in v.message
    assert "a poll acquired 1 record(s) of t-0 while 4 were held" == v.witnesses[0]["why"]


def test_inflight_lets_one_poll_take_a_whole_batch_past_the_limit():
    # share-leader-restart, seed 1 (Kafka 4.4.0): the partition back online, one poll acquired 122 records (a batch
    # the producer had held while it was offline) with none held before; the limit was 100
    def polled(m, t, off):
        return {**acq(m, t, off), "since_mono": 1.5}
    six = [polled("m1", 2.0, o) for o in range(6)] + [ack("m1", 2.5, o) for o in range(6)]
    v = verdicts(base(), six, names=["share_inflight"])["share_inflight"]
    assert v.status == "valid" and v.measurements["max_inflight"] == 6 and v.measurements["max_held_at_acquisition"] == 0
    later = six + [acq("m2", 2.2, 6), ack("m2", 2.6, 6)]  # a poll while those six are held: at the limit, refused
    assert verdicts(base(), later, names=["share_inflight"])["share_inflight"].status == "invalid"
    # a poll that takes back a released record while the limit is held: a re-acquisition the broker allows
    again = six + [acked(1.0, 0, 6), acq("m2", 1.2, 6), ack("m2", 1.3, 6, "release"), acq("m2", 2.2, 6, 2),
                   ack("m2", 2.6, 6)]
    assert verdicts(base(), again, names=["share_inflight"])["share_inflight"].status == "valid"


# -- served
def test_served_passes_within_the_bound_and_fails_past_it():
    assert verdicts(base(), watched(), consumed("m1", 2.0, 0), names=["share_served"])["share_served"].status == "valid"
    # bound: session 6 + lock 5 + heartbeat 0.5 + twice what a poll may take by the members' own settings: explicit
    # members work on a poll's records only within their lock, 5 s
    late = [watched(), acked(2.0, 0, 0), acq("m1", 23.4, 0), ack("m1", 23.5, 0)]  # 21.4 s: valid
    assert verdicts(base(), late, names=["share_served"])["share_served"].status == "valid"
    later = [watched(), acked(2.0, 0, 0), acq("m1", 23.6, 0), ack("m1", 23.7, 0)]  # 21.6 s
    v = verdicts(base(), later, names=["share_served"])["share_served"]
    assert v.status == "invalid" and v.measurements["bound_s"] == 21.5 and v.measurements["poll_bound_s"] == 5.0
    for source in ("share.session.timeout.ms", "share.heartbeat.interval.ms",
                   "twice the longest a poll may take 5s (m1 acknowledges explicitly (its start)"):
        assert source in v.message


def test_served_bounds_a_poll_by_the_members_settings_not_by_the_slowest_poll_of_the_run():
    # m1 sat 30 s over one poll's records of partition 1: the bound does not grow with it (it used to be twice the
    # longest poll the run saw), so partition 0, waiting all that time, is unserved past the bound
    busy = [acked(2.5, 1, k) for k in range(3)] + [acq("m1", 3.0, k, p=1) for k in range(3)]
    busy += [ack("m1", 3.2, 0, p=1), ack("m1", 5.0, 1, p=1), done("m1", 33.0, 2, p=1)]
    waited = [acked(2.0, 0, 0), acq("m1", 33.5, 0), ack("m1", 33.6, 0)]
    v = verdicts(base(), watched(), busy, waited, names=["share_served"])["share_served"]
    assert v.status == "invalid" and v.measurements["bound_s"] == 21.5, v.message


def test_served_bounds_an_implicit_members_poll_by_its_processing_time():
    implicit = {"share.acknowledgement.mode": "implicit", "processing_ms": 2000.0, "client": "test"}
    poll = [{**acq("m1", 2.0, k, p=1), "since_mono": 1.8} for k in range(5)] + [acked(1.5, 1, k) for k in range(5)]
    poll += [done("m1", 2.0 + 2 * k, k, p=1) for k in range(1, 6)]
    waited = [acked(2.0, 0, 0), acq("m1", 32.0, 0), ack("m1", 32.1, 0)]  # 30 s < 6 + 5 + 0.5 + 2 x 5 x 2 s
    v = verdicts(base(effective=implicit), watched(), poll, waited, names=["share_served"])["share_served"]
    assert v.status == "valid" and v.measurements["poll_bound_s"] == 10.0, v.message
    assert "5 records x processing_ms=2000" in v.message


def test_served_is_unknown_when_a_member_recorded_no_acknowledgement_mode():
    v = verdicts(base(effective={"client": "a team's own program"}), watched(), consumed("m1", 2.0, 0),
                 names=["share_served"])["share_served"]
    assert v.status == "unknown" and "m1's start recorded no share.acknowledgement.mode" in v.message


def test_served_judges_a_record_never_delivered_until_the_members_stop():
    # a partition starved for 50 s: its record was never delivered before every member left; it used to be left
    # out as "not judged" (the group had no live member at the end of its wait) and the verdict was valid
    starved = [watched(), consumed("m1", 2.0, 0), acked(6.0, 1, 0), ev("member_stop", 56.0, "harness", member="m1"),
               member_exit("m1", 56.5), member_exit("m2", 56.6)]
    v = verdicts(base(), starved, names=["share_served"])["share_served"]
    assert v.status == "invalid", v.message
    assert v.measurements["not_judged"] == 0 and v.witnesses[0]["partition"] == 1
    assert "never delivered; no record of its partition delivered for 50.0s meanwhile" in v.witnesses[0]["why"]
    # produced just before the stop: it waited less than the bound, nothing to hold against the group
    brief = [watched(), consumed("m1", 2.0, 0), acked(45.0, 1, 0), ev("member_stop", 56.0, "harness", member="m1")]
    assert verdicts(base(), brief, names=["share_served"])["share_served"].status == "valid"


def test_served_counts_waits_from_the_coordinators_first_assignment():
    # share-member-kill at three runs at a time: members from 3.0 s, but the coordinator's assignments had no
    # partition until 8.0 s (the share partitions being initialized): nobody could be given them before
    first = broker_said(8.0, "[GroupId g] Member x new assignment state: epoch=5, previousEpoch=4, state=STABLE, "
                             "assignedPartitions=[Zm9v-0, Zm9v-1].")
    empty = broker_said(3.6, "[GroupId g] Member x new assignment state: epoch=2, previousEpoch=0, state=STABLE, "
                             "assignedPartitions=[].")
    waited = [acked(2.0, 0, 0), acq("m1", 29.0, 0), ack("m1", 29.1, 0)]  # 21 s after the first assignment (< 21.5)
    v = verdicts(base(), watched(), empty, first, waited, names=["share_served"])["share_served"]
    assert v.status == "valid" and v.measurements["max_wait_s"] == 21.0 and v.measurements["first_assignment_s"] == 7.0
    assert "first assignment at 8.0s" in v.message
    v = verdicts(base(), watched(), empty, waited, names=["share_served"])["share_served"]  # no line: from production
    assert v.status == "invalid" and "first assignment unknown" in v.message


def test_served_does_not_count_the_time_a_partition_had_no_leader():
    # share-leader-restart (seed 1, Kafka 4.4.0): a record of a partition of one replica acked as its broker went
    # down waited 13.8 s for a first delivery, the restart's length; a longer restart must not count either
    def restart(t0, t1, offline):
        return [ev("action_start", t0, "harness", action_id="a2", kind="restart_partition_leader", params={}),
                ev("action_end", t1, "harness", action_id="a2", kind="restart_partition_leader", ok=True,
                   error=None, topic="t", partition=0, offline=offline)]
    waited = [watched(), acked(2.0, 0, 0), acq("m1", 29.0, 0), ack("m1", 29.1, 0)]  # 27 s, past the 21.5 s bound
    v = verdicts(base(), waited, restart(2.5, 10.0, [0]), names=["share_served"])["share_served"]
    assert v.status == "valid" and v.measurements["max_wait_s"] == 19.5
    for other in (restart(2.5, 10.0, [1]), restart(2.5, 10.0, [])):  # another partition offline, or none
        assert verdicts(base(), waited, other, names=["share_served"])["share_served"].status == "invalid"


def test_a_record_the_client_fetched_ahead_may_come_back_before_its_member_saw_it_expire():
    """A Java KafkaShareConsumer fetched offset 0 during m1's previous poll (since_mono 1.5), so its lock ran out
    by 6.5 at the latest although m1 saw it only at 4.0: another member may have it at 6.6. Without since_mono the
    same history is an overlap (4.0 + 5 - 1 = 8.0)."""
    early = ev("share_acquired", 4.0, "member", member="m1", topic="t", partition=0, offset=0, delivery_count=1,
               since_mono=1.5)
    h = [base(), acked(1.0, 0, 0), early, acq("m2", 6.6, 0, 2), ack("m2", 6.7, 0)]
    assert verdicts(h, names=["share_exclusive"])["share_exclusive"].status == "valid"
    late = [base(), acked(1.0, 0, 0), acq("m1", 4.0, 0), acq("m2", 6.6, 0, 2), ack("m2", 6.7, 0)]
    assert verdicts(late, names=["share_exclusive"])["share_exclusive"].status == "invalid"


def test_served_does_not_judge_a_backlog_on_a_partition_that_is_served():
    slow = [acked(2.0, 0, 0)] + [x for k in range(1, 5) for x in (acked(1.5, 0, k), acq("m1", 2.0 + 4 * k, k),
                                                                   ack("m1", 2.1 + 4 * k, k))]
    slow += [acq("m1", 21.0, 0), ack("m1", 21.1, 0)]  # 19 s after it was produced, the partition served all along
    v = verdicts(base(), watched(), slow, names=["share_served"])["share_served"]
    assert v.status == "valid" and v.measurements["max_wait_s"] == 19.0
    assert v.measurements["max_unserved_while_waiting_s"] == 4.5  # offset 1: produced at 1.5, delivered at 6.0
    assert "at most 4.5s without a delivery" in v.message and "the longest wait for a first delivery 19.0s" in v.message


def test_acting_does_not_judge_a_release_after_the_lock_expired():
    """A member paused past its locks releases what it had once it runs again; the broker refuses it."""
    h = [base(), acked(2.0, 0, 0), acq("m1", 2.2, 0), ack("m1", 11.0, 0, "release", ok=False), acq("m2", 11.5, 0, 2),
         ack("m2", 11.6, 0)]
    assert verdicts(h, names=["share_held_when_acting"])["share_held_when_acting"].status == "valid"


# -- partitions added while the group runs (add_partitions)
def grown(t=4.0, before=1, count=2):
    return ev("action_end", t, "harness", action_id=1, kind="add_partitions", ok=True, error=None, topic="t",
              before=before, count=count, producer_saw_s=0.1)


def test_completion_passes_when_records_of_an_added_partition_are_consumed():
    h = [base(), grown(), consumed("m1", 2.0, 0), consumed("m2", 5.0, 0, p=1), consumed("m1", 5.5, 1, p=1)]
    v = verdicts(h, names=["share_completion"])["share_completion"]
    assert v.status == "valid", v.message
    assert v.measurements["added_partition_records"] == 2 and v.measurements["added_partition_completed"] == 2


def test_completion_fails_when_the_first_records_of_an_added_partition_are_skipped():
    # records 0 and 1 of the new partition 1 were never delivered; the group began it at offset 2 (a skip, as
    # share.auto.offset.reset=latest would do to records written before the partition was initialised)
    h = [base(), grown(), consumed("m1", 2.0, 0), acked(4.5, 1, 0), acked(4.6, 1, 1), consumed("m2", 5.0, 2, p=1)]
    v = verdicts(h, names=["share_completion"])["share_completion"]
    assert v.status == "invalid" and v.measurements["lost"] == 2, v.message
    assert v.measurements["added_partition_records"] == 3 and v.measurements["added_partition_completed"] == 1
    assert "partition 1 added at 4.0s by add_partitions" in v.witnesses[0]["why"]


def test_completion_says_nothing_of_added_partitions_when_none_were_added():
    v = verdicts(base(), consumed("m1", 2.0, 0), names=["share_completion"])["share_completion"]
    assert v.status == "valid" and "added_partition_records" not in v.measurements


# -- a holder killed right after it asked for an accept: the brokers' start offsets settle the record
def starts(t, rows):
    return ev("share_start_offsets", t, "harness", group_id="g", start_offsets=rows, error=None)


def killed_after_processing():
    """m2 processed offset 1 and was killed 12 ms later, before the accept's answer (share-dead-letter, seed 1 of
    a run with a kill: partition 5, offset 225); the record never came back."""
    return [acked(2.0, 0, 1), acq("m2", 2.2, 1), done("m2", 2.3, 1), member_exit("m2", 2.312, "kill")]


def test_completion_takes_the_brokers_start_offset_for_a_record_whose_holder_was_killed_before_the_answer():
    h = [base(), consumed("m1", 2.0, 0), killed_after_processing(), starts(56.0, [["t", 0, 2]])]
    v = verdicts(h, names=["share_completion"])["share_completion"]
    assert v.status == "valid" and v.measurements["done_by_start_offset"] == 1, v.message
    assert "below the start offsets the brokers gave" in v.message


def test_completion_without_start_offsets_cannot_settle_it():
    v = verdicts(base(), killed_after_processing(), names=["share_completion"])["share_completion"]
    assert v.status == "invalid" and v.measurements["lost"] == 1


def test_completion_fails_when_the_start_offset_is_not_past_the_record():
    h = [base(), killed_after_processing(), starts(56.0, [["t", 0, 1]])]
    v = verdicts(h, names=["share_completion"])["share_completion"]
    assert v.status == "invalid" and "start offset after the run: 1" in v.witnesses[0]["why"]


def test_a_record_never_delivered_is_lost_whatever_the_start_offset_says():
    # a start offset past records no member was ever given is a skip, not an end (an added partition's case)
    h = [base(), consumed("m1", 2.0, 0), acked(2.5, 0, 1), starts(56.0, [["t", 0, 2]])]
    v = verdicts(h, names=["share_completion"])["share_completion"]
    assert v.status == "invalid" and "never delivered" in v.witnesses[0]["why"]


# -- an acknowledgement whose answer was lost
LOST = 'KafkaError{code=_TRANSPORT,val=-195,str="Local: Broker transport failure"}'


def test_completion_counts_an_accept_whose_answer_was_lost_and_that_never_came_back():
    # share-rolling-upgrade, seed 1 (4.3.1 -> 4.4.0): the accept of p3/273 was answered _TRANSPORT by the leader
    # shutting down, which wrote it acknowledged to __share_group_state; the record never came back
    lost_answer = {**ack("m1", 2.4, 0), "ok": False, "error": LOST}
    h = [base(), acked(2.0, 0, 0), acq("m1", 2.2, 0), done("m1", 2.3, 0), lost_answer]
    v = verdicts(h, names=["share_completion"])["share_completion"]
    assert v.status == "valid" and v.measurements["answer_lost"] == 1 and v.measurements["accepted"] == 1
    assert "1 of them whose answer was lost" in v.message


def test_a_lost_answer_whose_lock_could_outlive_the_members_is_unknown_not_done():
    # an accept lost 1.1 s before the members' final stop, lock 5 s: had the broker not taken it, the record could
    # not have come back before the members left; nothing says the broker took it
    lost_answer = {**ack("m1", 54.0, 0), "ok": False, "error": LOST}
    h = [base(), acked(53.5, 0, 0), acq("m1", 53.8, 0), done("m1", 53.9, 0), lost_answer,
         ev("member_stop", 55.1, "harness", member="m1")]
    v = verdicts(h, names=["share_completion"])["share_completion"]
    assert v.status == "unknown", v.message
    assert v.measurements["answer_lost_unsettled"] == 1 and v.measurements["answer_lost"] == 0
    assert "final stop at 55.1 s" in v.message and v.witnesses[0]["offset"] == 0
    # the brokers' start offset after the run passes it: done in their words
    v = verdicts(h, starts(59.0, [["t", 0, 1]]), names=["share_completion"])["share_completion"]
    assert v.status == "valid" and v.measurements["done_by_start_offset"] == 1, v.message
    # its lock ran out 0.1 s before the final stop and it never came back: the broker took it
    early = [base(), acked(49.0, 0, 0), acq("m1", 50.0, 0), done("m1", 50.1, 0), {**ack("m1", 50.2, 0), "ok": False,
             "error": LOST}, ev("member_stop", 55.1, "harness", member="m1")]
    v = verdicts(early, names=["share_completion"])["share_completion"]
    assert v.status == "valid" and v.measurements["answer_lost"] == 1, v.message


def test_completion_fails_on_an_accept_the_broker_refused_and_that_never_came_back():
    h = [base(), acked(2.0, 0, 0), acq("m1", 2.2, 0), done("m1", 2.3, 0), ack("m1", 2.4, 0, ok=False)]
    v = verdicts(h, names=["share_completion"])["share_completion"]
    assert v.status == "invalid" and v.measurements["answer_lost"] == 0


def test_a_record_back_after_a_lost_answer_is_judged_by_its_next_delivery():
    lost_answer = {**ack("m1", 2.4, 0), "ok": False, "error": LOST}
    h = [base(), acked(2.0, 0, 0), acq("m1", 2.2, 0), lost_answer, acq("m2", 8.0, 0, 2), ack("m2", 8.1, 0, "release")]
    v = verdicts(h, names=["share_completion", "share_redelivery"])
    assert v["share_completion"].status == "invalid" and v["share_redelivery"].status == "valid"


# The members say `answer` (lost: no answer from the broker); the Java member's errors are the exception's class and
# message (its client has no librdkafka codes), so its lost answers were taken for refusals before the field
JAVA_LOST = "DisconnectException: Cancelled acknowledge request due to node 2 being disconnected"
JAVA_REFUSED = "InvalidRecordStateException: The record state is invalid. The acknowledgement of delivery could not be completed."


def test_completion_takes_a_java_members_disconnect_as_a_lost_answer():
    lost_answer = {**ack("m1", 2.4, 0), "ok": False, "error": JAVA_LOST, "answer": "lost"}
    h = [base(), acked(2.0, 0, 0), acq("m1", 2.2, 0), done("m1", 2.3, 0), lost_answer]
    v = verdicts(h, names=["share_completion"])["share_completion"]
    assert v.status == "valid" and v.measurements["answer_lost"] == 1


def test_completion_fails_on_a_java_members_refused_accept_that_never_came_back():
    refused = {**ack("m1", 2.4, 0), "ok": False, "error": JAVA_REFUSED, "answer": "given"}
    h = [base(), acked(2.0, 0, 0), acq("m1", 2.2, 0), done("m1", 2.3, 0), refused]
    v = verdicts(h, names=["share_completion"])["share_completion"]
    assert v.status == "invalid" and v.measurements["answer_lost"] == 0
    assert "ended by exit" not in v.witnesses[0]["why"]


def test_the_answer_field_wins_over_the_error_text():
    from harness.invariants.share.view import answer_lost
    assert not answer_lost({"ok": False, "error": LOST, "answer": "given"})
    assert answer_lost({"ok": False, "error": "anything", "answer": "lost"})
    assert answer_lost({"ok": False, "error": LOST})  # a history from before the field
    assert not answer_lost({"ok": False, "error": "INVALID_RECORD_STATE"})
    assert answer_lost({"ok": False, "error": 'KafkaError{code=REQUEST_TIMED_OUT,val=7,str="Broker: Request timed out"}'})
    assert not answer_lost({"ok": True, "error": None, "answer": "lost"})  # taken is taken


def test_the_python_member_tells_librdkafkas_own_errors_from_the_brokers():
    import confluent_kafka as ck
    from harness.members.share_member import answer_of
    assert answer_of(None) == "given"
    assert answer_of(ck.KafkaException(ck.KafkaError(ck.KafkaError._TRANSPORT))) == "lost"
    assert answer_of(ck.KafkaException(ck.KafkaError(ck.KafkaError._TIMED_OUT))) == "lost"
    assert answer_of(ck.KafkaException(ck.KafkaError(ck.KafkaError.INVALID_RECORD_STATE))) == "given"
    assert answer_of(ck.KafkaException(ck.KafkaError(ck.KafkaError.NOT_LEADER_FOR_PARTITION))) == "given"
    # librdkafka's own socket timeout on a ShareAcknowledge whose answer was dropped (a real run's 41 records)
    assert answer_of(ck.KafkaException(ck.KafkaError(ck.KafkaError.REQUEST_TIMED_OUT))) == "lost"


def test_the_drain_takes_a_lost_answer_once_the_lock_ran_out_without_the_record_back(tmp_path):
    from harness.record.history import HistoryWriter
    from harness.run.observe import Observer
    with HistoryWriter(tmp_path / "producer.jsonl", source="producer") as w:
        w.event("acked", topic="t", partition=0, offset=0)
        w.event("acked", topic="t", partition=0, offset=1)
    with HistoryWriter(tmp_path / "member-m1.jsonl", source="member", member="m1") as w:
        for o in (0, 1):
            w.event("share_acquired", topic="t", partition=0, offset=o, delivery_count=1, since_mono=1.0)
        w.event("share_acked", topic="t", partition=0, offset=0, ack="accept", ok=False, error=LOST, requested_mono=100.0)
        w.event("share_acked", topic="t", partition=0, offset=1, ack="accept", ok=False,
                error="INVALID_RECORD_STATE", requested_mono=100.0)
    obs = Observer(tmp_path, "t")
    obs.share_lock_s = 5.0
    obs.poll()
    assert obs.unprocessed(now=105.5) == 2  # the lock may still run
    assert obs.unprocessed(now=106.5) == 1  # offset 0 taken; offset 1 was refused: it must come back


# -- a record handed over late, after the broker gave it to another member
def test_a_record_handed_over_after_its_next_delivery_is_judged_in_the_brokers_order():
    # share-member-pause --member java, seed 1: m1, stopped mid-poll (its poll began at 2.5), handed over offset 0
    # with count 3 on resuming, after the broker had given it to m2 with count 4 (accepted); m1's release was
    # refused. Judged by handover time it looked like a redelivery after an accept, a last delivery that expired,
    # and two holds at once. Here (limit 3): count 2 handed over at 12.0, count 3 given at 10.0
    h = [base(), acked(1.0, 0, 0), acq("m1", 1.2, 0, 1), ack("m1", 1.3, 0, "release"),
         {**acq("m1", 12.0, 0, 2), "since_mono": 2.5}, ack("m1", 12.1, 0, "release", ok=False),
         {**acq("m2", 10.0, 0, 3), "since_mono": 9.5}, ack("m2", 10.8, 0)]
    v = verdicts(h, names=["share_exclusive", "share_redelivery", "share_completion", "share_held_when_acting"])
    assert {k: x.status for k, x in v.items()} == {k: "valid" for k in v}, {k: x.message for k, x in v.items()}
    assert v["share_completion"].measurements["accepted"] == 1


def test_exclusive_fails_when_a_late_handover_still_held_the_record_while_the_next_delivery_did():
    # m1's poll began at 9.8, so the broker's lock on its count-1 delivery ran until 14.8 at least; m2 was given
    # count 2 at 10.0 and held it until its accept at 13.0: the broker gave it while m1's lock ran
    h = [base(), acked(1.0, 0, 0), {**acq("m1", 11.0, 0, 1), "since_mono": 9.8}, ack("m1", 11.5, 0),
         {**acq("m2", 10.0, 0, 2), "since_mono": 9.9}, ack("m2", 13.0, 0)]
    assert verdicts(h, names=["share_exclusive"])["share_exclusive"].status == "invalid"


# -- a share-partition leader lost: the count persisted stands
def test_redelivery_allows_the_count_to_stay_when_the_leader_went_down_with_the_delivery_unacknowledged():
    # share-rack-outage --member java, seed 1: m1 held offset 78 (count 1) when its rack went down, its broker
    # the partition's leader; the next leader delivered it to m2 with count 1 (__share_group_state records no
    # acquisition)
    h = [base(members=("m1", "m2")), acked(1.0, 0, 0), acq("m1", 2.0, 0, 1),
         fault_start(2.1, "f1", members=["m1"], kind="rack_outage", brokers=[1]), member_exit("m1", 2.1, how="kill"),
         fault_end(8.0, "f1"), acq("m2", 9.0, 0, 1), ack("m2", 9.1, 0)]
    v = verdicts(h, names=["share_redelivery"])["share_redelivery"]
    assert v.status == "valid" and v.measurements["count_kept_after_leader_change"] == 1


def test_redelivery_fails_when_the_count_stays_with_no_broker_down():
    h = [base(members=("m1", "m2")), acked(1.0, 0, 0), acq("m1", 2.0, 0, 1),
         fault_start(2.1, "f1", members=["m1"], kind="pause"), fault_end(8.0, "f1"), acq("m2", 9.0, 0, 1),
         ack("m2", 9.1, 0)]
    v = verdicts(h, names=["share_redelivery"])["share_redelivery"]
    assert v.status == "invalid" and "expected 2" in v.witnesses[0]["why"]


def test_redelivery_fails_when_the_count_stays_after_an_accept_even_with_a_broker_down():
    h = [base(members=("m1", "m2")), acked(1.0, 0, 0), acq("m1", 2.0, 0, 1), ack("m1", 2.05, 0, "release"),
         fault_start(2.1, "f1", kind="broker_bounce", brokers=[1]), fault_end(8.0, "f1"), acq("m2", 9.0, 0, 1),
         ack("m2", 9.1, 0)]
    assert verdicts(h, names=["share_redelivery"])["share_redelivery"].status == "invalid"


# -- a hold ends with its share-partition leader's leadership
def test_a_record_handed_over_again_with_its_count_after_a_leader_move_is_no_overlap():
    # share-leader-move (seed 507308347): the old leader's lock went with its leadership; the accept was refused
    h = [base(), acked(1.0, 0, 0), fault_start(2.0, "f1", kind="leader_move", brokers=[1]), acq("m1", 2.5, 0),
         ack("m1", 2.6, 0, ok=False), fault_end(2.8, "f1"), acq("m1", 3.0, 0), done("m1", 3.1, 0), ack("m1", 3.2, 0)]
    v = verdicts(h, names=["share_exclusive", "share_redelivery"])
    assert v["share_exclusive"].status == "valid", v["share_exclusive"].message
    assert v["share_exclusive"].measurements["holds_ended_by_leader_change"] == 1
    assert v["share_redelivery"].measurements["count_kept_after_leader_change"] == 1


def test_a_record_handed_over_again_with_its_count_and_no_broker_fault_overlaps():
    h = [base(), acked(1.0, 0, 0), acq("m1", 2.5, 0), ack("m1", 2.6, 0, ok=False), acq("m2", 3.0, 0),
         done("m2", 3.1, 0), ack("m2", 3.2, 0)]
    v = verdicts(h, names=["share_exclusive"])["share_exclusive"]
    assert v.status == "invalid" and v.measurements["overlaps"] == 1


def test_a_raised_count_during_a_leader_move_is_judged_as_any_redelivery():
    # the next leader knew of the first delivery (its count rose): the first lock stands until it ends
    h = [base(), acked(1.0, 0, 0), fault_start(2.0, "f1", kind="leader_move", brokers=[1]), acq("m1", 2.5, 0),
         fault_end(2.8, "f1"), acq("m2", 3.0, 0, 2), done("m2", 3.1, 0), ack("m2", 3.2, 0)]
    v = verdicts(h, names=["share_exclusive"])["share_exclusive"]
    assert v.status == "invalid" and v.measurements["holds_ended_by_leader_change"] == 0


def test_a_delivery_count_limit_nobody_read_leaves_redelivery_and_completion_unknown():
    """Without share.delivery.count.limit (neither the group's nor the brokers'), an archived record cannot be told
    from a lost one and no redelivery from one past the limit: unknown, never judged without it."""
    no_limit = {k: v for k, v in GROUP.items() if k != "share.delivery.count.limit"}
    h = [base(group=no_limit), watched(), consumed("m1", 2.0, 0)]
    vs = verdicts(h, names=["share_redelivery", "share_completion"])
    for name in ("share_redelivery", "share_completion"):
        assert vs[name].status == "unknown" and "the delivery count limit is unknown" in vs[name].message

