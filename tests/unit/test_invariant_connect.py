"""Kafka Connect invariants (design invariant 9): each on histories that must pass and ones that must fail."""
import json

from connectbuild import (batch, cluster, conn_started, drained, fault_end, fault_start, history, member_exit,
                          member_start, member_stop, read, rebalance, record, run_end, run_start, settings, task_started,
                          task_stopped, worker)

from harness.invariants import judge
from harness.invariants.connect import (CONNECT_CHECKERS, check_balance, check_connect, check_scheduled_delay,
                                        check_source_sequence, check_task_exclusive)


def test_checker_names_in_order():
    assert list(CONNECT_CHECKERS) == ["connect_task_exclusive", "connect_scheduled_delay", "connect_balance",
                                      "group_settled", "connect_source_sequence", "connect_rebalance_cause"]


# -- 9a: no task on two workers at once
def test_exclusive_passes_on_a_clean_handover():
    h = history(cluster(), task_stopped("m2", 20.0, 1), task_started("m3", 20.5, 1))
    assert check_task_exclusive(h, settings()).status == "valid"


def test_exclusive_passes_when_the_killed_worker_ends_its_runs():
    h = history(cluster(), member_exit("m2", 20.0, how="kill"), task_started("m3", 36.0, 1))
    v = check_task_exclusive(h, settings())
    assert v.status == "valid" and v.measurements["overlaps"] == 0


def test_exclusive_fails_on_a_task_on_two_workers():
    h = history(cluster(), task_started("m3", 20.5, 1), task_stopped("m2", 22.0, 1))
    v = check_task_exclusive(h, settings())
    assert v.status == "invalid" and v.witnesses[0]["unit"] == "src-1" and v.witnesses[0]["overlap_s"] == 1.5


def test_exclusive_fails_on_a_connector_on_two_workers():
    h = history(cluster(), conn_started("m2", 30.0))
    assert check_task_exclusive(h, settings()).status == "invalid"


def test_exclusive_fails_on_a_batch_after_the_task_stopped():
    """The zombie-task self-test's signature: batches from a task that said it stopped."""
    h = history(cluster(), batch("m2", 10.0, 1, 0, 9), task_stopped("m2", 20.0, 1), batch("m2", 20.4, 1, 10, 19))
    v = check_task_exclusive(h, settings())
    assert v.status == "invalid" and v.measurements["batches_outside"] == 1


def test_exclusive_tolerates_a_paused_zombie_within_the_tolerance_only():
    base = [*cluster(), fault_start(15.0, "f1", ["m2"]), fault_end(25.0, "f1"), task_started("m3", 22.0, 1)]
    assert check_task_exclusive(history(base, task_stopped("m2", 26.0, 1)), settings()).status == "valid"
    assert check_task_exclusive(history(base, task_stopped("m2", 40.0, 1)), settings()).status == "invalid"


def test_exclusive_unknown_without_runs():
    assert check_task_exclusive(history(run_start(0.0), run_end(5.0)), settings()).status == "unknown"


# -- 9b: the scheduled delay
def _killed(restart_at: float, to: str = "m3", leader_port: int = 1):
    """m2 (holding task 1) killed at 20; its task restarts on `to` at `restart_at`."""
    return history([e for e in cluster() if e["type"] != "connect_rebalance"], rebalance("m1", 4.0, leader_port),
                   member_exit("m2", 20.0, how="kill"), task_started(to, restart_at, 1), drained(90.0))


def test_delay_passes_when_the_task_waits_the_delay():
    v = check_scheduled_delay(_killed(36.0), settings())
    assert v.status == "valid"
    assert v.measurements["departures"][0]["first_restart_s"] == 16.0


def test_delay_fails_when_reassigned_before_the_delay():
    v = check_scheduled_delay(_killed(27.0), settings())
    assert v.status == "invalid" and "before the 10s delay" in v.witnesses[0]["why"]


def test_delay_fails_when_reassigned_too_late():
    v = check_scheduled_delay(_killed(60.0), settings())
    assert v.status == "invalid" and "later than" in v.witnesses[0]["why"]


