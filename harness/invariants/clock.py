"""The one time base of what is printed: seconds from the run's start.

A history's events carry the host's monotonic clock (`mono`); a message, a witness line or a setting's source says
a moment as seconds from the run's start: its `run_start` event's mono, else (a history without one) its first
event's. Raw monotonic times stay in the JSON (verdicts.json's witnesses and measurements, the attachments).
"""
from __future__ import annotations

from harness.record.history import History


def run_t0(history) -> float:
    """The monotonic time of the run's start: its run_start event's mono, else its first event's."""
    start = history.run_start()
    if start is not None and isinstance(start.get("mono"), (int, float)):
        return float(start["mono"])
    return float(history.mono_range[0])


def run_s(history, t: float) -> str:
    """A monotonic time as seconds from the run's start, as messages say it: "12.3s"."""
    return f"{t - run_t0(history):.1f}s"


def events_t0(events: list) -> float:
    """The run's start from a list of its events (a checker's view of them), as `run_t0` reads it from the history
    they came from; 0 for no events."""
    return run_t0(History(events)) if events else 0.0
