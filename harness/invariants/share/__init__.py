"""Invariants of share groups (KIP-932, design invariant 10): records held exclusively, redelivered by the
rules, none lost, each of a topic its member subscribes to; partitions served and within their record-lock limit.

A package, a module per concern: `view` (the settings and the derived view), `records` (per record), `skipped` (records never completed, by the reset policy and the start offsets),
`partitions` (per partition), `poison` (a record that kills its holder), `subscribed` (records of subscribed topics
only), `cause` (a cause for each epoch bump), `settled` (`group_settled`: the group settles within its bound, the rule of every
kind, harness/invariants/settled.py). Definitions, tolerances and their reasons are in each module's docstring and
docs/share.md.
"""
from __future__ import annotations

from typing import Callable, Iterable

from harness.record.history import History
from harness.invariants.core import Verdict, run_checkers, verdict
from harness.invariants.share import cause
from harness.invariants.share.dead_letter import check_dead_letter
from harness.invariants.share.partitions import check_inflight, check_served
from harness.invariants.share.poison import check_poison
from harness.invariants.share.records import (check_completion, check_exclusive, check_held_when_acting,
                                              check_redelivery)
from harness.invariants.share.settled import check_group_settled
from harness.invariants.share.subscribed import check_subscribed_only
from harness.invariants.share.view import SHARE_EVENT_TYPES, ShareCheckSettings, has_share_events

__all__ = ["SHARE_CHECKERS", "SHARE_EVENT_TYPES", "ShareCheckSettings", "check_share", "has_share_events",
           "judge_share"]

SHARE_CHECKERS: dict[str, Callable[[History, ShareCheckSettings], Verdict]] = {
    "share_exclusive": check_exclusive,
    "share_held_when_acting": check_held_when_acting,
    "share_redelivery": check_redelivery,
    "share_completion": check_completion,
    "share_inflight": check_inflight,
    "share_served": check_served,
    "group_settled": check_group_settled,
    "share_dead_letter": check_dead_letter,
    "share_poison": check_poison,
    "share_subscribed_only": check_subscribed_only,
    cause.NAME: cause.check,
}


def check_share(history: History, settings: ShareCheckSettings,
                names: Iterable[str] | None = None) -> dict[str, Verdict]:
    """Run the named share checkers (all by default); one that raises is `unknown`, never valid."""
    empty = None if has_share_events(history) else "no share-group events in the history"
    return run_checkers(SHARE_CHECKERS, history, settings, names,
                        precheck=lambda n: verdict(n, "unknown", empty) if empty else None)


def judge_share(history: History) -> dict[str, Verdict]:
    """The verdicts of a share-group run, with the run_start event's `share_settings`."""
    start = history.run_start() or {}
    return check_share(history, ShareCheckSettings.from_dict(start.get("share_settings") or {}))
