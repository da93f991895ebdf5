"""Verify: an error put in one partition's entry of a real broker answer reaches the member, for that partition only,
on the local and the docker backend (issue 47, "Request faults on the fetch path, per partition").

Setup: `harness run FILE` in a subprocess, each on its own 3-broker cluster of the newest Kafka release with the
request proxy in the client path, one Python member (confluent-kafka, consumer protocol, librdkafka's `topic,fetch,
consumer` debug lines in its log), a topic of 3 partitions. The schedule:
- 10 s after the first assignment (the member has read partition 1: its position has a leader epoch), an
  `error_response` with `partition = 1` on slot 0's OffsetForLeaderEpoch, then partition 1's leader restarted:
  the member validates its position on partition 1 with the new leader (KIP-320), the broker answers, and the proxy
  puts the error in partition 1's entry;
- an `error_response` with `partition = 3` on slot 0's ListOffsets, then the topic grown to 4 partitions: the member
  looks up the new partition's first offset (no committed offset), and gets the error in partition 3's entry;
- a wait for the group to settle after it (a clean clone's `./dev test` at load 20 ended the run right after the
  second fault was reached, with the group's answer to the new partition not yet settled: `bounded_migrations`
  undecided, one stable point).
Then: each fault is one `fault_start`/`fault_end` (`answered`) window naming the API, partition, error and member;
the member's log has librdkafka's line of that error, and every line of it names that partition and no other; the
run passes (the member validates again, looks the offset up again, and reads every partition on).
A run that fails only as a registered finding whose marks cover every failing witness is settled as the suites
settle one (tests/integration/verdict_text.py).
"""
from __future__ import annotations

import re

import pytest

from tests.integration.test_request_faults_real import run
from tests.integration.verdict_text import not_held

pytestmark = pytest.mark.integration

SCENARIO = """
name = "partition-errors-{backend}"
protocols = ["consumer"]

[members]
count = 1
client_settings = {{ debug = "topic,fetch,consumer" }}

[workload]
partitions = 3

[[steps]]
action = "error_response"
after = 10.0
api = "OffsetForLeaderEpoch"
error = "{epoch_error}"
partition = 1
slot = 0

[[steps]]
action = "restart_partition_leader"
partition = 1
down_s = 1.0
wait_stable = false

[[steps]]
action = "wait_request_fault"
timeout_s = 60.0

[[steps]]
action = "error_response"
api = "ListOffsets"
error = "{offsets_error}"
partition = 3
slot = 0

[[steps]]
action = "add_partitions"
count = 4

[[steps]]
action = "wait_request_fault"
timeout_s = 60.0

[[steps]]
action = "wait_stable"
"""
#: librdkafka's text of each error (rd_kafka_err2str), as its debug lines say it
TEXT = {"UNKNOWN_LEADER_EPOCH": "Leader epoch is newer than broker epoch",
        "OFFSET_NOT_AVAILABLE": "Leader high watermark is not caught up",
        "NOT_LEADER_OR_FOLLOWER": "Not leader for partition"}
#: the debug line each API's error comes in (rdkafka_offset.c): the partition named as "<topic> [N]"
LINE = {"OffsetForLeaderEpoch": "OffsetForLeaderEpoch requested failed", "ListOffsets": "Offset reply error for topic"}
PARTITION = re.compile(r"\s\[(\d+)\]")


def _fault(h, api):
    (start,) = [e for e in h.of_type("fault_start") if e.get("api") == api]
    (end,) = [e for e in h.of_type("fault_end") if e["fault_id"] == start["fault_id"]]
    return start, end


def _partitions_of_error(log: str, api: str, error: str) -> set[int]:
    """The partitions named on the member's log lines that report `error` for `api`."""
    lines = [ln for ln in log.splitlines() if LINE[api] in ln and TEXT[error] in ln]
    return {int(n) for ln in lines for n in PARTITION.findall(ln)}


@pytest.mark.parametrize("backend,epoch_error,offsets_error", [
    ("local", "UNKNOWN_LEADER_EPOCH", "OFFSET_NOT_AVAILABLE"),
    ("docker", "NOT_LEADER_OR_FOLLOWER", "NOT_LEADER_OR_FOLLOWER"),
])
def test_an_error_in_one_partitions_entry_reaches_the_member_for_that_partition_only(
        tmp_path, pytestconfig, backend, epoch_error, offsets_error):
    if backend == "docker":
        from harness.cluster import docker_engine
        try:
            docker_engine.ensure_engine(progress=print)
        except Exception as e:  # a machine that cannot run an engine: said, not run
            pytest.skip(f"no Docker engine here: {e}")
    text = SCENARIO.format(backend=backend, epoch_error=epoch_error, offsets_error=offsets_error)
    r, d, h, verdicts = run(tmp_path, pytestconfig, text, "--backend", backend)
    assert r.returncode == 0, not_held(verdicts) + "\n" + (r.stdout + r.stderr)[-2000:]
    log = (d / "logs" / "member-m1.log").read_text(errors="replace")
    for api, partition, error in (("OffsetForLeaderEpoch", 1, epoch_error), ("ListOffsets", 3, offsets_error)):
        start, end = _fault(h, api)
        assert (start["kind"], start["member"], start["partition"], start["error"], end["outcome"]) == \
            ("error_response", "m1", partition, error, "answered"), start
        assert len(start["topics"]) == 1 and start["topics"][0].startswith("t-")
        assert _partitions_of_error(log, api, error) == {partition}, (api, error)
