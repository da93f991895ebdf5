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


# The same cell's second run (20261208T021048-connect-rack-outage-sessioned-60239837): task harness-source-1 ran
# once, on m2, and stopped cleanly, its stop's commit covering all it polled (4140); yet 470..479 are in the source
# topic twice, at offsets 470..479 and again at 480..489. The rack outage (fault f1, brokers_affected [1]) began
# 0.04 s before task 1 polled 470..479; m2's log, 02:12:23.992: "Got error produce response ... on topic-partition
# ...-src-1, retrying ... Error: NETWORK_EXCEPTION. Error Message: Disconnected from node 1". Connect's source
# producers are not idempotent (Worker sets enable.idempotence=false), so the batch broker 1 had written before the
# connection dropped was sent again to the new leader: at-least-once, one run, no restart. Here by hand: a batch of
# ten every 0.2 s from 5.3 s, a commit every 50, the fault from 14.68 s (just before 470..479) to 74.68 s.

def _one_run(dup: range, *, brokers=(1,), config: dict | None = None) -> list[dict]:
    events = cluster()
    if config is not None:
        events = [{**e, "settings": config} if e["type"] == "started" and e.get("member") == "m2" else e
                  for e in events]
    polled = [batch("m2", 5.3 + 0.02 * s, 1, s, s + 9) for s in range(0, 4140, 10)]
    commits = [commit("m2", 5.4 + 0.02 * s, 1, s) for s in range(50, 4140, 50)]
    read_back = [record(95.0, 1, s) for s in [*range(4140), *dup]]
    other = [record(95.0, n, s) for n in (0, 2, 3) for s in range(10)]
    return [*events, fault_start(14.68, "f1", ["m1"], kind="rack_outage", brokers=brokers),
            *polled, *commits, fault_end(74.68, "f1"), commit("m2", 88.5, 1, 4140), task_stopped("m2", 88.5, 1),
            *read_back, *other, read(96.0, len(read_back) + len(other))]


def test_a_batch_resent_under_a_broker_fault_passes():
    """The second run's cell: 470..479, polled 0.02 s into the fault that reached broker 1, come twice; the run's
    last commit before the fault was 450, so they were unacknowledged when the broker went."""
    v = check_source_sequence(history(*_one_run(range(470, 480))), settings())
    assert v.status == "valid", v.message
    assert v.measurements["duplicated"] == 0 and v.measurements["in_flight_redone"] == 0
    assert v.measurements["duplicated_allowed"] == v.measurements["resent_in_broker_fault"] == 10


def test_the_same_duplicates_fail_when_the_fault_reached_no_broker():
    """Twin: the fault reached worker m1 only; no produce request of task 1 was cut, so twice is a violation."""
    v = check_source_sequence(history(*_one_run(range(470, 480), brokers=())), settings())
    assert v.status == "invalid" and v.measurements["duplicated"] == 10
    assert v.measurements["resent_in_broker_fault"] == 0
    assert "stopped cleanly" in v.witnesses[0]["why"]


def test_a_duplicate_acknowledged_before_the_broker_fault_still_fails():
    """300..309 were committed (450) before the fault began: the broker had acknowledged them, nothing resends them."""
    v = check_source_sequence(history(*_one_run(range(300, 310))), settings())
    assert v.status == "invalid" and v.measurements["duplicated"] == 10
    assert "unacknowledged under a broker fault: 450..3469" in v.witnesses[0]["why"]


def test_a_duplicate_polled_after_the_broker_fault_ended_still_fails():
    """4000..4009 were polled at 85.3 s, after the fault's end (74.68 s)."""
    v = check_source_sequence(history(*_one_run(range(4000, 4010))), settings())
    assert v.status == "invalid" and v.measurements["duplicated"] == 10


def test_duplicates_fail_when_the_worker_made_its_producers_idempotent():
    """Twin: `producer.enable.idempotence=true` in m2's worker config; the broker drops a resent batch itself."""
    v = check_source_sequence(history(*_one_run(range(470, 480), config={"producer.enable.idempotence": "true"})),
                              settings())
    assert v.status == "invalid" and v.measurements["duplicated"] == 10
    assert v.measurements["resent_in_broker_fault"] == 0
