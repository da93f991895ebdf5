"""Kafka Streams invariants: exclusive active tasks, warmups, probing convergence, standby placement, balance."""
import json

import pytest
from histbuild import steady
from streamsbuild import (T, acked, output, output_read, fault_end, fault_start, group, history, join, leave, member_exit, move, processed,
                          restore, restore_end, run, run_end, run_start, settings, standby_start, standby_suspended,
                          state, stopped, task_active, task_active_end, tasks)

from harness.invariants import streams
from harness.invariants.streams import STREAMS_CHECKERS, StreamsCheckSettings, check_streams


def scale_out(end=100.0, lag_at_join=20000, restore_records=100, probe_at=70.0, racks=(None, None, None)):
    """m3 joins at 10 and warms up 0_1 as a standby; the probing rebalance at `probe_at` makes it active there."""
    a, b = T[:2], T[2:4]
    return [*group(end, racks=racks[:2]), *join("m3", 10.0, racks[2]),
            *move("m1", 10.5, a, a), *move("m2", 10.5, b, b),
            *run("m3", 11.5, standby=[T[1]], lags={T[1]: lag_at_join}), standby_start("m3", 11.6, T[1]),
            standby_suspended("m3", probe_at + 0.5, T[1], current=0, end=restore_records),
            tasks("m3", 30.0, standby=[T[1]], lags={T[1]: restore_records}),
            *move("m1", probe_at, a, [T[0]]), *move("m2", probe_at, b, b),
            state("m3", probe_at, "REBALANCING", "RUNNING"), restore("m3", probe_at + 0.6, T[1], restore_records),
            restore_end("m3", probe_at + 0.8, T[1], restore_records), *run("m3", probe_at + 1.0, [T[1]])]


# -- the API
def test_checker_names_in_order():
    assert list(STREAMS_CHECKERS) == ["task_exclusive_active", "warmup_before_active", "probing_convergence",
                                      "bounded_task_moves", "standby_placement", "task_balance", "group_settled",
                                      "output_integrity", "state_kept", "streams_rebalance_cause"]


def test_check_streams_on_a_good_history():
    vs = check_streams(history(group()), settings())
    assert {n: v.status for n, v in vs.items()} == {
        "task_exclusive_active": "valid", "warmup_before_active": "skipped", "probing_convergence": "skipped",
        "bounded_task_moves": "skipped",
        "standby_placement": "skipped", "task_balance": "valid", "group_settled": "unknown",  # never drained
        "output_integrity": "unknown",
        "state_kept": "skipped", "streams_rebalance_cause": "skipped"}  # no brokers' logs
    json.dumps({n: v.to_dict() for n, v in vs.items()})


@pytest.mark.parametrize("events", [[], [run_start(0.0), run_end(3.0)], steady()])
def test_history_without_streams_events_is_unknown_for_every_checker(events):
    vs = check_streams(history(events), settings())
    assert list(vs) == list(STREAMS_CHECKERS)
    assert {v.status for v in vs.values()} == {"unknown"}
    for name, check in STREAMS_CHECKERS.items():
        assert check(history(events), settings()).status == "unknown", name


def test_a_checker_that_raises_is_unknown(monkeypatch):
    def boom(h, s):
        raise RuntimeError("bad\nthing")

    monkeypatch.setitem(STREAMS_CHECKERS, "task_balance", boom)
    monkeypatch.setitem(STREAMS_CHECKERS, "standby_placement", lambda h, s: "valid")
    vs = check_streams(history(group()), settings())
    assert vs["task_balance"].status == "unknown"
    assert vs["task_balance"].message == "checker raised RuntimeError: bad thing"
    assert vs["standby_placement"].status == "unknown"
    assert vs["task_exclusive_active"].status == "valid"


def test_check_streams_subset_and_unknown_names():
    assert list(check_streams(history(group()), settings(), names=["task_balance"])) == ["task_balance"]
    with pytest.raises(ValueError):
        check_streams(history(group()), settings(), names=["nope"])


def test_streams_check_settings():
    s = StreamsCheckSettings.from_dict({"tasks": 6, "standby_replicas": 1, "rack_aware": True, "unknown_key": 1})
    assert (s.tasks, s.standby_replicas, s.rack_aware, s.max_warmup_replicas, s.protocol) == (6, 1, True, 2, "classic")
    assert StreamsCheckSettings.from_dict(s.to_dict()) == s
    with pytest.raises(TypeError):
        StreamsCheckSettings(4)  # keyword-only


