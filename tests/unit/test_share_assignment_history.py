"""A real share-member-kill history, trimmed: the coordinator's own assignment (`share_assignment`) judged by
share_served.

The fixture is `harness run share-member-kill --seed 1` (Kafka 4.4.0, confluent-kafka 2.16.1, local backend,
group session timeout 6 s, heartbeat 0.5 s): every harness event (the `share_assignment` answers among them), and
the producer's and members' record events of offsets 0-2 only. The coordinator listed m1-m3 with no partition for
2.5 s (the share partitions being initialized), then two each; m1 was killed at 534.06 holding partitions 1 and
4, which the coordinator gave m2 and m3 at 539.91 and 540.41, once m1's session had expired: gaps of 5.85 s and
6.35 s, within the bound of 8 s (6 s + 0.5 s + the watch's 0.5 s + the 1 s slack). Judged as if the group's session
timeout were 3 s, the same gaps are past the bound and must fail.
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.record.history import History
from harness.invariants import judge

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "share-member-kill-assignment.jsonl"


def events() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]


def with_session_ms(evs: list[dict], ms: str) -> list[dict]:
    return [{**e, "group": {**e["group"], "share.session.timeout.ms": ms}} if e["type"] == "group_settings" else e
            for e in evs]


def test_the_real_kill_is_reassigned_within_the_recorded_session_timeout():
    v = judge(History.from_events(events()))["share_served"]
    assert v.status == "valid", v.message
    m = v.measurements
    assert m["assignment_bound_s"] == 8.0 and 6.3 < m["assignment_gap_max_s"] < 6.4
    assert m["assignment_events"] == 12 and m["assignment_blind_s"] == 0.0
    assert "every partition assigned to a live member by the coordinator" in v.message


def test_judged_with_a_shorter_session_timeout_the_kill_leaves_partitions_unassigned_too_long():
    v = judge(History.from_events(with_session_ms(events(), "3000")))["share_served"]
    assert v.status == "invalid"
    assert v.measurements["assignment_bound_s"] == 5.0
    gaps = {w["partition"]: w for w in v.witnesses if w.get("type") == "share_assignment"}
    assert set(gaps) == {1, 4}
    assert all("it named m1, gone: m1 kill at 9.4s" in w["why"] for w in gaps.values())
    assert "share.session.timeout.ms" in v.message
