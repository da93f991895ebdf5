"""Verify: commit_durability on real brokers (docs/invariants.md, 13).

Setup: coordinator-kill (the broker that coordinates the group SIGKILLed mid-run and started again) on a cluster of
its own, the newest Kafka.
Then:
- under each consumer-group protocol, the harness reads the group's committed offsets after the kill and at the
  end (`offsets_read`, answered, naming the coordinator), and commit_durability judges them valid;
- with `--misbehave phantom-commit` (slot 0 records, as it stops, a commit it never sent), the read at the end
  shows the lower offset the coordinator really has: commit_durability is invalid and the run fails.
"""
from __future__ import annotations

import pytest

from harness.record.history import History
from harness.run.runner import RunConfig, run_scenario
from harness.suite.plugin import failure_message

pytestmark = [pytest.mark.integration, pytest.mark.nightly]


def _run(tmp_path, **kw):
    return run_scenario(RunConfig.for_scenario("coordinator-kill", runs_root=str(tmp_path), seed=1, **kw))


def _reads(result) -> list[dict]:
    return [e for e in History.load(result.run_dir / "history") if e["type"] == "offsets_read"]


@pytest.mark.parametrize("group_protocol", ["classic-eager", "classic-cooperative", "consumer"])
def test_commits_survive_the_coordinator_killed(group_protocol, tmp_path):
    result = _run(tmp_path, protocol=group_protocol)
    v = result.verdicts["commit_durability"]
    assert v.status == "valid", failure_message(result)
    reads = {r["after"]: r for r in _reads(result)}
    assert set(reads) == {"a1", "end"}, reads
    assert all(r["error"] is None and r["offsets"] and r["coordinator"] is not None for r in reads.values()), reads
    assert v.measurements["judged"] >= 1


def test_a_commit_the_broker_never_took_fails_commit_durability(tmp_path):
    result = _run(tmp_path, protocol="classic-cooperative", misbehave="phantom-commit")
    v = result.verdicts["commit_durability"]
    assert result.status == "fail" and v.status == "invalid", failure_message(result)
    assert "(rolled back)" in v.message and "the read at the end" in v.message, v.message
    phantom = [w for w in v.witnesses if w["type"] == "committed"]
    assert phantom and phantom[0]["member"] == "m1"  # slot 0 misbehaves