# -- task_exclusive_active
def excl(h, **kw):
    return streams.check_task_exclusive_active(h, settings(**kw))


def test_no_task_activation_is_unknown_not_valid():
    """Instances that ran but never started a task judged nothing: unknown, as Connect's twin says."""
    evs = [run_start(0.0), *join("m1", 1.0), *join("m2", 1.0), run_end(30.0)]
    v = excl(history(evs))
    assert v.status == "unknown", v.message
    assert "no task ever ran active" in v.message


def test_processing_without_any_task_run_is_still_invalid():
    evs = [run_start(0.0), *join("m1", 1.0), processed("m1", 5.0, T[0]), run_end(30.0)]
    assert excl(history(evs)).status == "invalid"


def test_processing_own_tasks_is_valid():
    v = excl(history(group(), processed("m1", 5.0, T[0]), processed("m2", 5.0, T[3])))
    assert v.status == "valid", v.message
    assert v.measurements == {"tasks_seen": 4, "activations": 4, "overlaps": 0, "max_overlap_s": 0.0}


def test_clean_handover_on_scale_out_is_valid():
    v = excl(history(scale_out(), processed("m3", 80.0, T[1])))
    assert v.status == "valid", v.message
    assert v.measurements["activations"] == 5


def test_task_running_on_two_clients_is_invalid():
    v = excl(history(group(), task_active("m2", 10.0, T[0]), task_active_end("m2", 10.5, T[0])))
    assert v.status == "invalid"
    assert "task 0_0 ran on m1 and m2 at once for 0.500s from 10.0s" in v.message
    assert [(w["type"], w["member"]) for w in v.witnesses] == [("task_active", "m1"), ("task_active", "m2")]


def test_paused_zombie_within_tolerance_is_valid():
    evs = [*group(), fault_start(10.0, "p1", ["m1"]), task_active("m2", 17.0, T[0]), fault_end(18.0, "p1"),
           task_active_end("m1", 18.5, T[0])]
    v = excl(history(evs))
    assert v.status == "valid", v.message
    assert v.measurements["overlaps"] == 1 and v.measurements["max_overlap_s"] == 1.5


def test_paused_zombie_beyond_tolerance_is_invalid():
    evs = [*group(), fault_start(10.0, "p1", ["m1"]), task_active("m2", 17.0, T[0]), fault_end(25.0, "p1"),
           task_active_end("m1", 25.5, T[0])]
    v = excl(history(evs))
    assert v.status == "invalid"
    assert "m1 and m2 at once for 8.500s" in v.message and "tolerance 2s" in v.message


def test_fault_that_starts_after_the_overlap_excuses_nothing():
    evs = [*group(), task_active("m2", 10.0, T[0]), fault_start(10.5, "p1", ["m1"]), task_active_end("m1", 11.0, T[0])]
    assert excl(history(evs)).status == "invalid"


def test_kill_closes_the_runs_of_the_killed_member():
    evs = [*group(), member_exit("m1", 10.0, how="kill"), processed("m1", 10.05, T[0]),
           *move("m2", 16.0, T[2:4], T[:4]), processed("m2", 20.0, T[0])]
    v = excl(history(evs))
    assert v.status == "valid", v.message


def test_stopped_closes_the_runs_of_a_member():
    """m1 logs stopped without closing its tasks; m2 takes them over afterwards."""
    evs = [*group(), stopped("m1", 10.0), member_exit("m1", 10.2), *move("m2", 12.0, T[2:4], T[:4]),
           processed("m1", 10.1, T[0])]
    v = excl(history(evs))
    assert v.status == "valid", v.message
    assert v.measurements["activations"] == 6


def test_processing_a_task_not_run_is_invalid():
    v = excl(history(group(), processed("m1", 5.0, T[2])))
    assert v.status == "invalid"
    assert v.message == "m1 processed task 0_2 at 5.0s without running it"
    assert v.witnesses[0]["type"] == "processed"


def test_processing_after_closing_the_task_is_invalid():
    evs = [*group(), task_active_end("m1", 8.0, T[0]), processed("m1", 9.0, T[0])]
    assert "m1 processed task 0_0 at 9.0s" in excl(history(evs)).message


# -- warmup_before_active
def on_streams(evs: list[dict], standbys: int | None = None) -> list[dict]:
    """The same history with every instance started on the streams protocol (as their `started` events say), and the
    group's settings as the harness reads them at the start (the brokers' defaults: standbys and timings are the
    group's under that protocol; `standbys`: the group config the harness set)."""
    from histbuild import group_settings
    brokers = {"group.streams.session.timeout.ms": "45000", "group.streams.heartbeat.interval.ms": "5000",
               "group.streams.num.standby.replicas": "0"}
    group = {} if standbys is None else {"streams.num.standby.replicas": str(standbys)}
    return [group_settings(0.05, group=group, broker=brokers)] + [dict(e, protocol="streams") if e["type"] == "started" else e
                                                     for e in evs]


