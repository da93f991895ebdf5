"""`connect_source_sequence` and the records in flight at a clean stop: the matrix cell
newest-connect-rack-outage-sessioned (Kafka 4.4.0, run 20261208T014254-connect-rack-outage-sessioned-60239837),
its task harness-source-1 by hand with the run's own numbers (times shifted by -34194 s).

The rack outage (broker 1 and worker m1 down at 11.4 s) stalls the source topic's acknowledgements: task 1 on m2
commits offset 300 at 11.45 s and polls 300..389 until 13.2 s, none of them acknowledged. A rebalance asks it to
stop at 13.1 s (m2's log, 01:43:55.664 "Stopping task harness-source-1"); the stop outlasts
task.shutdown.graceful.timeout.ms (01:44:00.666 "Graceful stop of task harness-source-1 failed."), Connect cancels
it and its final commit covers "0 acknowledged messages" (01:44:00.764), so its commit() (22.57 s, after the stalled
offsets flush) still says 300. Restarted on m2 from 300, it writes 300..309 again: they had landed. At-least-once
allows that redo; the twin where the stop's commit covered all it polled does not.
"""
from __future__ import annotations

from connectbuild import batch, cluster, fault_end, fault_start, history, read, record, settings, task_started, \
    task_stopped
from histbuild import ev

from harness.invariants.connect import check_source_sequence


def commit(m: str, t: float, n: int, offset: int) -> dict:
    return ev("connect_commit", t, "member", member=m, connector="src", task=n, worker=m, offset=offset)


def _task1(stop_commit: int, dup: range) -> list[dict]:
    polled = [batch("m2", 5.3 + 0.02 * s, 1, s, s + 9) for s in range(0, 390, 10)]
    commits = [commit("m2", 6.3 + 0.1 * s / 10, 1, s) for s in range(40, 301, 50)]
    again = [batch("m2", 29.9 + 0.02 * s, 1, s, s + 9) for s in range(300, 400, 10)]
    read_back = [record(70.0, 1, s) for s in [*range(400), *dup]]
    other = [record(70.0, n, s) for n in (0, 2, 3) for s in range(10)]
    return [fault_start(11.44, "f1", ["m1"]), *polled, *commits, fault_end(38.8, "f1"),
            commit("m2", 22.57, 1, stop_commit), task_stopped("m2", 22.57, 1),
            task_started("m2", 29.72, 1, resume=stop_commit), *again, commit("m2", 30.1, 1, 400),
            *read_back, *other, read(71.0, len(read_back) + len(other))]


def test_a_redo_of_what_was_in_flight_at_a_clean_stop_passes():
    """The run's cell: 300..309 written twice, all of them polled after the last commit (300) of a run that
    stopped cleanly."""
    v = check_source_sequence(history(*cluster(), *_task1(300, range(300, 310))), settings())
    assert v.status == "valid", v.message
    assert v.measurements["duplicated"] == 0
    assert v.measurements["duplicated_allowed"] == v.measurements["in_flight_redone"] == 10


def test_the_same_redo_fails_when_the_stop_committed_all_it_polled():
    """Twin: the stop's commit covers 0..389, so nothing was in flight; 300..309 twice is a violation."""
    v = check_source_sequence(history(*cluster(), *_task1(390, range(300, 310))), settings())
    assert v.status == "invalid"
    assert v.measurements["duplicated"] == 10 and v.measurements["in_flight_redone"] == 0
    assert "stopped cleanly" in v.witnesses[0]["why"]


def test_a_duplicate_below_the_last_commit_still_fails():
    """Only what was polled after the run's last commit may come twice: 250..259 was committed (300) before."""
    v = check_source_sequence(history(*cluster(), *_task1(300, range(250, 260))), settings())
    assert v.status == "invalid" and v.measurements["duplicated"] == 10
    assert "in flight at its stops: 300..389" in v.witnesses[0]["why"]


def test_a_duplicate_beyond_what_was_polled_still_fails():
    """390..399 were first polled by the restarted run, so twice is not a redo of the stop's flight."""
    v = check_source_sequence(history(*cluster(), *_task1(300, range(300, 400))), settings())
    assert v.status == "invalid" and v.measurements["duplicated"] == 10
    assert v.measurements["in_flight_redone"] == 90
