"""Verify: `streams_rebalance_cause` fails a real Streams run whose instance sets off rebalances that nothing in the
history caused, and passes its clean twin (nightly: five to six minutes each).

Setup: test_streams_misbehaving.py's quiet scenario (two instances on two tasks of small state, nothing done to them
for 130 s), once with `--misbehave thread-churn` (slot 0's instance adds a stream thread and removes it again every
second once it runs: each a member joining or leaving the group, which no step of the scenario did), once without.
Then: the churning run's verdict is `invalid`, a storm naming the budget (1 stream thread x 2 x (ceil(2 tasks / 2) +
1) rounds per cause) from the recorded settings; the clean twin's is `valid`, every generation caused by the two
instances' starts and final stops.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.record.schema import validate_dir
from tests.integration.test_streams_misbehaving import QUIET  # the one quiet scenario of the Streams self-tests

pytestmark = [pytest.mark.integration, pytest.mark.nightly]
ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, Path, dict]:
    f = tmp_path / "streams-quiet.toml"
    f.write_text(QUIET)
    root = tmp_path / "runs"
    r = subprocess.run([sys.executable, "-m", "harness", "run", str(f), "--seed", "1", "--runs-root", str(root), *args],
                       cwd=ROOT, capture_output=True, text=True, timeout=1500)
    (d,) = [p for p in root.iterdir() if p.is_dir()]
    return r, d, json.loads((d / "verdicts.json").read_text())


def _verdict(verdicts: dict) -> dict:
    return verdicts["streams_rebalance_cause"]


def test_thread_churn_is_a_storm_of_rebalances_without_a_cause(tmp_path):
    r, d, verdicts = _run(tmp_path, "--misbehave", "thread-churn")
    v = _verdict(verdicts)
    assert r.returncode == 1, (r.stdout + r.stderr)[-4000:]
    assert v["status"] == "invalid", v
    assert "a storm of rebalances" in v["message"] and "stream thread(s)" in v["message"], v
    assert v["measurements"]["storms"] >= 1 and sum(v["measurements"]["rebalances"].values()) > 20, v
    assert any(w.get("type") == "broker" for w in v["witnesses"]), v
    assert validate_dir(d / "history") == []


def test_its_clean_twin_has_a_cause_for_every_rebalance(tmp_path):
    r, d, verdicts = _run(tmp_path)
    v = _verdict(verdicts)
    assert v["status"] == "valid", v
    assert v["measurements"]["uncaused"] == 0 and v["measurements"]["storms"] == 0, v
    assert validate_dir(d / "history") == []
