"""A real member-kill history under classic-cooperative, trimmed: the members' final stop, judged by
coordinator_claims.

`./dev test` with two tests at a time (tests/integration/test_member_contract.py, member-kill, Kafka 4.4.0,
confluent-kafka 2.16.1, local backend), every event but the per-record ones. It failed coordinator_claims: "m4 held
partition 1 from 41352.266 to 41352.805 but the coordinator never gave it to m4: its answer asked at 41352.348 lists
partition 1 for m1". In the final stop m1 left (generation 9 gave m4 partition 1), then m2's leave began a rebalance;
the answer asked in it (PreparingRebalance) listed m4 with 1, 2 and 5, the record of generation 9, and the next
answer was the empty group. The checker read every classic answer given while the group rebalanced as the union of
the stable answers around it, never what it listed itself, so partition 1 was given to no one. Three holdings of that
stop (m4 taking the last partitions for under half a second) fell between two answers: they are the harness's own
teardown, counted and named, not judged. The twin without the `drained` and `member_stop` events (no stop known) leaves
them unjudged: unknown, never a pass.
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.record.history import History
from harness.invariants import claims
from harness.invariants.core import CheckSettings

HISTORY = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "member-kill-cooperative-final-stop-claims.jsonl"


def events() -> list[dict]:
    return [json.loads(line) for line in HISTORY.read_text().splitlines() if line.strip()]


def judged(evs: list[dict]):
    start = next(e for e in evs if e["type"] == "run_start")
    return claims.check(History.from_events(evs), CheckSettings(**start["settings"]))


def test_the_final_stop_of_a_cooperative_group_is_given_by_the_coordinator():
    v = judged(events())
    assert v.status == "valid", v.message
    assert v.measurements["between_samples_at_stop"] == 3 and v.measurements["never_given"] == 0, v.measurements


def test_without_the_drain_the_holdings_between_answers_are_unknown():
    """Without the `drained` event and the members' `member_stop` (no stop known: neither the final one nor each
    member's own, which m4's holdings were taken up in)."""
    v = judged([e for e in events() if e["type"] not in ("drained", "member_stop")])
    assert v.status == "unknown" and "between its answers" in v.message, v.message
