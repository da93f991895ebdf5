"""Progress while a run goes on: the `harness` logger, and a live status line during waits.

Every part logs to `logging.getLogger("harness...")`; the CLI shows INFO lines on stdout (`--quiet`:
warnings only), pytest captures them with the test. During a wait, `StatusLine` says what is awaited,
how long it has waited and the limit: on a terminal it rewrites one line in place; elsewhere (CI logs,
files) it logs a line every `every_s` seconds, so a long wait is never silent.
"""
from __future__ import annotations

import logging
import sys
import time

log = logging.getLogger("harness")


class _Stdout(logging.StreamHandler):
    """A handler writing to whatever `sys.stdout` is when a record comes (not the one of its creation, which
    a caller such as pytest's capture may have closed since)."""

    def __init__(self) -> None:
        super().__init__(sys.stdout)

    @property
    def stream(self):
        return sys.stdout

    @stream.setter
    def stream(self, _value) -> None:
        pass


def setup_cli_logging(*, quiet: bool = False) -> None:
    """INFO lines of the harness on stdout, as plain messages (the CLI's progress)."""
    handler = _Stdout()
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(logging.WARNING if quiet else logging.INFO)
    log.propagate = False


class StatusLine:
    """One wait's live status: `update(detail)` as it goes, `done()` at the end."""

    def __init__(self, what: str, *, limit_s: float, clock=time.monotonic, stream=None, every_s: float = 10.0,
                 prefix: str = "") -> None:
        self.what = what
        self.limit_s = limit_s
        self.clock = clock
        self.start = clock()
        self.stream = stream if stream is not None else sys.stderr
        self.every_s = every_s
        self.prefix = prefix
        self._last_log = self.start
        self._shown = False
        self._tty = _is_tty(self.stream) and log.isEnabledFor(logging.INFO)

    def text(self, detail: str = "") -> str:
        el = self.clock() - self.start
        return f"{self.prefix}waiting for {self.what}: {el:.0f}s of {self.limit_s:.0f}s" + (f" ({detail})" if detail else "")

    def update(self, detail: str = "") -> None:
        now = self.clock()
        if self._tty:
            self.stream.write("\r\x1b[2K" + self.text(detail)[:200])
            self.stream.flush()
            self._shown = True
        elif now - self._last_log >= self.every_s:
            self._last_log = now
            log.info(self.text(detail))

    def done(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._shown = False


def _is_tty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
