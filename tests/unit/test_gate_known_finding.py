"""A gate test that fails on a known client or Kafka bug says which one, and fails all the same."""
import json

from harness.invariants.core import Verdict
from harness.pytest_plugin import failure_message, known_finding
from harness.rundir import RUN_JSON, RunResult


def _result(tmp_path, *, protocol="consumer", scenario="broker-partition", invalid=("exclusive_ownership",),
            member="python"):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    cfg = {"scenario": scenario, "protocol": protocol, "client_version": None, "member": member}
    (run_dir / RUN_JSON).write_text(json.dumps({"config": cfg, "client_version": "2.16.1"}))
    verdicts = {"commit_progress": Verdict("commit_progress", "valid", "every processed record committed")}
    verdicts.update({n: Verdict(n, "invalid", f"{n} failed") for n in invalid})
    return RunResult(run_dir, "fail", verdicts)


def test_the_librdkafka_livelock_on_broker_partition_is_named_in_the_failure(tmp_path):
    msg = failure_message(_result(tmp_path, invalid=("exclusive_ownership", "coverage_liveness", "convergence_balance")))
    assert "known finding librdkafka-848-commit-starves-heartbeat" in msg
    assert "exclusive_ownership: invalid" in msg and msg.startswith("run run: fail")
    assert f"harness replay {tmp_path / 'run'}" in msg


def test_a_failure_beyond_the_findings_invariants_is_not_excused(tmp_path):
    assert known_finding(_result(tmp_path, invalid=("exclusive_ownership", "record_integrity"))) is None


def test_another_protocol_or_scenario_is_no_known_finding(tmp_path):
    assert known_finding(_result(tmp_path, protocol="classic-cooperative")) is None
    (tmp_path / "b").mkdir()
    assert known_finding(_result(tmp_path / "b", scenario="member-kill")) is None


def test_a_pass_or_a_run_without_run_json_names_nothing(tmp_path):
    r = _result(tmp_path)
    assert known_finding(RunResult(r.run_dir, "pass", {})) is None
    assert known_finding(RunResult(tmp_path / "missing", "fail", r.verdicts)) is None
    assert "known finding" not in failure_message(RunResult(tmp_path / "missing", "fail", r.verdicts))
