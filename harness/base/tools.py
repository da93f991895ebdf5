"""Where cached artefacts live, and checks for the external tools the harness needs."""
from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

from harness.base.errors import BadInput, SetupError


def cache_dir() -> Path:
    """The cache for Kafka classpaths, Toxiproxy and client installs ($HARNESS_CACHE or ~/.cache)."""
    base = os.environ.get("HARNESS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "kafka-rebalance-harness")
    p = Path(base)
    p.mkdir(parents=True, exist_ok=True)
    return p


def require_tool(name: str, *, why: str) -> str:
    """The path of an executable, or a SetupError naming what is missing and why it is needed."""
    path = shutil.which(name)
    if not path:
        raise SetupError(f"'{name}' was not found on PATH; it is needed to {why}")
    return path


def free_ports(n: int, *, host: str = "127.0.0.1") -> list[int]:
    """n distinct TCP ports that were free a moment ago (held open together so they differ)."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def ensure_port_free(port: int, *, host: str = "127.0.0.1", what: str = "port") -> None:
    """Raise BadInput when a port the user chose is already in use."""
    s = socket.socket()
    try:
        s.bind((host, port))
    except OSError:
        raise BadInput(f"{what} {host}:{port} is already in use") from None
    finally:
        s.close()
