"""Child processes the harness starts: own process group, logs to a file, never leaked.

Every child gets its own process group (so a signal reaches the JVM or Python and anything they
fork) and PR_SET_PDEATHSIG, so even a harness killed with SIGKILL takes its children along. A
registry ends whatever is still running at interpreter exit, on SIGTERM and on Ctrl-C.
"""
from __future__ import annotations

import _thread
import atexit
import ctypes
import os
import faulthandler
import io
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_registry: dict[int, "Proc"] = {}
_lock = threading.Lock()


def _child_setup() -> None:
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


class Proc:
    """One child process in its own process group."""

    def __init__(self, popen: subprocess.Popen, *, name: str, log_path: Path | None) -> None:
        self.popen = popen
        self.name = name
        self.log_path = log_path
        self.pid = popen.pid
        self.paused = False

    @classmethod
    def spawn(cls, cmd: list[str], *, log_path: Path | None, name: str, env: dict | None = None,
              cwd: str | None = None) -> "Proc":
        """Start cmd in a new process group, stdout and stderr to log_path."""
        return cls._start(cmd, name=name, log_path=log_path, stdin=subprocess.DEVNULL, stdout=None, env=env, cwd=cwd)

    @classmethod
    def spawn_piped(cls, cmd: list[str], *, name: str, log_path: Path | None = None) -> "Proc":
        """Start cmd as `spawn` does, its stdin and stdout pipes of the caller's (text, line by line) and its stderr
        to log_path: a helper process the caller talks to."""
        return cls._start(cmd, name=name, log_path=log_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True, bufsize=1)

    @classmethod
    def _start(cls, cmd: list[str], *, name: str, log_path: Path | None, stdin, stdout, **extra) -> "Proc":
        """Popen in a new session that dies with its parent thread (PR_SET_PDEATHSIG), registered for `kill_all`;
        stderr (and stdout, when None) to log_path."""
        out = open(log_path, "ab") if log_path else subprocess.DEVNULL
        try:
            popen = subprocess.Popen(cmd, stdin=stdin, stdout=out if stdout is None else stdout,
                                     stderr=subprocess.STDOUT if stdout is None else out,
                                     start_new_session=True, preexec_fn=_child_setup, **extra)
        finally:
            if log_path:
                out.close()
        p = cls(popen, name=name, log_path=log_path)
        with _lock:
            _registry[p.pid] = p
        return p

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, sig: int) -> None:
        """Send sig to the whole process group (no-op if it is gone)."""
        if self.popen.poll() is not None:
            return
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        self.wait(timeout_s=10)

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        self.signal(signal.SIGCONT)
        self.paused = False

    def wait(self, *, timeout_s: float) -> int | None:
        try:
            rc = self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None
        with _lock:
            _registry.pop(self.pid, None)
        return rc

    def terminate_and_wait(self, *, timeout_s: float = 15.0, signalled: bool = False) -> int | None:
        """SIGTERM (unless `signalled`: the caller sent it already), wait up to timeout_s, then SIGKILL; returns the
        exit code. One SIGTERM only: a second can reach a process that handled the first and is already ending
        (Python gives the default action back during its exit), and kill it."""
        if self.paused:
            self.resume()
        if not signalled:
            self.signal(signal.SIGTERM)
        rc = self.wait(timeout_s=timeout_s)
        if rc is None:
            self.signal(signal.SIGKILL)
            rc = self.wait(timeout_s=10)
        return rc


def kill_all() -> None:
    """End every child still registered: SIGCONT (paused ones), SIGKILL, reap."""
    with _lock:
        procs = list(_registry.values())
    for p in procs:
        p.signal(signal.SIGCONT)
        p.signal(signal.SIGKILL)
    deadline = time.monotonic() + 10
    for p in procs:
        p.wait(timeout_s=max(0.1, deadline - time.monotonic()))


def live_children() -> list[Proc]:
    with _lock:
        return [p for p in _registry.values() if p.alive()]


atexit.register(kill_all)


def install_signal_handlers() -> None:
    """SIGTERM and SIGHUP end the harness like Ctrl-C does: unwinding, so every `with` cleans up. SIGINT
    is set to raise KeyboardInterrupt too, explicitly: a process started in the background by a
    non-interactive shell (a CI job's `cmd &`) inherits SIGINT ignored, and Python then leaves it so.
    SIGUSR1 prints every thread's stack to stderr and goes on (`kill -USR1 <pid>`: where a run that seems stuck,
    or slow to stop, is waiting)."""
    try:
        faulthandler.register(signal.SIGUSR1, file=sys.__stderr__, all_threads=True, chain=False)
    except (AttributeError, ValueError, io.UnsupportedOperation):
        pass  # no stderr with a file descriptor to write to: the stacks cannot be printed, the rest holds


    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, interrupt)


#: logging's module-lock helpers, which os.fork's hooks call around every child started with a preexec_fn
_FORK_HOOKS = frozenset({"_acquireLock", "_releaseLock"})


def interrupt(signum: int, frame) -> None:
    """The harness's handler of SIGINT, SIGTERM and SIGHUP: KeyboardInterrupt, unwinding every `with`. A signal
    that lands in one of logging's fork hooks (a child starting: `Proc.spawn` passes a preexec_fn, so the hooks run)
    is delivered again once the hook has returned: Python ignores an exception raised in a fork hook ("Exception
    ignored in: <function _releaseLock>"), so the Ctrl-C would be lost and logging's lock left held, which blocks
    every other thread that logs (a clean clone's Ctrl-C during `--repeat` went unheard for 120 s so)."""
    if frame is not None and frame.f_code.co_name in _FORK_HOOKS and frame.f_globals.get("__name__") == "logging":
        _thread.interrupt_main(signum)
        return
    raise KeyboardInterrupt() if signum == signal.SIGINT else KeyboardInterrupt(f"signal {signum}")
