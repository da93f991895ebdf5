"""A Docker engine for the docker backend: one that answers, or a `dockerd` the harness starts itself.

Where the engine is looked for, in order: `DOCKER_HOST` (when set it must answer: the user chose it),
`/var/run/docker.sock`, then the harness's own engine from an earlier run. When none answers the harness
starts `dockerd` (Debian's `docker.io`, which `./dev setup` installs; the harness itself never installs a
package: without `dockerd` it says the command to run) with its own data root under the cache and its own socket,
pid file and log under a runtime directory that must be private (this user's, mode 0700: one made by anyone else is
refused, never used, since its socket and pid file would be theirs). That engine is left
running for later runs (starting one takes seconds and it holds the built images); nothing of a run
stays in it, since every run removes its containers and networks (docs/docker.md).
A machine where no engine answers and none can start gets one line and exit 2 (`SetupError`).
"""
from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from harness.base.errors import SetupError
from harness.base.tools import cache_dir

_log = logging.getLogger(__name__)

SYSTEM_SOCKET = "/var/run/docker.sock"
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class OwnEngine:
    """Where the engine the harness starts keeps its parts. Sockets and the exec root live under a short
    runtime path (a unix socket path is limited to 108 bytes; containerd adds to the exec root)."""

    data_root: Path
    runtime: Path

    @classmethod
    def default(cls) -> "OwnEngine":
        data = cache_dir() / "dockerd"  # one engine per cache; its socket under a short path (108 bytes at most)
        tag = hashlib.sha256(str(data.resolve()).encode()).hexdigest()[:8]
        return cls(data, Path(f"/tmp/harness-dockerd-{os.getuid()}-{tag}"))

    def private_runtime(self, *, create: bool) -> bool:
        """Whether the runtime directory is there and private (a directory, not a link, of this user, mode 0700);
        made so when `create` and missing (one of this user's that no one else could write is narrowed to 0700).
        SetupError when it is there and not private: its socket and pid file would be another user's to plant."""
        if create:
            try:
                os.mkdir(self.runtime, 0o700)
            except FileExistsError:
                pass
        try:
            st = os.lstat(self.runtime)
        except FileNotFoundError:
            return False
        mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not mode & 0o022:
            if mode & 0o077:  # ours, and never writable by others (an older harness made it 0755): made private
                os.chmod(self.runtime, 0o700)
            return True
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a directory"
        raise SetupError(f"{self.runtime}, the harness's docker engine's runtime directory, is not private "
                         f"({kind}, owner uid {st.st_uid}, mode {mode:04o}; wanted a directory of uid "
                         f"{os.getuid()}, mode 0700): remove it, or set DOCKER_HOST")

    @property
    def socket(self) -> Path:
        return self.runtime / "docker.sock"

    @property
    def host(self) -> str:
        return f"unix://{self.socket}"

    @property
    def pid_file(self) -> Path:
        return self.runtime / "dockerd.pid"

    @property
    def log(self) -> Path:
        return self.data_root / "dockerd.log"

    def command(self, dockerd: str) -> list[str]:
        return [dockerd, "--data-root", str(self.data_root / "data"), "--exec-root", str(self.runtime / "exec"),
                "-H", self.host, "-p", str(self.pid_file), "--storage-driver", "overlay2"]


def client_for(host: str):
    """A docker-py client for host, negotiating the API version (a newer client than the daemon is usual)."""
    import docker
    return docker.DockerClient(base_url=host, version="auto", timeout=120)


def answers(host: str) -> bool:
    """Whether an engine answers a ping on host."""
    try:
        c = client_for(host)
        try:
            return bool(c.ping())
        finally:
            c.close()
    except Exception:
        return False


def candidates(environ: dict | None = None) -> list[tuple[str, bool]]:
    """Where to look, in order, as (host, required): DOCKER_HOST alone when it is set (it must answer),
    else the system socket and then the harness's own engine."""
    env = os.environ if environ is None else environ
    if env.get("DOCKER_HOST"):
        return [(env["DOCKER_HOST"], True)]
    return [(f"unix://{SYSTEM_SOCKET}", False), (OwnEngine.default().host, False)]


