"""Kafka Streams scenarios, judged by the Streams invariants (warmup before active, probing convergence,
standby placement, task exclusivity and balance) and record integrity.

Verify: every invariant holds through each streams-* scenario of harness/plan/scenarios.py.
Setup: the shared 3-broker cluster; per test a topic, its changelog filled with synthetic state, a producer,
and Kafka Streams instances (harness/members/streams/StreamsMember.java on kafka-streams).
Then: the scenario's seeded schedule; the run directory lands under --harness-runs-root.
"""
import pytest

from harness.suite.plugin import assert_run_passes
from harness.plan.scenarios import SCENARIOS


def _cases():
    for s in SCENARIOS.values():
        if s.kind != "streams":
            continue
        for p in s.protocols:
            mark = pytest.mark.smoke if s.smoke and p == "classic" else pytest.mark.nightly
            yield pytest.param(s.name, p, marks=[mark], id=f"{s.name}-{p}")


@pytest.mark.parametrize("scenario,streams_protocol", list(_cases()))
def test_streams_scenario(scenario, streams_protocol, run_scenario):
    assert_run_passes(run_scenario(scenario, protocol=streams_protocol))
