"""convergence_balance: complete, balanced and quiet within the bound after the last disturbance."""
from histbuild import (assigned, broker_event, drained, effective, ev, fault_end, fault_start, group_settings, history, join,
                       lost, member_exit,
                       revoked, run_end, run_start, settings, started, steady, stopped)

from harness.invariants import convergence


def check(h, **kw):
    kw.setdefault("max_poll_interval_s", 10.0)  # no member records its own: bounds of 2 rounds of 10 s
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
    # the fault ends at 10; a lost partition 1 before it; the group is whole again only at 50
    evs = [*steady(60.0), fault_start(5.0, "f1", ["a"], kind="network_blackhole"), revoked("a", 9.0, [1]),
           fault_end(10.0, "f1"), assigned("b", 50.0, [1]), revoked("b", 50.5, [3]), assigned("a", 50.6, [3])]
    v = check(history(evs))
    assert v.status == "invalid"
    assert v.measurements["max_convergence_s"] == 40.6
    assert "converged 40.600s after the disturbance at 10.0s (bound 20.0s: 2 rebalance rounds of 10s" in v.message
    assert {w["type"] for w in v.witnesses} == {"fault_end"}


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


# -- every disturbance judged, not only the last
def unsettled_middle(gap_until: float, end: float = 120.0):
    """b is killed at 10 and its partitions stay unowned until `gap_until`; c joins at 70 and the group settles."""
    return [*steady(end), member_exit("b", 10.0, how="kill"), assigned("a", gap_until, [2, 3]),
            *join("c", 70.0), revoked("a", 71.0, [2, 3]), assigned("c", 72.0, [2, 3])]


def test_a_disturbance_the_group_never_recovered_from_in_time_is_invalid_even_if_a_later_one_settles():
    """The old rule judged only the last disturbance (c's join at 70), after which all is well."""
    v = check(history(unsettled_middle(65.0)))
    assert v.status == "invalid", v.message
    # whole again only when a took b's partitions at 65: past b's session timeout (6 s) + 2 rounds of 10 s
    assert "converged 55.000s after the disturbance at 10.0s (bound 26.0s: b's session timeout 6s" in v.message


def test_a_disturbance_recovered_from_within_its_bound_is_valid():
    v = check(history(unsettled_middle(30.0)))
    assert v.status == "valid", v.message
    assert v.measurements["windows_judged"] >= 2


def test_the_bound_follows_the_members_recorded_rebalance_timeout():
    """a and b ran with max.poll.interval.ms = 60 s: 55 s without b's partitions is within 6 + 2 * 60 s (the
    run-wide 10 s would have failed it); with a recorded 5 s it is past 6 + 2 * 5 s."""
    def run(max_poll_ms):
        eff = effective(max_poll_ms=max_poll_ms)
        evs = [e for e in unsettled_middle(65.0) if e["type"] != "started"]
        evs += [started("a", 0.2, effective=eff), started("b", 0.3, effective=eff), started("c", 70.1, effective=eff)]
        return check(history(evs), max_poll_interval_s=10.0)

    assert run(60000).status == "valid"
    v = run(5000)
    assert v.status == "invalid" and "max.poll.interval.ms=5000 (recorded)" in v.message


# -- storms
def test_members_in_good_standing_losing_partitions_is_a_storm():
    """Nothing drives it: a and b lose and regain their partitions every second, alive and under no fault."""
    evs = [*steady(40.0)]
    for i in range(6):
        t = 10.0 + 2 * i
        evs += [lost("a", t, [0, 1]), lost("b", t + 0.1, [2, 3]), assigned("a", t + 1.0, [0, 1]),
                assigned("b", t + 1.1, [2, 3])]
    v = check(history(evs))
    assert v.status == "invalid", v.message
    assert "rebalance storm" in v.message
    assert v.measurements["storms"] == 2  # the rebalances nothing drove, and the partitions lost


def test_each_member_losing_its_partitions_once_to_a_race_is_no_storm():
    """A join races the members' commits: the coordinator answers ILLEGAL_GENERATION and each drops its assignment
    as lost once (librdkafka 2.3.0 on Kafka 4.4.0, member-kill): the protocol's answer to a race."""
    evs = [*steady(40.0), *join("c", 10.0), lost("a", 11.0, [0, 1]), lost("b", 11.5, [2, 3]),
           assigned("a", 12.0, [0, 1]), assigned("b", 12.1, [2]), assigned("c", 12.1, [3])]
    v = check(history(evs))
    assert v.status == "valid", v.message
    assert v.measurements["lost_in_good_standing"] == 2


