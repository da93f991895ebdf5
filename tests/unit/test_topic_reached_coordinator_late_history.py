"""A real partitions-900 history under the consumer protocol: an epoch bumped for the coordinator's metadata image
gaining the run's topic after the members had joined, which rebalance_cause must take as caused.

`partitions-900-consumer-topic-reached-coordinator-late.jsonl` is `bench/rebalance_time.py --cases partitions-900
--protocols consumer --client-set debug=cgrp,metadata` (Kafka 4.4.0, confluent-kafka 2.16.1, local backend, group
heartbeat 0.5 s, ten members in one process), every event but the per-record ones and the coordinator's answers
(`group_assignment`), with the group coordinator's log lines. It failed rebalance_cause: "at 2.8s the coordinator
started group epoch 12 (unstated ...): the coordinator logged no reason". The ten members joined at 1.9-2.4 s, each
epoch "with metadata hash 0": the coordinator's image did not hold the topic the runner had created just before
(its broker applies a new topic to the image only after creating the partitions' local logs, in the same metadata
loader thread). When the image got it the hash changed, and the next heartbeat bumped epoch 12 with the topic's hash
and no line of its own. The checker now takes an epoch whose previous epoch's hash was 0 and whose own is not as
caused (the subscribed topics reached the coordinator).

The must-fail twin: the same history with epoch 11 logged with a non-zero hash (the topic already known): epoch 12
has no cause.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from harness.record.history import History
from harness.invariants import judge

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / \
    "partitions-900-consumer-topic-reached-coordinator-late.jsonl"


def events() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]


def test_the_epoch_for_the_topic_reaching_the_coordinator_is_caused():
    v = judge(History.from_events(events()))["rebalance_cause"]
    assert v.status == "valid", v.message
    assert v.measurements["causes"] == {"join": 10, "unstated": 2, "leave": 10}


def test_with_the_topic_known_before_the_epoch_has_no_cause():
    evs = events()
    eleven = next(e for e in evs if e["type"] == "broker" and "Bumped group epoch to 11 " in e["message"])
    eleven["message"] = re.sub(r"metadata hash 0\.", "metadata hash 760603932379396232.", eleven["message"])
    v = judge(History.from_events(evs))["rebalance_cause"]
    assert v.status == "invalid"
    assert "started group epoch 12" in v.message and "already in the coordinator's metadata" in v.message
