"""Verify: Ctrl-C during `harness run --repeat` stops it cleanly on a real cluster: the table of the runs done so far,
exit 130, the run in progress marked incomplete, no process and no bound port left.

Setup: `harness run member-kill --repeat 3 --seed 1` in a subprocess (one shared local cluster).
Then: once the second run's members are running, SIGINT (what Ctrl-C sends); the output ends with the table of
one run and says the second was interrupted; every broker, Toxiproxy and member process is gone, their ports
free; the second run's STATUS says incomplete.
"""
import signal
import subprocess
import sys
import time

import psutil
import pytest

from harness.record.rundir import RunDir
from harness.drive.seeds import nth
from tests.integration.leftovers import MARK, assert_gone, listening_ports, marked_env

pytestmark = pytest.mark.integration


def test_ctrl_c_during_a_repeat_prints_the_table_so_far_and_leaves_nothing(tmp_path):
    env = marked_env()
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "member-kill", "--repeat", "3", "--seed", "1",
                             "--runs-root", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if "run 2/3" in line:
                break
        assert any("run 2/3" in s for s in seen), "".join(seen)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:  # the second run's members are up
            children = psutil.Process(proc.pid).children(recursive=True)
            if any("member.py" in " ".join(c.cmdline()) for c in children if c.is_running()):
                break
            time.sleep(0.5)
        pids = [c.pid for c in children]
        names = " ".join(" ".join(c.cmdline()) for c in children)
        ports = listening_ports(pids)
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    out = "".join(seen) + rest
    assert "kafka.Kafka" in names and "toxiproxy" in names and "member.py" in names, names
    assert proc.returncode == 130, out
    assert "runs: 1 (on one cluster)" in out and "time per run: median" in out, out
    assert f"interrupted after 1 of at most 3 runs, during the run of seed {nth(1, 2)}" in out, out
    assert_gone(pids, ports, env[MARK])
    second = next(p for p in next(tmp_path.glob("repeat-*")).iterdir() if p.name.endswith(f"-{nth(1, 2)}"))
    assert RunDir.is_run_dir(second) and (second / "STATUS").read_text().startswith("incomplete")
