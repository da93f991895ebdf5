"""A real random-mix history under the consumer protocol, trimmed: two members fenced by their client and given their
partitions back.

`harness run random-mix --repeat 20 --seed 1 --protocol consumer` (Kafka 4.4.0, confluent-kafka 2.16.1, local backend,
run 14, seed 403123852), every event but the per-record ones, with the group coordinator's log lines. It failed
bounded_migrations: "1 partitions moved where 0 would reach balance". The coordinator (broker 3, since a broker
bounce) computed epoch 11's target when m6 joined, with m4 holding 0-1 and m5 4-5: m2 gives 3 to m6, one move. Before
that target reached them, m4's and m5's heartbeats timed out (their logs: "Timed out ConsumerGroupHeartbeatRequest in
flight"), their clients took themselves for fenced (`lost`, no coordinator line: no session expired) and rejoined with
their own member ids 20 ms later, and the coordinator gave each its partitions back. The checker counted a fenced
member as rejoining empty-handed (it does under the classic protocol, with a new member id), so m2's move looked
unneeded. A consumer-protocol member that gets back all it held kept its membership: the move is the one balance
needs. The must-fail twin: the same history had the members run the classic protocol, where the loss counts.
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.record.history import History
from harness.invariants import judge

HISTORY = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "random-mix-consumer-fenced-given-back.jsonl"
#: the checkers of the per-record events, which the fixture leaves out
PER_RECORD = ("record_integrity", "commit_progress")
#: recorded before the coordinator's assignment was (`group_assignment`): unknown, never a pass
BEFORE_WATCH = ("coordinator_claims",)


def events() -> list[dict]:
    return [json.loads(line) for line in HISTORY.read_text().splitlines() if line.strip()]


def test_members_fenced_by_their_client_and_given_their_partitions_back_kept_them():
    evs = events()
    lost = {e["member"]: e["mono"] for e in evs if e["type"] == "lost" and e["member"] in ("m4", "m5")}
    assert len(lost) == 2 and abs(lost["m4"] - lost["m5"]) < 0.1  # fenced together, by their clients
    v = judge(History.from_events(evs))
    b = v["bounded_migrations"]
    assert b.status == "valid", b.message
    assert max(r["moves"] - r["min_moves"] for r in b.measurements["per_transition"]) == 0
    assert v["coordinator_claims"].status == "unknown" and "not recorded" in v["coordinator_claims"].message
    judged = {k: x for k, x in v.items() if k not in PER_RECORD + BEFORE_WATCH}
    assert all(x.status in ("valid", "skipped") for x in judged.values()), {
        k: x.message for k, x in judged.items() if x.status not in ("valid", "skipped")}


def test_under_the_classic_protocol_the_loss_counts_and_the_move_is_one_too_many():
    evs = events()
    for e in evs:
        if e["type"] == "started" and isinstance(e.get("effective"), dict):
            e["effective"] = {**e["effective"], "group.protocol": "classic",
                              "partition.assignment.strategy": "cooperative-sticky"}
    b = judge(History.from_events(evs))["bounded_migrations"]
    assert b.status == "invalid" and "1 partitions moved where 0 would reach balance" in b.message, b.message
    assert "partition" in b.witnesses[0]["why"] and "moved from m2 to m6" in b.witnesses[0]["why"]
