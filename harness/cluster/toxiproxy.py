"""Toxiproxy: the server built with `go install` at a pinned version, and faults through toxiproxy-python."""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer

from harness.base.errors import SetupError
from harness.base.procs import Proc
from harness.base.tools import cache_dir, require_tool

_log = logging.getLogger(__name__)

#: toxiproxy-python keeps the API's address on a class (process-wide): with two servers in one process (the
#: session's cluster and the docker suite's, or a run's own) and runs in threads (harness/drive/pool.py), every use
#: of the API holds this lock from pointing it at a server until it is done with that server
_API_LOCK = threading.RLock()

TOXIPROXY_VERSION = "v2.12.0"
MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"


def server_binary(*, progress=_log.info) -> Path:
    """The toxiproxy server binary, built once into the cache."""
    d = cache_dir() / "toxiproxy" / TOXIPROXY_VERSION
    binary = d / "server"
    if binary.exists():
        return binary
    go = require_tool("go", why="build the Toxiproxy server")
    d.mkdir(parents=True, exist_ok=True)
    with open(d / ".lock", "w") as lock:  # two processes at once (./dev smoke's background image build): one builds
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists():
            return binary
        progress(f"building Toxiproxy {TOXIPROXY_VERSION} with go install ...")
        env = {**os.environ, "GOBIN": str(d)}
        with open(d / "build.log", "w") as log:
            r = subprocess.run([go, "install", f"{MODULE}@{TOXIPROXY_VERSION}"], env=env, stdout=log,
                               stderr=subprocess.STDOUT)
        if r.returncode != 0 or not binary.exists():
            raise SetupError(f"go install of Toxiproxy {TOXIPROXY_VERSION} failed (see {d / 'build.log'})")
    return binary


class ToxiproxyServer:
    """A running toxiproxy server on loopback; proxies and toxics through toxiproxy-python."""

    def __init__(self, *, port: int, log_path: Path, progress=_log.info) -> None:
        self.port = port
        self.binary = server_binary(progress=progress)
        self.log_path = log_path
        self.proc: Proc | None = None
        self.client = Toxiproxy()

    def start(self, *, timeout_s: float = 10.0) -> None:
        self.proc = Proc.spawn([str(self.binary), "-host", "127.0.0.1", "-port", str(self.port)],
                               log_path=self.log_path, name="toxiproxy")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.proc.alive():
                raise SetupError(f"toxiproxy exited at start (see {self.log_path})")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/version", timeout=1).read()
                return
            except OSError:
                time.sleep(0.1)
        raise SetupError(f"toxiproxy did not answer on port {self.port} within {timeout_s}s (see {self.log_path})")

    def activate(self) -> None:
        """Point toxiproxy-python at this server (hold `using()` meanwhile: another thread may re-point it)."""
        APIConsumer.host, APIConsumer.port = "127.0.0.1", self.port

    @contextlib.contextmanager
    def using(self):
        """The API pointed at this server, and no other thread re-pointing it, while the block runs."""
        with _API_LOCK:
            self.activate()
            yield self.client

    def create(self, *, name: str, listen: str, upstream: str):
        with self.using() as client:
            try:
                return client.create(name=name, listen=listen, upstream=upstream, enabled=True)
            except KeyError:  # toxiproxy-python's way of failing on the server's refusal (it answered no proxy)
                raise SetupError(f"Toxiproxy (API port {self.port}) refused the proxy {name} listening on {listen} "
                                 f"(upstream {upstream}); its log: {self.log_path}") from None

    def proxy(self, name: str):
        """A proxy by name; use it inside `using()` (the object calls the API wherever it is pointed)."""
        with self.using() as client:
            return client.get_proxy(name)

    def stop(self) -> None:
        if self.proc:
            self.proc.terminate_and_wait()
            self.proc = None