def test_delay_fails_when_never_reassigned_before_the_end():
    h = history(cluster(), member_exit("m2", 20.0, how="kill"), drained(90.0))
    v = check_scheduled_delay(h, settings())
    assert v.status == "invalid" and "not started elsewhere" in v.witnesses[0]["why"]


def test_delay_zero_means_at_the_next_rebalance():
    assert check_scheduled_delay(_killed(26.5), settings(scheduled_delay_s=0.0)).status == "valid"
    assert check_scheduled_delay(_killed(36.0), settings(scheduled_delay_s=0.0)).status == "invalid"


def test_delay_judged_with_another_delay_fails():
    """The wrong-delay self-test: a run that waited 10 s judged as if the delay were 30 s or 1 s."""
    assert check_scheduled_delay(_killed(36.0), settings(scheduled_delay_s=30.0)).status == "invalid"
    assert check_scheduled_delay(_killed(36.0), settings(scheduled_delay_s=1.0)).status == "invalid"


def test_delay_lets_a_returning_worker_take_its_work_at_once():
    h = history(cluster(), member_exit("m2", 20.0, how="kill"), *worker("m4", 21.0, 2), task_started("m4", 23.0, 1),
                drained(90.0))
    v = check_scheduled_delay(h, settings())
    assert v.status == "valid" and v.measurements["departures"][0]["to_new_workers"] is True


def test_delay_does_not_bind_a_departed_leader():
    """A new leader has no memory of the previous assignment: the leader's work moves at once."""
    assert check_scheduled_delay(_killed(27.0, leader_port=2), settings()).status == "valid"


def test_delay_graceful_leave_is_detected_at_once():
    h = history(cluster(), member_stop("m2", 19.0), task_stopped("m2", 19.5, 1), member_exit("m2", 20.0),
                task_started("m3", 30.5, 1), drained(90.0))
    assert check_scheduled_delay(h, settings()).status == "valid"
    h2 = history(cluster(), member_stop("m2", 19.0), task_stopped("m2", 19.5, 1), member_exit("m2", 20.0),
                 task_started("m3", 45.0, 1), drained(90.0))
    assert check_scheduled_delay(h2, settings()).status == "invalid"


def test_delay_skipped_under_eager_and_without_departures():
    assert check_scheduled_delay(_killed(27.0), settings(protocol="eager")).status == "skipped"
    assert check_scheduled_delay(history(cluster(), drained(90.0)), settings()).status == "skipped"


def test_delay_unknown_when_the_run_ended_first():
    h = history(cluster(), member_exit("m2", 20.0, how="kill"), drained(25.0))
    assert check_scheduled_delay(h, settings()).status == "unknown"


# -- 9c: balance and no storm
def _quiet(*extra):
    return history(cluster(end=60.0), drained(50.0), *extra, member_stop("m1", 53.0))


def test_balance_passes_when_spread_and_quiet():
    v = check_balance(_quiet(), settings())
    assert v.status == "valid" and v.measurements["tasks_per_worker"] == {"m1": 2, "m2": 1, "m3": 1}


def test_balance_fails_when_a_worker_is_idle():
    h = history(run_start(0.0), *worker("m1", 1.0, 1), *worker("m2", 1.0, 2), *worker("m3", 1.0, 3),
                conn_started("m1", 5.0), *(task_started("m1", 5.0, i) for i in range(3)), task_started("m2", 5.0, 3),
                drained(50.0), member_stop("m1", 53.0), run_end(60.0))
    v = check_balance(h, settings())
    assert v.status == "invalid" and "tasks per worker" in v.witnesses[0]["why"]


def test_balance_fails_on_a_task_missing_at_the_end():
    h = _quiet(task_stopped("m3", 30.0, 2))
    assert check_balance(h, settings()).status == "invalid"


def test_balance_fails_on_a_storm_in_the_quiet_period():
    h = _quiet(task_stopped("m3", 51.0, 2), task_started("m3", 51.5, 2))
    v = check_balance(h, settings())
    assert v.status == "invalid" and v.measurements["moves_in_quiet_period"] == 2


def test_balance_unknown_without_drained():
    assert check_balance(history(cluster()), settings()).status == "unknown"


