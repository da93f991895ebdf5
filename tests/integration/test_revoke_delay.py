"""Verify: a member's revoke handler takes the time a run gives it (`--revoke-delay-ms`, HARNESS_REVOKE_DELAY_MS)
before its commit, as an application's slow handler does, with the Python member and the Java member.

Setup: the shared cluster; `member-kill` under classic-cooperative with a 2 s revoke delay: the replacement's join
makes the survivors give partitions up, each revocation waiting 2 s before it commits the partitions' positions.
Then: every invariant holds, each member recorded the delay it ran with, and the history has commits made in a
revoke handler at least 2 s after that handler began (`committed` with `revoke_began`), each before its `revoked`,
at least one taken by the broker (one made while the group moved to a new generation may be refused for it).
"""
from __future__ import annotations

import pytest

from harness.record.history import History
from harness.suite.plugin import assert_run_passes

pytestmark = pytest.mark.integration
DELAY_MS = 2000
#: the broker's refusals of a commit whose member's generation moved on meanwhile
REFUSALS = ("ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS", "UNKNOWN_MEMBER_ID", "IllegalGeneration",
            "RebalanceInProgress", "UnknownMemberId")


@pytest.mark.parametrize("member", ["python", "java"])
def test_the_revoke_handler_commits_after_the_delay(run_scenario, member):
    result = run_scenario("member-kill", protocol="classic-cooperative", member=member, revoke_delay_ms=DELAY_MS)
    assert_run_passes(result)
    events = History.load(result.run_dir / "history")
    started = [e for e in events if e["type"] == "started"]
    assert started and {e["effective"]["revoke_delay_ms"] for e in started} == {DELAY_MS}
    in_handler = [e for e in events if e["type"] == "committed" and "revoke_began" in e]
    assert in_handler, "no commit made in a revoke handler: the scenario revoked nothing from a live member"
    for c in in_handler:
        waited = c["mono"] - c["revoke_began"]
        assert waited >= DELAY_MS / 1000, f"{c['member']} committed {waited:.3f}s after its revocation began"
        # a member stopping while the group rebalances can be refused for its generation (the broker's own answer,
        # judged by commit_progress against what comes after: the run passed); seen under load at the final stop
        assert c["ok"] or any(x in (c.get("error") or "") for x in REFUSALS), c
        revoked = next(e for e in events if e["type"] == "revoked" and e["member"] == c["member"]
                       and e["mono"] >= c["mono"])
        assert {tuple(p) for p in revoked["partitions"]} >= {(t, p) for t, p, _ in c["offsets"]}
    assert any(c["ok"] for c in in_handler), in_handler
