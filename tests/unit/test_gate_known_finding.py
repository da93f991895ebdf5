"""A gate test that fails as a known client or Kafka bug says which one, and what in its history shows it; it
fails all the same unless the session asks for xfail (--harness-known-findings, harness/pytest_known.py)."""
from types import SimpleNamespace

import pytest

from harness.findings_evidence import commits_refused_unheard
from harness.invariants.core import Verdict
from harness.pytest_known import settle
from harness.pytest_plugin import failure_message, known_finding
from harness.rundir import RunResult
from tests.unit.livelock_history import write_run

LIVELOCK = ("exclusive_ownership", "coverage_liveness", "convergence_balance")


def _result(run_dir, invalid=LIVELOCK, status="fail"):
    verdicts = {"commit_progress": Verdict("commit_progress", "valid", "every processed record committed")}
    verdicts.update({n: Verdict(n, "invalid", f"{n} failed") for n in invalid})
    return RunResult(run_dir, status, verdicts)


def test_the_history_shows_the_livelock_only_when_refusals_outlast_the_session_timeout(tmp_path):
    seen = commits_refused_unheard(write_run(tmp_path / "a", refused_s=8.0))
    assert seen.startswith("m2's commits refused with UNKNOWN_MEMBER_ID 41 times over 8.0s")
    assert "group.consumer.session.timeout.ms=6000" in seen
    assert commits_refused_unheard(write_run(tmp_path / "b", refused_s=4.0)) is None  # within 6 s
    assert commits_refused_unheard(write_run(tmp_path / "c", refused_s=8.0, session_ms=10000)) is None
    assert commits_refused_unheard(tmp_path / "nowhere") is None


def test_the_livelock_on_broker_partition_is_named_in_the_failure(tmp_path):
    run = write_run(tmp_path / "run", refused_s=8.0)
    msg = failure_message(_result(run))
    assert "known finding librdkafka-848-commit-starves-heartbeat" in msg
    assert "this run: m2's commits refused with UNKNOWN_MEMBER_ID 41 times" in msg
    assert "exclusive_ownership: invalid" in msg and f"harness replay {run}" in msg


def test_the_same_invariants_without_the_livelock_in_the_history_are_no_known_finding(tmp_path):
    assert known_finding(_result(write_run(tmp_path / "run", refused_s=1.0))) is None


def test_a_failure_beyond_the_findings_invariants_or_elsewhere_is_not_excused(tmp_path):
    assert known_finding(_result(write_run(tmp_path / "a", refused_s=8.0), LIVELOCK + ("record_integrity",))) is None
    assert known_finding(_result(write_run(tmp_path / "b", refused_s=8.0, protocol="classic-cooperative"))) is None
    assert known_finding(_result(write_run(tmp_path / "c", refused_s=8.0, scenario="member-kill"))) is None
    assert known_finding(_result(write_run(tmp_path / "d", refused_s=8.0), status="pass")) is None
    assert known_finding(_result(tmp_path / "missing")) is None


def _config(mode):
    return SimpleNamespace(getoption=lambda name: mode)


def test_xfail_only_when_asked_and_only_for_a_known_finding(tmp_path):
    known = known_finding(_result(write_run(tmp_path / "run", refused_s=8.0)))
    with pytest.raises(pytest.xfail.Exception, match="witnesses"):
        settle(_config("xfail"), "witnesses", known)
    with pytest.raises(pytest.fail.Exception):
        settle(_config("fail"), "witnesses", known)
    with pytest.raises(pytest.fail.Exception):
        settle(_config("xfail"), "witnesses", None)  # any other failure fails


def _cooperative_run(run_dir, *, lost_at_once: bool):
    from harness.history_format import HistoryWriter
    hist = run_dir / "history"
    hist.mkdir(parents=True)
    with HistoryWriter(hist / "member-m1.jsonl", source="member", member="m1") as mw:
        mw.record({"type": "assigned", "mono": 2.0, "wall": 2.0, "member": "m1", "partitions": [["t", 0], ["t", 3]]})
        mw.record({"type": "committed", "mono": 17.34, "wall": 17.34, "member": "m1", "ok": False,
                   "error": "KafkaError{code=ILLEGAL_GENERATION,val=22}", "requested_mono": 17.3,
                   "offsets": [["t", 0, 144]]})
        if not lost_at_once:  # the refused commit's partitions revoked by a rebalance that told the member
            mw.record({"type": "revoked", "mono": 17.35, "wall": 17.35, "member": "m1", "partitions": [["t", 3]]})
        mw.record({"type": "lost", "mono": 17.36, "wall": 17.36, "member": "m1", "partitions": [["t", 0]]})
    return run_dir


def test_the_cooperative_commit_race_shows_as_a_refused_commit_then_lost_at_once(tmp_path):
    from harness.findings import known
    from harness.findings_evidence import illegal_generation_lost
    run = _cooperative_run(tmp_path / "a", lost_at_once=True)
    assert illegal_generation_lost(run).startswith("m1's commit refused with ILLEGAL_GENERATION at 17.340")
    assert illegal_generation_lost(_cooperative_run(tmp_path / "b", lost_at_once=False)) is None
    args = dict(scenario="member-kill", protocol="classic-cooperative", member="python",
                failed={"convergence_balance", "commit_progress"}, run_dir=run)
    assert known(client_version="2.3.0", **args).id == "librdkafka-4059-commit-during-cooperative-rebalance"
    assert known(client_version="2.10.0", **args) is None  # fixed there
    assert known(client_version="2.3.0", **{**args, "failed": {"record_integrity"}}) is None


def test_a_run_with_an_unknown_verdict_is_never_taken_for_a_known_finding(tmp_path):
    r = _result(write_run(tmp_path / "run", refused_s=8.0))
    assert known_finding(r) is not None
    r.verdicts["record_integrity"] = Verdict("record_integrity", "unknown", "the drain never finished")
    assert known_finding(r) is None
