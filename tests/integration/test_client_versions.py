"""Verify: members run the confluent-kafka version a run asks for, and a rolling client upgrade works.

Setup: the shared cluster; `client-rolling-upgrade` starts three members on an older confluent-kafka
(an isolated install in the cache) and bounces each onto the harness's own version. The smoke scenario
member-kill runs on old releases under the classic protocols: 2.3.0 (classic-eager) by default, 2.0.2 (the first
with wheels for this Python) and the newest release under the `slow` marker (`-m slow`, or nightly).
Then: every invariant holds, and the members' `started` events show the versions asked for.
"""
import pytest

from harness.suite.plugin import assert_run_passes
from harness.members.clients import bundled_version
from harness.record.history import History
from harness.plan.scenarios import SCENARIOS

pytestmark = pytest.mark.integration
NEWEST = "2.16.1"  # the newest confluent-kafka release when this was written (also the harness's own)


def test_rolling_client_upgrade(run_scenario):
    result = run_scenario("client-rolling-upgrade", protocol="classic-eager")
    assert_run_passes(result)
    started = [e for e in History.load(result.run_dir / "history") if e["type"] == "started"]
    versions = [e["client"].split()[1] for e in started]
    assert versions[:3] == [SCENARIOS["client-rolling-upgrade"].initial_client] * 3, versions
    assert versions[3:] == [bundled_version()] * 3, versions


@pytest.mark.parametrize("version, proto", [
    # not classic-cooperative: before 2.10.0 librdkafka can drop its assignment as lost on a commit racing a
    # cooperative rebalance (#4059; a clean-clone CI run failed so; harness/findings/registry.py, docs/findings.md)
    ("2.3.0", "classic-eager"),
    pytest.param("2.0.2", "classic-eager", marks=pytest.mark.slow),
    pytest.param(NEWEST, "classic-cooperative", marks=pytest.mark.slow),
])
def test_smoke_on_a_client_version(version, proto, run_scenario, request):
    """Old librdkafka does not know `group.protocol`: the member leaves it out under the classic protocols."""
    if "slow" in request.node.keywords and "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("a slow client version: run with -m slow (nightly)")
    result = run_scenario("member-kill", protocol=proto, client_version=version)
    assert_run_passes(result)
    started = [e for e in History.load(result.run_dir / "history") if e["type"] == "started"]
    assert started and {e["client"].split()[1] for e in started} == {version}


@pytest.mark.slow
def test_consumer_protocol_before_2_10_takes_partitions_away_unrevoked(run_scenario, request):
    """On confluent-kafka 2.9.0 (librdkafka 2.8.0) a consumer-protocol member's callback is handed each whole new
    assignment and what it leaves out goes with no revoke (docs/findings.md, librdkafka-848-eager-callbacks): the run
    fails `exclusive_ownership` with a witness inside the finding's mark; on 2.10.0 the same scenario passes."""
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("a slow client version: run with -m slow (nightly)")
    from harness.findings.evidence import full_assignment_unrevoked
    from harness.findings.match import outside
    bad = run_scenario("member-kill", protocol="consumer", client_version="2.9.0")
    assert bad.status == "fail", bad.status
    owned = bad.verdicts["exclusive_ownership"]
    assert owned.status == "invalid" and "held it in good standing" in owned.message, owned.message
    marks = full_assignment_unrevoked(bad.run_dir)
    assert marks and all("taken away with no revoke" in m.says for m in marks)
    assert outside(owned, marks) is None, outside(owned, marks)
    good = run_scenario("member-kill", protocol="consumer", client_version="2.10.0")
    assert_run_passes(good)
    assert full_assignment_unrevoked(good.run_dir) == []
