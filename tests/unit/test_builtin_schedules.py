"""Every built-in gives the schedules it gave before: same scenario, same seed, same context, same schedule.

Verify: for two contexts and six seeds, each built-in's schedules digest to what tests/unit/builtin_schedules.json
recorded (when the Kafka Streams and Kafka Connect built-ins were Python builders, before they became files), and
the built-ins are listed in the order recorded there (the nightly's seeded picks index that list). A change to a
built-in that changes its schedules must update the digest, and say why.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness.plan import scenarios
from harness.plan.scenarios import SCENARIOS, ScenarioContext

RECORDED = json.loads((Path(__file__).parent / "builtin_schedules.json").read_text())
CTXS = (ScenarioContext(session_timeout_s=6.0, brokers=3, racks=3, target_kafka="4.1.0", target_client="2.16.1"),
        ScenarioContext(session_timeout_s=10.0, brokers=5, racks=2, target_kafka="latest", target_client="default"))


def digest(name: str) -> str:
    got = [[[a.to_dict() for a in scenarios.schedule(SCENARIOS[name], seed=seed, ctx=ctx)] for seed in range(6)]
           for ctx in CTXS]
    return hashlib.sha256(json.dumps(got, sort_keys=True).encode()).hexdigest()[:16]


@pytest.mark.parametrize("name", RECORDED["order"])
def test_a_built_in_gives_the_schedules_it_gave(name):
    assert digest(name) == RECORDED["digests"][name]


def test_the_built_ins_are_listed_in_the_recorded_order():
    assert list(SCENARIOS) == RECORDED["order"]
