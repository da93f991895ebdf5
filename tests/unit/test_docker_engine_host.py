"""Verify: the docker backend's own engine keeps its socket and pid file in a private directory, and the harness never
installs a package unasked.

Setup: harness/cluster/docker_engine.py with no real engine: the runtime directory under tmp_path, `answers`, the
process table and PATH lookups monkeypatched; any child process fails the test.
Then: a missing runtime directory is made 0700; one of this user's that no one else could write is narrowed to
0700 and used; one another user owns, one others may write, or a link in its place is refused in one line naming
it, and neither its socket is asked nor an engine started nor a pid in it signalled; with no `dockerd` the backend
says the command to run (apt-get install docker.io) and runs nothing.
"""
from __future__ import annotations

import os
import stat
import subprocess

import pytest

from harness.base.errors import SetupError
from harness.cluster import docker_engine
from harness.cluster.docker_engine import OwnEngine


@pytest.fixture
def own(tmp_path, monkeypatch):
    engine = OwnEngine(tmp_path / "data", tmp_path / "rt")
    monkeypatch.setattr(OwnEngine, "default", classmethod(lambda cls: engine))
    monkeypatch.delenv("DOCKER_HOST", raising=False)

    def no_child(*a, **k):
        raise AssertionError(f"a child process was started: {a[:1]}")
    monkeypatch.setattr(subprocess, "Popen", no_child)
    monkeypatch.setattr(subprocess, "run", no_child)
    return engine


def _mode(p) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def test_a_missing_runtime_directory_is_made_private(own):
    assert own.private_runtime(create=False) is False and not own.runtime.exists()
    assert own.private_runtime(create=True) is True
    assert _mode(own.runtime) == 0o700 and os.lstat(own.runtime).st_uid == os.getuid()


def test_ones_own_directory_no_one_else_could_write_is_narrowed(own):
    own.runtime.mkdir(mode=0o755)
    os.chmod(own.runtime, 0o755)
    assert own.private_runtime(create=False) is True and _mode(own.runtime) == 0o700


@pytest.mark.parametrize("how", ["world-writable", "group-writable", "other-owner", "symlink", "file"])
def test_a_runtime_directory_that_is_not_private_is_refused(own, tmp_path, monkeypatch, how):
    if how == "symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        os.symlink(tmp_path / "elsewhere", own.runtime)
    elif how == "file":
        own.runtime.write_text("")
    else:
        own.runtime.mkdir()
        os.chmod(own.runtime, {"world-writable": 0o777, "group-writable": 0o770, "other-owner": 0o700}[how])
    if how == "other-owner":
        uid = os.getuid()
        monkeypatch.setattr(docker_engine.os, "getuid", lambda: uid + 4242)
    with pytest.raises(SetupError) as e:
        own.private_runtime(create=True)
    line = str(e.value)
    assert "\n" not in line and str(own.runtime) in line and "is not private" in line and "0700" in line
    if how in ("world-writable", "group-writable"):
        assert _mode(own.runtime) in (0o777, 0o770)  # left as it was, never taken over


def test_ensure_engine_neither_asks_nor_starts_through_a_directory_not_private(own, monkeypatch):
    own.runtime.mkdir()
    os.chmod(own.runtime, 0o777)
    asked = []
    monkeypatch.setattr(docker_engine, "answers", lambda host: asked.append(host) or False)
    monkeypatch.setattr(docker_engine.shutil, "which", lambda name: f"/usr/bin/{name}")
    with pytest.raises(SetupError, match="is not private"):
        docker_engine.ensure_engine(progress=lambda *_: None)
    assert asked == [f"unix://{docker_engine.SYSTEM_SOCKET}"]  # the system's socket only, never the planted one


def test_stop_own_engine_signals_no_pid_from_a_directory_not_private(own, monkeypatch):
    own.runtime.mkdir()
    os.chmod(own.runtime, 0o777)
    own.pid_file.write_text("1\n")
    monkeypatch.setattr(docker_engine.os, "kill", lambda *a: pytest.fail(f"signalled {a}"))
    assert docker_engine.stop_own_engine() is False


def test_no_dockerd_says_the_command_and_installs_nothing(own, monkeypatch):
    monkeypatch.setattr(docker_engine, "answers", lambda host: False)
    monkeypatch.setattr(docker_engine.shutil, "which", lambda name: "/usr/bin/apt-get" if name == "apt-get" else None)
    monkeypatch.setattr(docker_engine.os, "getuid", lambda: 0)
    with pytest.raises(SetupError) as e:
        docker_engine.ensure_engine(progress=lambda *_: None)
    line = str(e.value)
    assert "\n" not in line and "'dockerd' is not installed" in line and "apt-get install docker.io" in line
    assert "installs nothing" in line


def test_no_dockerd_through_the_cli_is_one_line_and_exit_2(own, monkeypatch, tmp_path, capsys):
    from harness.cli import main
    monkeypatch.setattr(docker_engine, "answers", lambda host: False)
    monkeypatch.setattr(docker_engine.shutil, "which", lambda name: None)
    runs = tmp_path / "runs"
    code = main(["run", "scale-out-in", "--backend", "docker", "--runs-root", str(runs)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "'dockerd' is not installed" in err[0], err
    assert "apt-get" not in err[0]  # no apt-get here: the system's package, named as such
    assert not runs.exists()
