"""Verify: a real failing run's seeded schedule shrinks to a shorter schedule that still fails.

Setup: the shared cluster; `scale-out-in` (10+ actions from its seed) with a member that keeps
processing partitions after they are revoked from it. It breaks exclusive ownership only once a
rebalance takes partitions from it, so which actions the schedule keeps matters.
Then: shrinking (each attempt a real run) ends on a shorter schedule that still fails, still holding a
scale-out (the action that makes the misbehaving member lose partitions), saved for replay.
"""
import json

import pytest

from harness.drive.nightly import shrink_failure
from harness.run.runner import RunConfig, run_scenario

pytestmark = pytest.mark.integration


@pytest.mark.nightly  # ~100 s; shrinking itself is tested on the fake backend in CI
def test_real_failing_schedule_shrinks(kafka_cluster, runs_root):
    cfg = RunConfig(scenario="scale-out-in", seed=4, protocol="classic-cooperative", runs_root=str(runs_root),
                    misbehave="process-after-revoke", kafka_version=kafka_cluster.requested_version)
    first = run_scenario(cfg, cluster=kafka_cluster)
    assert first.status == "fail", first
    assert first.verdicts["exclusive_ownership"].status == "invalid"
    original = json.loads((first.run_dir / "run.json").read_text())["schedule"]
    assert len(original) >= 10

    import time
    shrunk = shrink_failure(first, cfg, cluster=kafka_cluster, max_attempts=5, deadline=time.monotonic() + 900)
    assert shrunk["to_actions"] < shrunk["from_actions"] == len(original)
    assert any(a["kind"] == "scale_out" for a in shrunk["schedule"]), shrunk["schedule"]
    saved = json.loads((first.run_dir / "shrunk-schedule.json").read_text())
    assert saved == shrunk["schedule"]
    # the run directory named for replay ran exactly the shrunk schedule, and failed
    replay_dir = shrunk["run_dir"]
    meta = json.loads(open(f"{replay_dir}/run.json").read())
    assert meta["schedule"] == shrunk["schedule"] and meta["status"] == "fail"
