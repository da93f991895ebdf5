"""Verify: the CLI's manners for a team writing a scenario: `harness --version`, "did you mean" for a misspelt
scenario, and `harness run ... --dry-run`, which checks everything that needs no cluster, prints the schedule and
starts nothing.

Setup: the CLI's `main` in-process, every way to start something (a cluster, a backend's preflight, a child process)
made to fail the test, a runs root under tmp_path that must not be made, and the cache of resolved Kafka releases
pointed at tmp_path where a test needs it empty.
Then: `--version` names the installed version; `run memberkill` is one line, exit 2, naming member-kill; `--dry-run`
of a built-in and of a file prints every step in order and exits 0, and a step out of its bounds, or an alias never
resolved here, is one line and exit 2, nothing started either way.
"""
from __future__ import annotations

from importlib.metadata import version

import pytest

from harness.cli import main


def test_version_names_the_installed_release(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"harness {version('kafka-rebalance-harness')}"


def test_a_misspelt_scenario_says_what_was_meant(tmp_path, capsys, nothing_starts):
    code = main(["run", "memberkill", "--runs-root", str(tmp_path / "runs")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "did you mean member-kill" in err[0], err
    assert "scale-out-in" not in err[0]  # not the list of every name
    assert not (tmp_path / "runs").exists()


def test_a_dry_run_prints_the_schedule_and_starts_nothing(tmp_path, capsys, nothing_starts):
    code = main(["run", "member-kill", "--dry-run", "--seed", "7", "--kafka-version", "4.4.0",
                 "--runs-root", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "scenario member-kill (built-in)" in out and "Kafka 4.4.0" in out and "seed 7" in out
    steps = [line.split(". ", 1)[1].split(" ")[0] for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert steps == ["sleep", "kill_member", "wait_stable", "replace_member", "wait_stable"], out
    assert "not checked" in out and not (tmp_path / "runs").exists()


def test_a_dry_run_of_a_file_refuses_a_step_out_of_bounds_in_one_line(tmp_path, capsys, nothing_starts):
    f = tmp_path / "s.toml"
    body = 'name = "s"\n[members]\ncount = 3\n[[steps]]\naction = "kill_member"\nslot = {}\n'
    f.write_text(body.format(1))
    assert main(["run", str(f), "--dry-run", "--kafka-version", "4.4.0"]) == 0
    assert "kill_member {'slot': 1}" in capsys.readouterr().out
    f.write_text(body.format(7))
    assert main(["run", str(f), "--dry-run", "--kafka-version", "4.4.0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "slot" in err[0] and "not 7" in err[0], err


def test_a_dry_run_on_an_alias_never_resolved_here_says_how_to_resolve_it(tmp_path, capsys, nothing_starts,
                                                                           monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    assert main(["run", "member-kill", "--dry-run", "--kafka-version", "latest"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has not been resolved on this machine" in err[0] and "harness kafka latest" in err[0]
