"""Kafka Connect scenarios, judged by the Connect invariants (tasks exclusive, the scheduled delay, balance,
source sequence) and the sink's record integrity.

Verify: every invariant holds through each connect-* scenario of harness/plan/scenarios.py.
Setup: the shared 3-broker cluster; per test a topic (the sink's input, written by the producer), a source
topic, the three Connect storage topics, and distributed workers on connect-runtime (the brokers' version)
running the harness's HarnessSource and HarnessSink connectors (harness/members/connect/).
Then: the scenario's seeded schedule; the run directory lands under --harness-runs-root.
"""
import pytest

from harness.suite.plugin import assert_run_passes
from harness.plan.scenarios import SCENARIOS


def _cases():
    for s in SCENARIOS.values():
        if s.kind != "connect":
            continue
        for p in s.protocols:
            mark = pytest.mark.smoke if s.smoke and p == "sessioned" else pytest.mark.nightly
            yield pytest.param(s.name, p, marks=[mark], id=f"{s.name}-{p}")


@pytest.mark.parametrize("scenario,connect_protocol", list(_cases()))
def test_connect_scenario(scenario, connect_protocol, run_scenario):
    assert_run_passes(run_scenario(scenario, protocol=connect_protocol))
