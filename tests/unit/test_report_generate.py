"""`harness report` without the generator at hand: clear errors, and history carried into the results."""
import pytest

from harness.cli import main
from harness.base.errors import BadInput, SetupError
from harness.report import generate


def test_missing_node_is_one_setup_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    monkeypatch.setattr("harness.base.procs.install_signal_handlers", lambda: None)  # keep pytest's own handlers
    with pytest.raises(SetupError, match="'node' was not found"):
        generate.allure_binary(progress=lambda *_: None)
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "x-result.json").write_text("{}")
    assert main(["report", "--results", str(tmp_path / "res"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "node" in err[0]


def test_no_results_is_bad_input(tmp_path):
    with pytest.raises(BadInput, match="no Allure results"):
        generate.generate(tmp_path / "missing", tmp_path / "out")


def test_history_is_carried_over(tmp_path):
    (tmp_path / "out" / "history").mkdir(parents=True)
    (tmp_path / "out" / "history" / "history-trend.json").write_text("[]")
    (tmp_path / "res").mkdir()
    assert generate.carry_history(tmp_path / "res", tmp_path / "out")
    assert (tmp_path / "res" / "history" / "history-trend.json").read_text() == "[]"
    assert not generate.carry_history(tmp_path / "res", tmp_path / "none")
