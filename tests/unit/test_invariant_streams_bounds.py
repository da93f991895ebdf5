"""Kafka Streams: the zombie tolerance of `task_exclusive_active` and `probing_convergence` is twice the session
timeout each instance ran with at the moment judged (its `started` event's settings), not the run's."""
from streamsbuild import (T, fault_end, fault_start, history, leave, member_exit, member_start, move, run, run_end,
                          run_start, settings, started, state, task_active, task_active_end)

from harness.invariants import streams

SHORT, LONG = {"session.timeout.ms": "1000"}, {"session.timeout.ms": "30000"}


def join_with(m: str, t: float, config: dict) -> list[dict]:
    return [member_start(m, t), started(m, t + 0.1, config=config), state(m, t + 0.2, "REBALANCING", "CREATED")]


def bounced(config_after: dict, end: float = 30.0) -> list[dict]:
    """m1 starts with a 1 s session timeout and is bounced at 5 into m1b with `config_after`; m1b runs 0_0, 0_1."""
    return [run_start(0.0), *join_with("m1", 0.1, SHORT), *join_with("m2", 0.2, SHORT),
            *run("m1", 2.0, T[:2]), *run("m2", 2.0, T[2:4]), *leave("m1", 5.0, T[:2]),
            *join_with("m1b", 5.5, config_after), *run("m1b", 6.5, T[:2]), run_end(end)]


def test_a_paused_instance_restarted_with_other_settings_is_judged_by_the_new_ones():
    """m1b (30 s session: tolerance 60 s) is paused; m2 takes 0_0 at 17 and m1b lets go at 25.5: 8.5 s of
    overlap, within m1b's 60 s though m1's 2 s and the run-wide 2 s would both have failed it."""
    tail = [fault_start(10.0, "p1", ["m1b"]), task_active("m2", 17.0, T[0]), fault_end(25.0, "p1"),
            task_active_end("m1b", 25.5, T[0])]
    v = streams.check_task_exclusive_active(history(bounced(LONG), tail), settings(zombie_tolerance_s=2.0))
    assert v.status == "valid", v.message
    v = streams.check_task_exclusive_active(history(bounced(SHORT), tail), settings(zombie_tolerance_s=60.0))
    assert v.status == "invalid", v.message
    assert "tolerance 2s for a faulted zombie: twice m1b's session.timeout.ms=1000 (its Streams settings at its " \
           "start at 5.6s)" in v.message, v.message


def test_an_instance_without_recorded_settings_is_judged_with_the_run_tolerance_and_says_so():
    evs = [*bounced({}), fault_start(10.0, "p1", ["m1b"]), task_active("m2", 17.0, T[0]), fault_end(25.0, "p1"),
           task_active_end("m1b", 25.5, T[0])]
    v = streams.check_task_exclusive_active(history(evs), settings(zombie_tolerance_s=2.0))
    assert v.status == "invalid" and "the run's zombie_tolerance_s=2s: m1b's start recorded no session.timeout.ms" \
        in v.message, v.message


def killed_then_replaced(config_after: dict) -> list[dict]:
    """m1b (the bounce of m1, `config_after`) is killed at 10; m3 joins at 20 (rebalance 1), m1b's session expires
    (2), a probing round (3) moves 0_1 to m3, a second one gives 0_0 up on m2 (4) and to m3 in its follow-up (5)."""
    return [*bounced(config_after, 300.0), member_exit("m1b", 10.0, how="kill"), *join_with("m3", 20.0, LONG),
            *run("m3", 20.5), *move("m2", 25.0, T[2:4], T[:4]), *move("m2", 85.0, T[:4], [T[0], *T[2:4]]),
            *move("m3", 85.0, [], [T[1]]), *move("m2", 145.0, [T[0], *T[2:4]], T[2:4]),
            *move("m3", 150.0, [T[1]], T[:2])]


