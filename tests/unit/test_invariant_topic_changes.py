"""Verify: `topic_changes` judges the group's answer to a topic created late (by name and by regex), a topic deleted,
and a subscription change, with bounds from the recorded settings; each rule has must-pass and must-fail histories.
Setup: hand-made histories (tests/unit/histbuild.py), a topic `t` from the start and `late` made by a step.
"""
from __future__ import annotations

from harness.invariants import topic_changes
from histbuild import (assigned, ev, group_settings, history, member_exit, processed, revoked, run_end, run_start,
                       settings, started)

LATE = "late"
#: the brokers' group settings the consumer protocol's members run with (heartbeat 0.5 s)
BROKER = {"group.consumer.session.timeout.ms": "6000", "group.consumer.heartbeat.interval.ms": "500"}


def step(kind: str, t0: float, t1: float, aid: str, **result) -> list[dict]:
    return [ev("action_start", t0, "harness", action_id=aid, kind=kind, params={"topic": LATE}),
            ev("action_end", t1, "harness", action_id=aid, kind=kind, ok=True, error=None, topic=LATE, **result)]


def judge(*items, protocol: str = "consumer", **kw):
    return topic_changes.check(history(*items), settings(protocol=protocol, heartbeat_interval_s=0.5,
                                                         max_poll_interval_s=10.0, **kw))


def group(sub, protocol="consumer", refresh_ms=None):
    """Two members of `protocol` subscribed to `sub` from 0.1 s, each holding two partitions of `t`."""
    cc = {"topic.metadata.refresh.interval.ms": refresh_ms} if refresh_ms else {}
    out = [group_settings(0.05, broker=BROKER)]
    for m, parts, t in (("a", [0, 1], 0.1), ("b", [2, 3], 0.2)):
        st = started(m, t + 0.1, subscription=sub, protocol=protocol)
        st["client_config"] = cc
        out += [ev("member_start", t, "harness", member=m, pid=1, instance_id=None, rack=None), st,
                assigned(m, t + 0.5, parts)]
    return out


# -- a topic created later is taken within the bound


def test_a_topic_created_late_taken_in_time_is_valid():
    v = judge(run_start(0.0), group(["t", LATE]), step("create_topic", 5.0, 6.0, "a1", partitions=2, records=0),
              assigned("a", 7.0, [0], topic=LATE), assigned("b", 7.0, [1], topic=LATE), run_end(60.0))
    assert v.status == "valid", v.message
    assert v.measurements["created"] == 1


def test_a_topic_created_late_never_taken_is_invalid_naming_the_bound_and_its_source():
    v = judge(run_start(0.0), group(["t", LATE]), step("create_topic", 5.0, 6.0, "a1", partitions=2, records=0),
              run_end(60.0))
    assert v.status == "invalid"
    assert "no member of a, b (subscribed to it) was assigned one of its partitions within" in v.message
    assert "heartbeat interval 0.5s" in v.message and "rebalance round" in v.message


def test_a_regex_adds_the_coordinators_regex_interval_to_the_bound():
    # taken 14 s after the step: past heartbeat + allowance alone, within them plus the 10 s regex interval
    ok = judge(run_start(0.0), group(["^la.*"]), step("create_topic", 5.0, 6.0, "a1", partitions=1, records=0),
               assigned("a", 6.0 + 0.5 + 20.0 + 9.0, [0], topic=LATE), run_end(90.0))
    assert ok.status == "valid", ok.message
    late = judge(run_start(0.0), group(["^la.*"]), step("create_topic", 5.0, 6.0, "a1", partitions=1, records=0),
                 assigned("a", 6.0 + 0.5 + 20.0 + 11.0, [0], topic=LATE), run_end(90.0))
    assert late.status == "invalid"
    assert "REGEX_BATCH_REFRESH_MIN_INTERVAL_MS" in late.message


def test_under_a_classic_protocol_the_bound_is_the_members_metadata_refresh():
    base = [run_start(0.0), group(["t", LATE], protocol="classic-cooperative", refresh_ms=5000),
            step("create_topic", 5.0, 6.0, "a1", partitions=1, records=0)]
    ok = judge(*base, assigned("a", 6.0 + 5.0 + 19.0, [0], topic=LATE), run_end(90.0), protocol="classic-cooperative")
    assert ok.status == "valid", ok.message
    bad = judge(*base, run_end(90.0), protocol="classic-cooperative")
    assert bad.status == "invalid"
    assert "metadata refresh 5s (topic.metadata.refresh.interval.ms=5000 given)" in bad.message


