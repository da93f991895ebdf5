"""`share_completion` by the group's reset policy and the brokers' start offsets (harness/invariants/share/skipped.py):
histories that must pass and ones that must fail.

Under `share.auto.offset.reset=latest` the records a partition had before the group first initialised it are
skipped by the group's own policy (valid, counted); in a partition added while the group consumes the topic every
record is due (KAFKA-20742: 4.2 and 4.3 skipped them); a record the start offset after the run passed without its
being delivered, or while the broker owed it another delivery, is lost, whether or not the run drained. The group's
settings are test_invariant_share.GROUP's (delivery count limit 3, lock 5 s) with the policy added; the run below
did not drain unless said (`drained` not ok), the case that read "unknown" before.
"""
from histbuild import acked, drained, ev, history, member_exit
from test_invariant_share import GROUP, S, acq, ack, base, consumed, watched

from harness.invariants.share import check_share

LATEST = {**GROUP, "share.auto.offset.reset": "latest"}
EARLIEST = {**GROUP, "share.auto.offset.reset": "earliest"}


def completion(*items, group=LATEST, drain_ok=False, missing=2):
    frame = [e for e in base(group=group) if e["type"] != "drained"]
    h = history(frame, drained(55.0, ok=drain_ok, missing=0 if drain_ok else missing), *items)
    return check_share(h, S, ["share_completion"])["share_completion"]


def starts(rows, t=58.0):
    return ev("share_start_offsets", t, "harness", group_id="g", start_offsets=rows, error=None)


def grown(t=4.0, before=1, count=2):
    return ev("action_end", t, "harness", action_id=1, kind="add_partitions", ok=True, error=None, topic="t",
              before=before, count=count, producer_saw_s=0.1)


def before_the_group():
    """Offsets 0 and 1 of partition 0 written at 0.5 and 0.6, before the group's first delivery there (offset 2 at
    2.2): the group began the partition at 2. The brokers' start offset after the run: 4."""
    return [acked(0.5, 0, 0), acked(0.6, 0, 1), consumed("m1", 2.0, 2), consumed("m2", 3.0, 3), starts([["t", 0, 4]])]


# -- (a) skipped by the group's own policy
def test_records_written_before_the_group_initialised_a_partition_are_skipped_by_latest():
    v = completion(*before_the_group())
    assert v.status == "valid", v.message
    assert v.measurements["skipped_by_reset_policy"] == 2 and v.measurements["lost"] == 0
    assert v.measurements["reset_policy"] == "latest"
    assert "skipped by share.auto.offset.reset=latest (the group's config read at 0.5s)" in v.message
    assert "t-0 offsets 0-1 (2)" in v.message and "all 2 produced records due to the group" in v.message


def test_the_recorded_policy_decides_earliest_makes_the_same_records_lost():
    v = completion(*before_the_group(), group=EARLIEST)
    assert v.status == "invalid" and v.measurements["lost_surely"] == 2, v.message
    assert "share.auto.offset.reset=earliest" in v.message and "the run did not drain" in v.message
    w = v.witnesses[0]
    assert (w["partition"], w["offset"]) == (0, 0) and "start offset after the run: 4" in w["why"]
    assert "never delivered" in w["why"]


def test_without_the_recorded_policy_a_skip_cannot_be_told_from_a_loss():
    v = completion(*before_the_group(), group=GROUP)
    assert v.status == "unknown" and "share.auto.offset.reset unknown" in v.message, v.message
    assert [w["offset"] for w in v.witnesses] == [0, 1]


def test_under_latest_a_record_produced_after_the_first_delivery_is_no_skip():
    # offset 0 acknowledged to the producer at 5.0, well after offset 1's delivery at 2.2 (+ the 1 s slack)
    v = completion(acked(5.0, 0, 0), consumed("m1", 2.0, 1), starts([["t", 0, 2]]), missing=1)
    assert v.status == "invalid" and v.measurements["skipped_by_reset_policy"] == 0, v.message


def test_under_latest_a_record_after_the_first_delivery_never_delivered_is_lost():
    v = completion(consumed("m1", 2.0, 0), acked(2.5, 0, 1), consumed("m2", 3.0, 2), drain_ok=True)
    assert v.status == "invalid" and v.witnesses[0]["offset"] == 1, v.message


# -- (b) a partition added while the group consumes the topic: every record is due
def skipped_in_added():
    """Partition 1 added at 4.0; its offsets 0 and 1 written at 4.1 and 4.2 were never delivered, the group began it
    at 2 (KAFKA-20742); the brokers' start offset after the run: 3."""
    return [grown(), consumed("m1", 2.0, 0), acked(4.1, 1, 0), acked(4.2, 1, 1), consumed("m2", 5.0, 2, p=1)]