def test_a_member_losing_its_partitions_under_a_fault_is_no_storm():
    evs = [*steady(40.0), fault_start(9.0, "f1", ["a", "b"], kind="network_blackhole"), lost("a", 10.0, [0, 1]),
           lost("b", 10.1, [2, 3]), fault_end(11.0, "f1"), assigned("a", 12.0, [0, 1]), assigned("b", 12.1, [2, 3])]
    v = check(history(evs))
    assert v.status == "valid", v.message


def test_rebalances_after_the_group_settled_with_nothing_driving_them_are_a_storm():
    evs = [*steady(60.0)]
    for i in range(4):
        t = 20.0 + 4 * i
        evs += [revoked("a", t, [1]), assigned("b", t + 1.0, [1]), revoked("b", t + 2.0, [1]), assigned("a", t + 3.0, [1])]
    v = check(history(evs))
    assert v.status == "invalid", v.message
    assert "rebalance storm" in v.message and "rebalances nothing drove" in v.message


def test_one_cooperative_rebalance_nothing_drives_is_tolerated():
    evs = [*steady(60.0), revoked("a", 20.0, [1]), assigned("b", 21.0, [1]), revoked("b", 21.2, [3]),
           assigned("a", 21.5, [3])]
    v = check(history(evs))
    assert v.status == "valid", v.message


def _eager_join_then_stop(stop_at: float | None):
    """classic-eager, a, b and c: c joins at 10 (the members revoke at 10.5, the assignment comes 3 s later: two
    bursts, all a join explains under eager with its follow-up), then b's shutdown revokes at 15.3; b's
    `member_stop` at `stop_at` (None: b is never stopped, and its revoke at 15.3 is a rebalance of its own)."""
    evs = [run_start(0.0), *join("a", 0.1, [0, 1]), *join("b", 0.2, [2, 3]), *join("c", 10.0),
           revoked("a", 10.5, [0, 1]), revoked("b", 10.6, [2, 3]),
           assigned("a", 13.5, [0]), assigned("b", 13.5, [1, 2]), assigned("c", 13.5, [3]),
           revoked("b", 15.3, [1, 2]), run_end(40.0)]
    if stop_at is not None:
        evs += [ev("member_stop", stop_at, "harness", member="b"), stopped("b", 15.35), member_exit("b", 15.6),
                assigned("a", 16.5, [1]), assigned("c", 16.5, [2])]
    else:
        evs += [assigned("b", 16.5, [1, 2])]
    return evs


def test_a_graceful_stops_revoke_before_its_exit_is_the_stops_rebalance():
    """The runner's stop (member_stop) comes before the member's revoke, its exit after: the revoke is the stop's
    own, counted from the stop, not a third rebalance of the join before it (random-mix, classic-eager)."""
    v = check(history(_eager_join_then_stop(15.2)), protocol="classic-eager")
    assert v.status == "valid", v.message
    assert v.measurements["rebalances_undriven"] == 0


def test_revokes_of_a_member_nobody_stopped_are_rebalances_of_their_own():
    """The same revokes with no stop: three such revoke-and-assign rounds beyond the join are a storm."""
    evs = _eager_join_then_stop(None)
    for i in range(2):
        t = 20.0 + 3 * i
        evs += [revoked("b", t, [1, 2]), assigned("b", t + 1.0, [1, 2])]
    v = check(history(evs), protocol="classic-eager")
    assert v.status == "invalid" and "rebalances nothing drove" in v.message, v.message


def _coordinator_down(with_fault: bool):
    """The coordinator's broker is killed at 10 and ready again at 30 (restarted at 13): a and b time their
    sessions out on their own clocks and write `lost` at 16.5 and at 21 (a blocked poll serves the callback
    late), 8 s after the restart, then rejoin at 27."""
    down = [fault_start(10.0, "f1", kind="broker_kill", brokers=[3]), broker_event(10.0, 3, "kill"),
            broker_event(13.0, 3, "start"), broker_event(30.0, 3, "ready"), fault_end(30.0, "f1")]
    evs = [*steady(60.0), lost("a", 16.5, [0, 1]), lost("b", 21.0, [2, 3]), assigned("a", 27.0, [0, 1]),
           assigned("b", 27.1, [2, 3])]
    return evs + (down if with_fault else [])


def test_members_dropping_their_assignment_while_the_coordinators_broker_is_down_is_no_storm():
    v = check(history(_coordinator_down(True)))
    assert v.status == "valid", v.message
    assert v.measurements["rebalances_undriven"] == 0 and v.measurements["lost_in_good_standing"] == 0


def test_the_same_drops_with_no_broker_down_are_unexplained():
    v = check(history(_coordinator_down(False)))
    assert v.measurements["lost_in_good_standing"] == 2, v.measurements


# -- the runner's own wait: group_settled, every kind's rule (tests/unit/test_invariant_settled.py)


