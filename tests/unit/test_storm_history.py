"""A real random-mix history, trimmed: the storm rule of convergence_balance on three coordinator kills and rolls.

The fixture is `harness run random-mix --repeat 20 --seed 1 --protocol classic-eager`, run 1 (seed 1; Kafka 4.4.0,
confluent-kafka 2.16.1, local backend, session timeout 6 s, heartbeat 0.5 s): every event but the per-record ones
and the brokers' log lines. It failed convergence_balance as "rebalance storm: 6 rebalances nothing drove", and
both halves of that count were the checker's error, not the group's:

- three non-static roll steps stop m9, m10, m11 gracefully: each revokes at its `member_stop`, 0.2-0.4 s before its
  `member_exit`, and that revoke was counted in the window of the join before it (an eager join is two bursts,
  revoke and assign, 4 s apart): one excess in each of three windows;
- three `kill_coordinator` steps: with the coordinator's broker down, each member times its session out on its
  own clock (librdkafka's SESSTMOUT, 6 s after its last heartbeat answer) and writes `lost` when its next poll
  serves the callback, 104.3-110.2 s for the first kill (98.4 s), after the broker's restart (102.5 s) and
  before it was ready (122.5 s): one member's drop is no group rebalance, and the broker's fault drives it.

The must-fail twins: the same members' `lost` with no broker down (the kills taken out of the history) are a
storm, and so are rebalances added once the group had settled.
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.record.history import History
from harness.invariants import judge

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "random-mix-eager-coordinator-kills.jsonl"


def events() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]


def convergence(evs: list[dict]):
    return judge(History.from_events(evs))["convergence_balance"]


def test_the_coordinator_kills_and_graceful_stops_drive_their_rebalances():
    v = convergence(events())
    assert v.status == "valid", v.message
    assert v.measurements["rebalances_undriven"] == 0 and v.measurements["storms"] == 0
    assert v.measurements["lost_in_good_standing"] == 0  # each lost came while a broker was down


def test_the_same_lost_events_with_no_broker_down_are_a_storm():
    kills = {e["fault_id"] for e in events() if e["type"] == "fault_start" and e["kind"] == "broker_kill"}
    evs = [e for e in events() if e["type"] != "broker_event" and e.get("fault_id") not in kills]
    v = convergence(evs)
    assert v.status == "invalid" and "rebalance storm" in v.message, v.message


def test_rebalances_once_the_group_settled_are_a_storm():
    """After the last kill's fault ended (172.0 s) the group stayed put until the drain; three revoke-and-assign
    pairs of m13's partition 0 to m14 and back with nothing driving them are a storm."""
    evs = events()
    run_id = next(e["run_id"] for e in evs if e["type"] == "run_start")
    tp = [f"t-{run_id}", 0]
    end = next(e for e in evs if e["type"] == "fault_end" and e["fault_id"] == "f5")["mono"]
    extra = []
    for i in range(3):
        t = end + 0.5 + 1.2 * i
        extra += [{"type": "revoked", "mono": t, "wall": 0.0, "member": "m13", "partitions": [tp], "source": "member"},
                  {"type": "assigned", "mono": t + 0.6, "wall": 0.0, "member": "m13", "partitions": [tp],
                   "source": "member"}]
    v = convergence(evs + extra)
    assert v.status == "invalid" and "rebalances nothing drove" in v.message, v.message
