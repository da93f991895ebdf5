"""Verify: `harness replay RUN_DIR` runs exactly the schedule the first run recorded.

Setup: the shared cluster; a short scenario run once with a seed.
Then: replaying its directory gives a new run with the same seed and the same actions, judged again.
"""
import json

import pytest

from harness.run import runner
from harness.record.schema import validate_dir

pytestmark = pytest.mark.integration


def test_replay_runs_the_same_schedule(run_scenario, kafka_cluster, runs_root):
    first = run_scenario("pause-short", protocol="consumer")
    assert first.status == "pass", first
    assert validate_dir(first.run_dir / "history") == []
    again = runner.run_scenario(runner.replay_config(first.run_dir, runs_root=str(runs_root)), cluster=kafka_cluster)
    a = json.loads((first.run_dir / "run.json").read_text())
    b = json.loads((again.run_dir / "run.json").read_text())
    assert again.run_dir != first.run_dir
    assert b["seed"] == a["seed"]
    assert b["schedule"] == a["schedule"]
    assert [x["kind"] for x in b["schedule_ran"]] == [x["kind"] for x in a["schedule_ran"]]
    assert again.status == "pass", again