def warm(h, **kw):
    return streams.check_warmup_before_active(h, settings(**kw))


def test_no_restore_and_no_move_is_skipped():
    assert warm(history(group())).status == "skipped"


def test_warmed_up_activation_is_valid():
    v = warm(history(scale_out()))
    assert v.status == "valid", v.message
    assert v.measurements == {"activations_with_restore": 1, "warm": 1, "cold_justified": 0, "violations": 0,
                              "max_restored_records": 100}


def test_first_start_cold_restore_is_justified():
    evs = [run_start(0.0), *join("m1", 0.1), restore("m1", 1.0, T[0], 50000), restore_end("m1", 5.0, T[0], 49999),
           *run("m1", 6.0, T[:4]), run_end(20.0)]
    v = warm(history(evs))
    assert v.status == "valid", v.message
    assert v.measurements["cold_justified"] == 1 and v.measurements["max_restored_records"] == 49999


def test_cold_move_away_from_a_caught_up_owner_is_invalid():
    """m3 joins and gets 0_1 active at once, restoring 50000 records, while m1 ran it caught up."""
    evs = [*group(40.0), *join("m3", 10.0), *move("m1", 10.5, T[:2], [T[0]]), *move("m2", 10.5, T[2:4], T[2:4]),
           restore("m3", 11.6, T[1], 50000), *run("m3", 12.0, [T[1]])]
    v = warm(history(evs))
    assert v.status == "invalid"
    assert "m3 restored task 0_1 from 50000 records behind at 11.6s while m1 held a caught-up copy (lag 0" \
        in v.message
    assert [(w["type"], w["member"]) for w in v.witnesses] == [("tasks", "m1"), ("restore_start", "m3")]
    assert v.measurements["violations"] == 1


def test_cold_restore_despite_a_caught_up_standby_is_invalid():
    """m1 is killed; its standby on m2 is caught up, yet m3 restores 0_0 from scratch."""
    evs = [*group(40.0, standby=True), *join("m3", 5.0), *move("m1", 5.5, T[:2], T[:2], standby=T[2:4]),
           *move("m2", 5.5, T[2:4], T[2:4], standby=T[:2]), *run("m3", 6.0), member_exit("m1", 10.0, how="kill"),
           state("m2", 16.0, "REBALANCING", "RUNNING"), state("m3", 16.0, "REBALANCING", "RUNNING"),
           restore("m3", 16.5, T[0], 30000)]
    v = warm(history(evs), standby_replicas=1)
    assert v.status == "invalid"
    assert "while m2 held a caught-up copy" in v.message


def test_every_copy_lost_cold_restore_is_justified():
    evs = [*group(40.0), *join("m3", 5.0), *move("m1", 5.5, T[:2], T[:2]), *move("m2", 5.5, T[2:4], T[2:4]),
           *run("m3", 6.0), member_exit("m1", 10.0, how="kill"), state("m3", 16.0, "REBALANCING", "RUNNING"),
           restore("m3", 16.5, T[0], 30000)]
    v = warm(history(evs))
    assert v.status == "valid", v.message
    assert v.measurements["cold_justified"] == 1


@pytest.mark.parametrize("why", ["paused", "lag unknown", "lag too big", "shutting down"])
def test_copies_that_do_not_count(why):
    lags = {"lag unknown": {}, "lag too big": {T[1]: 20000}}.get(why, {T[1]: 0})
    evs = [*group(40.0), tasks("m1", 10.0, T[:2], lags={T[0]: 0, **lags}), *join("m3", 10.0),
           tasks("m1", 11.1, [T[0]]), restore("m3", 11.6, T[1], 50000)]
    if why == "paused":
        evs += [fault_start(9.0, "p1", ["m1"])]
    if why == "shutting down":
        evs += [state("m1", 11.0, "PENDING_SHUTDOWN", "RUNNING")]
    v = warm(history(evs), handoff_window_s=0.5)  # m1's caught-up snapshot at t=2 is out of the window
    assert v.status == "valid", v.message


