"""static_membership: a static member restarted within its session timeout gets its partitions back quietly."""
from histbuild import (assigned, effective, group_settings, history, join, member_exit, revoked, run_end, run_start,
                       settings, stopped)

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


def test_restart_after_the_session_timeout_is_judged_as_an_expulsion():
    """Back 8 s after leaving with a 6 s session timeout, before the expiry's rebalance was due: no restart, and
    nothing moved early."""
    v = check(history(group(), bounce("a", "a2", "s0", [0, 1], 10.0, down=8.0)))
    assert v.status == "valid", v.message
    assert v.measurements["late_restarts"] == 1 and v.measurements["restarts"] == 0


def test_killed_static_member_back_within_its_timeout_is_a_restart():
    """A SIGKILLed static member sends no LeaveGroup either: back within its session timeout, it gets its
    partitions back without a rebalance."""
    evs = [*group(), member_exit("a", 10.0, how="kill"), *join("a2", 11.0, [0, 1], instance_id="s0")]
    v = check(history(evs))
    assert v.status == "valid", v.message
    assert v.measurements["restarts"] == 1


def test_killed_static_member_given_other_partitions_is_invalid():
    evs = [*group(), member_exit("a", 10.0, how="kill"), *join("a2", 11.0, [0, 2], instance_id="s0")]
    assert check(history(evs)).status == "invalid"


# -- each member judged by its own session timeout, as recorded at its start (a settings roll changes it)
def rolled(absent_at=40.0, away=30.0, moved_at=None, session_after_roll=60000, end=120.0):
    """Two static members with a 10 s session timeout; a roll restarts both with `session_after_roll`; then a2
    leaves for `away` seconds. With `moved_at`, b2 is given a2's partitions that long after a2 left."""
    s10, sn = effective(session_ms=10000, instance_id="s0"), effective(session_ms=session_after_roll, instance_id="s0")
    b10, bn = effective(session_ms=10000, instance_id="s1"), effective(session_ms=session_after_roll, instance_id="s1")
    evs = [run_start(0.0), *join("a", 0.1, [0, 1], instance_id="s0", effective=s10),
           *join("b", 0.2, [2, 3], instance_id="s1", effective=b10),
           # the roll: each restarts within 10 s and gets its partitions back
           revoked("a", 9.8, [0, 1]), stopped("a", 9.9), member_exit("a", 10.0),
           *join("a2", 10.5, instance_id="s0", effective=sn), assigned("a2", 11.5, [0, 1]),
           revoked("b", 19.8, [2, 3]), stopped("b", 19.9), member_exit("b", 20.0),
           *join("b2", 20.5, instance_id="s1", effective=bn), assigned("b2", 21.5, [2, 3]),
           # a2 away
           revoked("a2", absent_at - 0.2, [0, 1]), stopped("a2", absent_at - 0.1), member_exit("a2", absent_at)]
    back = absent_at + away
    if moved_at is not None:
        evs += [assigned("b2", absent_at + moved_at, [0, 1])]
        evs += [revoked("b2", back + 1.0, [0, 1]), *join("a3", back, instance_id="s0", effective=sn),
                assigned("a3", back + 1.5, [0, 1])]
    else:
        evs += [*join("a3", back, instance_id="s0", effective=sn), assigned("a3", back + 1.0, [0, 1])]
    return history(evs, run_end(end))


def test_absence_within_the_rolled_timeout_is_a_restart():
    """30 s away after the roll to 60 s: kept (the run-wide 10 s would have called it an expulsion)."""
    v = check(rolled(), session_timeout_s=10.0)
    assert v.status == "valid", v.message
    assert v.measurements["restarts"] == 3
    assert v.measurements["session_timeouts_s"]["s0"] == 60.0
    assert "longest absence 30.0s of s0" in v.message and "session.timeout.ms=60000" in v.message


