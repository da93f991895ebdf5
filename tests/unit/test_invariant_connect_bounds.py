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
           "9.000)" in v.message, v.message


def test_delay_detects_a_killed_worker_restarted_with_other_settings_by_the_new_ones():
    """m4 (holding task 1) is killed at 20; task 1 restarts on m3 at 50: within 20 + 20 + 10 + 5 by m4's 20 s session
    timeout, though the run-wide 6 s (deadline 41) and m2's 2 s would both have failed it."""
    tail = [member_exit("m4", 20.0, how="kill"), task_started("m3", 50.0, 1), drained(90.0)]
    v = check_scheduled_delay(history(bounced(LONG), tail), settings(session_timeout_s=6.0))
    assert v.status == "valid", v.message
    assert "detected after 20s: m4's session.timeout.ms=20000 (its worker config at its start at 9.000)" in v.message
    v = check_scheduled_delay(history(bounced(SHORT), tail), settings(session_timeout_s=30.0))
    assert v.status == "invalid", v.message
    assert "later than 17.0s (delay 10s; detection 2s: m4's session.timeout.ms=2000 (its worker config at its " \
           "start at 9.000))" in v.message, v.message


def test_a_worker_without_a_recorded_config_is_judged_with_the_run_session_timeout_and_says_so():
    tail = [member_exit("m4", 20.0, how="kill"), task_started("m3", 50.0, 1), drained(90.0)]
    v = check_scheduled_delay(history(bounced({}), tail), settings(session_timeout_s=6.0))
    assert v.status == "invalid" and "detection 6s: the run's session_timeout_s=6s: m4's start recorded no " \
        "session.timeout.ms" in v.message, v.message
