"""Chaos scenarios across the group protocols, judged by the invariants.

Verify: every invariant holds through each scenario of harness/plan/scenarios.py.
Setup: one shared 3-broker KRaft cluster behind Toxiproxy; a topic, a group and a producer per test.
Then: the scenario's seeded schedule; the run directory lands under --harness-runs-root.
"""
import pytest

from harness.suite.plugin import assert_run_passes
from harness.plan.scenarios import SCENARIOS


def _cases():
    for s in SCENARIOS.values():
        if s.kind != "consumer" or s.backend:
            continue  # Kafka Streams: test_streams_chaos.py; Connect: test_connect_chaos.py; docker-only: test_docker_chaos.py
        yield pytest.param(s.name, marks=[pytest.mark.smoke] if s.smoke else [pytest.mark.nightly], id=s.name)


@pytest.mark.parametrize("scenario", list(_cases()))
def test_scenario(scenario, protocol, run_scenario):
    if protocol not in SCENARIOS[scenario].protocols:
        pytest.skip(f"{scenario} does not run with {protocol}")
    assert_run_passes(run_scenario(scenario, protocol=protocol))