def test_partitions_moved_before_the_rolled_timeout_is_invalid():
    """The broker gave a2's partitions away 10.3 s into the absence: a 60 s session timeout forbids it (the
    run-wide 10 s would have allowed it)."""
    v = check(rolled(moved_at=10.3), session_timeout_s=10.0)
    assert v.status == "invalid", v.message
    assert "b2 had a assigned" in v.message and "session timeout 60s" in v.message


def test_judged_as_if_the_coordinator_kept_the_old_timeout_is_invalid():
    """The same absence, had the members run with 10 s: the coordinator should have expelled a2 after 10 s and
    moved its partitions; it kept them for the whole 30 s."""
    v = check(rolled(session_after_roll=10000), session_timeout_s=60.0)
    assert v.status == "invalid", v.message
    assert "were not given to another member" in v.message and "session timeout 10s" in v.message
    assert "session.timeout.ms=10000 given" in v.message


def test_expelled_too_early_after_a_kill_is_invalid():
    evs = [*group(), member_exit("a", 10.0, how="kill"), assigned("b", 12.0, [0, 1])]
    v = check(history(evs))
    assert v.status == "invalid"
    assert "given to b 2.0s after it left" in v.message


def test_expelled_after_the_timeout_is_valid():
    evs = [*group(), member_exit("a", 10.0, how="kill"), assigned("b", 16.8, [0, 1])]
    v = check(history(evs))
    assert v.status == "valid", v.message


def test_consumer_protocol_uses_the_groups_session_timeout():
    """Under KIP-848 the session timeout is the group's: 45 s after a group_config, whatever the clients say."""
    eff = effective(session_ms=6000, protocol="consumer", instance_id="s0")
    hb = {"group.consumer.heartbeat.interval.ms": "500"}  # the brokers' (every real event has their group timings)
    evs = [run_start(0.0), group_settings(0.05, group={"consumer.session.timeout.ms": "10000"}, broker=hb),
           *join("a", 0.1, [0, 1], instance_id="s0", effective=eff),
           *join("b", 0.2, [2, 3], instance_id="s1", effective=dict(eff, **{"group.instance.id": "s1"})),
           group_settings(5.0, group={"consumer.session.timeout.ms": "45000"}, broker=hb),
           member_exit("a", 10.0, how="kill"), assigned("b", 30.0, [0, 1]), run_end(80.0)]
    v = check(history(evs), protocol="consumer")
    assert v.status == "invalid", v.message
    assert "group config consumer.session.timeout.ms=45000" in v.message


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


# -- under the consumer protocol a killed static member keeps its instance id until its session expires (KIP-848)
def consumer_kill(given_at: float, to: str = "b", session_ms: str = "6000") -> list[dict]:
    """a (s0) and b (s1) on the consumer protocol, group session timeout 6 s; a is killed at 10.0 and a2 (s0)
    starts at 11.0, refused (UNRELEASED_INSTANCE_ID); a's [0, 1] are given to `to` at `given_at`."""
    eff = effective(protocol="consumer", instance_id="s0")
    hb = {"group.consumer.heartbeat.interval.ms": "500"}
    return [run_start(0.0), group_settings(0.05, group={"consumer.session.timeout.ms": session_ms}, broker=hb),
            *join("a", 0.1, [0, 1], instance_id="s0", effective=eff),
            *join("b", 0.2, [2, 3], instance_id="s1", effective=dict(eff, **{"group.instance.id": "s1"})),
            member_exit("a", 10.0, how="kill"), *join("a2", 11.0, instance_id="s0", effective=eff),
            assigned(to, given_at, [0, 1]), run_end(40.0)]


def test_a_static_member_killed_under_the_consumer_protocol_is_no_restart():
    """The new instance is refused until the old one's session expires; b gets the partitions at 16.2 s."""
    v = check(history(consumer_kill(16.2)), protocol="consumer")
    assert v.status == "valid", v.message
    assert v.measurements["restarts"] == 0 and v.measurements["held_until_expiry"] == 1
    assert "killed under the consumer protocol" in v.message and "a2" in v.message