def handed_off_late():
    """m1 drops 0_1 in its own rebalance at 20; m3 learns of its assignment 3 s later (a rebalance of its own,
    as under the streams protocol, where members learn at their heartbeats) and restores 0_1 cold."""
    return [*group(40.0), *join("m3", 19.0), *run("m3", 19.5), *move("m1", 20.0, T[:2], [T[0]]),
            state("m3", 23.0, "REBALANCING", "RUNNING"), restore("m3", 23.5, T[1], 50000)]


def test_copy_dropped_within_the_handoff_window_still_counts():
    v = warm(history(handed_off_late()))
    assert v.status == "invalid", v.message
    assert "m3 restored task 0_1" in v.message and "while m1 held a caught-up copy" in v.message


def test_copy_dropped_before_the_handoff_window_does_not_count():
    assert warm(history(handed_off_late()), handoff_window_s=1.0).status == "valid"


def test_streams_protocol_without_warmups_is_measured_not_judged():
    v = warm(history(on_streams(handed_off_late())), protocol="streams")
    assert v.status == "skipped"
    assert "1 of 1 restores were cold while a caught-up copy existed" in v.message
    assert v.measurements["violations"] == 1


def test_stores_of_one_task_restored_together_add_up():
    evs = [*group(40.0), restore("m2", 12.0, T[0], 6000, store="a"), restore("m2", 12.5, T[0], 6000, store="b")]
    v = warm(history(evs))
    assert v.status == "invalid"
    assert "from 12000 records behind" in v.message


def test_restores_seconds_apart_are_separate_episodes():
    evs = [*group(40.0), restore("m2", 12.0, T[0], 6000, store="a"), restore("m2", 14.0, T[0], 6000, store="b")]
    v = warm(history(evs))
    assert v.status == "valid", v.message
    assert v.measurements["warm"] == 2


# -- probing_convergence
def probe(h, **kw):
    return streams.check_probing_convergence(h, settings(**kw))


def test_no_topology_change_is_skipped():
    assert probe(history(group())).status == "skipped"


def test_never_all_running_is_unknown():
    evs = [run_start(0.0), *join("m1", 0.1), *join("m2", 0.2), *run("m1", 2.0, T[:4]), *join("m3", 5.0),
           run_end(20.0)]  # m2 never reaches RUNNING
    v = probe(history(evs))
    assert v.status == "unknown"
    assert v.message == "the members were never all RUNNING at once"


def test_scale_out_with_one_warmup_converges():
    v = probe(history(scale_out()))
    assert v.status == "valid", v.message
    (w,) = v.measurements["windows"]
    assert (w["change_s"], w["moves"], w["rebalances"], w["bound"]) == (10.0, 1, 2, 4)
    assert w["seconds_to_converge"] == 61.0


def test_a_scale_out_whose_rounds_both_take_their_follow_up_rebalance_converges():
    """streams-scale-out (seed 666274690, Kafka 4.4.0, classic protocol, three smoke runs at a time): m3 joins
    (rebalance 1) and the leader rejoins at once (2); the probing rebalance 60 s on (3) takes 0_1 from m1, which
    rejoins (4) so that m3 gets it. Two rounds, two rebalances each: valid (it was invalid under a fixed bound of 3)."""
    evs = [*group(200.0), *join("m3", 10.0), *run("m3", 10.5), *move("m1", 12.8, T[:2], T[:2]),
           *move("m1", 72.6, T[:2], [T[0]]), *move("m3", 75.1, [], [T[1]])]
    v = probe(history(evs))
    assert v.status == "valid", v.message
    (w,) = v.measurements["windows"]
    assert (w["moves"], w["rebalances"], w["bound"]) == (1, 4, 4)
    storm = evs + [*move("m2", 40.0, T[2:4], T[2:4])]  # one more rebalance before it settles: past the bound
    v = probe(history(storm))
    assert v.status == "invalid" and "5 rebalances" in v.message and "bound 4 for 1 moves (2 per round" in v.message


def test_scale_in_moves_the_leavers_tasks_only():
    evs = [*group(40.0), *leave("m2", 10.0, T[2:4]), *move("m1", 10.5, T[:2], T[:4])]
    v = probe(history(evs))
    assert v.status == "valid", v.message
    assert [(w["moves"], w["rebalances"], w["bound"]) for w in v.measurements["windows"]] == [(2, 1, 4)]


