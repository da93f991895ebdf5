"""The lag-driven autoscaler on a real cluster, through the CLI.

Verify: `harness run autoscale --seed 1` passes, and within the autoscale fault window the autoscaler both
started a member (scale out) and stopped one (scale in).
Setup: the built-in file harness/plan/builtin/autoscale.toml (two members at 20 ms per record, a burst of 3.5 times
the base rate for 30 s inside an 80 s autoscale).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def _events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]


@pytest.mark.parametrize("proto", [pytest.param("classic-cooperative", marks=pytest.mark.nightly),
                                   pytest.param("consumer", marks=pytest.mark.nightly)])
def test_autoscale_scales_out_and_in_and_passes(tmp_path, proto):
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "run", "autoscale", "--seed", "1", "--protocol", proto,
                           "--runs-root", str(tmp_path), "--quiet"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    run_dir = next(p for p in tmp_path.iterdir() if p.is_dir())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (run_dir / "STATUS").read_text().split()[0] == "pass"
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["status"] == "pass" and meta["config"]["processing_ms"] == 20.0
    events = _events(run_dir / "history" / "harness.jsonl")
    start = next(e for e in events if e["type"] == "fault_start" and e["kind"] == "autoscale")
    end = next(e for e in events if e["type"] == "fault_end" and e["fault_id"] == start["fault_id"])
    inside = [e for e in events if start["mono"] <= e["mono"] <= end["mono"]]
    assert any(e["type"] == "member_start" for e in inside), "no scale out by the autoscaler"
    assert any(e["type"] == "member_exit" and e["how"] == "graceful" for e in inside), "no scale in by the autoscaler"
    result = next(a["result"] for a in meta["schedule_ran"] if a["kind"] == "autoscale")
    scales = [d["scale"] for d in result["decisions"]]
    assert "out" in scales and "in" in scales and result["rates"][0] == [0.0, 175.0]
    assert max(lag for _, lag, _ in result["samples"]) > 300