def test_the_new_instance_may_get_them_after_the_expiry():
    v = check(history(consumer_kill(16.2, to="a2")), protocol="consumer")
    assert v.status == "valid", v.message


def test_the_new_instance_given_them_before_the_expiry_is_invalid():
    """KIP-848 refuses a new instance while the old member holds the instance id: a2 given [0, 1] at 12.0 s."""
    v = check(history(consumer_kill(12.0, to="a2")), protocol="consumer")
    assert v.status == "invalid", v.message
    assert "was given to a2 2.0s after it left" in v.message


def test_kept_long_past_the_expiry_after_a_consumer_protocol_kill_is_invalid():
    v = check(history(consumer_kill(25.0)), protocol="consumer")
    assert v.status == "invalid", v.message
    assert "were not given to another member" in v.message


def test_an_expulsion_is_timed_from_the_start_of_the_shutdown():
    """a's graceful stop began at 9.0 (member_stop) and it exited at 10.0; its last heartbeat came at most 0.5 s
    before the stop, so its partitions may go at 9.0 + 6 - 0.5 = 14.5, not before."""
    from histbuild import ev
    evs = [*group(), ev("member_stop", 9.0, "harness", member="a"), revoked("a", 9.1, [0, 1]), stopped("a", 9.2),
           member_exit("a", 10.0)]
    assert check(history(evs, assigned("b", 14.7, [0, 1]))).status == "valid"
    v = check(history(evs, assigned("b", 14.3, [0, 1])))
    assert v.status == "invalid", v.message
    assert "5.3s after its shutdown began" in v.message


def test_no_member_left_to_take_a_killed_members_partitions_is_not_judged_here():
    """a killed under the consumer protocol, b stopped before the expiry and a2 refused and gone: nobody is alive to
    be given a's partitions, which is coverage_liveness's to judge, not an expulsion kept too long."""
    evs = [e for e in consumer_kill(16.2) if e["type"] not in ("assigned", "run_end") or e["mono"] < 16.0]
    evs += [revoked("b", 12.0, [2, 3]), stopped("b", 12.1), member_exit("b", 12.2),
            member_exit("a2", 12.5, how="crash", code=1), run_end(40.0)]
    v = check(history(evs), protocol="consumer")
    assert v.status == "valid", v.message


def test_a_restart_beside_another_cause_is_judged_with_their_union():
    """c joins (a cause of a rebalance of its own) while s0 restarts: the group may hand c partitions, a2 comes back
    with [0] of [0, 1] and b gives up 3. Their union allows it: valid, the restart counted beside another cause. The
    buggy side's twin, the same moves with c already in the group before (its join no cause within the restart),
    fails."""
    moves = [*bounce("a", "a2", "s0", [0, 1], 10.0, back=[0]), revoked("b", 10.5, [3]), assigned("c", 11.5, [1, 3])]
    evs = [*group(), *join("c", 9.9), *moves]
    v = check(history(evs))
    assert v.status == "valid" and v.measurements["other_causes"] == 1, v.message
    assert "another cause of a rebalance coming within: s0 (a -> a2): join on c at 9.9s" in v.message, v.message
    twin = [*group(), *join("c", 2.0), *moves]
    v = check(history(twin))
    assert v.status == "invalid" and "got [0] back, held [0, 1]" in v.message, v.message
    assert v.measurements["other_causes"] == 0


def test_a_restart_beside_another_restart_is_still_no_rebalance():
    """Another static member's restart is no cause of a rebalance: b's own shutdown and return are not counted, a
    move of b's beyond them still is."""
    evs = [*group(), *bounce("a", "a2", "s0", [0, 1], 10.0, down=0.5), *bounce("b", "b2", "s1", [2, 3], 11.0),
           revoked("b2", 12.8, [3]), assigned("a2", 12.9, [3])]
    v = check(history(evs))
    assert v.status == "invalid" and v.measurements["other_causes"] == 0, v.message