def test_records_skipped_in_an_added_partition_are_lost_under_latest_though_the_run_did_not_drain():
    v = completion(*skipped_in_added(), starts([["t", 0, 1], ["t", 1, 3]]))
    assert v.status == "invalid" and v.measurements["lost_surely"] == 2, v.message
    assert v.measurements["skipped_by_reset_policy"] == 0 and v.measurements["added_partition_completed"] == 1
    w = v.witnesses[0]
    assert (w["topic"], w["partition"], w["offset"]) == ("t", 1, 0)
    assert "partition 1 added at 4.0s by add_partitions" in w["why"] and "start offset after the run: 3" in w["why"]
    assert "the first offset delivered there: 2" in w["why"]


def test_an_added_partition_skip_is_lost_without_the_start_offsets_too():
    v = completion(*skipped_in_added())
    assert v.status == "invalid" and v.measurements["lost_surely"] == 2, v.message


def test_an_added_partition_read_from_its_first_record_under_latest_passes():
    v = completion(grown(), consumed("m1", 2.0, 0), consumed("m1", 4.1, 0, p=1), consumed("m2", 4.2, 1, p=1),
                   starts([["t", 0, 1], ["t", 1, 2]]), drain_ok=True)
    assert v.status == "valid" and v.measurements["added_partition_completed"] == 2, v.message
    assert v.measurements["skipped_by_reset_policy"] == 0


# -- (c) a record the start offset passed without its being delivered or acknowledged
def test_a_released_record_the_start_offset_passed_without_delivering_it_again_is_lost():
    released = [acked(2.0, 0, 0), acq("m1", 2.2, 0), ack("m1", 2.3, 0, "release"), consumed("m2", 3.0, 1)]
    v = completion(*released, starts([["t", 0, 2]]), group=EARLIEST, missing=1)
    assert v.status == "invalid" and v.measurements["lost_surely"] == 1, v.message
    assert "ended by release" in v.witnesses[0]["why"] and "start offset after the run: 2, past it" in v.witnesses[0]["why"]
    # without the start offsets the history cannot tell: the run did not drain
    v = completion(*released, group=EARLIEST, missing=1)
    assert v.status == "unknown" and "the run did not drain" in v.message


def test_a_record_never_delivered_below_the_start_offset_is_lost_though_the_run_did_not_drain():
    v = completion(consumed("m1", 2.0, 0), acked(2.5, 0, 1), consumed("m2", 3.0, 2), starts([["t", 0, 3]]),
                   group=EARLIEST, missing=1)
    assert v.status == "invalid" and "never delivered" in v.witnesses[0]["why"], v.message


def test_a_holder_that_left_before_the_answer_below_the_start_offset_is_still_done():
    killed = [acked(2.0, 0, 0), acq("m2", 2.2, 0), member_exit("m2", 2.31, "kill"), consumed("m1", 3.0, 1)]
    v = completion(*killed, starts([["t", 0, 2]]), group=EARLIEST, drain_ok=True)
    assert v.status == "valid" and v.measurements["done_by_start_offset"] == 1, v.message


def test_a_record_not_delivered_that_the_start_offset_did_not_pass_stays_unknown_when_undrained():
    v = completion(consumed("m1", 2.0, 0), acked(2.5, 0, 1), starts([["t", 0, 1]]), group=EARLIEST, missing=1)
    assert v.status == "unknown" and "the run did not drain" in v.message, v.message


# -- share_served: what the group skipped by its policy, or surely lost, is no wait
def served(*items, group=LATEST):
    h = history(base(group=group), watched(), *items)
    return check_share(h, S, ["share_served"])["share_served"]


def test_served_does_not_judge_records_the_group_skipped_by_its_policy():
    # written at 1.5 and 1.6, the members alive since 1.0, before the first delivery there (offset 2 at 2.2)
    early = [acked(1.5, 0, 0), acked(1.6, 0, 1), consumed("m1", 2.0, 2), consumed("m2", 3.0, 3)]
    v = served(*early)
    assert v.status == "valid" and v.measurements["skipped_by_reset_policy"] == 2, v.message
    v = served(*early, group=EARLIEST)  # due to the group: they waited, never delivered, until the end
    assert v.status == "invalid" and {w["offset"] for w in v.witnesses} == {0, 1}, v.message
    v = served(*early, starts([["t", 0, 4]]), group=EARLIEST)  # passed by the start offset: lost, completion's
    assert v.status == "valid" and v.measurements["lost_surely"] == 2, v.message


def test_served_leaves_records_surely_lost_in_an_added_partition_to_completion():
    v = served(*skipped_in_added(), starts([["t", 0, 1], ["t", 1, 3]]))
    assert v.status == "valid" and v.measurements["lost_surely"] == 2, v.message
