"""coverage_liveness: settled groups cover every partition once; no partition is unowned for long."""
from histbuild import (assigned, drained, effective, fault_end, fault_start, history, join, member_exit, revoked,
                       run_end, run_start, settings, started, steady, stopped)

from harness.invariants import coverage


def check(h, **kw):
    return coverage.check(h, settings(**kw))


def test_steady_group_is_valid():
    v = check(history(steady()))
    assert v.status == "valid", v.message
    assert v.measurements["unowned_partitions"] == []
    assert v.measurements["max_unowned_s"] < 0.2  # b's partitions came 0.1s after a's


def test_partition_never_assigned_is_invalid():
    # judged once the protocol's time to repair the last disturbance (b's join at 0.2) has passed: two rebalance
    # rounds of the members' 5 s rebalance timeout (the run's max.poll.interval; no member recorded its own)
    h = history(run_start(0.0), join("a", 0.1, [0, 1]), join("b", 0.2, [2]), run_end(20.0))
    v = check(h, max_poll_interval_s=5.0)
    assert v.status == "invalid"
    assert "partition 3 had no live owner for 19.400s" in v.message and "(bound 10.0s: 2 rebalance rounds of 5s" \
        in v.message
    assert v.measurements["unowned_partitions"] == [3]


def test_an_incomplete_end_within_the_protocols_bound_is_unknown_not_judged_by_a_constant():
    """The end is 19.8 s after the last disturbance: under a 20 s rebalance timeout the group may still be
    rebalancing (2 rounds: 40 s), so the history cannot tell. (A run-wide settle_s of 5 s judged it invalid.)"""
    h = history(run_start(0.0), join("a", 0.1, [0, 1]), join("b", 0.2, [2]), run_end(20.0))
    v = check(h, max_poll_interval_s=20.0)
    assert v.status == "unknown", v.message
    assert "the protocol allows 40.0s to repair it" in v.message


def test_a_whole_end_soon_after_a_start_is_judged_at_once():
    """No settle constant: a whole end needs no waiting (b joined 1 s before the end and got its share)."""
    v = check(history(run_start(0.0), join("a", 0.1, [0, 1, 2, 3]), revoked("a", 18.6, [2, 3]),
                      join("b", 18.5, [2, 3]), run_end(19.5)))
    assert v.status == "valid", v.message


def test_partition_with_two_owners_at_the_end_is_invalid():
    v = check(history(steady(), assigned("b", 5.0, [0])), max_poll_interval_s=5.0)
    assert v.status == "invalid"
    assert v.measurements["multi_owned_partitions"] == [0]
    assert [w["member"] for w in v.witnesses] == ["a", "b"]


def test_long_gap_after_a_kill_is_invalid():
    # b is killed at 5; its partitions come back only at 40: 35s without an owner, past the run's 6 s session
    # timeout + 2 rounds of its 10 s rebalance timeout
    evs = [*steady(50.0), member_exit("b", 5.0, how="kill"), assigned("a", 40.0, [2, 3])]
    v = check(history(evs), max_poll_interval_s=10.0)
    assert v.status == "invalid"
    assert "bound 26.0s: b was killed, its session timeout 6s (the run's settings" in v.message
    assert v.measurements["max_unowned_s"] == 35.0
    assert v.measurements["max_unowned_partition"] == 2
    assert {w["type"] for w in v.witnesses} == {"member_exit", "assigned"}
    assert check(history(evs), max_poll_interval_s=15.0).status == "valid"


def killed_with(session_ms: int, back_at: float = 40.0):
    """steady, where b's client ran with its own session timeout (and a 10 s max.poll.interval.ms), killed at 5."""
    evs = [e for e in steady(50.0) if not (e["type"] == "started" and e["member"] == "b")]
    return history(evs, started("b", 0.3, effective=effective(session_ms=session_ms, max_poll_ms=10000)),
                   member_exit("b", 5.0, how="kill"), assigned("a", back_at, [2, 3]))


def test_gap_bound_follows_the_departed_owners_own_session_timeout():
    """b ran with a 60 s session timeout: the coordinator may take 60 s to notice, so 35 s is fine (the run-wide
    6 s would have failed it); with a recorded 2 s it is not."""
    v = check(killed_with(60000), session_timeout_s=6.0, max_poll_interval_s=10.0)
    assert v.status == "valid", v.message
    v = check(killed_with(2000), session_timeout_s=60.0, max_poll_interval_s=10.0)
    assert v.status == "invalid", v.message
    assert "session.timeout.ms=2000 given" in v.message


