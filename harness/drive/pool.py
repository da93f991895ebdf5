"""Runs on a few worker threads over one shared cluster: those that may share it run together (up to `workers`
at a time), one that must run alone (harness/drive/sharing.py) runs with nothing else on that cluster.

The order: the jobs that run alone first (each waits until nothing runs, and while it waits nothing new
starts), then the others by their rank (the slowest kinds first, so that the longest does not start last).
A caller waits for its own job's result (`wait`): the job's return value, or its exception raised again in
the caller's thread, so a run that raised fails its own test with its own message.

Threads and processes: a child started with PR_SET_PDEATHSIG (harness/base/procs.py) dies when the *thread* that
forked it ends, so a worker thread lives until the pool closes, after its runs have stopped their processes.
Ctrl-C (KeyboardInterrupt in the caller) goes through `interrupt`: no job starts any more, each running one
gets KeyboardInterrupt raised in its thread (a run then tears down and marks its directory incomplete, as it
does on Ctrl-C when it runs alone), and whatever is still alive after the grace period is killed.

Each job's `harness` log records are its own (harness/run/progress.py `capture`): kept by the job's RunLog
(`Job.log`, one made for it when the caller gave none), and on the console each starts with the job's label
(`[label] ...`), so that the lines of runs going on together say which run they belong to.
"""
from __future__ import annotations

import ctypes
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from harness.run.progress import RunLog, capture


@dataclass(eq=False)
class Job:
    """One run to do: `call()` gives its result; `exclusive` says why it runs alone (None: it may share)."""

    key: str
    label: str
    call: Callable[[], object]
    exclusive: str | None = None
    rank: int = 0
    data: object = None  # what the caller keeps with it (the run's config)
    state: str = "pending"  # pending, running, done
    result: object = None
    error: BaseException | None = None
    taken: bool = False  # its result was handed to its test
    thread: threading.Thread | None = field(default=None, repr=False)
    log: RunLog | None = field(default=None, repr=False)  # its own log lines (made when it starts, if not given)


def _raise_in(thread: threading.Thread) -> None:
    """KeyboardInterrupt in another thread, at its next Python instruction (a blocking call first returns)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(KeyboardInterrupt))


def _kill_children() -> None:
    from harness.base.procs import kill_all
    kill_all()


class RunPool:
    """Jobs on `workers` threads under the sharing rule; `start`, `wait(key)`, `add`, `interrupt`, `close`."""

    def __init__(self, jobs: list[Job], *, workers: int, raise_in=_raise_in, kill_children=_kill_children,
                 grace_s: float = 60.0, clock=time.monotonic) -> None:
        if workers < 1:
            raise ValueError("a pool needs at least one worker")
        self.workers = workers
        self.jobs: dict[str, Job] = {}
        self._pending: list[Job] = []
        self._running: list[Job] = []
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._stopping = False
        self.interrupted = False
        self._raise_in, self._kill_children, self.grace_s, self.clock = raise_in, kill_children, grace_s, clock
        self.trace: list[tuple[float, str, str]] = []  # (time, "start" | "end", key): what ran when
        self.cluster = None  # the cluster its runs share (the caller's to set)
        for j in exclusive_first(jobs):
            self._enlist(j, first=False)

    def _enlist(self, job: Job, *, first: bool) -> None:
        if job.key in self.jobs:
            raise ValueError(f"two jobs are called {job.key!r}")
        self.jobs[job.key] = job
        self._pending.insert(0, job) if first else self._pending.append(job)

    # -- the caller's side
    def start(self) -> None:
        for i in range(self.workers):
            t = threading.Thread(target=self._work, name=f"harness-run-{i + 1}", daemon=True)
            self._threads.append(t)
            t.start()

    def add(self, job: Job) -> None:
        """A job nobody planned (a test's run that differs from its plan): before every pending one."""
        with self._cond:
            if self._stopping:
                raise KeyboardInterrupt("the pool was interrupted")
            self._enlist(job, first=True)
            self._cond.notify_all()

    def wait(self, key: str, *, poll_s: float = 0.2):
        """The job's result, or its exception raised here; Ctrl-C while waiting interrupts the whole pool."""
        job = self.jobs[key]
        try:
            with self._cond:
                while job.state != "done":
                    self._cond.wait(poll_s)
        except KeyboardInterrupt:
            self.interrupt()
            raise
        if job.error is not None:
            raise job.error
        return job.result

    def interrupt(self) -> None:
        """Stop everything: no job starts, each running one is interrupted, and what lives on is killed."""
        with self._cond:
            if self._stopping and self.interrupted:
                return
            self._stopping = self.interrupted = True
            for j in self._pending:
                j.state, j.error = "done", KeyboardInterrupt(f"{j.label}: not started (interrupted)")
            self._pending.clear()
            running = [j for j in self._running if j.thread is not None]
            self._cond.notify_all()
        for j in running:
            self._raise_in(j.thread)
        self._join(self.grace_s)
        if any(t.is_alive() for t in self._threads):
            self._kill_children()  # a run blocked on a child that did not stop: its wait returns now
            self._join(10.0)
        with self._cond:
            for j in self._running:
                j.state, j.error = "done", j.error or KeyboardInterrupt(f"{j.label}: interrupted")
            self._running.clear()
            self._cond.notify_all()

    def close(self) -> None:
        """At the session's end: jobs still pending or running (a test stopped the session early) are
        interrupted; the workers end."""
        with self._cond:
            busy = bool(self._pending or self._running)
        if busy:
            self.interrupt()
            return
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._join(self.grace_s)

    def _join(self, limit_s: float) -> None:
        deadline = self.clock() + limit_s
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(max(0.0, deadline - self.clock()))

    # -- the workers' side
    def _next(self) -> Job | None:
        """The next job this worker may start under the rule (None: the pool stops). Holds the condition."""
        while not self._stopping:
            if self._pending:
                head = self._pending[0]
                if (not self._running if head.exclusive else
                        len(self._running) < self.workers and not any(j.exclusive for j in self._running)):
                    self._pending.pop(0)
                    head.state, head.thread = "running", threading.current_thread()
                    self._running.append(head)
                    self.trace.append((self.clock(), "start", head.key))
                    return head
            self._cond.wait(0.5)
        return None

    def _work(self) -> None:
        try:
            while True:
                with self._cond:
                    job = self._next()
                if job is None:
                    return
                if job.log is None:
                    job.log = RunLog(job.label, prefix=True)
                try:
                    with capture(job.log):
                        job.result = job.call()
                except BaseException as e:  # noqa: BLE001 - the caller gets it in its own thread, as its own failure
                    job.error = e
                with self._cond:
                    self.trace.append((self.clock(), "end", job.key))
                    if job in self._running:
                        self._running.remove(job)
                    job.state = "done"
                    self._cond.notify_all()
                if isinstance(job.error, KeyboardInterrupt):
                    return
        except KeyboardInterrupt:  # the interruption came between two jobs
            return


def exclusive_first(jobs: list[Job]) -> list[Job]:
    """The order jobs start in: those that run alone (as given), then the others by rank (stable)."""
    return [j for j in jobs if j.exclusive] + sorted((j for j in jobs if not j.exclusive), key=lambda j: j.rank)
