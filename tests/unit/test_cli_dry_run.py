"""Verify: the CLI's manners for a team writing a scenario: `harness --version`, "did you mean" for a misspelt
scenario, and `harness run ... --dry-run`, which checks everything that needs no cluster, prints the schedule and
starts nothing.

Setup: the CLI's `main` in-process, every way to start something (a cluster, a backend's preflight, a child process)
made to fail the test (and, for the issue's own command, a fork, a spawn or a bound socket too, and the process's
children compared before and after), a runs root under tmp_path that must not be made, and the cache of resolved
Kafka releases (and of a release's setting names) pointed at tmp_path, empty or holding what a machine that ran once
holds.
Then: `--version` names the installed version; `run memberkill` is one line, exit 2, naming member-kill; `--dry-run`
of a built-in and of a file prints every step in order and exits 0 (`run member-kill --dry-run` with no option, on a
machine where `latest` was resolved: no child process, no runs/), and a step out of its bounds, or an alias never
resolved here, is one line and exit 2, nothing started either way; a misspelt broker or group setting is one line
naming the one meant where the release's names are kept, and said not checked where they are not.
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


@pytest.fixture
def latest_resolved_here(tmp_path, monkeypatch):
    """A cache (HARNESS_CACHE) where `latest` was last resolved to 4.4.0, whose jars are kept: what a machine
    that ran once holds (the jars themselves are never read by a dry run)."""
    from harness.kafka import dist
    cache = tmp_path / "cache"
    (cache / "kafka" / "4.4.0").mkdir(parents=True)
    (cache / "kafka" / "4.4.0" / "COMPLETE").write_text(dist._pom_stamp("4.4.0"))
    (cache / "kafka" / "alias-4").write_text("4.4.0\n")
    monkeypatch.setenv("HARNESS_CACHE", str(cache))
    return cache


@pytest.fixture
def nothing_forks_or_listens(monkeypatch, nothing_starts):
    """Besides `nothing_starts`: a fork, a spawn or a bound socket fails the test too."""
    import os
    import socket
    from conftest import Started

    def started(*a, **k):
        raise Started(f"started: {a[:1]}")
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, started)
    monkeypatch.setattr(socket.socket, "bind", started)
    monkeypatch.setattr(socket.socket, "listen", started)


def test_the_dry_run_of_the_issue_prints_the_schedule_and_starts_no_process(tmp_path, capsys, latest_resolved_here,
                                                                           nothing_forks_or_listens, monkeypatch):
    import psutil
    monkeypatch.chdir(tmp_path)  # the default runs root, runs/, would be made here
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    assert main(["run", "member-kill", "--dry-run"]) == 0  # the command as the issue says it: no option
    out = capsys.readouterr().out
    assert "Kafka 4.4.0 (latest, as last resolved here)" in out and "schedule (5 steps):" in out, out
    assert {p.pid for p in psutil.Process().children(recursive=True)} == before
    assert list(tmp_path.iterdir()) == [latest_resolved_here]  # no runs/, no run directory


def _kept_names(cache, kind: str, names: list[str]) -> None:
    """The `kind` setting names of Kafka 4.4.0 kept in `cache`, as harness/kafka/config_names.py keeps them."""
    from harness.kafka import config_names
    d = cache / "config-names" / "4.4.0"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{kind}.txt").write_text("".join(f"{line}\n" for line in [f"# {config_names._key(kind)}", *names]))


def test_a_dry_run_names_the_broker_and_group_setting_meant_where_the_names_are_kept(
        capsys, latest_resolved_here, nothing_forks_or_listens):
    run = ["run", "member-kill", "--dry-run", "--kafka-version", "4.4.0"]
    assert main([*run, "--broker-set", "num.io.thread=8"]) == 0  # names not kept: said, not guessed
    assert "the broker and group setting keys (the release's names are not kept here)" in capsys.readouterr().out
    _kept_names(latest_resolved_here, "broker", ["num.io.threads", "num.network.threads"])
    _kept_names(latest_resolved_here, "group", ["consumer.session.timeout.ms"])
    assert main([*run, "--broker-set", "num.io.thread=8"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # refused before the schedule is printed
    assert captured.err.strip() == ("harness: broker setting 'num.io.thread' is not defined by Kafka 4.4.0; "
                                    "did you mean num.io.threads?")
    assert main([*run, "--group-set", "consumer.session.timeout.m=9000"]) == 2
    assert "did you mean consumer.session.timeout.ms?" in capsys.readouterr().err
    assert main([*run, "--broker-set", "num.io.threads=8", "--group-set", "consumer.session.timeout.ms=9000"]) == 0
    assert "the broker and group setting keys (the names the release defines, kept here)" in capsys.readouterr().out
