"""share_served's second part: the group coordinator's own assignment (`share_assignment`, its answers to
ShareGroupDescribe) gives every partition of the run's topics a live member while it lists one, but for gaps of at
most the share session timeout + the heartbeat interval + the watch's interval + the clock slack.

The group's settings are those of test_invariant_share (session 6 s, heartbeat 0.5 s, read from the history's
`group_settings` event); the watch asks every 0.5 s; the clock slack is 1 s: the bound is 8 s.
"""
from histbuild import (acked, ev, fault_end, fault_start, member_exit, member_start)
from test_invariant_share import GROUP, ack, acq, base, consumed, verdicts


def assign(t, held, *, error=None, interval=0.5):
    """The watch's event: `held` is {member: [partitions of topic t]}; None with an error (blind)."""
    members = None if error else [{"member": m, "consumer_id": f"id-{m}", "epoch": 1,
                                     "partitions": [["t", p] for p in ps]} for m, ps in held.items()]
    return ev("share_assignment", t, "harness", members=members, asked_mono=t - 0.01, interval_s=interval,
              error=error, group_epoch=None if error else 1, assignment_epoch=None if error else 1,
              state=None if error else "Stable")


def served(h):
    return verdicts(h, names=["share_served"])["share_served"]


def records():
    return [consumed("m1", 2.0, 0, p=0), consumed("m2", 2.5, 0, p=1)]


def test_a_killed_members_partition_reassigned_within_its_session_timeout_is_valid():
    h = [base(), *records(), assign(1.5, {"m1": [0], "m2": [1]}), member_exit("m1", 10.0, "kill"),
         assign(15.5, {"m1": [0], "m2": [1]}), assign(16.0, {"m2": [0, 1]})]
    v = served(h)
    assert v.status == "valid", v.message
    assert abs(v.measurements["assignment_gap_max_s"] - 6.0) < 1e-6
    assert v.measurements["assignment_bound_s"] == 8.0
    assert "share.session.timeout.ms" in v.message and "the watch's interval 0.5s" in v.message


def test_a_killed_members_partition_left_with_it_past_the_bound_fails():
    h = [base(), *records(), assign(1.5, {"m1": [0], "m2": [1]}), member_exit("m1", 10.0, "kill"),
         assign(20.0, {"m2": [0, 1]})]
    v = served(h)
    assert v.status == "invalid"
    w = v.witnesses[0]
    assert (w["topic"], w["partition"], w["gap_s"]) == ("t", 0, 10.0)
    assert "it named m1, gone: m1 kill at 10.0s" in w["why"] and "live members (m2)" in w["why"]
    assert "assigned to no live member past the bound" in v.message


def test_a_partition_the_coordinator_gives_nobody_while_members_live_fails():
    h = [base(), *records(), assign(1.5, {"m1": [0], "m2": []}), assign(30.0, {"m1": [0], "m2": [1]})]
    v = served(h)
    assert v.status == "invalid"
    assert v.witnesses[0]["partition"] == 1 and "named no member for it" in v.witnesses[0]["why"]


def test_the_bound_is_the_recorded_session_timeout():
    slow = {**GROUP, "share.session.timeout.ms": "20000"}
    h = [base(group=slow), *records(), assign(1.5, {"m1": [0], "m2": [1]}), member_exit("m1", 10.0, "kill"),
         assign(20.0, {"m2": [0, 1]})]
    v = served(h)
    assert v.status == "valid", v.message
    assert v.measurements["assignment_bound_s"] == 22.0


def test_a_gap_during_a_broker_fault_is_measured_not_judged():
    h = [base(), *records(), assign(1.5, {"m1": [0], "m2": [1]}), fault_start(9.0, "f1", kind="broker_kill", brokers=[1]),
         member_exit("m1", 10.0, "kill"), fault_end(12.0, "f1"), assign(20.0, {"m2": [0, 1]})]
    v = served(h)
    assert v.status == "valid", v.message
    assert v.measurements["assignment_gap_max_in_broker_faults_s"] == 10.0
    assert v.measurements["assignment_gap_max_s"] == 0.0


def test_where_the_watch_got_no_answer_the_history_is_blind():
    h = [base(), *records(), assign(1.5, {"m1": [0], "m2": [1]}), member_exit("m1", 10.0, "kill"),
         assign(11.0, {}, error="ShareGroupDescribe: COORDINATOR_LOAD_IN_PROGRESS"), assign(19.0, {"m2": [1]}),
         assign(20.0, {"m2": [0, 1]})]
    v = served(h)
    assert v.status == "valid", v.message
    assert v.measurements["assignment_blind_s"] == 8.0
    assert v.measurements["assignment_gap_max_s"] == 1.0


