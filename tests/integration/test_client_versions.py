"""Verify: members run the confluent-kafka version a run asks for, and a rolling client upgrade works.

Setup: the shared cluster; `client-rolling-upgrade` starts three members on an older confluent-kafka
(an isolated install in the cache) and bounces each onto the harness's own version.
Then: every invariant holds, and the members' `started` events show both versions, old ones first.
"""
import pytest

from fixtures.plugin import assert_run_passes
from harness.members.clients import bundled_version
from harness.history import History
from harness.scenarios import OLDER_CLIENT

pytestmark = pytest.mark.integration


def test_rolling_client_upgrade(run_scenario):
    result = run_scenario("client-rolling-upgrade", protocol="classic-eager")
    assert_run_passes(result)
    started = [e for e in History.load(result.run_dir / "history") if e["type"] == "started"]
    versions = [e["client"].split()[1] for e in started]
    assert versions[:3] == [OLDER_CLIENT] * 3, versions
    assert versions[3:] == [bundled_version()] * 3, versions