def test_with_records_the_group_must_process_one():
    base = [run_start(0.0), group(["t", LATE]), step("create_topic", 5.0, 6.0, "a1", partitions=1, records=10),
            assigned("a", 7.0, [0], topic=LATE)]
    assert judge(*base, processed("a", 7.5, 0, 0, 9, topic=LATE), run_end(60.0)).status == "valid"
    v = judge(*base, run_end(60.0))
    assert v.status == "invalid" and "processed a record of it" in v.message


def test_a_run_ending_before_the_bound_is_unknown_never_valid():
    v = judge(run_start(0.0), group(["t", LATE]), step("create_topic", 5.0, 6.0, "a1", partitions=1, records=0),
              run_end(8.0))
    assert v.status == "unknown"


# -- a deleted topic's partitions are released


def _created_and_held():
    return [run_start(0.0), group(["t", LATE]), step("create_topic", 5.0, 6.0, "a1", partitions=1, records=0),
            assigned("a", 7.0, [0], topic=LATE)]


def test_a_deleted_topic_released_in_time_is_valid():
    v = judge(*_created_and_held(), step("delete_topic", 10.0, 11.0, "a2", partitions=1),
              revoked("a", 12.0, [0], topic=LATE), run_end(60.0))
    assert v.status == "valid", v.message
    assert v.measurements["deleted"] == 1


def test_a_deleted_topic_kept_is_invalid():
    v = judge(*_created_and_held(), step("delete_topic", 10.0, 11.0, "a2", partitions=1), run_end(60.0))
    assert v.status == "invalid"
    assert "a still held late-0" in v.message
    assert v.witnesses[0]["type"] == "assigned"


def test_a_member_that_ends_releases_what_it_held():
    v = judge(*_created_and_held(), step("delete_topic", 10.0, 11.0, "a2", partitions=1),
              member_exit("a", 12.0), run_end(60.0))
    assert v.status == "valid", v.message


# -- no record of a topic the subscription no longer names


def test_records_of_a_dropped_topic_after_the_change_are_invalid():
    change = ev("control", 10.0, "member", member="a", seq=1, subscription=["t"])
    base = [*_created_and_held(), processed("a", 9.0, 0, 0, 4, topic=LATE), change]
    assert judge(*base, revoked("a", 10.0, [0], topic=LATE), run_end(60.0)).status == "valid"
    v = judge(*base, processed("a", 11.0, 0, 5, 9, topic=LATE), run_end(60.0))
    assert v.status == "invalid"
    assert "a processed late-0 offsets 5..9, a topic its subscription ['t'] (since its change returned)" in v.message


def test_no_topic_step_and_no_subscription_change_is_skipped():
    v = judge(run_start(0.0), group(["t"]), run_end(30.0))
    assert v.status == "skipped"


# -- the shared layout: a topic created later exists only between its create_topic and its delete_topic


def test_a_topic_created_later_is_required_only_while_it_exists():
    from harness.invariants import timeline
    h = history(run_start(0.0), group(["t", LATE]), step("create_topic", 5.0, 6.0, "a1", partitions=2, records=0),
                assigned("a", 7.0, [0, 1], topic=LATE), step("delete_topic", 10.0, 11.0, "a2", partitions=2),
                revoked("a", 12.0, [0, 1], topic=LATE), run_end(30.0))
    tl = timeline.build(h, settings(protocol="consumer", topics=(("t", 4), (LATE, 2))))
    counts = [tl.counts_at(t)[LATE] for t in (3.0, 8.0, 20.0)]
    assert counts == [0, 2, 0]
    assert len(tl.required(3.0)) == 4 and len(tl.required(8.0)) == 6 and len(tl.required(20.0)) == 4


def test_record_integrity_does_not_take_a_recreated_topics_offsets_for_duplicates():
    from harness.invariants import integrity
    from histbuild import acked, committed
    made = [run_start(0.0), group(["t", LATE]), acked(1.0, 0, 0), processed("a", 1.5, 0, 0, 0),
            step("create_topic", 5.0, 6.0, "a1", partitions=1, records=5), assigned("a", 7.0, [0], topic=LATE),
            processed("a", 7.5, 0, 0, 4, topic=LATE), committed("a", 7.6, {0: 5}, topic=LATE)]
    again = [revoked("a", 8.0, [0], topic=LATE), assigned("b", 12.0, [0], topic=LATE),
             processed("b", 12.5, 0, 0, 4, topic=LATE), run_end(30.0)]
    s = settings(protocol="consumer", topics=(("t", 4), (LATE, 1)))
    kept = integrity.check(history(*made, *again), s)  # the same topic read again below its commit: a violation
    assert kept.status == "invalid" and "below offset 5" in kept.message
    recreated = history(*made, step("delete_topic", 9.0, 10.0, "a2", partitions=1),
                        step("create_topic", 10.5, 11.0, "a3", partitions=1, records=5), *again)
    v = integrity.check(recreated, s)
    assert v.status == "valid", v.message