def test_tasks_of_a_killed_member_taken_by_its_replacement_count_as_moves():
    """m2 is killed, its tasks stay unowned; its replacement m3 warms them up over two probing rebalances."""
    evs = [*group(300.0), member_exit("m2", 10.0, how="kill"), *join("m3", 12.0), *run("m3", 13.0, [T[2]]),
           *move("m1", 13.0, T[:2], T[:2] + [T[3]]), *move("m1", 75.0, T[:2] + [T[3]], T[:2]),
           *move("m3", 75.0, [T[2]], T[2:4])]
    v = probe(history(evs))
    assert v.status == "valid", v.message
    w = v.measurements["windows"][-1]
    assert (w["moves"], w["bound"]) == (2, 5)  # 2 x (1 probing round + the change's own) + 1 for m2's session expiry


def test_too_many_rebalances_is_invalid():
    """After m3 joins, 0_1 bounces between m1 and m3 for five rebalances before it settles on m3."""
    evs = [*group(100.0), *join("m3", 10.0), *move("m1", 10.5, T[:2], T[:2]), *move("m2", 10.5, T[2:4], T[2:4]),
           *run("m3", 11.5)]
    for i in range(5):
        t, to_m3 = 20.0 + 5 * i, i % 2 == 0
        evs += [*move("m1", t, T[:2] if to_m3 else [T[0]], [T[0]] if to_m3 else T[:2]),
                *move("m3", t, [] if to_m3 else [T[1]], [T[1]] if to_m3 else [])]
    v = probe(history(evs))
    assert v.status == "invalid"
    assert "after the member_start of m3 at 10.0s, 6 rebalances until the assignment settled at 40.6s, " \
           "bound 4 for 1 moves" in v.message
    assert v.witnesses[0]["type"] == "member_start"


def test_convergence_beyond_the_probing_bound_is_invalid():
    v = probe(history(scale_out(end=300.0, probe_at=250.0)))
    assert v.status == "invalid"
    assert "settled only at 251.0s (241.0s), bound 180s for 1 moves" in v.message


def test_each_change_has_its_own_window():
    evs = [*scale_out(end=150.0), *leave("m3", 100.0, [T[1]]), *move("m1", 100.5, [T[0]], T[:2])]
    v = probe(history(evs))
    assert v.status == "valid", v.message
    assert [(w["change"], w["moves"]) for w in v.measurements["windows"]] == [
        ("member_start of m3 at 10.0s", 1), ("member_exit of m3 at 100.0s (shutting down from 99.5s)", 1)]


# -- standby_placement
def standby(h, **kw):
    return streams.check_standby_placement(h, settings(**kw))


def three(racks=("r1", "r1", "r2"), standbys=None, end=30.0):
    """m1, m2, m3 with 0_0..0_5 active two each; standbys given per member (default: the next member's tasks)."""
    act = {"m1": T[0:2], "m2": T[2:4], "m3": T[4:6]}
    sb = standbys or {"m1": T[2:4], "m2": T[4:6], "m3": T[0:2]}
    evs = [run_start(0.0), run_end(end)]
    for i, m in enumerate(act):
        evs += [*join(m, 0.1 * (i + 1), racks[i]), *run(m, 2.0, act[m], sb[m])]
    return evs


def test_no_standbys_configured_or_seen_is_skipped():
    assert standby(history(group())).status == "skipped"


def test_standbys_apart_from_their_actives_are_valid():
    v = standby(history(group(standby=True)), standby_replicas=1)
    assert v.status == "valid", v.message
    assert v.measurements == {"stable_points": 1, "tasks_checked": 4, "rack_spread_ok": None}


def test_standby_on_the_active_client_is_invalid():
    evs = [*group(standby=True), tasks("m1", 10.0, T[:2], [T[0], T[2], T[3]])]
    v = standby(history(evs), standby_replicas=1)
    assert v.status == "invalid"
    assert v.message.startswith("task 0_0 has a standby on m1, which runs it active at 30.0s")
    assert v.witnesses[0]["member"] == "m1"


def test_missing_standby_is_invalid():
    evs = [*group(standby=True), tasks("m2", 10.0, T[2:4], [T[0]])]
    v = standby(history(evs), standby_replicas=1)
    assert v.status == "invalid"
    assert "task 0_1 has 0 standbys (none), want 1 (of num.standby.replicas=1" in v.message
    assert v.measurements["stable_points"] == 2


def test_one_client_needs_no_standby():
    evs = [run_start(0.0), *join("m1", 0.1), *run("m1", 2.0, T[:4]), run_end(20.0)]
    assert standby(history(evs), standby_replicas=1).status == "valid"


