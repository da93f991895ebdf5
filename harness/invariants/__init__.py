"""Invariants of consumer-group rebalancing: pure functions from a history to a verdict.

The public face is what this module exports: `judge` (a run's verdicts from its history alone), `Verdict`,
`CheckSettings`, `CHECKERS` (name -> checker, in report order) and `check_all`; the Streams checkers are
`harness.invariants.streams`. Each checker is a pure `check(history, settings) -> Verdict` in its
own module (`exclusive`, `coverage`, `migrations`, `convergence`, `settled` (every kind's), `static`, `integrity`,
`commits`, `durability` (commits against what the coordinator returns later), `claims` (against the coordinator's own answers), and the assignment at each stable point: `subscribed`, `assignor_shape`, `stickiness`), reading the
shared derived views of `timeline`; what each group protocol allows lives in `protocols`. Nothing here does I/O or waits. Definitions, tolerances and their reasons: docs/invariants.md.

May import: `base`, `record` (tests/unit/test_architecture.py holds it, and that nothing they reach does I/O).
"""
from __future__ import annotations

from dataclasses import fields
from typing import Callable, Iterable

from harness.base.vocabulary import GROUP_KINDS
from harness.record.history import History
from harness.invariants import (applies, assignor_shape, brokers, claims, commits, convergence, coordinator, coverage, durability,
                                exclusive, integrity, migrations, performed, rebalance_cause, settled, static, stickiness, subscribed,
                                timeline, topic_changes)
from harness.invariants.core import STATUSES, CheckSettings, Verdict, has_member_events, run_checkers, verdict
from harness.invariants.protocols import PROTOCOLS, ProtocolRules, rules_for
from harness.invariants.connect import ConnectCheckSettings, judge_connect
from harness.invariants.share import judge_share
from harness.invariants.streams import StreamsCheckSettings, judge_streams

__all__ = ["CHECKERS", "RUN_CHECKERS", "CheckSettings", "PROTOCOLS", "ProtocolRules", "STATUSES", "Verdict", "check_all", "judge",
           "run_settings", "rules_for"]

#: the run-level checkers, judged for every kind of group before its own
RUN_CHECKERS: dict[str, Callable[[History, object], Verdict]] = {performed.NAME: lambda h, _: performed.check(h)}

CHECKERS: dict[str, Callable[[History, CheckSettings], Verdict]] = {
    "exclusive_ownership": exclusive.check,
    "coverage_liveness": coverage.check,
    "bounded_migrations": migrations.check,
    subscribed.NAME: subscribed.check,
    topic_changes.NAME: topic_changes.check,
    assignor_shape.NAME: assignor_shape.check,
    stickiness.NAME: stickiness.check,
    "convergence_balance": convergence.check,
    rebalance_cause.NAME: rebalance_cause.check,
    settled.NAME: settled.check,
    "static_membership": static.check,
    "record_integrity": integrity.check,
    "commit_progress": commits.check,
    durability.NAME: durability.check,
    coordinator.NAME: coordinator.check,
    claims.NAME: claims.check,
    brokers.NAME: brokers.check,
}


def check_all(history: History, settings: CheckSettings, names: Iterable[str] | None = None) -> dict[str, Verdict]:
    """Run the named checkers (all by default); one that raises is `unknown`, never valid."""
    empty = None if has_member_events(history) else "empty history: no member events"
    if not empty:
        try:  # the shared views, built once for every checker (they find them again with timeline.build)
            timeline.build(history, settings)
        except Exception:  # noqa: BLE001 - each checker then says why it cannot judge
            pass
    return run_checkers(CHECKERS, history, settings, names,
                        precheck=lambda n: verdict(n, "unknown", empty) if empty else None)


#: keys of the Streams settings that the consumer settings do not have: a run_start whose `settings` hold one
#: is an old Streams run (which merged both settings into one dict)
STREAMS_ONLY_KEYS = frozenset(f.name for f in fields(StreamsCheckSettings)) - {f.name for f in fields(CheckSettings)}


def run_settings(history: History) -> tuple[str, CheckSettings, StreamsCheckSettings | None]:
    """What the run's first `run_start` event says: its kind (`consumer` or `streams`), its CheckSettings and,
    for a Streams run, its StreamsCheckSettings. Without a run_start, or settings in it, the defaults (the
    partition count is then inferred from the history, see `timeline`)."""
    start = history.run_start() or {}
    settings = start.get("settings") if isinstance(start.get("settings"), dict) else {}
    kind = start.get("kind")
    if kind not in GROUP_KINDS:  # older runs wrote no kind; Streams ones merged both settings
        kind = "streams" if STREAMS_ONLY_KEYS & set(settings) else "consumer"
    check = CheckSettings.from_dict(settings)
    if kind in ("consumer", "connect", "share"):
        return kind, check, None
    streams = start.get("streams_settings")
    return kind, check, StreamsCheckSettings.from_dict(streams if isinstance(streams, dict) else settings)


def judge(history: History) -> dict[str, Verdict]:
    """The verdicts of a run, from its history alone (never run.json): first `schedule_performed` (each step of
    the schedule happened), then the checkers the `run_start` event's kind and settings (`run_settings`) choose.
    A consumer run: `check_all` with its CheckSettings; a Streams run: the Streams checkers with its
    StreamsCheckSettings, then `record_integrity` of the input topic. A checker's `skipped` is then held to the
    plan's word (`applies.decide`: unknown unless the run_start's `applies` said the invariant does not apply),
    and a verdict that is not valid gets what the brokers said near it (`brokers.with_broker_context`). The
    shared views are built once per judgment."""
    kind, check, streams = run_settings(history)
    if kind == "share":  # the share checkers' own settings; the group's come from the history
        verdicts = judge_share(history)
    elif kind == "connect":
        start = history.run_start() or {}
        verdicts = judge_connect(history, ConnectCheckSettings.from_dict(start.get("connect_settings") or {}), check)
    elif kind == "streams":
        verdicts = judge_streams(history, streams, check)
    else:
        verdicts = check_all(history, check)
    verdicts = {**run_checkers(RUN_CHECKERS, history, None), **verdicts}
    plan = applies.recorded(history)
    return {n: brokers.with_broker_context(applies.decide(v, plan), history) for n, v in verdicts.items()}
