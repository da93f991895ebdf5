"""Verify: a scenario file (docs/examples/kill-and-bounce.toml) runs through the CLI and passes.

Setup: `harness run docs/examples/kill-and-bounce.toml --seed 1` as a user runs it, on its own cluster.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.nightly]  # over a minute; scenario files run
# through the CLI in ./dev test in test_request_faults_real.py and through the plugin in test_two_topics.py
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "kill-and-bounce.toml"


def test_example_file_runs_and_passes(tmp_path):
    r = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(EXAMPLE), "--seed", "1", "--quiet",
                        "--runs-root", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    run_dir = next(tmp_path.glob("*-kill-and-bounce-classic-cooperative-1"))
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["config"]["scenario"] == "kill-and-bounce"
    assert meta["config"]["scenario_file"] == str(EXAMPLE)
    assert meta["config"]["scenario_text"] == EXAMPLE.read_text()
    assert [a["kind"] for a in meta["schedule"]] == ["sleep", "kill_member", "wait_stable", "sleep", "broker_bounce",
                                                     "wait_stable"]
