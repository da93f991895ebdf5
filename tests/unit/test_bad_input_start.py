"""Verify: bad input to `harness run` is one line on stderr and exit 2 before anything starts.

Setup: the CLI's `main` called in-process, with every way to start something (a cluster object, a child process)
made to fail the test, and a runs root under tmp_path that must not be made.
Then: a scenario file whose `members.count` is `true` or `"3"` (it ran 1 member, or 3 by luck), a non-UTF-8
scenario file (a traceback before), `--members-per-process 0` (ran 1 per process), a `--broker-set` or a scenario
file's broker, client, Streams or Connect setting holding a newline or another control character (it wrote any
property into server.properties, `listeners` included), and `--runs-root` naming a file (a traceback before) are
each refused so; each has a must-pass twin (the same input made good reaches the start, or parses).
"""
from __future__ import annotations

import subprocess

import pytest

from harness.base.errors import BadInput
from harness.cli import main
from harness.plan.config import RunConfig


def _refused(tmp_path, capsys, argv: list[str], *needles: str) -> str:
    runs = tmp_path / "runs"
    code = main(["run", *argv, "--runs-root", str(runs)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    for needle in needles:
        assert needle in err[0], err[0]
    assert not runs.exists(), "a run directory was made"
    return err[0]


def _file(tmp_path, body: str, name: str = "s.toml"):
    path = tmp_path / name
    path.write_text('name = "bad"\n' + body + '\n[[steps]]\naction = "sleep"\ns = 1.0\n')
    return path


@pytest.mark.parametrize("count, shown", [("true", "True"), ('"3"', "'3'"), ("3.0", "3.0")])
def test_a_member_count_that_is_not_a_whole_number_is_refused(tmp_path, capsys, nothing_starts, count, shown):
    path = _file(tmp_path, f"[members]\ncount = {count}")
    line = _refused(tmp_path, capsys, [str(path)], "members.count", "valid integer", shown)
    assert line.startswith(f"harness: {path}")


def test_a_whole_member_count_reads(tmp_path):
    cfg = RunConfig.for_scenario(str(_file(tmp_path, "[members]\ncount = 2")), seed=1)
    assert cfg.scenario_spec.members == 2


def test_a_scenario_file_that_is_not_utf8_is_refused(tmp_path, capsys, nothing_starts):
    path = tmp_path / "latin1.toml"
    path.write_bytes('name = "bad"\ndoc = "caf\u00e9"\n[[steps]]\naction = "sleep"\ns = 1.0\n'.encode("latin-1"))
    _refused(tmp_path, capsys, [str(path)], str(path), "not UTF-8 text (byte 23: b'\\xe9')")
    good = tmp_path / "utf8.toml"
    good.write_bytes(path.read_bytes().decode("latin-1").encode("utf-8"))
    assert RunConfig.for_scenario(str(good), seed=1).scenario == "bad"


def test_members_per_process_0_is_refused(tmp_path, capsys, nothing_starts):
    _refused(tmp_path, capsys, ["member-kill", "--members-per-process", "0"], "--members-per-process 0",
             "1 or more")


@pytest.mark.parametrize("value, shown", [("8\nlisteners=CLIENT://0.0.0.0:1", r"'\n'"), ("8\rx=y", r"'\r'"),
                                          ("8\x00", r"'\x00'"), ("8\u2028x=y", r"'\u2028'"), ("8\tx", r"'\t'")])
def test_a_broker_setting_with_a_control_character_is_refused(tmp_path, capsys, nothing_starts, value, shown):
    _refused(tmp_path, capsys, ["scale-out-in", "--broker-set", f"num.io.threads={value}"], "--broker-set",
             "num.io.threads", "control character", shown)


@pytest.mark.parametrize("flag", ["--client-set", "--group-set", "--streams-set", "--connect-set"])
def test_every_setting_flag_refuses_a_newline(tmp_path, capsys, nothing_starts, flag):
    _refused(tmp_path, capsys, ["scale-out-in", flag, "a.b=1\nlisteners=x"], flag, r"'\n'")


@pytest.mark.parametrize("table, key", [("[cluster.broker_settings]", "num.io.threads"),
                                        ("[members.client_settings]", "fetch.min.bytes"),
                                        ("[group.settings]", "consumer.session.timeout.ms")])
def test_a_scenario_files_setting_with_a_newline_is_refused(tmp_path, capsys, nothing_starts, table, key):
    path = _file(tmp_path, f'{table}\n"{key}" = "8\\nlisteners=CLIENT://0.0.0.0:1"')
    _refused(tmp_path, capsys, [str(path), "--quiet"], key, "control character", r"'\n'")


def test_a_key_a_properties_reader_splits_is_refused(tmp_path, capsys, nothing_starts):
    path = _file(tmp_path, '[cluster.broker_settings]\n"listeners=CLIENT://0.0.0.0:1#" = "x"')
    _refused(tmp_path, capsys, [str(path), "--quiet"], "broker setting", "its key holds '='")


def test_a_good_setting_is_not_refused_by_the_check(tmp_path):
    from harness.plan.config import check_setting_text
    cfg = RunConfig.for_scenario("scale-out-in", seed=1, broker_settings=(("num.io.threads", "8"),),
                                 client_settings=(("client.id.prefix", "a b:c=d"),))
    check_setting_text(cfg, cfg.scenario_spec)
    bad = RunConfig.for_scenario("scale-out-in", seed=1, broker_settings=(("num.io.threads", "8\n"),))
    with pytest.raises(BadInput, match="broker setting 'num.io.threads' refused"):
        check_setting_text(bad, bad.scenario_spec)


def test_runs_root_naming_a_file_is_refused(tmp_path, capsys, nothing_starts):
    f = tmp_path / "afile"
    f.write_text("")
    code = main(["run", "member-kill", "--runs-root", str(f)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"--runs-root {f}: is not a directory" in err[0], err
    code = main(["run", "member-kill", "--runs-root", str(f / "below")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"lies under {f}, which is not a directory" in err[0], err
    assert f.read_text() == "" and f.is_file()


def test_a_runs_root_to_be_made_passes_the_check(tmp_path):
    from harness.plan.options import check_runs_root
    check_runs_root(tmp_path / "new" / "deeper")
    check_runs_root(tmp_path)
    assert not (tmp_path / "new").exists()


def test_the_suites_refuse_a_broker_setting_with_a_newline_before_the_session_cluster(tmp_path):
    import os
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)}
    (tmp_path / "test_one.py").write_text("def test_x(kafka_cluster):\n    pass\n")
    runs = tmp_path / "runs"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "harness.suite.plugin",
                        "--harness-runs-root", str(runs), "--harness-broker-set", "num.io.threads=8\nlisteners=x",
                        "test_one.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    said = [line for line in (r.stdout + r.stderr).splitlines() if "refused" in line]
    assert r.returncode == 2 and len(said) == 1, r.stdout + r.stderr
    assert "--broker-set 'num.io.threads' refused: its value holds the control character '\\n'" in said[0]
    assert not list(runs.glob("cluster-*")), "a session cluster's directory was made"


@pytest.mark.parametrize("builtin, table, key", [("streams-autoscale", "streams", "commit.interval.ms"),
                                                 ("connect-worker-kill", "connect", "offset.flush.interval.ms")])
def test_a_scenario_files_streams_or_connect_setting_with_a_newline_is_refused(tmp_path, capsys, nothing_starts,
                                                                              builtin, table, key):
    from harness.plan import scenarios
    text = scenarios.builtin_text(builtin).replace(f'name = "{builtin}"', 'name = "bad"')
    setting = f'"{key}" = "1\\nlisteners=z"'
    if f"[{table}]\n" in text:
        head, rest = text.split(f"[{table}]\n", 1)
        text = head + f"[{table}]\n" + rest.replace("settings = {", f"settings = {{ {setting}, ", 1)
    else:
        text = text.replace("[[steps]]", f"[{table}]\nsettings = {{ {setting} }}\n\n[[steps]]", 1)
    path = tmp_path / f"{builtin}.toml"
    path.write_text(text)
    _refused(tmp_path, capsys, [str(path), "--quiet"], f"'{key}' refused", "control character", r"'\n'")
