"""Invariants of consumer-group rebalancing: pure functions from a history to a verdict.

The public face is what this module exports: `Verdict`, `CheckSettings`, `CHECKERS` (name -> checker,
in report order) and `check_all`. Each checker is a pure `check(history, settings) -> Verdict` in its
own module (`exclusive`, `coverage`, `migrations`, `convergence`, `static`, `integrity`), reading the
shared derived views of `timeline`; what each group protocol allows lives in `protocols`. Nothing here
does I/O or waits. Definitions, tolerances and their reasons: docs/invariants.md.
"""
from __future__ import annotations

from typing import Callable, Iterable

from harness.history import History
from harness.invariants import convergence, coverage, exclusive, integrity, migrations, static
from harness.invariants.core import STATUSES, CheckSettings, Verdict, has_member_events, run_checkers, verdict
from harness.invariants.protocols import PROTOCOLS, ProtocolRules, rules_for

__all__ = ["CHECKERS", "CheckSettings", "PROTOCOLS", "ProtocolRules", "STATUSES", "Verdict", "check_all",
           "judge", "rules_for"]

CHECKERS: dict[str, Callable[[History, CheckSettings], Verdict]] = {
    "exclusive_ownership": exclusive.check,
    "coverage_liveness": coverage.check,
    "bounded_migrations": migrations.check,
    "convergence_balance": convergence.check,
    "static_membership": static.check,
    "record_integrity": integrity.check,
}


def check_all(history: History, settings: CheckSettings, names: Iterable[str] | None = None) -> dict[str, Verdict]:
    """Run the named checkers (all by default); one that raises is `unknown`, never valid."""
    empty = None if has_member_events(history) else "empty history: no member events"
    return run_checkers(CHECKERS, history, settings, names,
                        precheck=lambda n: verdict(n, "unknown", empty) if empty else None)


def judge(history: History) -> dict[str, Verdict]:
    """The verdicts of a run, from its history alone: the settings ride in its `run_start` event
    (`kind`, `settings`, and for Streams runs `streams_settings`)."""
    start = next((e for e in history.events if e.get("type") == "run_start"), {})
    settings = CheckSettings.from_dict(start.get("settings") or {})
    if start.get("kind") == "streams" or "standby_replicas" in (start.get("settings") or {}):
        from harness.invariants.streams import StreamsCheckSettings, check_streams
        verdicts = check_streams(history, StreamsCheckSettings.from_dict(
            start.get("streams_settings") or start.get("settings") or {}))
        verdicts.update(run_checkers({"record_integrity": integrity.check}, history, settings))
        return verdicts
    return check_all(history, settings)
