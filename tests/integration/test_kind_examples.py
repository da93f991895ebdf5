"""Verify: the Kafka Streams and Kafka Connect worked examples of docs/scenarios.md run through the CLI and pass.

Setup: `harness run docs/examples/<file>.toml --seed 1` as a user runs it, on its own cluster of the local
backend; then the run directory says which kind of group ran, with the file's settings, and the schedule drawn.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]
EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.mark.parametrize("example, run_protocol, group_kind, settings, steps", [
    pytest.param("streams-kill-and-replace", "classic", "streams", ("streams_settings", {"num.standby.replicas": 1}),
                 ["sleep", "kill_member", "wait_stable"], marks=pytest.mark.nightly),  # the longest in ./dev test
    pytest.param("connect-kill-past-delay", "sessioned", "connect",
                 ("connect_settings", {"scheduled.rebalance.max.delay.ms": 4000, "harness.source.tasks": 2}),
                 ["sleep", "kill_member", "wait_stable"], marks=pytest.mark.nightly),  # two minutes; Connect's smoke
                 # case (a worker killed, sessioned) runs in ./dev smoke
])
def test_a_kind_example_runs_through_the_cli_and_passes(tmp_path, example, run_protocol, group_kind, settings, steps):
    path = EXAMPLES / f"{example}.toml"
    r = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(path), "--seed", "1", "--quiet",
                        "--runs-root", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (run_dir,) = [p.parent for p in tmp_path.rglob("run.json")]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["config"]["scenario"] == example and meta["config"]["scenario_file"] == str(path)
    assert meta["config"]["protocol"] == run_protocol
    assert meta["kind"] == group_kind, meta.get("kind")
    key, want = settings
    assert {k: meta[key][k] for k in want} == want
    assert [a["kind"] for a in meta["schedule"]] == steps
    assert (run_dir / "STATUS").read_text().split()[0] == "pass"
    verdicts = json.loads((run_dir / "verdicts.json").read_text())
    assert all(v["status"] in ("valid", "skipped") for v in verdicts.values()), verdicts
    assert sum(v["status"] == "valid" for v in verdicts.values()) >= 5, verdicts