# -- 9d: source sequence
def test_sequence_passes_without_gaps_or_duplicates():
    h = history(cluster(), *(record(70.0, 0, s) for s in range(20)), read(71.0, 20))
    assert check_source_sequence(h, settings()).status == "valid"


def test_sequence_fails_on_a_gap():
    h = history(cluster(), *(record(70.0, 0, s) for s in range(20) if s != 7), read(71.0, 19))
    v = check_source_sequence(h, settings())
    assert v.status == "invalid" and v.measurements["missing"] == 1


def test_sequence_fails_on_a_duplicate_after_clean_stops():
    h = history(cluster(), *(record(70.0, 0, s) for s in [*range(20), 5]), read(71.0, 21))
    v = check_source_sequence(h, settings())
    assert v.status == "invalid" and v.measurements["duplicated"] == 1


def test_sequence_allows_a_redo_after_a_kill():
    h = history(cluster(), member_exit("m1", 20.0, how="kill"), task_started("m2", 36.0, 0, resume=15),
                *(record(70.0, 0, s) for s in [*range(20), 15, 16]), read(71.0, 22))
    v = check_source_sequence(h, settings())
    assert v.status == "valid" and v.measurements["duplicated_allowed"] == 2


def test_sequence_allows_a_redo_by_a_task_whose_worker_was_paused_only():
    """m2 runs task 1; frozen past its session (pause fault), it is fenced and the task restarts on m3 from
    the last committed offset: the redo is allowed. A pause of m3 before it ran the task allows nothing."""
    redo = [*(record(70.0, 1, s) for s in [*range(20), 12, 13]), read(71.0, 22)]
    h = history(cluster(), fault_start(15.0, "f1", ["m2"]), fault_end(25.0, "f1"), task_stopped("m2", 26.0, 1),
                task_started("m3", 22.0, 1), *redo)
    v = check_source_sequence(h, settings())
    assert v.status == "valid" and v.measurements["duplicated_allowed"] == 2
    h = history(cluster(), fault_start(1.5, "f1", ["m3"]), fault_end(3.0, "f1"), task_stopped("m2", 21.0, 1),
                task_started("m3", 22.0, 1), *redo)
    assert check_source_sequence(h, settings()).status == "invalid"


def test_sequence_unknown_when_the_read_is_incomplete():
    h = history(cluster(), record(70.0, 0, 0), read(71.0, 1, complete=False))
    assert check_source_sequence(h, settings()).status == "unknown"


# -- the whole
def test_judge_picks_the_connect_checkers_by_kind():
    h = history(cluster(end=60.0), drained(50.0), member_stop("m1", 53.0),
                *(record(55.0, 0, s) for s in range(5)), read(56.0, 5))
    h.events[0]["connect_settings"] = settings().to_dict()
    vs = judge(h)
    assert set(vs) == {"schedule_performed", *CONNECT_CHECKERS, "commit_durability"}
    assert vs["connect_task_exclusive"].status == "valid"
    json.dumps({n: v.to_dict() for n, v in vs.items()})


def test_check_connect_on_an_empty_history_is_unknown():
    vs = check_connect(history(run_start(0.0), member_start("m1", 1.0), run_end(5.0)), settings())
    assert all(v.status == "unknown" for v in vs.values())


def test_delay_fails_when_staying_workers_give_work_up_for_a_returning_one():
    """A returning worker should take the departed one's work back alone: m3, which stayed, giving task 2 up
    meanwhile is a move too many."""
    base = [*cluster(), member_exit("m2", 20.0, how="kill"), *worker("m4", 21.0, 2), task_started("m4", 36.0, 1),
            drained(90.0)]
    v = check_scheduled_delay(history(base), settings())
    assert v.status == "valid" and v.measurements["departures"][0]["staying_moved"] == 0
    v = check_scheduled_delay(history(base, task_stopped("m3", 30.0, 2), task_started("m4", 36.0, 2)), settings())
    assert v.status == "invalid" and "which stayed" in v.witnesses[0]["why"]
    assert v.measurements["departures"][0]["staying_moved"] == 1
