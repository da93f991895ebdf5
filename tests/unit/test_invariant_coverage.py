"""coverage_liveness: settled groups cover every partition once; no partition is unowned for long."""
from histbuild import (assigned, drained, fault_end, fault_start, history, join, member_exit, revoked, run_end,
                       run_start, settings, steady, stopped)

from harness.invariants import coverage


def check(h, **kw):
    return coverage.check(h, settings(**kw))


def test_steady_group_is_valid():
    v = check(history(steady()))
    assert v.status == "valid", v.message
    assert v.measurements["unowned_partitions"] == []
    assert v.measurements["max_unowned_s"] < 0.2  # b's partitions came 0.1s after a's


def test_partition_never_assigned_is_invalid():
    h = history(run_start(0.0), join("a", 0.1, [0, 1]), join("b", 0.2, [2]), run_end(20.0))
    v = check(h)
    assert v.status == "invalid"
    assert "[3]" in v.message
    assert v.measurements["unowned_partitions"] == [3]


def test_partition_with_two_owners_at_the_end_is_invalid():
    v = check(history(steady(), assigned("b", 5.0, [0])))
    assert v.status == "invalid"
    assert v.measurements["multi_owned_partitions"] == [0]
    assert [w["member"] for w in v.witnesses] == ["a", "b"]


def test_long_gap_after_a_kill_is_invalid():
    # b is killed at 5; its partitions come back only at 40: 35s without an owner
    evs = [*steady(50.0), member_exit("b", 5.0, how="kill"), assigned("a", 40.0, [2, 3])]
    v = check(history(evs))
    assert v.status == "invalid"
    assert v.measurements["max_unowned_s"] == 35.0
    assert v.measurements["max_unowned_partition"] == 2
    assert {w["type"] for w in v.witnesses} == {"member_exit", "assigned"}
    assert check(history(evs), max_unowned_s=40.0).status == "valid"


def test_short_gap_after_a_kill_is_valid():
    evs = [*steady(30.0), member_exit("b", 5.0, how="kill"), assigned("a", 12.0, [2, 3])]
    v = check(history(evs))
    assert v.status == "valid", v.message
    assert v.measurements["max_unowned_s"] == 7.0


def test_fault_until_just_before_the_end_is_unknown():
    evs = [*steady(20.0), fault_start(10.0, "f1", ["a"]), fault_end(17.0, "f1")]
    v = check(history(evs))
    assert v.status == "unknown"
    assert "never settled" in v.message


def test_fault_never_lifted_is_unknown():
    v = check(history(steady(20.0), fault_start(10.0, "f1", kind="broker_kill", brokers=[1])))
    assert v.status == "unknown"


def test_kill_just_before_the_end_is_unknown_not_invalid():
    v = check(history(steady(20.0), member_exit("b", 19.0, how="kill")))
    assert v.status == "unknown"


def test_uncovered_but_unsettled_gap_over_the_bound_is_still_invalid():
    evs = [*steady(50.0), member_exit("b", 5.0, how="kill"), fault_start(45.0, "f1", ["a"])]
    v = check(history(evs))
    assert v.status == "invalid"  # 45s without an owner is a fact, settled or not


def teardown(extra=()):
    """Drained at 20, then the runner stops a and b in turn (each revokes, writes stopped, exits)."""
    return [*steady(30.0), drained(20.0), revoked("a", 23.0, [0, 1]), stopped("a", 23.2), member_exit("a", 23.3),
            *extra, revoked("b", 24.0, [2, 3]), stopped("b", 24.2), member_exit("b", 24.3)]


def test_final_teardown_is_not_judged():
    v = check(history(teardown()))
    assert v.status == "valid", v.message
    assert v.measurements["settled_for_s"] == 22.8  # from b's start at 0.2 to the teardown at 23.0


def test_teardown_does_not_hide_a_hole():
    h = history([e for e in teardown() if not (e["type"] == "assigned" and e["member"] == "b")])
    assert check(h).status == "invalid"


def test_no_member_alive_and_no_drain_is_unknown():
    evs = [*steady(30.0), member_exit("a", 25.0), member_exit("b", 25.5)]
    v = check(history(evs))
    assert v.status == "unknown"
    assert "no end state" in v.message


def test_unknown_partition_count():
    v = coverage.check(history(join("a", 0.0), run_end(10.0)), settings(partitions=0))
    assert v.status == "unknown"


def test_inferred_partition_count_is_flagged():
    v = coverage.check(history(steady()), settings(partitions=0))
    assert v.status == "valid"
    assert v.measurements["partitions_inferred"] is True
