"""Verify: Ctrl-C part way through a run leaves no process and no bound port, and marks the run incomplete.

Setup: `harness run scale-out-in` (and, second, the pytest chaos suite) in a subprocess.
Then: once members are running, SIGINT (what Ctrl-C sends); every broker, Toxiproxy and member
process the run started must be gone, their ports free, and STATUS must say incomplete.
"""
import json
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tests.integration.leftovers import MARK, assert_gone, listening_ports, marked_env

pytestmark = pytest.mark.integration
READY = "stable (initial assignment)"
#: how long the stop may take: the pool's grace for its runs' teardowns (a minute), then killing what is left and
#: stopping the session cluster (a CI run under two test files at a time took over a minute once, unexplained)
STOP_S = 150


def _interrupt_when_ready(cmd, *, runs: int = 1):
    """Start cmd, wait for the members of `runs` runs to be running, SIGINT it; returns (exit code, output, child
    cmdlines, pids, ports, the mark its processes carry)."""
    env = marked_env()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if sum(READY in s for s in seen) >= runs:
                break
        assert sum(READY in s for s in seen) >= runs, "".join(seen)
        children = psutil.Process(proc.pid).children(recursive=True)
        pids = [c.pid for c in children]
        names = " ".join(" ".join(c.cmdline()) for c in children)
        ports = listening_ports(pids)
        proc.send_signal(signal.SIGINT)
        try:
            rest, _ = proc.communicate(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGUSR1)  # every thread's stack (harness/base/procs.py), then give up
            time.sleep(3)
            proc.kill()
            rest, _ = proc.communicate()
            raise AssertionError(f"still running {STOP_S} s after SIGINT; its output and thread stacks:\n"
                                 + ("".join(seen) + rest)[-12000:]) from None
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, "".join(seen) + rest, names, pids, ports, env[MARK]


def _assert_nothing_left(pids, ports, mark, run_dir):
    assert_gone(pids, ports, mark)
    assert (run_dir / "STATUS").read_text().startswith("incomplete")
    assert "status" not in json.loads((run_dir / "run.json").read_text())


def test_ctrl_c_leaves_nothing_behind(tmp_path):
    rc, out, names, pids, ports, mark = _interrupt_when_ready(
        [sys.executable, "-m", "harness.cli", "run", "scale-out-in", "--seed", "7", "--runs-root", str(tmp_path)])
    assert "kafka.Kafka" in names and "toxiproxy" in names and "member.py" in names, names
    assert ports, "the run's processes listen on no port?"
    assert rc == 130, out
    _assert_nothing_left(pids, ports, mark, next(tmp_path.glob("*scale-out-in*")))


def test_ctrl_c_during_the_suite_leaves_nothing_behind(tmp_path):
    """The same for the pytest suites: Ctrl-C while a scenario runs, then nothing of it remains."""
    rc, out, names, pids, ports, mark = _interrupt_when_ready(
        [sys.executable, "-m", "pytest", "suites/test_chaos.py", "-p", "no:cacheprovider", "-s", "-k", "member-kill",
         "-o", "log_cli=true", "--log-cli-level=INFO", "--harness-protocol", "classic-cooperative",
         "--harness-runs-root", str(tmp_path)])  # not the consumer protocol's known first-assignment bug (below)
    assert "kafka.Kafka" in names and "member.py" in names, names
    assert rc != 0, out
    _assert_nothing_left(pids, ports, mark, next(tmp_path.glob("*member-kill*")))


def test_ctrl_c_during_concurrent_runs_of_the_suite_leaves_nothing_behind(tmp_path):
    """The same with two runs at once on the session cluster (--harness-concurrency 2): both stop, both say
    incomplete. On the classic cooperative protocol: both runs must reach their initial assignment before the
    Ctrl-C, and librdkafka's consumer-protocol first assignment given away (docs/findings.md) once left a clean
    clone's member-kill run without one for 60 s, so the test never saw two runs ready."""
    rc, out, names, pids, ports, mark = _interrupt_when_ready(
        [sys.executable, "-m", "pytest", "suites/test_chaos.py", "-p", "no:cacheprovider", "-s", "-k",
         "member-kill or scale-out-in", "-m", "smoke", "-o", "log_cli=true", "--log-cli-level=INFO",
         "--harness-protocol", "classic-cooperative", "--harness-concurrency", "2", "--harness-runs-root",
         str(tmp_path)], runs=2)
    assert "kafka.Kafka" in names and "member.py" in names, names
    assert "[classic-cooperative-member-kill]" in out and "[classic-cooperative-scale-out-in]" in out, out
    assert rc != 0, out
    assert_gone(pids, ports, mark)
    dirs = sorted(tmp_path.glob("*-classic-cooperative-*"))
    assert len(dirs) == 2, dirs
    for d in dirs:
        assert (d / "STATUS").read_text().startswith("incomplete"), d
