"""A gate test that fails as a known client or Kafka bug says which one, and where in its history the bug's marks
hold the failing witnesses; it fails all the same unless the session asks for xfail (--harness-known-findings,
harness/suite/known.py). A failure whose witnesses lie elsewhere is not the bug, whatever its neighbourhood: the
livelock's mark on another member, or absent, or a broker that took the fenced member's commit, excuses nothing.
"""
from types import SimpleNamespace

import pytest

from harness.findings.evidence import commits_refused_unheard
from harness.invariants.core import Verdict
from harness.suite.known import settle
from harness.suite.plugin import failure_message, known_finding
from harness.record.rundir import RunResult
from tests.unit.livelock_history import events, livelock_verdicts, write_run

LIVELOCK = "librdkafka-848-commit-starves-heartbeat"


def _result(run_dir, verdicts=None, status="fail"):
    return RunResult(run_dir, status, verdicts if verdicts is not None else livelock_verdicts(run_dir))


def test_the_history_shows_the_livelock_only_when_refusals_outlast_the_session_timeout(tmp_path):
    (mark,) = commits_refused_unheard(write_run(tmp_path / "a", refused_s=8.0))
    assert mark.says.startswith("m2's commits refused with UNKNOWN_MEMBER_ID 41 times over 8.0s")
    assert "group.consumer.session.timeout.ms=6000" in mark.says
    # the member, what it held, from its last successful commit to its `lost`
    assert (mark.members, mark.partitions, mark.start, mark.end, mark.held_from) == (
        {"m2"}, {("t", 0)}, 8.0, 18.2, 2.0)
    assert commits_refused_unheard(write_run(tmp_path / "b", refused_s=4.0)) == []  # within 6 s
    assert commits_refused_unheard(write_run(tmp_path / "c", refused_s=8.0, session_ms=10000)) == []
    assert commits_refused_unheard(tmp_path / "nowhere") == []


def test_the_livelock_on_broker_partition_is_named_in_the_failure(tmp_path):
    run = write_run(tmp_path / "run", refused_s=8.0)
    msg = failure_message(_result(run))
    assert f"known finding: {LIVELOCK}: librdkafka, consumer protocol" in msg
    assert "this run: m2's commits refused with UNKNOWN_MEMBER_ID 41 times" in msg
    assert "exclusive_ownership: invalid" in msg and f"harness replay {run}" in msg


def test_the_witnesses_of_another_member_than_the_marks_are_not_excused(tmp_path):
    # the done-when case: the same scenario and invariants, the livelock's mark in the history (on m1, t-1), and
    # the failure witnessed on m2 and m3 (t-0): not the livelock
    run = write_run(tmp_path / "run", refused_s=8.0, marked="m1")
    assert [m.members for m in commits_refused_unheard(run)] == [{"m1"}]
    result = _result(run)
    assert known_finding(result) is None
    msg = failure_message(result)
    assert f"not {LIVELOCK}: exclusive_ownership's witness" in msg and "'member': 'm3'" in msg
    assert "known finding:" not in msg
    # the mark on m2, the zombie of the witnesses: the livelock
    assert known_finding(_result(write_run(tmp_path / "m2", refused_s=8.0))).finding.id == LIVELOCK


def test_a_member_that_stops_writing_lost_is_not_the_livelock(tmp_path):
    # m2's client rejoined (its `assigned` at once) after 2 s of refusals, and m2 never wrote `lost`: the mark's
    # refusals for longer than the session timeout are not there
    run = write_run(tmp_path / "run", refused_s=2.0, then="assigned")
    assert commits_refused_unheard(run) == []
    assert known_finding(_result(run)) is None
    assert f"not {LIVELOCK}: its mark is not in the history" in failure_message(_result(run))


def test_a_broker_that_takes_the_fenced_members_commit_is_not_the_livelock(tmp_path):
    # refusals for 7 s, a commit the group took at 17.05, refusals for 8.8 s more: two marks, and the zombie's commit
    # that took effect (exclusive_ownership's witness) lies in neither
    run = write_run(tmp_path / "run", refused_s=16.0, taken_at=17.05)
    marks = commits_refused_unheard(run)
    assert [(m.start, m.end) for m in marks] == [(8.0, 17.0), (17.05, 26.2)]
    verdicts = livelock_verdicts(run)
    taken = next(e for e in events(run, "m2") if e["type"] == "committed" and e["ok"] and e["mono"] == 17.05)
    verdicts["exclusive_ownership"] = Verdict("exclusive_ownership", "invalid", "zombie m2 committed partition 0", (
        verdicts["exclusive_ownership"].witnesses[0], {**taken, "why": "zombie m2's commit took effect"}))
    assert known_finding(_result(run, verdicts)) is None
    assert known_finding(_result(run)) is not None  # the same run with only the zombie's window witnessed


def test_a_witness_outside_the_marks_window_is_not_excused(tmp_path):
    run = write_run(tmp_path / "run", refused_s=8.0)
    verdicts = livelock_verdicts(run)
    late = {"type": "fault_end", "mono": 40.0, "fault_id": "f2", "source": "harness", "why": "the last disturbance"}
    verdicts["convergence_balance"] = Verdict("convergence_balance", "invalid", "not settled", (late,))
    assert known_finding(_result(run, verdicts)) is None
    verdicts["convergence_balance"] = Verdict("convergence_balance", "invalid", "not settled", ())
    assert known_finding(_result(run, verdicts)) is None  # no witness: nothing ties it to the mark


def test_a_failure_beyond_the_findings_invariants_or_elsewhere_is_not_excused(tmp_path):
    run = write_run(tmp_path / "a", refused_s=8.0)
    more = {**livelock_verdicts(run), "record_integrity": Verdict("record_integrity", "invalid", "lost")}
    assert known_finding(_result(run, more)) is None
    for d, kw in (("b", {"protocol": "classic-cooperative"}), ("c", {"scenario": "member-kill"})):
        assert known_finding(_result(write_run(tmp_path / d, refused_s=8.0, **kw))) is None
    assert known_finding(_result(write_run(tmp_path / "d", refused_s=8.0), status="pass")) is None
    assert known_finding(_result(tmp_path / "missing", {})) is None


def _config(mode):
    return SimpleNamespace(getoption=lambda name: mode)


def test_xfail_only_when_asked_and_only_for_a_known_finding(tmp_path):
    known = known_finding(_result(write_run(tmp_path / "run", refused_s=8.0)))
    with pytest.raises(pytest.xfail.Exception, match=f"^known finding: {LIVELOCK}\nwitnesses"):
        settle(_config("xfail"), "witnesses", known)
    with pytest.raises(pytest.fail.Exception):
        settle(_config("fail"), "witnesses", known)
    with pytest.raises(pytest.fail.Exception):
        settle(_config("xfail"), "witnesses", None)  # any other failure fails


def test_a_run_with_an_unknown_verdict_is_never_taken_for_a_known_finding(tmp_path):
    r = _result(write_run(tmp_path / "run", refused_s=8.0))
    assert known_finding(r) is not None
    r.verdicts["record_integrity"] = Verdict("record_integrity", "unknown", "the drain never finished")
    assert known_finding(r) is None