def ensure_engine(*, progress=_log.info) -> str:
    """The address of an engine that answers (started here when none does); exported as DOCKER_HOST for
    testcontainers, which reads it, and testcontainers configured for it (`configure_testcontainers`).
    SetupError (exit 2) when there is none and none can start."""
    own = OwnEngine.default()
    for host, required in candidates():
        if host == own.host and not own.private_runtime(create=False):
            continue  # none made yet: started below
        if answers(host):
            return _use(host)
        if required:
            raise SetupError(f"DOCKER_HOST={host} does not answer; start that engine or unset DOCKER_HOST "
                             f"so the harness starts its own")
    own.data_root.mkdir(parents=True, exist_ok=True)
    with open(own.data_root / ".start.lock", "w") as lock:  # two processes at once (./dev smoke's background
        fcntl.flock(lock, fcntl.LOCK_EX)                     # image build and the docker test): one starts it
        if not answers(own.host):
            start_engine(own, progress=progress)
    return _use(own.host)


def _use(host: str) -> str:
    os.environ["DOCKER_HOST"] = host  # where testcontainers' clients connect, like docker-py's and the CLI's
    configure_testcontainers()
    return host


def configure_testcontainers() -> None:
    """testcontainers' settings for the harness, through its config API (not its environment variables, which
    it reads at import or first use): Ryuk off, since its image cannot be pulled here and the harness reaps by
    label itself; and published ports reached on this machine's loopback, where the docker backend publishes
    them (inside a container testcontainers would otherwise look for them at the default gateway)."""
    from testcontainers.core.config import ConnectionMode, testcontainers_config
    testcontainers_config.ryuk_disabled = True
    testcontainers_config.connection_mode_override = ConnectionMode.docker_host
    testcontainers_config.tc_host_override = "127.0.0.1"


def _dockerd(progress) -> str:
    found = shutil.which("dockerd")
    if found:
        return found
    how = "apt-get install docker.io (as root; ./dev setup does it)" if shutil.which("apt-get") else \
        "your system's Docker engine package"
    raise SetupError(f"no Docker engine answers and 'dockerd' is not installed; the harness installs nothing "
                     f"itself: install it ({how}), or start an engine and set DOCKER_HOST, or use --backend local")


def start_engine(own: OwnEngine, *, progress=_log.info, timeout_s: float = START_TIMEOUT_S) -> None:
    """Start dockerd in its own session (it outlives this run, for the next ones) and wait until it answers."""
    dockerd = _dockerd(progress)
    if os.getuid() != 0:
        raise SetupError("no Docker engine answers and dockerd needs root to start; start an engine and set "
                         "DOCKER_HOST, or use --backend local")
    own.data_root.mkdir(parents=True, exist_ok=True)
    own.private_runtime(create=True)  # SetupError when another user's is in its place
    own.pid_file.unlink(missing_ok=True)  # a stale pid file from a killed engine stops dockerd from starting
    progress(f"no Docker engine answers: starting dockerd (socket {own.socket}, log {own.log}) ...")
    t0 = time.monotonic()
    with open(own.log, "ab") as log:
        proc = subprocess.Popen(own.command(dockerd), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = t0 + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SetupError(f"dockerd exited at start with code {proc.returncode} (see {own.log}); "
                             f"use --backend local, or start an engine and set DOCKER_HOST")
        if answers(own.host):
            progress(f"dockerd is up in {time.monotonic() - t0:.1f}s (pid {proc.pid}; left running for later runs)")
            return
        time.sleep(0.3)
    raise SetupError(f"dockerd did not answer within {timeout_s:.0f}s (see {own.log})")


def stop_own_engine() -> bool:
    """Stop the engine the harness started (SIGTERM to the pid in its pid file); True when one was running."""
    own = OwnEngine.default()
    try:
        if not own.private_runtime(create=False):
            return False
    except SetupError:
        return False  # a pid file in another user's directory names no engine of ours
    try:
        pid = int(own.pid_file.read_text().strip())
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, 15)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return True
