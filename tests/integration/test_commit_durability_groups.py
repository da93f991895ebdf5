"""Verify: commit_durability of Kafka Streams and Connect groups on real brokers (docs/invariants.md, 13, "Kafka Streams
and Connect groups").

Setup: the newest Kafka, a cluster of each run's own; a Streams application whose group's coordinator is SIGKILLed
mid-run and started again (a scenario file, `kill_coordinator`), and `connect-broker-bounce` (a sink connector's
tasks commit through `connect-harness-sink`).
Then:
- the instances and the workers record each commit the coordinator acknowledged (`group_commit`), the harness reads
  the group's committed offsets after the step on brokers and at the end (`offsets_read`, answered), and
  commit_durability judges them valid;
- with `--misbehave streams-phantom-commit` (each instance records, as its consumer closes, a commit it never sent),
  the read at the end shows the lower offset the coordinator really has: commit_durability is invalid, the run fails.
"""
from __future__ import annotations

import pytest

from harness.record.history import History
from harness.run.runner import RunConfig, run_scenario
from harness.suite.plugin import failure_message

pytestmark = [pytest.mark.integration, pytest.mark.nightly]

STREAMS_COORDINATOR_KILL = """
name = "streams-coordinator-kill"
doc = "Kafka Streams: the broker that coordinates the application's group SIGKILLed mid-run, then started again."

[members]
kind = "streams"
count = 2

[workload]
partitions = 4

[streams]
settings = { "harness.records.per.task" = 100 }

[[steps]]
action = "sleep"
s = 5.0

[[steps]]
action = "kill_coordinator"
down_s = 3.0

[[steps]]
action = "sleep"
s = 10.0
"""


def _streams(tmp_path, **kw):
    f = tmp_path / "streams-coordinator-kill.toml"
    f.write_text(STREAMS_COORDINATOR_KILL)
    return run_scenario(RunConfig.for_scenario(str(f), runs_root=str(tmp_path), seed=1, **kw))


def _reads(result) -> dict[str, dict]:
    return {e["after"]: e for e in History.load(result.run_dir / "history") if e["type"] == "offsets_read"}


def test_streams_commits_survive_the_coordinator_killed(tmp_path):
    result = _streams(tmp_path)
    v = result.verdicts["commit_durability"]
    assert v.status == "valid", failure_message(result)
    reads = _reads(result)
    assert set(reads) == {"a2", "end"}, reads
    assert all(r["error"] is None and r["offsets"] for r in reads.values()), reads
    assert v.measurements["judged"] >= 1 and v.measurements["commits_acknowledged"] >= 1


def test_a_streams_commit_the_broker_never_took_fails_commit_durability(tmp_path):
    result = _streams(tmp_path, misbehave="streams-phantom-commit")
    v = result.verdicts["commit_durability"]
    assert result.status == "fail" and v.status == "invalid", failure_message(result)
    assert "(rolled back)" in v.message and "the read at the end" in v.message, v.message


def test_connect_sink_commits_survive_a_broker_bounce(tmp_path):
    result = run_scenario(RunConfig.for_scenario("connect-broker-bounce", runs_root=str(tmp_path), seed=1))
    v = result.verdicts["commit_durability"]
    assert v.status == "valid", failure_message(result)
    reads = _reads(result)
    assert {r["group_id"] for r in reads.values()} == {"connect-harness-sink"}, reads
    assert set(reads) == {"a2", "end"} and all(r["error"] is None for r in reads.values()), reads
