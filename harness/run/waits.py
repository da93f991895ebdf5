"""The waits of a run, and the only place that waits: sleeps, stability, the drain.

Each wait polls the run's `Observer` (the history read incrementally), the member pool and the backend's brokers
(one that died on its own is recorded: `broker_event` `died`, with Kafka's reason), shows a
live status line (what is awaited, elapsed, limit), and on timeout records `wait_timeout` in the
history and goes on: the invariants judge what happened, a wait never decides a verdict.
"""
from __future__ import annotations

import time

from harness.run.progress import StatusLine

POLL_S = 0.2


class Waits:
    """Waits over a run's observer, pool and kind; `event` records into the harness history."""

    def __init__(self, *, observer, pool, kind, cfg, event, say, clock=time.monotonic, sleep=time.sleep,
                 notice=lambda: []) -> None:
        self.observer = observer
        self.pool = pool
        self.kind = kind
        self.cfg = cfg
        self.event = event
        self.say = say
        self.clock = clock
        self._sleep = sleep
        self.notice = notice  # the backend's look for brokers that died on their own (it records each: broker_event)

    def _tick(self) -> None:
        self.pool.reap()
        self.notice()
        self.observer.poll()

    def sleep(self, s: float) -> None:
        """Sleep s seconds, noticing members that exit meanwhile."""
        end = self.clock() + s
        status = StatusLine(f"{s:g}s to pass", limit_s=s, clock=self.clock) if s >= 10 else None
        while self.clock() < end:
            self.pool.reap()
            self.notice()
            if status:
                status.update()
            self._sleep(min(POLL_S, max(0.0, end - self.clock())))
        if status:
            status.done()
        self.observer.poll()

    def wait_stable(self, what: str, *, timeout_s: float | None = None) -> bool:
        """Until the kind says the group is settled and nothing changed for stable_s. On timeout it
        records `wait_timeout` and returns False: the checkers judge."""
        timeout_s = timeout_s or self.kind.stable_timeout()
        deadline = self.clock() + timeout_s
        status = StatusLine(f"a stable group ({what})", limit_s=timeout_s, clock=self.clock)
        last, since = None, self.clock()
        try:
            while self.clock() < deadline:
                self._tick()
                live = {m.member_id for m in self.pool.live()}
                ok, snapshot, summary = self.kind.settled(self.observer, live)
                if snapshot != last:
                    last, since = snapshot, self.clock()
                if ok and self.clock() - since >= self.cfg.stable_s:
                    status.done()
                    self.say(f"stable ({what}): {summary}")
                    return True
                status.update(summary)
                self._sleep(POLL_S)
        finally:
            status.done()
        self.say(f"not stable after {timeout_s:.0f}s ({what}); continuing, the invariants will judge")
        self.event("wait_timeout", what=what, timeout_s=timeout_s)
        return False

    def wait_drained(self, *, timeout_s: float) -> int:
        """Until members processed every acknowledged record; returns how many are still missing."""
        if not getattr(self.kind, "drains", True):
            return 0  # nothing consumes the workload's topic (a Connect run without a sink connector)
        deadline = self.clock() + timeout_s
        status = StatusLine("members to process every acknowledged record", limit_s=timeout_s, clock=self.clock)
        self.observer.poll()
        missing = self.observer.unprocessed()
        while missing and self.clock() < deadline:
            status.update(f"{missing} records left")
            self._sleep(0.3)
            self._tick()
            missing = self.observer.unprocessed()
        status.done()
        return missing
