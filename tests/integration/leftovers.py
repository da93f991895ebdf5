"""What a harness process left behind: the tests of Ctrl-C's clean-up share it."""
import time

import psutil


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


def assert_gone(pids, ports) -> None:
    """None of the processes `pids` is left (zombies count as gone) and none of `ports` is still bound."""
    time.sleep(0.5)
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"processes left behind: {alive}"
    bound = {c.laddr.port for c in psutil.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}
    assert ports and not ports & bound, f"ports still bound: {ports & bound}"