def test_a_killed_instance_restarted_with_other_settings_adds_its_expiry_by_the_new_ones():
    """m1b's 30 s session (tolerance 60 s) reaches m3's join 10 s after the kill: its expiry is one of the five
    rebalances. The run-wide 2 s would not have counted it (bound 4); m1's own 1 s either."""
    v = streams.check_probing_convergence(history(killed_then_replaced(LONG)), settings(zombie_tolerance_s=2.0))
    assert v.status == "valid", v.message
    w = v.measurements["windows"][-1]
    assert (w["moves"], w["rebalances"], w["bound"]) == (2, 5, 5)
    v = streams.check_probing_convergence(history(killed_then_replaced(SHORT)), settings(zombie_tolerance_s=60.0))
    assert v.status == "invalid", v.message
    assert "bound 4 for 2 moves" in v.message and "m1b killed at 10.0s, beyond its tolerance 2s before the change " \
        "(twice m1b's session.timeout.ms=1000 (its Streams settings at its start at 5.6s))" in v.message, v.message


def test_under_the_streams_protocol_the_tolerance_is_twice_the_group_session_timeout():
    """Under KIP-1071 the session timeout is the group's (its group config over the brokers'), whatever the run's."""
    def judged(group_ms: str, run_tolerance_s: float):
        grp = {"type": "group_settings", "mono": 0.05, "source": "harness",
               "group": {"streams.session.timeout.ms": group_ms},
               "broker": {"group.streams.session.timeout.ms": "45000"}}
        evs = [e if e["type"] != "started" else dict(e, protocol="streams") for e in bounced({})]
        evs += [grp, fault_start(10.0, "p1", ["m1b"]), task_active("m2", 17.0, T[0]), fault_end(25.0, "p1"),
                task_active_end("m1b", 25.5, T[0])]
        return streams.check_task_exclusive_active(history(evs), settings(zombie_tolerance_s=run_tolerance_s))
    assert judged("30000", 2.0).status == "valid"
    v = judged("1000", 60.0)
    assert v.status == "invalid" and "tolerance 2s for a faulted zombie: twice the session timeout of m1b on the " \
        "streams protocol: group config streams.session.timeout.ms=1000" in v.message, v.message


def killed_unreplaced(session_ms: str) -> list[dict]:
    """m1, m2, m3 (one standby each task) with `session_ms`; m3 is SIGKILLed at 10 and not replaced; the group
    notices after m3's session timeout and m1 and m2 take its tasks and the standbys back at 17."""
    cfg = {"session.timeout.ms": session_ms}
    evs = [run_start(0.0), *join_with("m1", 0.1, cfg), *join_with("m2", 0.2, cfg), *join_with("m3", 0.3, cfg),
           *run("m1", 2.0, T[0:2], T[2:4]), *run("m2", 2.0, T[2:4], T[4:6]), *run("m3", 2.0, T[4:6], T[0:2]),
           member_exit("m3", 10.0, how="kill")]
    for m in ("m1", "m2"):
        evs.append(state(m, 16.2, "REBALANCING", "RUNNING"))
    return [*evs, *run("m1", 17.0, T[0:3], T[3:6]), *run("m2", 17.0, T[3:6], T[0:3]), run_end(40.0)]


def test_standbys_are_not_judged_while_the_group_cannot_yet_know_of_a_kill():
    """From the kill until m3's own 6 s session timeout the others run on without its standbys: no settled
    assignment (it was judged one, and a correct run failed). With a 1 s session timeout recorded instead, the
    same 6 s are a settled assignment missing standbys."""
    kw = {"standby_replicas": 1, "tasks": 6, "max_warmup_replicas": 6, "zombie_tolerance_s": 2.0}
    v = streams.check_standby_placement(history(killed_unreplaced("6000")), settings(**kw))
    assert v.status == "valid", v.message
    v = streams.check_standby_placement(history(killed_unreplaced("1000")), settings(**kw))
    assert v.status == "invalid", v.message
    assert v.message.startswith("task 0_0 has 0 standbys (none), want 1") and "at 16.2s" in v.message, v.message