def test_standbys_without_standby_replicas_beyond_the_warmups_are_invalid():
    v = standby(history(three(racks=(None,) * 3)), tasks=6)
    assert v.status == "invalid"
    assert "6 standbys beyond num.standby.replicas=0 (m1, m2, m3: the run's settings: its start recorded no assignor settings), more than max.warmup.replicas=2" in v.message
    assert standby(history(three(racks=(None,) * 3)), max_warmup_replicas=6, tasks=6).status == "valid"


def test_copies_spread_over_racks_are_valid():
    v = standby(history(three(standbys={"m1": T[4:6], "m2": [], "m3": T[0:4]})), standby_replicas=1,
                rack_aware=True, tasks=6)
    assert v.status == "valid", v.message
    assert v.measurements["rack_spread_ok"] == 6


def test_every_copy_on_one_rack_is_invalid():
    v = standby(history(three()), standby_replicas=1, rack_aware=True, tasks=6)
    assert v.status == "invalid"
    assert "every copy of task 0_2 is on rack r1 (m1, m2): one rack outage loses them all" in v.message
    assert {w["member"] for w in v.witnesses} == {"m1", "m2"}
    assert standby(history(three()), standby_replicas=1, tasks=6).status == "valid"  # not rack aware


def test_never_stable_is_unknown():
    evs = [*group(standby=True), fault_start(3.0, "f1", brokers=[1])]
    v = standby(history(evs), standby_replicas=1)
    assert v.status == "unknown"
    assert v.measurements["stable_points"] == 0


def test_placement_during_a_rebalance_is_not_judged():
    """m3 joins and sits REBALANCING without tasks: no stable point until it runs, and then it has standbys."""
    evs = [*group(60.0, standby=True), *join("m3", 10.0), *run("m3", 30.0, [], [T[0]])]
    v = standby(history(evs), standby_replicas=1)
    assert v.status == "valid", v.message
    assert v.measurements["stable_points"] == 2


# -- task_balance
def balance(h, **kw):
    return streams.check_task_balance(h, settings(**kw))


def test_balanced_group_is_valid():
    v = balance(history(group(standby=True)), standby_replicas=1)
    assert v.status == "valid", v.message
    assert v.measurements == {"at_s": 30.0, "active_per_client": {"m1": 2, "m2": 2},
                              "stateful_per_client": {"m1": 4, "m2": 4}}


def test_task_without_an_owner_is_invalid():
    v = balance(history(group(), tasks("m2", 10.0, [T[2]])))
    assert v.status == "invalid"
    assert v.message.startswith("task 0_3 has 0 active owners (none) at 30.0s")


def test_task_with_two_owners_is_invalid():
    v = balance(history(group(), tasks("m2", 10.0, T[:4])))
    assert v.status == "invalid"
    assert "task 0_0 has 2 active owners (m1, m2)" in v.message
    assert {w["member"] for w in v.witnesses} >= {"m1", "m2"}


def test_unbalanced_actives_is_invalid():
    v = balance(history(group(), tasks("m1", 10.0, T[:3]), tasks("m2", 10.0, [T[3]])))
    assert v.status == "invalid"
    assert v.message == "active tasks unbalanced at 30.0s: m1 has 3, m2 has 1 (slack 1)"
    assert balance(history(group(), tasks("m1", 10.0, T[:3]), tasks("m2", 10.0, [T[3]])),
                   active_balance_slack=2).status == "valid"


def test_unbalanced_standbys_is_invalid():
    """Six tasks with one standby each on three instances: actives 2/2/2, active + standby 3/4/5."""
    evs = [run_start(0.0), *join("m1", 0.1), *join("m2", 0.2), *join("m3", 0.3),
           *run("m1", 2.0, T[0:2], [T[4]]), *run("m2", 2.0, T[2:4], [T[5], T[0]]),
           *run("m3", 2.0, T[4:6], T[1:4]), run_end(30.0)]
    v = balance(history(evs), tasks=6, standby_replicas=1)
    assert v.status == "valid", v.message  # 3 vs 5: within the slack of 2
    v = balance(history(evs), tasks=6, standby_replicas=1, stateful_balance_slack=1)
    assert v.status == "invalid"
    assert "active+standby tasks unbalanced at 30.0s: m3 has 5, m1 has 3 (slack 1)" in v.message


def test_an_assignment_still_probing_or_short_of_standbys_has_not_settled():
    """Counts within the slacks, but a warmup left (a standby beyond standby_replicas) or a standby missing at the
    last stable point: the assignment had not settled, which the runner's stable wait would not accept either."""
    warm = [*group(), tasks("m2", 10.0, T[2:4], [T[0]])]
    v = balance(history(warm))
    assert v.status == "unknown" and "1 warmup(s) still in place" in v.message, v.message
    short = [*group(standby=True), tasks("m2", 10.0, T[2:4], [T[0]])]
    v = balance(history(short), standby_replicas=1)
    assert v.status == "unknown" and "task 0_1 has 0 standbys (none), want 1" in v.message, v.message


