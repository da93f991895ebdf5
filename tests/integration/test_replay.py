"""Verify: `harness replay RUN_DIR` runs exactly the schedule the first run recorded.

Setup: the shared cluster; a short scenario run once with a seed.
Then: replaying its directory gives a new run with the same seed and the same actions, judged again. A run that fails
only as a registered Kafka or client finding (its marks cover every failing witness; the consumer protocol's first
assignments on a loaded machine: docs/findings.md) is settled as the suites settle one (tests/integration/
verdict_text.py).
"""
import json

import pytest

from harness.run import runner
from harness.record.schema import validate_dir
from tests.integration.verdict_text import not_held, settle_known

pytestmark = pytest.mark.integration


def _passed(pytestconfig, result) -> None:
    verdicts = json.loads((result.run_dir / "verdicts.json").read_text())
    settle_known(pytestconfig, 0 if result.status == "pass" else 1, result.run_dir, verdicts)
    assert result.status == "pass", (result.run_dir, not_held(verdicts))


def test_replay_runs_the_same_schedule(run_scenario, kafka_cluster, runs_root, pytestconfig):
    first = run_scenario("pause-short", protocol="consumer")
    _passed(pytestconfig, first)
    assert validate_dir(first.run_dir / "history") == []
    again = runner.run_scenario(runner.replay_config(first.run_dir, runs_root=str(runs_root)), cluster=kafka_cluster)
    a = json.loads((first.run_dir / "run.json").read_text())
    b = json.loads((again.run_dir / "run.json").read_text())
    assert again.run_dir != first.run_dir
    assert b["seed"] == a["seed"]
    assert b["schedule"] == a["schedule"]
    assert [x["kind"] for x in b["schedule_ran"]] == [x["kind"] for x in a["schedule_ran"]]
    _passed(pytestconfig, again)
