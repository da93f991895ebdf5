"""Verify: bench/rebalance_timeline.py places a run's lines on one timeline from the `add_partitions` action's start:
the coordinator's lines, and per member its client's first lines with the new partition count, the heartbeat's new
target and the reconciliation, and its first `assigned` of a new partition; other clients' lines and lines before
the action are not taken for the member's.

Setup: a hand-made run directory (harness, broker and member histories, one member log of librdkafka lines as
confluent-kafka writes them, two clients in one process).
"""
import json
from pathlib import Path

import benchmod
import pytest

T0 = 1000.0
TOPIC = "t-1"


@pytest.fixture(scope="module")
def tl():
    return benchmod.load("rebalance_timeline")


def jsonl(path: Path, events: list[dict]) -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def rdk(ts: float, client: str, fac: str, text: str) -> str:
    return f"%7|{ts:.3f}|{fac}|{client}#consumer-1| [thrd:main]: {text}\n"


@pytest.fixture
def run_dir(tmp_path):
    (tmp_path / "history").mkdir()
    (tmp_path / "logs").mkdir()
    jsonl(tmp_path / "history" / "harness.jsonl", [
        {"type": "header"}, {"type": "run_start", "wall": T0 - 10, "settings": {"topic": TOPIC, "partitions": 100}},
        {"type": "action_start", "wall": T0, "action_id": "a2", "kind": "add_partitions", "params": {"count": 1000}},
        {"type": "action_end", "wall": T0 + 1.25, "action_id": "a2", "kind": "add_partitions"}])
    jsonl(tmp_path / "history" / "brokers.jsonl", [
        {"type": "broker", "wall": T0 - 5, "broker": 3, "message": "[GroupId g] Bumped group epoch to 11"},
        {"type": "broker", "wall": T0 + 7.5, "broker": 3, "message": "[GroupId g] Bumped group epoch to 12"}])
    jsonl(tmp_path / "history" / "member-m1.jsonl", [
        {"type": "started", "wall": T0 - 9, "member": "m1"},
        {"type": "assigned", "wall": T0 - 8, "member": "m1", "partitions": [[TOPIC, 0]]},
        {"type": "assigned", "wall": T0 + 8.0, "member": "m1", "partitions": [[TOPIC, 100], [TOPIC, 101]]}])
    jsonl(tmp_path / "history" / "member-m2.jsonl", [{"type": "started", "wall": T0 - 9, "member": "m2"}])
    (tmp_path / "logs" / "member-m1.log").write_text(
        rdk(T0 - 3, "m1", "HEARTBEAT", 'ConsumerGroupHeartbeat received target assignment "t-1[0]"')
        + rdk(T0 + 0.5, "m1", "METADATA", f"  Topic {TOPIC} with 1000 partitions")
        + rdk(T0 + 0.4, "m2", "METADATA", f"  Topic {TOPIC} with 1000 partitions")
        + rdk(T0 + 7.6, "m1", "HEARTBEAT", 'ConsumerGroupHeartbeat received target assignment "t-1[100]"')
        + rdk(T0 + 7.7, "m1", "HEARTBEAT", 'Reconciliation starts with new target assignment "t-1[100]"')
        + "a line of the member's own\n")
    return tmp_path


def test_each_members_steps_are_its_own_and_after_the_action(tl, run_dir):
    t = tl.timeline(run_dir)
    assert t["action_end"] == 1.25 and t["partitions_before"] == 100 and t["partitions_after"] == 1000
    assert [c["t"] for c in t["coordinator"]] == [7.5]  # the bump 5 s before the action is not on it
    assert t["members"]["m1"] == {"metadata_has_new": 0.5, "heartbeat_target": 7.6, "reconcile_start": 7.7,
                                  "assigned_new": 8.0}
    assert t["members"]["m2"] == {"metadata_has_new": 0.4, "heartbeat_target": None, "reconcile_start": None,
                                  "assigned_new": None}


def test_the_report_has_a_row_per_member_and_says_when_no_client_lines_were_logged(tl, run_dir):
    text = tl.report(tl.timeline(run_dir))
    assert "1.250  CreatePartitions returned" in text and "Bumped group epoch to 12" in text
    assert "debug=cgrp" not in text
    (run_dir / "logs" / "member-m1.log").write_text("no client lines\n")
    assert "run with --client-set debug=cgrp,metadata" in tl.report(tl.timeline(run_dir))


def test_a_directory_that_is_not_a_run_is_refused_with_exit_2(tl, tmp_path, capsys):
    assert tl.main([str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_a_brokers_local_logs_of_the_new_partitions_are_timed_from_its_log(tl, run_dir):
    from datetime import datetime, timezone

    def line(t: float, text: str) -> str:
        iso = datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
        return f"{iso}+0000 [kafka-1-metadata-loader-event-handler] INFO kafka.log.LogManager - {text}\n"

    cluster = run_dir / "cluster"
    (cluster / "broker-1").mkdir(parents=True)
    (cluster / "broker-1" / "broker.log").write_text(
        line(T0 - 8, f"Created log for partition {TOPIC}-5 in /data with properties {{}}")  # an old one, before
        + line(T0 + 0.5, f"Created log for partition {TOPIC}-100 in /data with properties {{}}")
        + line(T0 + 0.6, f"Created log for partition {TOPIC}-99 in /data with properties {{}}")  # not a new one
        + line(T0 + 7.25, f"Created log for partition {TOPIC}-999 in /data with properties {{}}")
        + line(T0 + 7.5, f"Created log for partition {TOPIC}x-999 in /data with properties {{}}"))  # another topic
    t = tl.timeline(run_dir, cluster)
    assert t["local_logs"] == {"broker-1": {"first": 0.5, "last": 7.25, "count": 2}}
    assert "broker-1: created its first local log of a new partition; its last (2 in all) at 7.250" in tl.report(t)
