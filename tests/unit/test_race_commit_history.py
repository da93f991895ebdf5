"""Verify: the race-commit-across-revocation built-in passes on a client without the race's bug.

Setup: the kept run fixtures/histories/race-commit-2.10-pass (Kafka 4.4.0, classic-cooperative, confluent-kafka
2.10.0, seed 1167623753: `harness run race-commit-across-revocation --protocol classic-cooperative --client-version
2.10.0 --repeat 5`, 5 of 5 passed on 2026-12-07). Slot 0's OffsetCommit was held at the request proxy across the
scale-out's revocation. Then: every verdict holds; strict_stickiness judged the transition (it ended "undecided ...
several causes" before a commit held on an API no membership rides on stopped counting as a second cause).
"""
from __future__ import annotations

from pathlib import Path

from harness.invariants import judge
from harness.record.history import History

KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "race-commit-2.10-pass"


def test_the_kept_race_run_on_a_correct_client_holds_every_verdict():
    v = judge(History.load(KEPT / "history"))
    assert all(x.status in ("valid", "skipped") for x in v.values()), \
        {n: x.message for n, x in v.items() if x.status not in ("valid", "skipped")}
    assert v["strict_stickiness"].status == "valid", v["strict_stickiness"].message
    assert v["schedule_performed"].status == "valid", v["schedule_performed"].message