def test_only_the_last_stable_point_counts():
    evs = [*group(), tasks("m1", 3.0, T[:4]), tasks("m2", 3.0, []), tasks("m1", 20.0, T[:2]),
           tasks("m2", 20.0, T[2:4])]
    v = balance(history(evs))
    assert v.status == "valid", v.message
    assert v.measurements["at_s"] == 30.0


def test_balance_without_a_stable_point_is_unknown():
    evs = [*group(), fault_start(3.0, "p1", ["m1"])]
    assert balance(history(evs)).status == "unknown"


def test_rack_spread_is_measured_not_judged_under_the_streams_protocol():
    evs = three(racks=("r1", "r1", "r2"), standbys={"m1": T[2:6], "m2": T[0:2], "m3": []})  # 0_0..0_3 all on r1
    assert standby(history(evs), standby_replicas=1, rack_aware=True).status == "invalid"
    v = standby(history(on_streams(evs, standbys=1)), standby_replicas=1, rack_aware=True, protocol="streams")
    assert v.status == "valid", v.message
    assert v.measurements["rack_spread_unmet"] >= 2 and "not judged" in v.message


# -- output_integrity
def out(evs, **kw):
    return streams.check_output_integrity(history([*group(40.0), *evs]), settings(**kw))


def produced(n=4):
    return [acked(3.0 + i * 0.1, 0, i) for i in range(n)]


def test_every_acked_record_once_in_the_output_is_valid():
    v = out([*produced(), *[output(45.0, 0, i, i) for i in range(4)], output_read(46.0, 4)], exactly_once=True)
    assert v.status == "valid", v.message
    assert v.measurements["missing"] == 0 and v.measurements["duplicated"] == 0


def test_duplicates_are_allowed_at_least_once_and_invalid_exactly_once():
    evs = [*produced(), *[output(45.0, 0, i, i) for i in range(4)], output(45.0, 0, 2, 4), output_read(46.0, 5)]
    alos = out(evs)
    assert alos.status == "valid" and alos.measurements["duplicated"] == 1, alos.message
    eos = out(evs, exactly_once=True)
    assert eos.status == "invalid"
    assert "more than once under the run's exactly_once_v2: no instance recorded its processing.guarantee " \
           "(first: partition 0 offset 2, 2 times)" in eos.message
    assert [w["type"] for w in eos.witnesses] == ["output", "output"]


def test_duplicates_are_judged_by_the_guarantee_the_instances_recorded():
    """The run says at_least_once; both instances recorded exactly_once_v2: duplicates are invalid. Once m2
    restarts as m3 with at_least_once (a settings change mid-run), they are what it allows."""
    evs = [*produced(), *[output(45.0, 0, i, i) for i in range(4)], output(45.0, 0, 2, 4), output_read(46.0, 5)]
    guarantee = {"m1": "exactly_once_v2", "m2": "exactly_once_v2", "m3": "at_least_once"}

    def judged(extra):
        h = [dict(e, settings={"processing.guarantee": guarantee[e["member"]]}) if e["type"] == "started" else e
             for e in [*group(40.0), *extra, *evs]]
        return streams.check_output_integrity(history(h), settings(exactly_once=False))
    v = judged([])
    assert v.status == "invalid"
    assert "more than once under processing.guarantee=exactly_once_v2 on m1, m2" in v.message
    v = judged([*leave("m2", 20.0), *join("m3", 21.0)])
    assert v.status == "valid", v.message
    assert "1 more than once, as processing.guarantee=at_least_once on m3; processing.guarantee=exactly_once_v2 " \
           "on m1, m2 allows" in v.message


def test_an_acked_record_missing_from_the_output_is_invalid():
    v = out([*produced(), *[output(45.0, 0, i, i) for i in (0, 1, 3)], output_read(46.0, 3)])
    assert v.status == "invalid"
    assert "1 acknowledged input records never reached the committed output (first: partition 0 offset 2)" in v.message
    assert v.witnesses[0]["type"] == "acked" and v.witnesses[0]["offset"] == 2


@pytest.mark.parametrize("tail", [[], [output_read(46.0, 2, complete=False)]])
def test_output_not_read_to_its_end_is_unknown(tail):
    assert out([*produced(), output(45.0, 0, 0), *tail]).status == "unknown"


