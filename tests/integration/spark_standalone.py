"""A Spark standalone cluster on loopback, started from the installed pyspark's own launcher.

pyspark's wheel ships `bin/spark-class` (its `sbin/` has only the history server's scripts, no
`start-master.sh`), so the master and each worker are `spark-class org.apache.spark.deploy.master.Master` and
`... deploy.worker.Worker`, each in a process group of its own (`spark-class` execs the JVM, so the pid we hold
is the JVM's). Everything binds to 127.0.0.1 on free ports; logs, the workers' work dirs and Spark's scratch
space live under `root`. `stop()` ends those groups (SIGTERM, then SIGKILL) and nothing else.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import psutil
import requests

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_class() -> Path:
    import pyspark
    path = Path(pyspark.__file__).parent / "bin" / "spark-class"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the installed pyspark has no launcher")
    return path


class StandaloneCluster:
    """A master and `workers` workers of `cores` cores and `memory` each, on 127.0.0.1."""

    def __init__(self, root: Path, workers: int = 2, cores: int = 1, memory: str = "1g"):
        self.root, self.n_workers, self.cores, self.memory = Path(root), workers, cores, memory
        self.procs: dict[str, subprocess.Popen] = {}
        self.port, self.ui_port = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"

    def env(self) -> dict:
        """The environment of the cluster's JVMs (and of a driver that should talk to them over loopback)."""
        return {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
                "SPARK_CONF_DIR": str(self.root / "conf"), "SPARK_LOCAL_DIRS": str(self.root / "scratch"),
                "SPARK_LOG_DIR": str(self.root / "logs"), "SPARK_DAEMON_MEMORY": "256m"}

    def _launch(self, name: str, *args: str) -> None:
        for d in ("conf", "scratch", "logs"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        log = open(self.root / "logs" / f"{name}.log", "wb")
        self.procs[name] = subprocess.Popen([str(spark_class()), *args], stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=self.env(), cwd=self.root,
                                            start_new_session=True)
        log.close()

    def start(self, timeout: float = 120.0) -> str:
        """Start the master, then the workers; return the master URL once every worker is ALIVE in the master's
        own status (its `/json` page)."""
        self._launch("master", MASTER, "--host", "127.0.0.1", "--port", str(self.port),
                     "--webui-port", str(self.ui_port))
        self._wait(lambda s: True, timeout, "the master to answer")
        for i in range(self.n_workers):
            work = self.root / f"work-{i}"
            work.mkdir(parents=True, exist_ok=True)
            self._launch(f"worker-{i}", WORKER, "--host", "127.0.0.1", "--port", str(free_port()),
                         "--webui-port", str(free_port()), "--cores", str(self.cores), "--memory", self.memory,
                         "--work-dir", str(work), self.url)
        self._wait(lambda s: s.get("aliveworkers", 0) >= self.n_workers, timeout,
                   f"{self.n_workers} workers to register")
        return self.url

    def status(self) -> dict:
        return requests.get(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5).json()

    def _wait(self, ok, timeout: float, what: str) -> dict:
        end = time.monotonic() + timeout
        while True:
            dead = {n: p.returncode for n, p in self.procs.items() if p.poll() is not None}
            if dead:
                raise RuntimeError(f"spark {', '.join(dead)} exited ({dead}) while waiting for {what}; "
                                   f"logs under {self.root / 'logs'}")
            try:
                s = self.status()
                if ok(s):
                    return s
            except (requests.RequestException, ValueError):
                pass
            if time.monotonic() > end:
                raise TimeoutError(f"no {what} after {timeout:.0f}s; logs under {self.root / 'logs'}")
            time.sleep(0.5)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs.values()]

    def group_members(self, groups=None) -> list[int]:
        """Live processes in the cluster's process groups (the JVMs and whatever they started: executors, their
        Python workers)."""
        groups, out = set(self.pids if groups is None else groups), []
        for p in psutil.process_iter(["status"]):
            try:
                if os.getpgid(p.pid) in groups and p.info["status"] != psutil.STATUS_ZOMBIE:
                    out.append(p.pid)
            except (ProcessLookupError, psutil.NoSuchProcess):
                pass
        return out

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM every group this cluster started (workers first), SIGKILL what is left after `grace` s."""
        order = [n for n in self.procs if n != "master"] + [n for n in self.procs if n == "master"]
        for name in order:
            _signal_group(self.procs[name].pid, signal.SIGTERM)
        end = time.monotonic() + grace
        while self.group_members() and time.monotonic() < end:
            time.sleep(0.2)
        for name in order:
            if self.group_members([self.procs[name].pid]):
                _signal_group(self.procs[name].pid, signal.SIGKILL)
        for p in self.procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
