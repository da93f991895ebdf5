"""Verify: Kafka Streams as on Kubernetes (streams-pod-restarts): an instance restarted with its state
directory kept resumes its tasks' stores from their checkpoints, one restarted with it wiped starts every
task's store from the beginning of its changelog, and the run passes every Streams invariant.

Setup: `harness run streams-pod-restarts --protocol classic --seed 1` through the CLI on its own cluster.
Marked nightly: a long Streams run that a CI gate leaves to the night (`./dev test -m nightly`).
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.nightly]
ROOT = Path(__file__).resolve().parents[2]


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]


def test_kept_state_restores_little_and_wiped_state_restores_all(tmp_path):
    r = subprocess.run([sys.executable, "-m", "harness.cli", "run", "streams-pod-restarts", "--protocol", "classic",
                        "--seed", "1", "--quiet", "--runs-root", str(tmp_path)], cwd=ROOT, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    run_dir = next(tmp_path.glob("*-streams-pod-restarts-classic-1"))
    meta = json.loads((run_dir / "run.json").read_text())
    kept, wiped = [a["result"] for a in meta["schedule_ran"] if a["kind"] == "bounce"]
    assert "state_wiped_bytes" not in kept and wiped["state_wiped_bytes"] > 0
    hist = run_dir / "history"
    assert [e["slot"] for e in events(hist / "harness.jsonl") if e["type"] == "state_wiped"] == [
        next(a["params"]["slot"] for a in meta["schedule_ran"] if a["params"].get("wipe_state"))]

    def first_starts(member):  # task -> the changelog offset its first restore or standby began at
        out = {}
        for e in events(hist / f"member-{member}.jsonl"):
            if e["type"] in ("restore_start", "standby_start"):
                out.setdefault(e["task"], e["start"])
        return out
    kept_starts, wiped_starts = first_starts(kept["started"]), first_starts(wiped["started"])
    # the kept directory's checkpoints: its tasks resume where they were; the wiped one starts every task at 0
    assert any(o > 0 for o in kept_starts.values()), kept_starts
    assert wiped_starts and all(o == 0 for o in wiped_starts.values()), wiped_starts