def test_a_killed_instance_adds_its_session_expiry_rebalance_to_the_bound():
    """m2 is killed; its replacement m3 joins (rebalance 1), m2's session expires (2), a probing round (3), a second
    one that takes 0_2 from m1 (4) and gives it to m3 in its follow-up (5)."""
    evs = [*group(300.0), member_exit("m2", 10.0, how="kill"), *join("m3", 11.0), *run("m3", 11.5),
           *move("m1", 15.0, T[:2], T[:4]), *move("m1", 75.0, T[:4], T[:3]), *move("m3", 75.0, [], [T[3]]),
           *move("m1", 135.0, T[:3], T[:2]), *move("m3", 140.0, [T[3]], T[2:4])]
    v = probe(history(evs))
    assert v.status == "valid", v.message
    w = v.measurements["windows"][-1]
    assert (w["moves"], w["rebalances"], w["bound"]) == (2, 5, 5)
    assert probe(history([e for e in evs if e["type"] != "member_exit"])).status == "invalid"


# -- bounded_task_moves
def moves_of(h, **kw):
    return streams.check_bounded_task_moves(h, settings(**kw))


def scale_out_swapping(swaps: int):
    """m3 joins m1 (0_0, 0_1) and m2 (0_2, 0_3) with 6 tasks... here 4: it takes 0_1 (the fewest: 1 move), and
    m1 and m2 swap `swaps` pairs of tasks on the way (2 moves each)."""
    evs = [*group(200.0), *join("m3", 10.0), *run("m3", 10.5), *move("m1", 70.0, T[:2], [T[0]]),
           *move("m3", 70.0, [], [T[1]])]
    if swaps:
        evs += [*move("m1", 71.0, [T[0]], [T[2]]), *move("m2", 71.0, T[2:4], [T[0], T[3]])]
    return history(evs)


def test_moving_the_fewest_tasks_is_valid():
    v = moves_of(scale_out_swapping(0), max_warmup_replicas=0)
    assert v.status == "valid", v.message
    assert (v.measurements["moves"], v.measurements["fewest_moves"]) == (1, 1)


def test_swapping_tasks_between_staying_instances_beyond_the_bound_is_invalid():
    assert moves_of(scale_out_swapping(1), max_warmup_replicas=1).status == "valid"  # 3 <= 2 * 1 + 1
    v = moves_of(scale_out_swapping(1), max_warmup_replicas=0)
    assert v.status == "invalid", v.message
    assert "3 active tasks moved where 1 would balance the instances (bound 2: 2 x 1 + max.warmup.replicas" in v.message
    assert v.witnesses[0]["type"] == "member_start" and v.witnesses[0]["member"] == "m3"


# -- state_kept
def kept(events, **kw):
    return streams.check_state_kept(history(events), settings(**kw))


def _start(m, t, task, keys):
    e = task_active(m, t, task)
    e["store_keys"] = keys
    return e


def test_starts_on_the_seeded_state_and_more_are_valid():
    # 0_0 starts on m1 with its 100 seeded keys, then on m2 after an offline migration with more
    v = kept([*group(), _start("m1", 2.0, T[0], 100), _start("m2", 20.0, T[0], 130)], seeded_keys=100)
    assert v.status == "valid" and v.measurements["starts"] == 2 and v.measurements["fewest_keys"] == 100


def test_a_start_below_the_seeded_state_is_invalid():
    v = kept([*group(), _start("m1", 2.0, T[0], 0)], seeded_keys=100)
    assert v.status == "invalid" and "0 keys" in v.message and "changelog before the run" in v.message
    assert v.witnesses[0]["store_keys"] == 0 and v.measurements["short_starts"] == 1


def test_a_start_with_less_than_an_earlier_start_is_invalid():
    # the state grew to 150 keys on m1; after a move m2 starts the task on 120: state lost in the move
    v = kept([*group(), _start("m1", 2.0, T[1], 150), _start("m2", 20.0, T[1], 120)], seeded_keys=100)
    assert v.status == "invalid" and "fewer than the 150 it held at its start on m1" in v.message
    assert [w["member"] for w in v.witnesses] == ["m2", "m1"]


def test_each_task_is_judged_on_its_own_state():
    v = kept([*group(), _start("m1", 2.0, T[0], 150), _start("m2", 3.0, T[1], 110)], seeded_keys=100)
    assert v.status == "valid"


def test_starts_without_store_keys_are_skipped():
    assert kept(group(), seeded_keys=100).status == "skipped"
