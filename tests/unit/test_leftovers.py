"""The clean-up tests' check of what a run left behind fails on a leftover and only on one.

Setup: small Python processes listening on a port, started with or without a mark.
Then: a marked process still alive fails the check, though the test never listed it; a port of the run's, freed and
then taken by a process of no run's, does not.
"""
import socket
import subprocess
import sys

import pytest

from tests.integration.leftovers import MARK, assert_gone, marked_env

LISTEN = "import socket,sys,time; s=socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(); " \
         "print('up', flush=True); time.sleep(60)"


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _listener(port: int, env=None) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", LISTEN, str(port)], stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "up"
    return p


@pytest.fixture
def procs():
    started = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def test_a_marked_process_left_alive_fails_the_check_though_never_listed(procs):
    env = marked_env()
    procs.append(_listener(_free_port(), env))
    with pytest.raises(AssertionError, match="processes left behind"):
        assert_gone([], {_free_port()}, env[MARK])


def test_a_listed_process_still_holding_its_port_fails_the_check(procs):
    port = _free_port()
    p = _listener(port)
    procs.append(p)
    with pytest.raises(AssertionError, match="processes left behind"):
        assert_gone([p.pid], {port}, marked_env()[MARK])


def test_a_freed_port_taken_by_a_process_of_no_run_is_not_a_leftover(procs, capsys):
    port = _free_port()
    procs.append(_listener(port))  # not marked: another test's process that took the port once the run freed it
    assert_gone([], {port}, marked_env()[MARK])
    assert f"{port}" in capsys.readouterr().out
