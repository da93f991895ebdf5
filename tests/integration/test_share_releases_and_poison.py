"""Verify: a share group runs and is judged on Kafka 4.2, whose brokers know `share.delivery.count.limit` and
`share.partition.max.record.locks` as broker configs only; and a poison record kills every member it is delivered
to until the delivery count limit archives it.

Setup: `harness run` in a subprocess, each on its own 3-broker local cluster, the Java share member
(KafkaShareConsumer). Then:
- share-leader-restart on Kafka 4.2 (the newest 4.2.x): the brokers started with `group.share.delivery.count.limit=4`
  and `group.share.partition.max.record.locks=100` in their own config (run.json's `share_broker_settings` and
  `broker_settings`), the group got the other settings as group configs, the `group_settings` event reads the
  limit from the brokers, and every share checker judged the run (none unknown);
- share-poison-record on the newest Kafka: partition 0's offset 60 is delivered 4 times (counts 1, 2, 3, 4), each
  holder dies (exit 3) and `restart_crashed` starts it again, the record never comes back after count 4, and
  `share_poison` is valid, naming the limit it judged with.
A run that fails only as a registered finding whose marks cover every failing witness is settled as the suites
settle one (docs/findings.md); any other failure fails the asserts below.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.findings.registry import known
from harness.record.history import History
from harness.suite.known import line, settle

pytestmark = [pytest.mark.integration, pytest.mark.nightly]
ROOT = Path(__file__).resolve().parents[2]


def run(tmp_path, pytestconfig, scenario: str, kafka: str):
    r = subprocess.run([sys.executable, "-m", "harness", "run", scenario, "--seed", "1", "--member", "java",
                        "--kafka-version", kafka, "--runs-root", str(tmp_path / "runs")], cwd=ROOT,
                       capture_output=True, text=True, timeout=900)
    (d,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.name.startswith("cluster")]
    v = json.loads((d / "verdicts.json").read_text())
    excuse = known(d, v) if r.returncode == 1 else None
    if excuse is not None:
        said = "".join(f"\n  {n}: invalid: {x['message']}" for n, x in v.items() if x["status"] == "invalid")
        settle(pytestconfig, f"run {d}: fail{said}\n{line(excuse)}", excuse)
    return r, d, History.load(d / "history"), v


def test_a_share_run_on_kafka_4_2_sets_the_limit_at_the_brokers_and_is_judged(tmp_path, pytestconfig):
    r, d, h, v = run(tmp_path, pytestconfig, "share-leader-restart", "4.2")
    meta = json.loads((d / "run.json").read_text())
    assert meta["kafka_version"].startswith("4.2."), meta["kafka_version"]
    assert meta["share_broker_settings"] == {"group.share.delivery.count.limit": "4",
                                             "group.share.partition.max.record.locks": "100"}
    assert "share.delivery.count.limit" not in meta["share_group_configs"]
    gs = h.of_type("group_settings")[-1]
    assert gs["broker"]["group.share.delivery.count.limit"] == "4"
    assert "share.delivery.count.limit" not in gs["group"]
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "group.share.delivery.count.limit" in v["share_redelivery"]["message"]


def test_a_poison_record_kills_each_holder_until_the_limit_archives_it(tmp_path, pytestconfig):
    r, d, h, v = run(tmp_path, pytestconfig, "share-poison-record", "latest")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    got = [e for e in h.of_type("share_acquired") if (e["partition"], e["offset"]) == (0, 60)]
    assert [e["delivery_count"] for e in got] == [1, 2, 3, 4]
    crashed = [e for e in h.of_type("member_exit") if e.get("how") == "crash"]
    assert {e["member"] for e in crashed} == {e["member"] for e in got} and all(e["code"] == 3 for e in crashed)
    restarted = [x for e in h.of_type("action_end") if e["kind"] == "restart_crashed" for x in e["restarted"]]
    assert len(restarted) == 4
    assert v["share_poison"]["status"] == "valid" and "share.delivery.count.limit" in v["share_poison"]["message"]