def test_before_the_first_assignment_and_after_the_final_stop_nothing_is_judged():
    h = [base(), *records(), assign(1.5, {"m1": [], "m2": []}), assign(12.0, {"m1": [0], "m2": [1]}),
         ev("member_stop", 56.0, "harness", member="m1"), assign(56.5, {"m2": [1]})]
    v = served(h)
    assert v.status == "valid", v.message
    assert v.measurements["assignment_gap_max_s"] == 0.0


def test_an_added_partition_is_judged_from_its_first_assignment():
    added = ev("action_end", 20.0, "harness", action_id="a1", kind="add_partitions", ok=True, error=None,
               topic="t", before=2, count=3)
    h = [base(), *records(), consumed("m1", 21.0, 0, p=2), assign(1.5, {"m1": [0], "m2": [1]}), added,
         assign(25.0, {"m1": [0, 2], "m2": [1]}), member_exit("m1", 30.0, "kill"), assign(50.0, {"m2": [0, 1, 2]})]
    v = served(h)
    assert v.status == "invalid"
    assert {w["partition"] for w in v.witnesses} == {0, 2}
    assert v.measurements["added_partition_first_assigned_s"] == {"t-2": 5.0}


def test_members_the_history_does_not_know_leave_the_assignment_unjudged_so_the_verdict_is_unknown():
    h = [base(), *records(), assign(1.5, {"consumer-1": [0], "consumer-2": []})]
    v = served(h)
    assert v.status == "unknown"
    assert "the coordinator named members the history does not know (consumer-1, consumer-2)" in v.message


def test_a_history_without_the_watch_is_unknown_not_valid():
    """The coordinator's assignment unrecorded: half of the invariant unjudged, never a pass."""
    v = served([base(), *records()])
    assert v.status == "unknown" and "no share_assignment event" in v.message
    late = [base(), acked(2.0, 0, 0), acq("m1", 30.0, 0), ack("m1", 30.1, 0)]  # the records' half still fails alone
    assert served(late).status == "invalid"


def test_a_member_started_later_counts_from_its_start():
    h = [base(), *records(), member_start("m3", 20.0), assign(1.5, {"m1": [0], "m2": [1]}),
         member_exit("m1", 10.0, "kill"), assign(16.0, {"m2": [1], "m3": [0]})]
    v = served(h)
    # m3 is named from 16.0 but was not alive before 20.0: partition 0 had no live member from 10.0 to 20.0
    assert v.status == "invalid" and v.witnesses[0]["gap_s"] == 10.0


def chain(named_m3_until: float) -> list:
    """A poison record's partition: m1 killed at 10.0, the coordinator names it until 15.5, then names m3, which the
    record killed at 15.3 before the watch saw it named, until `named_m3_until`, then m2."""
    return [base(), *records(), member_start("m3", 12.0), assign(1.5, {"m1": [0], "m2": [1]}),
            member_exit("m1", 10.0, "kill"), assign(12.5, {"m1": [0], "m2": [1], "m3": []}),
            member_exit("m3", 15.3, "exit"), assign(15.5, {"m2": [1], "m3": [0]}),
            assign(named_m3_until, {"m2": [0, 1]})]


def test_a_partition_handed_from_one_gone_member_to_another_is_judged_per_departure():
    """The share-poison-record run (seed 2, Kafka 4.4.0): each member the record killed kept the partition for less
    than its own bound, while the whole chain (12 s here) is longer than one member's."""
    v = served(chain(22.0))
    assert v.status == "valid", v.message
    assert abs(v.measurements["assignment_gap_max_s"] - 6.5) < 1e-6


def test_a_gone_member_the_partition_was_handed_to_keeping_it_past_its_own_bound_fails():
    v = served(chain(30.0))
    assert v.status == "invalid"
    w = v.witnesses[0]
    assert (w["partition"], w["gap_s"]) == (0, 14.5) and "it named m3, gone: m3 exit at 15.3s" in w["why"], w


def test_the_kept_poison_record_run_whose_partition_went_from_one_killed_member_to_the_next_holds_every_verdict():
    """share-poison-record, run 2 of `--seed 2 --repeat 3` on Kafka 4.4.0 (2026-12-07): share_served was invalid
    ("assigned to no live member past the bound (8.0 s)") while each member the record killed was fenced within its
    own bound; judged per departure, every verdict holds."""
    from pathlib import Path

    from harness.invariants import judge
    from harness.record.history import History
    kept = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "share-poison-chain" / "history"
    verdicts = judge(History.load(kept))
    assert verdicts["share_served"].status == "valid", verdicts["share_served"].message
    assert all(v.status in ("valid", "skipped") for v in verdicts.values()), \
        {n: v.message for n, v in verdicts.items() if v.status not in ("valid", "skipped")}
