"""What a harness process left behind: the tests of Ctrl-C's clean-up share it."""
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
