"""Invariants of Kafka Connect runs (design invariant 9): tasks exclusive, the scheduled delay, balance, records.

A package, a module per concern: `view` (settings and the derived view every checker reads), `tasks` (9a),
`delay` (9b), `balance` (9c), `records` (9d), `added` (the sink's records in added partitions), `cause` (a cause for each generation), `settled`
(`group_settled`: the cluster settles within its bound, the rule of every kind, harness/invariants/settled.py). The public face is this module's. Definitions, tolerances and
their reasons are in each module's docstring and docs/connect.md.
"""
from __future__ import annotations

from typing import Callable, Iterable

from harness.record.history import History
from harness.invariants.connect import cause
from harness.invariants.connect.added import with_added_partitions
from harness.invariants.connect.balance import check_balance
from harness.invariants.connect.delay import check_scheduled_delay
from harness.invariants.connect.records import check_source_sequence
from harness.invariants.connect.settled import check_group_settled
from harness.invariants.connect.tasks import check_task_exclusive
from harness.invariants.connect.view import CONNECT_EVENT_TYPES, ConnectCheckSettings, has_connect_events
from harness.invariants.core import CheckSettings, Verdict, run_checkers, verdict

__all__ = ["CONNECT_CHECKERS", "CONNECT_EVENT_TYPES", "ConnectCheckSettings", "check_balance", "check_connect",
           "check_scheduled_delay", "check_source_sequence", "check_task_exclusive", "has_connect_events",
           "judge_connect"]

CONNECT_CHECKERS: dict[str, Callable[[History, ConnectCheckSettings], Verdict]] = {
    "connect_task_exclusive": check_task_exclusive,
    "connect_scheduled_delay": check_scheduled_delay,
    "connect_balance": check_balance,
    "group_settled": check_group_settled,
    "connect_source_sequence": check_source_sequence,
    cause.NAME: cause.check,
}


def _empty(name: str, history: History) -> Verdict | None:
    return None if has_connect_events(history) else verdict(name, "unknown", "no Connect events in the history")


def check_connect(history: History, settings: ConnectCheckSettings,
                  names: Iterable[str] | None = None) -> dict[str, Verdict]:
    """Run the named Connect checkers (all by default); one that raises is `unknown`, never valid."""
    return run_checkers(CONNECT_CHECKERS, history, settings, names, precheck=lambda n: _empty(n, history))


def judge_connect(history: History, connect_settings: ConnectCheckSettings, settings: CheckSettings) -> dict[str, Verdict]:
    """The verdicts of a Connect run: the Connect invariants, then `record_integrity` of the sink's topic (when
    a sink connector ran): every acknowledged record delivered to a sink task, duplicates allowed, those of
    partitions added while the run went on counted apart (`added`); then `commit_durability` of the sink
    connectors' groups."""
    from dataclasses import replace

    from harness.invariants import durability, integrity
    verdicts = check_connect(history, connect_settings)
    if connect_settings.sink_connectors:
        try:
            v = integrity.check(history, replace(settings, exactly_once=False))
            verdicts["record_integrity"] = with_added_partitions(history, settings.topic, v)
        except Exception as e:  # a checker that fails decides nothing
            verdicts["record_integrity"] = verdict("record_integrity", "unknown", f"checker raised {type(e).__name__}: {e}")
    verdicts[durability.NAME] = durability.judged(history, settings)  # the sink connectors' groups
    return verdicts
