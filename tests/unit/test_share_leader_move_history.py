"""A real share-leader-move history, trimmed: a hold ends with its share-partition leader's leadership.

The fixture is `pytest suites/test_share_chaos.py -k share-leader-move-python` (seed 507308347; Kafka 4.4.0,
confluent-kafka 2.16.1, local backend): every harness event, the brokers' lines about partition 3's state write,
and the producer's and members' record events of partition 3, offsets 58-64. `move_leaders` moved partitions 0
and 3 off broker 1 (841.643-843.081). Broker 1 handed m3 offsets 61 and 62 with delivery count 1 at 843.051; m3's
accepts were refused with UNKNOWN_TOPIC_OR_PART (843.094), and broker 2, the new leader, knowing the records only
from `__share_group_state` (which records no acquisition), handed m3 the same records with count 1 at 843.105,
which m3 accepted. share_exclusive took the first holds to run to their lock's expiry, as no acknowledgement the
broker took ended them, and failed the run on two overlaps; the first lock went with broker 1's leadership.
Without the leader move in the history the same overlaps stand.
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.record.history import History
from harness.invariants import judge

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "share-leader-move-kept-count.jsonl"


def events() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]


def test_the_first_holds_ended_with_the_old_leaders_leadership():
    vs = judge(History.from_events(events()))
    v = vs["share_exclusive"]
    assert v.status == "valid", v.message
    assert v.measurements["holds_ended_by_leader_change"] == 2
    assert "2 hold(s) ended by a leader change" in v.message
    assert vs["share_redelivery"].measurements["count_kept_after_leader_change"] == 2
    refused = [e for e in events() if e["type"] == "share_acked" and not e["ok"]]
    assert {e["offset"] for e in refused} == {61, 62} and all(e["answer"] == "given" for e in refused)


def test_without_a_broker_fault_between_them_the_same_deliveries_overlap():
    evs = [e for e in events() if e["type"] not in ("fault_start", "fault_end")]
    v = judge(History.from_events(evs))["share_exclusive"]
    assert v.status == "invalid" and v.measurements["overlaps"] == 2
