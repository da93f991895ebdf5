"""Kafka Connect: the detection time of `connect_scheduled_delay` and the zombie tolerance of `connect_task_exclusive`
come from the session.timeout.ms each worker ran with at the moment judged (its `started` worker config), not the
run's."""
from connectbuild import (cluster, drained, fault_end, fault_start, history, member_exit, member_stop, settings,
                          task_started, task_stopped, worker)

from harness.invariants.connect import check_scheduled_delay, check_task_exclusive

SHORT, LONG = {"session.timeout.ms": "2000"}, {"session.timeout.ms": "20000"}


def bounced(config_after: dict) -> list[dict]:
    """m2 (task 1, a 2 s session timeout) leaves gracefully at 8 and comes back as m4 with `config_after`, which
    takes task 1 at 9.5."""
    evs = [e if not (e["type"] == "started" and e["member"] == "m2") else dict(e, settings=SHORT) for e in cluster()]
    return [*evs, task_stopped("m2", 7.8, 1), member_stop("m2", 7.9), member_exit("m2", 8.0),
            *worker("m4", 8.5, 4, config_after), task_started("m4", 9.5, 1)]


def test_exclusive_judges_a_paused_worker_restarted_with_other_settings_by_the_new_ones():
    """m4 is paused from 15 to 25; m3 starts task 1 at 22 and m4 stops it at 35: 13 s of overlap, within twice
    m4's 20 s, though the run-wide 12 s and m2's 4 s would both have failed it."""
    tail = [fault_start(15.0, "f1", ["m4"]), fault_end(25.0, "f1"), task_started("m3", 22.0, 1),
            task_stopped("m4", 35.0, 1)]
    v = check_task_exclusive(history(bounced(LONG), tail), settings(zombie_tolerance_s=12.0))
    assert v.status == "valid", v.message
    v = check_task_exclusive(history(bounced(SHORT), tail), settings(zombie_tolerance_s=30.0))
    assert v.status == "invalid", v.message
    assert "m4 was paused, tolerance 4s: twice m4's session.timeout.ms=2000 (its worker config at its start at " \
           "9.0s)" in v.message, v.message


def test_delay_detects_a_killed_worker_restarted_with_other_settings_by_the_new_ones():
    """m4 (holding task 1) is killed at 20; task 1 restarts on m3 at 50: within 20 + 20 + 10 + 5 by m4's 20 s session
    timeout, though the run-wide 6 s (deadline 41) and m2's 2 s would both have failed it."""
    tail = [member_exit("m4", 20.0, how="kill"), task_started("m3", 50.0, 1), drained(90.0)]
    v = check_scheduled_delay(history(bounced(LONG), tail), settings(session_timeout_s=6.0))
    assert v.status == "valid", v.message
    assert "detected after 20s: m4's session.timeout.ms=20000 (its worker config at its start at 9.0s)" in v.message
    v = check_scheduled_delay(history(bounced(SHORT), tail), settings(session_timeout_s=30.0))
    assert v.status == "invalid", v.message
    assert "later than 17.0s (delay 10s: the run's scheduled_delay_s=10s: the leader m1 recorded no " \
           "scheduled.rebalance.max.delay.ms; detection 2s: m4's session.timeout.ms=2000 (its worker config at its " \
           "start at 9.0s))" in v.message, v.message


def test_a_worker_without_a_recorded_config_is_judged_with_the_run_session_timeout_and_says_so():
    tail = [member_exit("m4", 20.0, how="kill"), task_started("m3", 50.0, 1), drained(90.0)]
    v = check_scheduled_delay(history(bounced({}), tail), settings(session_timeout_s=6.0))
    assert v.status == "invalid" and "detection 6s: the run's session_timeout_s=6s: m4's start recorded no " \
        "session.timeout.ms" in v.message, v.message


def with_delays(evs: list[dict], delays: dict[str, int]) -> list[dict]:
    """The workers' `started` events recording their scheduled.rebalance.max.delay.ms (strings, as workers write)."""
    return [dict(e, settings={**(e.get("settings") or {}), "scheduled.rebalance.max.delay.ms": str(delays[e["member"]])})
            if e["type"] == "started" and e["member"] in delays else e for e in evs]


def killed_m2(restart_at: float) -> list[dict]:
    """m2 (task 1) killed at 20, m1 the leader; the task restarts on m3 at `restart_at`."""
    return [*cluster(), member_exit("m2", 20.0, how="kill"), task_started("m3", restart_at, 1), drained(90.0)]


def test_delay_is_the_leaders_recorded_one_not_the_runs():
    """The leader m1 ran a 30 s delay: a restart 16 s after the kill is too early though the run says 10 s, and one
    45 s after it is in time though the run's deadline (10 + 6 + 5) is long past."""
    delays = {"m1": 30000, "m2": 10000, "m3": 10000}
    assert check_scheduled_delay(history(killed_m2(36.0)), settings()).status == "valid"
    v = check_scheduled_delay(history(with_delays(killed_m2(36.0), delays)), settings())
    assert v.status == "invalid", v.message
    assert "before the 30s delay (the leader m1 (its worker config at its start at 1.5s): " \
           "scheduled.rebalance.max.delay.ms=30000)" in v.message, v.message
    assert check_scheduled_delay(history(killed_m2(58.0)), settings(session_timeout_s=6.0)).status == "invalid"
    v = check_scheduled_delay(history(with_delays(killed_m2(58.0), delays)), settings(session_timeout_s=6.0))
    assert v.status == "valid", v.message


def test_without_a_named_leader_any_live_worker_may_lead():
    """No worker named the leader: m1 ran 30 s, m3 10 s. A restart at 16 s fits m3's delay, one at 38 s m1's;
    one at 8 s is before both."""
    for at, status in ((36.0, "valid"), (58.0, "valid"), (28.0, "invalid")):
        evs = [e for e in with_delays(killed_m2(at), {"m1": 30000, "m3": 10000}) if e["type"] != "connect_rebalance"]
        v = check_scheduled_delay(history(evs), settings(session_timeout_s=6.0))
        assert v.status == status, (at, v.message)
    assert "before the 10s delay (no worker named the leader, so any worker alive then may lead: " \
           "scheduled.rebalance.max.delay.ms=10000 on m3" in v.message, v.message
