"""static_membership: a static member restarted within its session timeout gets its partitions back quietly."""
from histbuild import assigned, history, join, member_exit, revoked, run_end, run_start, settings, stopped

from harness.invariants import static


def check(h, **kw):
    return static.check(h, settings(**kw))


def group(end=40.0):
    return [run_start(0.0), *join("a", 0.1, [0, 1], instance_id="s0"), *join("b", 0.2, [2, 3], instance_id="s1"),
            run_end(end)]


def bounce(old, new, iid, parts, t, down=1.0, back=None):
    """A graceful static restart: revoke on close, stopped, exit at t; the new process gets `back` (default parts)."""
    return [revoked(old, t - 0.2, parts), stopped(old, t - 0.1), member_exit(old, t),
            *join(new, t + down, instance_id=iid), assigned(new, t + down + 1.0, parts if back is None else back)]


def test_static_restart_is_valid():
    v = check(history(group(), bounce("a", "a2", "s0", [0, 1], 10.0)))
    assert v.status == "valid", v.message
    assert v.measurements["restarts"] == 1
    assert v.measurements["max_return_s"] == 2.0


def test_rolling_static_bounce_is_valid():
    evs = [*group(), *bounce("a", "a2", "s0", [0, 1], 10.0, down=0.5), *bounce("b", "b2", "s1", [2, 3], 11.0)]
    v = check(history(evs))
    assert v.status == "valid", v.message
    assert v.measurements["restarts"] == 2


def test_different_partitions_back_is_invalid():
    evs = [*group(), *bounce("a", "a2", "s0", [0, 1], 10.0, back=[0, 2])]
    v = check(history(evs))
    assert v.status == "invalid"
    assert "got [0, 2] back, held [0, 1]" in v.message
    assert [w["type"] for w in v.witnesses] == ["member_exit", "assigned"]


def test_partitions_back_in_pieces_within_the_grace_are_fine():
    evs = [*group(), *bounce("a", "a2", "s0", [0, 1], 10.0, back=[0]), assigned("a2", 12.5, [1])]
    assert check(history(evs)).status == "valid"


def test_rebalance_on_another_member_is_invalid():
    evs = [*group(), *bounce("a", "a2", "s0", [0, 1], 10.0), revoked("b", 10.5, [3]), assigned("b", 10.8, [3])]
    v = check(history(evs))
    assert v.status == "invalid"
    assert "b had a revoked" in v.message
    assert {w["member"] for w in v.witnesses} == {"b"}


def test_never_given_back_is_invalid():
    evs = [*group(), revoked("a", 9.8, [0, 1]), member_exit("a", 10.0), *join("a2", 11.0, instance_id="s0")]
    v = check(history(evs))
    assert v.status == "invalid"
    assert "not given its partitions [0, 1] back" in v.message


def test_never_given_back_but_history_too_short_is_unknown():
    evs = [*group(14.0), revoked("a", 9.8, [0, 1]), member_exit("a", 10.0), *join("a2", 11.0, instance_id="s0")]
    assert check(history(evs)).status == "unknown"


def test_no_restart_is_skipped():
    assert check(history(group())).status == "skipped"


def test_restart_after_the_session_timeout_is_skipped():
    v = check(history(group(), bounce("a", "a2", "s0", [0, 1], 10.0, down=8.0)))
    assert v.status == "skipped"
    assert v.measurements["late_restarts"] == 1


def test_killed_static_member_is_no_graceful_restart():
    evs = [*group(), member_exit("a", 10.0, how="kill"), *join("a2", 11.0, [0, 1], instance_id="s0")]
    assert check(history(evs)).status == "skipped"


def test_dynamic_members_are_skipped():
    evs = [run_start(0.0), *join("a", 0.1, [0, 1, 2, 3]), revoked("a", 9.8, [0, 1, 2, 3]), member_exit("a", 10.0),
           *join("a2", 11.0, [0, 1, 2, 3]), run_end(20.0)]
    assert check(history(evs)).status == "skipped"


def test_cooperative_revoke_shortly_before_the_stop_is_not_part_of_the_shutdown():
    """A member gives up [2, 3] in an ordinary rebalance 2 s before the harness stops it (member_stop):
    what it held at the stop is [0, 1], and getting [0, 1] back is a clean static restart."""
    from histbuild import ev
    evs = [run_start(0.0), *join("a", 0.1, [0, 1, 2, 3], instance_id="s0"), *join("b", 7.0, instance_id="s1"),
           revoked("a", 8.0, [2, 3]), assigned("b", 8.5, [2, 3]),
           ev("member_stop", 10.0, "harness", member="a"),
           revoked("a", 10.1, [0, 1]), stopped("a", 10.2), member_exit("a", 10.3),
           *join("a2", 11.0, instance_id="s0"), assigned("a2", 12.0, [0, 1]), run_end(40.0)]
    v = check(history(evs))
    assert v.status == "valid", v.message


def test_partitions_held_at_member_stop_must_come_back():
    """The same history, but the new incarnation gets only [0]: held [0, 1] at the stop, so invalid."""
    from histbuild import ev
    evs = [run_start(0.0), *join("a", 0.1, [0, 1, 2, 3], instance_id="s0"), *join("b", 7.0, instance_id="s1"),
           revoked("a", 8.0, [2, 3]), assigned("b", 8.5, [2, 3]),
           ev("member_stop", 10.0, "harness", member="a"),
           revoked("a", 10.1, [0, 1]), stopped("a", 10.2), member_exit("a", 10.3),
           *join("a2", 11.0, instance_id="s0"), assigned("a2", 12.0, [0]), run_end(40.0)]
    v = check(history(evs))
    assert v.status == "invalid"
    assert "held [0, 1]" in v.message
