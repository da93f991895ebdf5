"""The runner writes the planned steps into the history (`run_start`'s `plan`), and `schedule_performed` judges the
run against them: a run on the fake backend (harness/cluster/fake.py; fake members are real processes, only Kafka is
not there) passes with every planned step matched; its history with the last step's lines deleted does not.

Setup: a scenario registered for the test only (scale out, a stable wait, scale in); the fake Kafka version resolved
without jars; the run's own fake cluster in tmp_path.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import harness
from harness.base.versions import is_release
from harness.cluster.fake import FakeCluster, FakeWorkload
from harness.invariants import performed
from harness.kafka import dist as kafka_dist
from harness.plan import scenarios
from harness.plan.scenarios import Action, Scenario
from harness.record.history import History, read_file
from harness.run.runner import Run, RunConfig

FAKE_MEMBER = (sys.executable, str(Path(harness.__file__).parent / "members" / "fake_member.py"))
STEPS = [Action("scale_out", {}), Action("wait_stable", {}), Action("scale_in", {"pick": "newest"})]


@pytest.fixture
def fake_run(monkeypatch, tmp_path) -> Path:
    monkeypatch.setitem(scenarios.SCENARIOS, "fake-plan",
                        Scenario("fake-plan", "test only", lambda rng, ctx: list(STEPS), members=2))
    monkeypatch.setattr(kafka_dist, "resolve", lambda v, progress=None: kafka_dist.KafkaDist(
        v if is_release(v) else "4.3.1", tmp_path))
    cfg = RunConfig(scenario="fake-plan", seed=7, protocol="classic-cooperative", kafka_version="4.3.1",
                    runs_root=str(tmp_path / "runs"), partitions=6, rate_per_s=40.0, session_timeout_s=2.0,
                    heartbeat_interval_s=0.2, stable_s=0.5, stable_timeout_s=10.0, drain_timeout_s=5.0,
                    quiet_period_s=0.5, member_command=FAKE_MEMBER)
    res = Run(cfg, make_cluster=lambda **kw: FakeCluster(**kw), make_workload=FakeWorkload).execute()
    assert res.status == "pass", res.verdicts
    return Path(res.run_dir)


def test_run_start_carries_the_plan_and_each_planned_step_is_matched(fake_run):
    events = read_file(fake_run / "history" / "harness.jsonl")[1]
    start = next(e for e in events if e["type"] == "run_start")
    assert start["plan"] == [{"action_id": f"a{n}", "kind": a.kind, "params": a.params} for n, a in enumerate(STEPS, 1)]
    begun = [(e["action_id"], e["kind"], e["params"]) for e in events if e["type"] == "action_start"]
    assert begun == [(x["action_id"], x["kind"], x["params"]) for x in start["plan"]]
    v = performed.check(History.load(fake_run / "history"))
    assert v.status == "valid" and "every one of the 3 steps happened in order before run_end" in v.message, v.message
    assert "carries no plan" not in v.message


def test_the_fake_runs_history_without_its_last_step_does_not_pass(fake_run):
    path = fake_run / "history" / "harness.jsonl"
    lines = [line for line in path.read_text().splitlines()
             if not (line.startswith('{"type":"action_') and json.loads(line).get("action_id") == "a3")]
    path.write_text("\n".join(lines) + "\n")
    v = performed.check(History.load(fake_run / "history"))
    assert v.status == "unknown" and v.measurements["not_performed"] == [3], v.message
    assert "step 3 (a3) scale_in {'pick': 'newest'} did not happen: the history has no line of it" in v.message
