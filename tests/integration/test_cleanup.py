"""Verify: Ctrl-C part way through a run leaves no process and no bound port, and marks the run incomplete.

Setup: `harness run scale-out-in` in a subprocess with its own cluster.
Then: once members are running, SIGINT (what Ctrl-C sends); the harness must end every broker,
Toxiproxy and member process it started, free their ports, and leave STATUS saying incomplete.
"""
import json
import signal
import subprocess
import sys
import time

import psutil
import pytest

pytestmark = pytest.mark.integration


def _listening_ports(pids):
    ports = set()
    for pid in pids:
        try:
            ports |= {c.laddr.port for c in psutil.Process(pid).net_connections(kind="tcp")
                      if c.status == psutil.CONN_LISTEN}
        except psutil.NoSuchProcess:
            pass
    return ports


def test_ctrl_c_leaves_nothing_behind(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "scale-out-in", "--seed", "7",
                             "--runs-root", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    try:
        deadline = time.monotonic() + 180
        for line in proc.stdout:
            seen.append(line)
            if "stable (initial assignment)" in line or time.monotonic() > deadline:
                break
        assert any("stable (initial assignment)" in s for s in seen), "".join(seen)
        children = psutil.Process(proc.pid).children(recursive=True)
        pids = [c.pid for c in children]
        names = " ".join(" ".join(c.cmdline()) for c in children)
        assert "kafka.Kafka" in names and "toxiproxy" in names and "member.py" in names, names
        ports = _listening_ports(pids)
        assert ports, "the run's processes listen on no port?"
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, "".join(seen) + rest
    time.sleep(0.5)
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"processes left behind: {alive}"
    bound = {c.laddr.port for c in psutil.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}
    assert not ports & bound, f"ports still bound: {ports & bound}"
    run_dir = next(tmp_path.glob("*scale-out-in*"))
    assert (run_dir / "STATUS").read_text().startswith("incomplete")
    assert "status" not in json.loads((run_dir / "run.json").read_text())


def test_ctrl_c_during_the_suite_leaves_nothing_behind(tmp_path):
    """The same for the pytest suites: Ctrl-C while a scenario runs, then nothing of it remains."""
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "suites/test_chaos.py", "-p", "no:cacheprovider", "-s",
                             "-k", "member-kill", "--protocol", "consumer", "--runs-root", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if "stable (initial assignment)" in line:
                break
        assert any("stable (initial assignment)" in s for s in seen), "".join(seen)
        children = psutil.Process(proc.pid).children(recursive=True)
        pids = [c.pid for c in children]
        ports = _listening_ports(pids)
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, "".join(seen) + rest
    time.sleep(0.5)
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"processes left behind: {alive}"
    bound = {c.laddr.port for c in psutil.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}
    assert not ports & bound, f"ports still bound: {ports & bound}"
    run_dir = next(tmp_path.glob("*member-kill*"))
    assert (run_dir / "STATUS").read_text().startswith("incomplete")
