"""An Allure test's times and steps as the run lived them, not as its test collected it.

Under `--harness-concurrency N` a run happens on a pool's worker thread while its test waits, so the test's own
start and stop (what allure-pytest records around the test body) span only the hand-over of a finished run. This
module writes through allure-pytest's reporter (its listener's `allure_logger`) so that:

- the test's start and stop are its run's (run.json: `finished`, and `duration_s` before it), and its `thread`
  label names the pool worker that ran it: the report's durations and its Timeline tab show the real runs;
- each harness action is a step from its `action_start` to its `action_end` (wall clock of harness.jsonl);
- each verdict is a step of its own, `<invariant>: <status> — <message>`, whose Allure status is the verdict's
  (valid passed, invalid failed, unknown broken, skipped skipped);
- a test whose runs were undecided (unknown, error, incomplete) and none failed is `broken`, not `failed`
  (`set_test_status`): an undecided run is no product failure.

Without `--alluredir` there is no reporter and every function here does nothing.
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from harness.record.rundir import HARNESS_HISTORY, RUN_JSON, VERDICTS_JSON, RunDir

#: the Allure status of a step per verdict status
STEP_STATUS = {"valid": "passed", "invalid": "failed", "unknown": "broken", "skipped": "skipped"}
#: a verdict step's name keeps this much of the message (the whole message is the step's status details)
NAME_CHARS = 400


def reporter():
    """allure-pytest's reporter of this session (None without --alluredir)."""
    import allure_commons
    from allure_commons.reporter import AllureReporter
    for plugin in allure_commons.plugin_manager.get_plugins():
        found = getattr(plugin, "allure_logger", None)
        if isinstance(found, AllureReporter):
            return found
    return None


def _ms(t: float) -> int:
    return int(round(t * 1000))


def _epoch(text) -> float | None:
    try:
        return datetime.fromisoformat(str(text)).timestamp() if text else None
    except ValueError:
        return None


def run_span(run_dir: Path) -> tuple[float, float] | None:
    """(start, stop) of a run in seconds since the epoch: it ended at run.json's `finished` and lasted its
    `duration_s`; a run that ended without them (an error) from `started` to its history's last event.
    None when run.json says neither."""
    d = RunDir(run_dir)
    try:
        meta = json.loads((d.path / RUN_JSON).read_text())
    except (OSError, ValueError):
        return None
    finished, dur = _epoch(meta.get("finished")), meta.get("duration_s")
    if finished is not None and isinstance(dur, (int, float)):
        return finished - float(dur), finished
    started, last = _epoch(meta.get("started")), None
    try:
        with open(d.history_file(HARNESS_HISTORY)) as f:
            for line in f:
                try:
                    last = float(json.loads(line).get("wall")) if '"wall"' in line else last
                except (ValueError, TypeError, AttributeError):
                    continue  # a torn last line
    except OSError:
        pass
    return (started, last) if started is not None and last is not None and last >= started else None


def set_test_span(spans: list[tuple[float, float]], *, worker: str | None = None) -> bool:
    """Set the current Allure test's start and stop to the span of its runs (first start to last stop) and, when
    a pool worker ran them, its thread label to that worker's; whether there was a test to set."""
    rep = reporter()
    test = rep.get_test(None) if rep is not None and spans else None
    if test is None:
        return False
    test.start, test.stop = _ms(min(a for a, _ in spans)), _ms(max(b for _, b in spans))
    if worker:
        from allure_commons.model2 import Label
        test.labels[:] = [lb for lb in test.labels if lb.name != "thread"]
        test.labels.insert(0, Label(name="thread", value=f"{os.getpid()}-{worker}"))
    return True


def set_test_status(status: str, *, only_if: str | None = None) -> bool:
    """Set the current Allure test's status (`broken` for a test whose runs were undecided), when it is `only_if`
    (None: whatever it is); whether it was set."""
    rep = reporter()
    test = rep.get_test(None) if rep is not None else None
    if test is None or (only_if is not None and test.status != only_if):
        return False
    test.status = status
    return True


@contextmanager
def timed_step(name: str, *, start: float, stop: float, status: str = "passed", message: str | None = None):
    """An Allure step with the given times (seconds since the epoch) and status; attachments made inside it are
    its own."""
    rep = reporter()
    if rep is None or rep.get_test(None) is None:
        yield
        return
    from allure_commons.model2 import StatusDetails, TestStepResult
    from allure_commons.utils import uuid4
    uuid = uuid4()
    rep.start_step(None, uuid, TestStepResult(name=name, start=_ms(start)))
    try:
        yield
    finally:
        rep.stop_step(uuid, stop=_ms(stop), status=status,
                      statusDetails=StatusDetails(message=message) if message else None)


def verdict_name(name: str, verdict: dict) -> str:
    """A verdict's step name: `<invariant>: <status> — <message>` (the message cut at NAME_CHARS)."""
    msg = " ".join(str(verdict.get("message") or "").split())
    if len(msg) > NAME_CHARS:
        msg = msg[:NAME_CHARS - 1] + "…"
    return f"{name}: {verdict.get('status', '?')} — {msg}" if msg else f"{name}: {verdict.get('status', '?')}"


def verdict_steps(run_dir: Path, *, at: float) -> int:
    """A step per verdict of verdicts.json, in its order, at `at` (when the run was judged); the verdict of one
    that did not hold is attached to its step. Returns how many steps."""
    import allure
    p = Path(run_dir) / VERDICTS_JSON
    try:
        verdicts = json.loads(p.read_text()) if p.exists() else {}
    except (OSError, ValueError):
        return 0
    for name, v in verdicts.items():
        v = v if isinstance(v, dict) else {}
        status = STEP_STATUS.get(v.get("status"), "broken")
        with timed_step(verdict_name(name, v), start=at, stop=at, status=status,
                        message=str(v.get("message") or "") if status in ("failed", "broken") else None):
            if status in ("failed", "broken"):
                allure.attach(json.dumps(v, indent=1, default=str), name=f"{name} ({v.get('status')})",
                              attachment_type=allure.attachment_type.JSON)
    return len(verdicts)
