"""Verify: `harness check` judges a run directory from its history alone, and refuses what is not one.

Setup: small synthetic run directories (harness.analytics.synth), whose run.json has no check settings,
and the CLI's `main` called in-process.
"""
import json
import shutil

import pytest

from harness.analytics import synth
from harness.cli import main
from harness.record.rundir import RunDir


@pytest.fixture(scope="module")
def synth_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth")
    synth.generate(str(out), 3, 2000, seed=1)
    return out


def _valid_run(root):
    return next(p for p in sorted(root.iterdir()) if RunDir.is_run_dir(p) and RunDir(p).status() in ("pass", "fail"))


def test_check_needs_only_the_history(synth_runs, tmp_path, capsys):
    run = _valid_run(synth_runs)
    copy = tmp_path / run.name
    shutil.copytree(run, copy)
    meta = json.loads((copy / "run.json").read_text())
    meta.pop("check_settings", None)
    (copy / "run.json").write_text(json.dumps(meta))
    code = main(["check", str(copy)])
    out = capsys.readouterr().out
    assert code in (0, 1)
    for name in ("exclusive_ownership", "coverage_liveness", "record_integrity"):
        assert name in out


def test_check_refuses_a_plain_directory(tmp_path, capsys):
    assert main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a run directory" in err[0]


def test_check_refuses_an_unreadable_history(synth_runs, tmp_path, capsys):
    copy = tmp_path / "r"
    shutil.copytree(_valid_run(synth_runs), copy)
    (copy / "history" / "harness.jsonl").write_text('{"type":"header","schema":"other","version":1}\n')
    assert main(["check", str(copy)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a rebalance-history file" in err[0], err


def test_aggregate_refuses_a_missing_directory(tmp_path, capsys):
    assert main(["aggregate", str(tmp_path / "nonexistent"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such directory" in err[0]
    assert not (tmp_path / "out").exists()


def test_check_of_a_run_that_did_not_finish_says_so_and_is_no_pass(synth_runs, tmp_path, capsys):
    """An interrupted run keeps STATUS `incomplete`: judged again, its partial history is printed, never a pass."""
    copy = tmp_path / "r"
    shutil.copytree(_valid_run(synth_runs), copy)
    RunDir(copy).set_status("incomplete", "interrupted (Ctrl-C) while running")
    assert main(["check", str(copy)]) == 2
    out = capsys.readouterr().out
    assert "exclusive_ownership" in out
    *_, said, last = out.strip().splitlines()
    assert said.startswith("status: incomplete (the run did not finish: interrupted (Ctrl-C) while running): these "
                           "verdicts judge a partial")
    assert last.startswith("incomplete: the run did not finish (interrupted (Ctrl-C) while running)"), last
