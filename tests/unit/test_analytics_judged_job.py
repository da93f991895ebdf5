"""Verify: `harness aggregate` over a directory holding the kept run whose only fault did nothing counts it unknown,
not pass, and says "recorded: pass, judged now: unknown".

Setup: a folder with the kept run fixtures/histories/joins-seconds-apart made a finished pass and its vacuous twin
(analytics_cases.py), aggregated by the CLI on a local Spark session (marked integration: it starts a JVM).
Then: the totals count one unknown run and no pass of the twin; the runs table holds it unknown with its recorded
pass beside it; summary.json's `judged_now` and summary.html name it; the unedited run counts pass.
"""
from __future__ import annotations

import json

import pytest

pytest.importorskip("pyspark")

from analytics_cases import kept_pass, vacuous_fault  # noqa: E402
from harness.cli import main  # noqa: E402

pytestmark = pytest.mark.integration


def test_aggregate_counts_the_vacuous_fault_run_unknown(tmp_path, capsys):
    runs = tmp_path / "runs"
    runs.mkdir()
    kept_pass(runs)
    vacuous_fault(runs)
    out = tmp_path / "out"
    assert main(["aggregate", str(runs), "--out", str(out), "--master", "local[1]"]) == 0
    said = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    t = summary["totals"]
    assert (t["runs"], t["unknown_runs"], t["violating_runs"], t["judged_differently"]) == (2, 1, 0, 1), t
    [group] = summary["groups"]
    assert (group["runs"], group["pass"], group["unknown"]) == (2, 1, 1)
    [j] = summary["judged_now"]
    assert j["run_dir"].endswith("kept-vacuous-fault") and (j["recorded"], j["judged_now"]) == ("pass", "unknown")
    assert j["note"] == "recorded: pass, judged now: unknown (schedule_performed)"
    assert "recorded: pass, judged now: unknown (schedule_performed)" in said
    assert "recorded: pass, judged now: unknown (schedule_performed)" in (out / "summary.html").read_text()
