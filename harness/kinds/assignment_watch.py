"""A group's assignment as its coordinator reports it, asked every `interval_s` from a thread of the runner and
written as an event whenever the answer changes: the loop the share watch (share_watch.py, `share_assignment`) and
the consumer-group watch (group_watch.py, `group_assignment`) have in common. What differs is `ask()`: a dict of
the event's fields, or an exception when the coordinator could not be asked (its text becomes `error`, with
`members` null).

Each event has `asked_mono` (when the request went out: the answer held at some time in [asked_mono, mono]),
`interval_s` (how often it asks) and `longest_gap_s` (the longest time between two requests since the previous
event, or null for the first: between two events the unchanged answers were seen at most that far apart). A failed
answer is written once after a success (or before any), and the next success is written whatever it says: the
events between say where the history is blind. When the watch stops (the run's members stopped, or the run ended)
it writes a last event with `stopped` true and `members` null: the answers end there.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

INTERVAL_S = 0.5
STOP_WAIT_S = 6.0  # how long stop() waits for a request in flight


class AssignmentWatch:
    """Asks `ask()` every `interval_s` and writes `event(event_type, ...)` on each change (module docstring)."""

    def __init__(self, event_type: str, ask: Callable[[], dict], event, *, name: str, defaults: dict,
                 interval_s: float = INTERVAL_S) -> None:
        self.event_type, self.ask, self.event, self.interval_s = event_type, ask, event, interval_s
        self.defaults = {"error": None, **defaults}  # the fields an answer without them writes as null
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.asked = self.answered = 0
        self._longest: float | None = None
        self._ended = threading.Lock()  # held by whoever writes the last event (once)

    def start(self) -> "AssignmentWatch":
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop asking; the last event (`stopped`) is written by the thread as it ends, or here if it hangs."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=STOP_WAIT_S)
        if self._thread.is_alive():  # a request in flight past every timeout: the answers end here all the same
            self._end()

    def _end(self) -> None:
        if self._ended.acquire(blocking=False):
            try:
                self._write(time.monotonic(), {"members": None, "stopped": True})
            except Exception:  # noqa: BLE001 - the history may be closed already (a run that ended otherwise)
                pass

    def _write(self, asked: float, seen: dict) -> None:
        self.event(self.event_type, asked_mono=asked, interval_s=self.interval_s,
                   longest_gap_s=None if self._longest is None else round(self._longest, 6),
                   **{**self.defaults, **seen})
        self._longest = 0.0

    def _loop(self) -> None:
        last, prev_asked = None, None
        while not self._stop.is_set():
            asked = time.monotonic()
            if prev_asked is not None and self._longest is not None:
                self._longest = max(self._longest, asked - prev_asked)
            prev_asked = asked
            self.asked += 1
            try:
                seen = self.ask()
                self.answered += 1
            except Exception as e:  # unreachable, refused, or an answer that could not be read: never a silent gap
                seen = {"members": None, "error": (str(e) or type(e).__name__)[:300]}
            if seen != last and not self._stop.is_set():
                self._write(asked, seen)
                last = seen
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - asked)))
        if prev_asked is not None:
            self._end()