def test_static_members_expected_absence_is_no_gap():
    """A static member stops and is back 30 s later within its 60 s session timeout: its partitions wait for it,
    reported as its absence, not as a gap (whatever the run-wide 10 s says)."""
    eff = effective(session_ms=60000, max_poll_ms=10000, instance_id="s1")
    evs = [e for e in steady(60.0) if e["type"] != "run_end"] + [
        revoked("b", 5.0, [2, 3]), stopped("b", 5.1), member_exit("b", 5.2),
        *join("b2", 35.0, instance_id="s1", effective=eff), assigned("b2", 35.5, [2, 3]), run_end(60.0)]
    evs = [e for e in evs if not (e["type"] == "started" and e["member"] == "b")]
    evs += [started("b", 0.3, instance_id="s1", effective=eff)]
    evs = [dict(e, instance_id="s1") if e["type"] == "member_start" and e["member"] == "b" else e for e in evs]
    v = check(history(evs), session_timeout_s=10.0, max_poll_interval_s=10.0)
    assert v.status == "valid", v.message
    assert [a["partition"] for a in v.measurements["static_absences"]] == [2, 3]
    assert v.measurements["max_unowned_s"] < 1.0  # only the 0.1 s before b first joined
    assert "absence(s) of static members" in v.message


def test_short_gap_after_a_kill_is_valid():
    evs = [*steady(30.0), member_exit("b", 5.0, how="kill"), assigned("a", 12.0, [2, 3])]
    v = check(history(evs))
    assert v.status == "valid", v.message
    assert v.measurements["max_unowned_s"] == 7.0


def test_fault_until_just_before_the_end_is_unknown():
    evs = [*steady(20.0), fault_start(10.0, "f1", ["a"]), fault_end(17.0, "f1")]
    v = check(history(evs))
    assert v.status == "unknown"
    assert "a holds partitions at the end but was under a fault (pause) of 7.0s until 3.000s before it" in v.message
    later = [*steady(30.0), fault_start(10.0, "f1", ["a"]), fault_end(17.0, "f1")]  # 13 s after: its session ran
    assert check(history(later)).status == "valid"
    short = [*steady(20.0), fault_start(14.0, "f1", ["a"]), fault_end(17.0, "f1")]  # 3 s: it cannot have been expelled
    assert check(history(short)).status == "valid"


def test_fault_never_lifted_is_unknown():
    v = check(history(steady(20.0), fault_start(10.0, "f1", kind="broker_kill", brokers=[1])))
    assert v.status == "unknown"


def test_kill_just_before_the_end_is_unknown_not_invalid():
    v = check(history(steady(20.0), member_exit("b", 19.0, how="kill")))
    assert v.status == "unknown"


def test_uncovered_but_unsettled_gap_over_the_bound_is_still_invalid():
    evs = [*steady(50.0), member_exit("b", 5.0, how="kill"), fault_start(45.0, "f1", ["a"])]
    v = check(history(evs), max_poll_interval_s=10.0)
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
    assert check(h, max_poll_interval_s=5.0).status == "invalid"


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


def test_a_member_restarted_with_other_settings_is_judged_by_the_new_ones():
    """b starts with a 2 s session timeout, is bounced into b2 with 60 s, and b2 is killed: its partitions may
    wait for b2's 60 s (35 s is fine), though b's 2 s and the run-wide 6 s would both have failed the gap."""
    short, long_ = effective(session_ms=2000, max_poll_ms=10000), effective(session_ms=60000, max_poll_ms=10000)
    evs = [e for e in steady(80.0) if not (e["type"] == "started" and e["member"] == "b")]
    evs += [started("b", 0.3, effective=short), revoked("b", 9.8, [2, 3]), stopped("b", 9.9), member_exit("b", 10.0),
            *join("b2", 10.5, [2, 3], effective=long_), member_exit("b2", 20.0, how="kill"),
            assigned("a", 55.0, [2, 3])]
    v = check(history(evs), session_timeout_s=6.0, max_poll_interval_s=10.0)
    assert v.status == "valid", v.message
    evs = [e if not (e["type"] == "started" and e["member"] == "b2") else dict(e, effective=short) for e in evs]
    v = check(history(evs), session_timeout_s=60.0, max_poll_interval_s=10.0)
    assert v.status == "invalid" and "b2 was killed, its session timeout 2s" in v.message, v.message
