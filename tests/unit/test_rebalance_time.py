"""rebalance_time: trigger-to-stable time and unowned time per disturbance, on small hand-made histories."""
from histbuild import (assigned, effective, ev, fault_end, fault_start, history, join, member_exit, revoked,
                       run_end, run_start, settings, started, steady)

from harness.invariants import convergence, rebalance_time
from harness.invariants.rebalance_time import assignor_of


def action(t: float, aid: str, kind: str, end: float, **result) -> list[dict]:
    return [ev("action_start", t, "harness", action_id=aid, kind=kind, params={}),
            ev("action_end", end, "harness", action_id=aid, kind=kind, ok=True, error=None, **result)]


def measured(h, **kw):
    kw.setdefault("max_poll_interval_s", 10.0)
    v = convergence.check(h, settings(**kw))
    return v, v.measurements["rebalance_time"]


def test_scale_out_is_timed_from_the_action_start_to_the_balanced_state():
    # c joins at 10.2 (action at 10.0); a gives up 1 at 11.0, c gets it at 11.5; b gives up 3 at 11.0, c at 11.6
    evs = [*steady(40.0), *action(10.0, "a1", "scale_out", 10.3, member="c"), *join("c", 10.2),
           revoked("a", 11.0, [1]), revoked("b", 11.0, [3]), assigned("c", 11.5, [1]), assigned("c", 11.6, [3])]
    v, rt = measured(history(evs))
    assert v.status == "valid", v.message
    initial, out = rt["disturbances"]
    assert initial["kind"] == "initial" and initial["settled_s"] == 0.6  # b started at 0.2, assigned at 0.7; a at 0.1
    assert out["kind"] == "scale_out" and out["trigger"] == "action_start" and out["action_id"] == "a1"
    assert out["settled_s"] == 1.6
    assert out["unowned_sum_s"] == 1.1 and out["unowned_max_s"] == 0.6 and out["partitions_unowned"] == 2
    assert rt["max_s"] == 1.6 and rt["unsettled"] == 0


def test_a_kill_is_timed_from_the_members_exit():
    evs = [*steady(40.0), *action(5.0, "a1", "kill_member", 5.1, member="b"), member_exit("b", 5.05, how="kill"),
           assigned("a", 12.0, [2, 3])]
    _, rt = measured(history(evs))
    kill = rt["disturbances"][1]
    assert kill["trigger"] == "member_exit" and kill["at_s"] == 5.05
    assert kill["settled_s"] == 6.95
    assert kill["unowned_max_s"] == 6.95 and kill["unowned_sum_s"] == 13.9


def test_a_group_that_never_settles_is_reported_unsettled_not_zero():
    # the killed member's partitions are never owned again
    evs = [*steady(40.0), *action(5.0, "a1", "kill_member", 5.1, member="b"), member_exit("b", 5.05, how="kill")]
    _, rt = measured(history(evs))
    kill = rt["disturbances"][1]
    assert kill["settled_s"] is None and kill["why"] == "never settled before the end"
    assert kill["unowned_open"] == 2 and kill["unowned_max_s"] == 34.95  # open stretches count up to the end
    assert rt["unsettled"] == 1 and rt["max_s"] == 0.6


def test_interrupted_by_the_next_trigger_is_unsettled():
    evs = [*steady(40.0), *action(5.0, "a1", "kill_member", 5.1, member="b"), member_exit("b", 5.05, how="kill"),
           *action(6.0, "a2", "scale_out", 6.2, member="c"), *join("c", 6.1, [2, 3])]
    _, rt = measured(history(evs))
    kill, out = rt["disturbances"][1:]
    assert kill["settled_s"] is None and kill["why"].startswith("interrupted")
    assert out["settled_s"] == 0.6  # c's assignment at 6.6 completes the group
    assert kill["unowned_sum_s"] == 2 * 1.55 and out["unowned_sum_s"] == 0.0  # a stretch counts for its start


