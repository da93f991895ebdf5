"""The run directory: status from verdicts, exit codes, making and opening one, STATUS (harness/record/rundir.py)."""
from __future__ import annotations

import json

import pytest

from harness.base.errors import BadInput
from harness.invariants import Verdict
from harness.record.rundir import EXIT_CODES, RunDir, RunResult, exit_code, status_of


@pytest.mark.parametrize("statuses, expected", [
    ([], "unknown"),  # nothing judged is never a pass
    (["valid"], "pass"),
    (["valid", "skipped"], "pass"),
    (["skipped"], "unknown"),  # nothing judged: every checker skipped
    (["skipped", "skipped"], "unknown"),
    (["valid", "unknown"], "unknown"),
    (["unknown", "skipped"], "unknown"),
    (["invalid"], "fail"),
    (["valid", "invalid", "unknown"], "fail"),
    (["invalid", "skipped"], "fail"),
])
def test_status_of_each_combination(statuses, expected):
    assert status_of(statuses) == expected
    assert status_of(iter(statuses)) == expected  # a generator is read once, correctly


@pytest.mark.parametrize("status, code", [("pass", 0), ("fail", 1), ("unknown", 1), ("error", 2),
                                          ("incomplete", 2), ("no-such-status", 2)])
def test_exit_codes(status, code, tmp_path):
    assert exit_code(status) == code
    assert RunResult(tmp_path, status).exit_code == code


def test_create_makes_the_layout_marked_incomplete(tmp_path):
    d = RunDir.create(tmp_path / "runs", "20260101T000000-member-kill-consumer-1")
    assert d.path.parent == tmp_path / "runs"
    assert d.history_dir.is_dir() and d.logs_dir.is_dir()
    assert (d.path / "STATUS").read_text() == "incomplete\n"
    assert d.status() == "incomplete"


def test_create_makes_unique_names(tmp_path):
    names = [RunDir.create(tmp_path, "run").name for _ in range(3)]
    assert names == ["run", "run-2", "run-3"]


def test_set_status_with_a_reason_and_refusing_unknown_statuses(tmp_path):
    d = RunDir.create(tmp_path, "r")
    d.set_status("error", "broker 2 did not start")
    assert (d.path / "STATUS").read_text().splitlines() == ["error", "broker 2 did not start"]
    assert d.status() == "error"
    with pytest.raises(ValueError, match="unknown run status 'passed'"):
        d.set_status("passed")
    assert d.status() == "error"
    assert not list(d.path.glob("*.tmp"))


def test_status_of_a_directory_without_status_is_incomplete(tmp_path):
    d = RunDir(tmp_path)
    assert d.status() == "incomplete"
    (tmp_path / "STATUS").write_text("")
    assert d.status() == "incomplete"


def test_open_refuses_a_missing_path_in_one_line(tmp_path):
    with pytest.raises(BadInput) as e:
        RunDir.open(tmp_path / "nope")
    assert "no such directory" in str(e.value) and "\n" not in str(e.value)


def test_open_refuses_a_plain_directory_in_one_line(tmp_path):
    (tmp_path / "history").mkdir()  # a history/ alone does not make a run directory
    with pytest.raises(BadInput) as e:
        RunDir.open(tmp_path)
    assert "is not a run directory" in str(e.value) and "\n" not in str(e.value)
    assert not RunDir.is_run_dir(tmp_path)


def test_open_takes_a_run_directory(tmp_path):
    d = RunDir.create(tmp_path, "r")
    d.write_json("run.json", {"run_id": "r"})
    assert RunDir.is_run_dir(d.path)
    assert RunDir.open(d.path).meta() == {"run_id": "r"}
    assert not list(d.path.glob("*.tmp"))


def test_meta_that_cannot_be_read_is_bad_input(tmp_path):
    d = RunDir.create(tmp_path, "r")
    (d.path / "run.json").write_text("{not json")
    with pytest.raises(BadInput, match="run.json cannot be read"):
        d.meta()


def test_write_verdicts_returns_the_status(tmp_path):
    d = RunDir.create(tmp_path, "r")
    vs = {"a": Verdict("a", "valid", "fine"), "b": Verdict("b", "invalid", "two owners")}
    assert d.write_verdicts(vs) == "fail"
    assert json.loads((d.path / "verdicts.json").read_text())["b"]["status"] == "invalid"
    assert d.verdicts()["a"]["message"] == "fine"
    assert d.write_verdicts({}) == "unknown"


def test_write_error_goes_to_logs(tmp_path):
    d = RunDir.create(tmp_path, "r")
    p = d.write_error("Traceback ...")
    assert p == d.logs_dir / "harness-error.txt" and p.read_text() == "Traceback ..."


def test_every_status_has_an_exit_code():
    assert set(EXIT_CODES) == {"pass", "fail", "unknown", "error", "incomplete"}
