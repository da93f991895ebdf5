"""What a harness process left behind: the tests of Ctrl-C's clean-up share it.

A test starts the harness with `marked_env()`: every process the harness starts inherits the mark (the harness builds
its children's environments from its own), so a leftover is found by its mark even when it started after the test
listed the children. A port the harness's processes listened on counts as left bound only when a process of the
run holds it: the harness takes free ports from the kernel's ephemeral range, so once freed, a port may be taken by
another test's broker running beside this one (two test files run at a time).
"""
import os
import time
import uuid

import psutil

MARK = "LEFTOVERS_MARK"


def marked_env() -> dict:
    """This process's environment plus a mark of its own for the harness process a test starts."""
    return {**os.environ, MARK: uuid.uuid4().hex}


def listening_ports(pids) -> set[int]:
    """The TCP ports the processes `pids` listen on (those already gone count for none)."""
    ports = set()
    for pid in pids:
        try:
            ports |= {c.laddr.port for c in psutil.Process(pid).net_connections(kind="tcp")
                      if c.status == psutil.CONN_LISTEN}
        except psutil.NoSuchProcess:
            pass
    return ports


def _marked(pid: int | None, mark: str | None) -> bool:
    """Whether process `pid` is alive (not a zombie) and carries the mark (a process that went meanwhile does not)."""
    if pid is None or mark is None:
        return False
    try:
        p = psutil.Process(pid)
        return p.environ().get(MARK) == mark and p.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def _describe(pid: int | None) -> str:
    try:
        p = psutil.Process(pid)
        return f"pid {pid} ({' '.join(p.cmdline())[:160]}, started {time.ctime(p.create_time())})"
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError, TypeError):
        return f"pid {pid} (gone or unknown)"


def assert_gone(pids, ports, mark: str | None = None) -> None:
    """None of the processes `pids` is left (zombies count as gone), nor any process carrying `mark`, and none of
    `ports` is held by either."""
    time.sleep(0.5)
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    if mark is not None:
        alive += [pid for pid in psutil.pids() if pid not in alive and _marked(pid, mark)]
    assert not alive, f"processes left behind: {[_describe(p) for p in alive]}"
    assert ports, "the run's processes listened on no port"
    holders = {c.laddr.port: c.pid for c in psutil.net_connections(kind="tcp")
               if c.status == psutil.CONN_LISTEN and c.laddr.port in ports}
    ours = {port: pid for port, pid in holders.items() if pid is None or pid in pids or _marked(pid, mark)}
    assert not ours, f"ports still bound: {ours}"
    others = {port: _describe(pid) for port, pid in holders.items() if port not in ours}
    if others:
        print(f"ports the run freed, since taken by processes not of the run: {others}")