def test_a_short_pause_with_no_rebalance_settles_when_the_pause_ends():
    evs = [*steady(40.0), *action(5.0, "a1", "pause_member", 7.1, member="a"), fault_start(5.0, "f1", ["a"]),
           fault_end(7.0, "f1")]
    _, rt = measured(history(evs))
    p = rt["disturbances"][1]
    assert p["settled_s"] == 2.0 and p["unowned_sum_s"] == 0.0


def test_actions_that_change_nothing_and_skipped_ones_are_not_triggers():
    evs = [*steady(40.0), *action(5.0, "a1", "sleep", 6.0), *action(6.0, "a2", "wait_stable", 6.5),
           *action(7.0, "a3", "kill_member", 7.0, skipped="slot 5 has no live member")]
    _, rt = measured(history(evs))
    assert [d["kind"] for d in rt["disturbances"]] == ["initial"]


def test_without_action_events_each_member_start_and_exit_is_a_trigger():
    evs = [*steady(40.0), member_exit("b", 5.0, how="kill"), assigned("a", 12.0, [2, 3])]
    _, rt = measured(history(evs))
    assert [(d["kind"], d["settled_s"]) for d in rt["disturbances"]] == [("initial", 0.6), ("member_exit", 7.0)]


def test_eager_revocation_counts_every_partition_paused():
    # eager: both members revoke everything at 11, and everything is assigned again at 11.4
    evs = [*steady(40.0), *action(10.0, "a1", "scale_out", 10.2, member="c"), *join("c", 10.1),
           revoked("a", 11.0, [0, 1]), revoked("b", 11.0, [2, 3]), assigned("a", 11.4, [0]),
           assigned("b", 11.4, [2, 3]), assigned("c", 11.4, [1])]
    _, rt = measured(history(evs), protocol="classic-eager")
    out = rt["disturbances"][1]
    assert out["partitions_unowned"] == 4 and round(out["unowned_sum_s"], 6) == 1.6 and out["unowned_max_s"] == 0.4
    assert rt["protocol"] == "classic-eager"


def test_assignors_are_read_from_the_started_events():
    assert assignor_of({"effective": effective(protocol="classic")}, "classic-eager") == "cooperative-sticky"
    assert assignor_of({"effective": {"group.protocol": "consumer"}}, "consumer") == "uniform"
    assert assignor_of({"effective": {"group.protocol": "consumer", "group.remote.assignor": "range"}},
                       "consumer") == "range"
    assert assignor_of({"effective": {"group.protocol": "classic"}}, "classic-eager") == "range"
    assert assignor_of(None, "classic-eager") == "range"
    h = history(run_start(0.0), started("a", 0.1, effective=effective(protocol="classic")), run_end(1.0))
    from harness.invariants import timeline
    assert rebalance_time.assignors(timeline.build(h, settings()), "classic-cooperative") == ["cooperative-sticky"]


def test_partitions_added_count_from_the_action_and_are_timed():
    # 4 partitions to 8 at 10.0 (the action's end records it); the members pick the new ones up at 15 and 15.2
    evs = [*steady(40.0), *action(10.0, "a1", "add_partitions", 10.1, topic="t", before=4, count=8),
           assigned("a", 15.0, [4, 5]), assigned("b", 15.2, [6, 7])]
    v, rt = measured(history(evs))
    assert v.status == "valid", v.message
    add = rt["disturbances"][1]
    assert add["kind"] == "add_partitions" and add["settled_s"] == 5.2
    # the new partitions were unowned from their birth (10.1) to their assignment, not from the run's start
    assert add["partitions_unowned"] == 4 and round(add["unowned_sum_s"], 6) == round(2 * 4.9 + 2 * 5.1, 6)
    from harness.invariants import coverage
    c = coverage.check(history(evs), settings(max_poll_interval_s=10.0))
    assert c.status == "valid", c.message
    assert c.measurements["unowned_s_by_partition"][4] == 4.9


def test_partitions_added_and_never_picked_up_never_settle():
    evs = [*steady(40.0), *action(10.0, "a1", "add_partitions", 10.1, topic="t", before=4, count=8)]
    v, rt = measured(history(evs))
    assert v.status == "invalid" and "incomplete" in v.message
    assert rt["disturbances"][1]["settled_s"] is None and rt["disturbances"][1]["unowned_open"] == 4
