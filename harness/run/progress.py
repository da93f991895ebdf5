"""Progress while a run goes on: the `harness` logger, and a live status line during waits.

Every part logs to `logging.getLogger("harness...")`; the CLI shows INFO lines on stdout (`--quiet`:
warnings only), pytest captures them with the test. During a wait, `StatusLine` says what is awaited,
how long it has waited and the limit: on a terminal it rewrites one line in place; elsewhere (CI logs,
files) it logs a line every `every_s` seconds, so a long wait is never silent.

Each run's own lines: while a thread is inside `capture(RunLog(label))` (the suites' runs, harness/suite/), every
`harness` record it makes is that run's: kept by its RunLog (`lines()`), written to the run's own log file once
`keep(path)` names it (logs/progress.log of its run directory), and tagged (`run_of(record)`), so that a test's
captured log can leave out the lines of runs that are not its own. A RunLog made with `prefix=True` (runs that
overlap) also starts each of its lines on the console with `[label] `; its own file and lines do not.
Lines of threads a run starts (a producer, a watcher) are not tagged: they are no run's.
"""
from __future__ import annotations

import logging
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger("harness")
#: a run's own log, in its run directory's logs/ (the name belongs with harness/record/rundir.py's others)
PROGRESS_LOG = "progress.log"
#: how a run's own lines read: wall-clock time, level, the logger below `harness`, the message
LINE_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


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
    log.handlers[:] = [handler] + [h for h in log.handlers if h is _LINES]  # a run's own lines stay kept
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


class RunLog:
    """One run's own progress lines: kept in memory (`lines()`), and appended to its log file from `keep(path)` on."""

    def __init__(self, label: str, *, prefix: bool = False) -> None:
        self.label, self.prefix = label, prefix
        self.path: Path | None = None
        self._lines: list[str] = []
        self._lock = threading.Lock()

    def add(self, line: str) -> None:
        with self._lock:
            self._lines.append(line)
            if self.path is not None:
                with open(self.path, "a") as f:
                    f.write(line + "\n")

    def keep(self, path: Path) -> Path:
        """From now on the lines go to `path` too; those said before are written there first."""
        path = Path(path)
        with self._lock:
            if self.path is None:
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "a") as f:
                    f.writelines(line + "\n" for line in self._lines)
                self.path = path
        return self.path

    def lines(self) -> list[str]:
        with self._lock:
            return list(self._lines)

    def text(self) -> str:
        return "\n".join(self.lines())


_this = threading.local()  # .run: the RunLog of the run this thread is doing (None: none)


def current() -> RunLog | None:
    """The RunLog of the run this thread is doing, or None."""
    return getattr(_this, "run", None)


def run_of(record: logging.LogRecord) -> str | None:
    """The label of the run a `harness` record belongs to (None: no run's)."""
    return getattr(record, "harness_run", None)


def not_a_runs(record: logging.LogRecord) -> bool:
    """A handler filter that lets through only the records of no run (a test's capture: its run's lines are
    added to it whole, from its RunLog)."""
    return run_of(record) is None


class _RunLines(logging.Handler):
    """On the `harness` logger: each record a run made goes to that run's RunLog, without its console prefix."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter(LINE_FORMAT, "%H:%M:%S"))

    def emit(self, record: logging.LogRecord) -> None:
        own = getattr(record, "harness_log", None)
        if own is None:
            return
        try:
            line = self.format(record)
            cut = getattr(record, "harness_prefix", "")
            own.add(line.replace(cut, "", 1) if cut else line)
        except Exception:  # noqa: BLE001 - logging's rule: a line that cannot be kept never stops the run
            self.handleError(record)


_LINES = _RunLines()
_factory_lock = threading.Lock()
_factory_installed = False


def _install() -> None:
    """The record factory that tags a run's records, and the handler that keeps them (once per process)."""
    global _factory_installed
    with _factory_lock:
        if not _factory_installed:
            old = logging.getLogRecordFactory()

            def make(*args, **kwargs):
                rec = old(*args, **kwargs)
                own = current()
                if own is not None and rec.name.split(".", 1)[0] == "harness":
                    rec.harness_run, rec.harness_log = own.label, own
                    if own.prefix:
                        rec.harness_prefix = f"[{own.label}] "
                        lab = own.label.replace("%", "%%") if rec.args else own.label
                        rec.msg = f"[{lab}] {rec.msg}"
                return rec
            logging.setLogRecordFactory(make)
            _factory_installed = True
        if _LINES not in log.handlers:
            log.addHandler(_LINES)


@contextmanager
def capture(run: RunLog):
    """The `harness` records this thread makes in the block are `run`'s (see the module's docstring)."""
    _install()
    old = current()
    _this.run = run
    try:
        yield run
    finally:
        _this.run = old
