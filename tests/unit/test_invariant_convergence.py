"""convergence_balance: complete, balanced and quiet within the bound after the last disturbance."""
from histbuild import (assigned, drained, fault_end, fault_start, history, join, member_exit, revoked, run_end,
                       run_start, settings, steady, stopped)

from harness.invariants import convergence


def check(h, **kw):
    return convergence.check(h, settings(**kw))


def test_steady_group_is_valid():
    v = check(history(steady()))
    assert v.status == "valid", v.message
    assert v.measurements["convergence_s"] == 0.5  # b started at 0.2, assigned at 0.7
    assert v.measurements["final_counts"] == {"a": 2, "b": 2}


def test_unbalanced_end_is_invalid():
    h = history(run_start(0.0), join("a", 0.1, [0, 1, 2]), join("b", 0.2, [3]), run_end(40.0))
    v = check(h)
    assert v.status == "invalid"
    assert "unbalanced" in v.message


def test_incomplete_end_is_invalid():
    h = history(run_start(0.0), join("a", 0.1, [0]), join("b", 0.2, [2]), run_end(40.0))
    v = check(h)
    assert v.status == "invalid"
    assert "incomplete" in v.message


def test_unbalanced_before_the_bound_is_unknown():
    h = history(run_start(0.0), join("a", 0.1, [0, 1, 2]), join("b", 0.2, [3]), run_end(10.0))
    assert check(h).status == "unknown"


def test_late_convergence_is_invalid():
    # the fault ends at 10; the group settles only at 50
    evs = [*steady(60.0), fault_start(5.0, "f1", ["a"], kind="network_blackhole"), fault_end(10.0, "f1"),
           revoked("a", 49.0, [1]), assigned("b", 50.0, [1]), revoked("b", 50.5, [3]), assigned("a", 50.6, [3])]
    v = check(history(evs))
    assert v.status == "invalid"
    assert v.measurements["convergence_s"] == 40.6
    assert {w["type"] for w in v.witnesses} == {"fault_end", "assigned"}


def test_convergence_within_the_bound_after_a_kill_is_valid():
    # a kill is a disturbance like a fault: the clock starts at the kill
    evs = [*steady(30.0), *join("c", 0.3), member_exit("b", 5.0, how="kill"), assigned("c", 12.0, [2]),
           assigned("a", 12.0, [3]), revoked("a", 12.5, [3]), assigned("c", 13.0, [3])]
    v = check(history(evs))
    assert v.status == "valid", v.message
    assert v.measurements["convergence_s"] == 8.0


def test_short_quiet_period_is_unknown():
    evs = [*steady(20.0), revoked("a", 18.0, [1]), assigned("b", 18.5, [1]), revoked("b", 18.6, [2]),
           assigned("a", 18.7, [2])]
    v = check(history(evs))
    assert v.status == "unknown"
    assert "quiet" in v.message


def test_fault_active_at_the_end_is_unknown():
    assert check(history(steady(20.0), fault_start(15.0, "f1", ["a"]))).status == "unknown"


def test_final_teardown_is_not_judged():
    evs = [*steady(30.0), drained(20.0), revoked("a", 23.0, [0, 1]), stopped("a", 23.2), member_exit("a", 23.3),
           assigned("b", 24.0, [0, 1]), revoked("b", 25.0, [0, 1, 2, 3]), stopped("b", 25.2),
           member_exit("b", 25.3)]
    v = check(history(evs))
    assert v.status == "valid", v.message
    assert v.measurements["quiet_s"] == 22.3


def test_no_member_alive_and_no_drain_is_unknown():
    assert check(history(steady(30.0), member_exit("a", 25.0), member_exit("b", 25.5))).status == "unknown"