def test_a_member_restarted_with_other_settings_bounds_the_windows_after_it():
    """a is bounced into a2 with a 60 s max.poll.interval.ms (a and b ran with 5 s). After b is killed, the
    coordinator waits for a2 to rejoin: b's 6 s session + 2 rounds of a2's 60 s, so whole again 55 s later is
    fine; with a2 on 5 s (as a, whatever the run-wide 60 s says) it is past 6 + 2 * 5 s."""
    def run(a2_max_poll_ms, run_wide_s):
        five = effective(max_poll_ms=5000)
        evs = [e for e in steady(120.0) if e["type"] != "started"]
        evs += [started("a", 0.2, effective=five), started("b", 0.3, effective=five), revoked("a", 9.8, [0, 1]),
                stopped("a", 9.9), member_exit("a", 10.0),
                *join("a2", 10.5, [0, 1], effective=effective(max_poll_ms=a2_max_poll_ms)),
                member_exit("b", 20.0, how="kill"), assigned("a2", 75.0, [2, 3])]
        return check(history(evs), max_poll_interval_s=run_wide_s)

    assert run(60000, 5.0).status == "valid"
    v = run(5000, 60.0)
    assert v.status == "invalid" and "a2's max.poll.interval.ms=5000 (recorded)" in v.message, v.message


def test_the_clusters_own_start_before_the_run_is_no_disturbance():
    """The run's own cluster starts 8.7 s before `run_start` (a loaded machine), the members' bound is one round of
    8 s: the window from the brokers' start, when no member existed, is not judged (it was, and failed the run)."""
    brokers = [broker_event(-8.7, b, "start") for b in (1, 2, 3)] + [broker_event(-0.1, b, "ready") for b in (1, 2, 3)]
    h = history(*brokers, *steady())
    v = check(h, max_poll_interval_s=4.0)
    assert v.status == "valid", v.message


def _joins_seconds_apart(first_given_before: bool):
    """Consumer protocol, a clean clone's fenced-answer run: a, b and c start 0.4-0.8 s apart, but under load their
    joins reach the coordinator after c's start, and each join moves the target (epochs 2, 3, 4): six assignment
    changes in 3.2 s, all in the window of c's start. With `first_given_before`, b and c had been given their first
    assignments at the start, and the same six changes come in the window of a's start at 21.6 s (one join)."""
    eff = effective(protocol="consumer")
    t0 = 20.0 if first_given_before else 0.0
    evs = [run_start(0.0)]
    evs.append(group_settings(0.05, broker={"group.consumer.session.timeout.ms": "6000",
                                            "group.consumer.heartbeat.interval.ms": "500"}))
    if first_given_before:
        evs += [*join("b", 0.1, [6, 7], effective=eff), *join("c", 0.2, [8, 9], effective=eff),
                *join("a", 21.6, effective=eff)]
    else:
        evs += [*join("a", 1.6, effective=eff), *join("b", 2.1, effective=eff), *join("c", 2.8, effective=eff)]
    moves = [(4.4, "a", assigned, [0, 1, 2, 3, 4, 5]), (5.0, "a", revoked, [3, 4, 5]), (5.7, "b", assigned, [3, 4, 5]),
             (6.3, "a", revoked, [2]), (6.9, "c", assigned, [2]), (7.0, "b", revoked, [5]), (7.6, "c", assigned, [5])]
    evs += [make(m, t0 + t, parts) for t, m, make, parts in moves]
    return history(evs, run_end(t0 + 40.0))


def test_the_first_members_joins_seconds_apart_are_each_a_join_of_their_own():
    """Six rebalances where three members were first given an assignment: each join explains its own rounds (valid);
    the same six where only one member joined (the others had theirs before) are a storm."""
    v = check(_joins_seconds_apart(False), protocol="consumer")
    assert v.measurements["rebalances_undriven"] == 0 and "storm" not in v.message, (v.measurements, v.message)
    v = check(_joins_seconds_apart(True), protocol="consumer")
    assert v.status == "invalid" and "rebalances nothing drove" in v.message, v.message
    assert v.measurements["rebalances_undriven"] == 3, v.measurements


def test_the_kept_run_whose_joins_came_seconds_apart_is_no_storm():
    # a clean clone's ./dev test (2026-11-28), the fenced-answer request-fault test on the consumer protocol: m1, m2
    # and m3 started 0.4-0.8 s apart, their joins reached the coordinator from 3.4 s to 5.3 s (epochs 2-4), six
    # assignment changes in 3.2 s after m3's start; once counted as a storm of one window's join
    from pathlib import Path

    from harness.invariants import judge
    from harness.record.history import History
    kept = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "joins-seconds-apart" / "history"
    verdicts = judge(History.load(kept))
    assert all(v.status in ("valid", "skipped") for v in verdicts.values()), \
        {n: v.message for n, v in verdicts.items() if v.status not in ("valid", "skipped")}
