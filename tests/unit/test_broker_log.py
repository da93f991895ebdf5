"""harness/cluster/broker_log.py: which broker log lines are about a run's group, and how their times become the
history's clock. Real log lines of Kafka 4.3.1 brokers (from runs of protocol-migration) as inputs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.record import schema as history_schema
from harness.cluster.broker_log import BrokerLog, about_group, java_string_hash, offsets_partition, parse_line, read_events

G = "g-20261123T225604-protocol-migration-classic-cooperative-3"
REFUSAL = (f"2026-11-23T22:59:01.123+0000 [group-coordinator-event-processor-1] WARN "
           f"org.apache.kafka.coordinator.group.GroupMetadataManager - [GroupCoordinator id=2 "
           f"topic=__consumer_offsets partition=5] Cannot upgrade classic group {G} to consumer group: userData "
           f"from a custom assignor would be lost.")
LOADED = ("2026-11-23T22:59:02.500+0000 [group-coordinator-event-processor-0] INFO "
          "org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime - [GroupCoordinator id=3] Finished loading "
          "of metadata from __consumer_offsets-5 with epoch 1 in 12ms where 1ms was spent in the scheduler.")
FETCHER = ("2026-11-23T22:59:02.600+0000 [kafka-1-metadata-loader-event-handler] INFO "
           "kafka.server.ReplicaFetcherManager - [ReplicaFetcherManager on broker 2] Removed fetcher for partitions "
           "Set(__consumer_offsets-5)")
OTHER_PARTITION = LOADED.replace("__consumer_offsets-5 ", "__consumer_offsets-55 ")
OTHER_GROUP = REFUSAL.replace(G, "g-other")


def test_java_hash_and_the_offsets_partition_of_a_group():
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2**31  # Kafka's Utils.abs makes it 0
    assert offsets_partition(G, 6) == 5  # the coordinator's log above says partition=5
    assert offsets_partition("polygenelubricants", 50) == 0
    # a negative hash (-1827088968): Math.abs, not a mask; Kafka 4.3.1 put this group on partition=0
    assert offsets_partition("g-20261123T230946-coordinator-restart-compacted-classic-cooperative-1", 6) == 0


def test_parse_both_layouts_and_refuse_other_lines():
    rec = parse_line(REFUSAL)
    assert rec["level"] == "WARN" and rec["logger"].endswith("GroupMetadataManager")
    assert rec["wall"] == pytest.approx(1795474741.123) and rec["message"].startswith("[GroupCoordinator id=2")
    log4j = parse_line("[2026-11-23 22:59:01,123] INFO [GroupCoordinator id=2] Finished loading "
                       "(org.apache.kafka.coordinator.group.GroupCoordinatorService)")
    assert log4j["wall"] == pytest.approx(1795474741.123) and log4j["level"] == "INFO"
    assert parse_line("\tat org.apache.kafka.Foo.bar(Foo.java:1)") is None
    assert parse_line("557 [main] INFO kafka.Kafka - relative times are not wall times") is None


def test_lines_about_the_group_or_its_coordinator_partition_only():
    msg = lambda line: parse_line(line)["message"]  # noqa: E731
    assert about_group(msg(REFUSAL), group_id=G, partition=5)
    assert about_group(msg(LOADED), group_id=G, partition=5)
    assert not about_group(msg(FETCHER), group_id=G, partition=5)  # bookkeeping of the partition
    assert not about_group(msg(OTHER_PARTITION), group_id=G, partition=5)
    assert not about_group(msg(OTHER_GROUP), group_id=G, partition=5)


def test_read_events_from_an_offset_converts_times_and_drops_a_torn_line(tmp_path):
    log = tmp_path / "broker.log"
    before = OTHER_GROUP.replace("22:59:01.123", "22:58:00.000") + "\n"
    log.write_text(before + REFUSAL + "\n\tat a.stack.Trace(T.java:1)\n" + LOADED + "\n" + FETCHER[:40])
    evs = read_events(log, start=len(before), broker=2, group_id=G, partition=5, since_wall=0.0,
                      wall_minus_mono=1795470000.0)
    assert [e["level"] for e in evs] == ["WARN", "INFO"]
    assert evs[0]["mono"] == pytest.approx(4741.123) and evs[0]["broker"] == 2 and evs[0]["type"] == "broker"
    assert read_events(log, start=0, broker=2, group_id=G, partition=5, since_wall=1795474742.0,
                       wall_minus_mono=0.0)[0]["message"].startswith("[GroupCoordinator id=3] Finished")
    gone = read_events(tmp_path / "missing.log", start=0, broker=1, group_id=G, partition=5, since_wall=0,
                       wall_minus_mono=0)
    assert [(e["type"], e["broker"]) for e in gone] == [("broker_log_unread", 1)]
    assert gone[0]["error"].startswith("FileNotFoundError")


class _Cluster:
    """Just what BrokerLog reads of a backend: settings, broker ids, where each broker's log is."""

    def __init__(self, root: Path) -> None:
        self.root = root
        from harness.cluster.base import BrokerSettings
        self.settings = BrokerSettings()

    def broker_ids(self):
        return [1, 2]

    def broker_log_path(self, b):
        return self.root / f"broker-{b}" / "broker.log"


def test_collect_reads_from_the_mark_and_writes_a_valid_history_file(tmp_path, monkeypatch):
    c = _Cluster(tmp_path)
    (tmp_path / "broker-1").mkdir()
    (tmp_path / "broker-1" / "broker.log").write_text(REFUSAL + "\n")  # before the run: not this run's
    logs = BrokerLog(c, group_id=G)
    assert logs.partition == 5 and logs.starts == {1: len(REFUSAL) + 1, 2: 0}
    logs.since_wall = 0.0  # the lines above are stamped in the past; what counts here is the offset
    logs.wall_minus_mono = 1795474000.0  # their clock (on a host up for less than their age mono would be < 0)
    with open(tmp_path / "broker-1" / "broker.log", "a") as f:
        f.write(LOADED + "\n")
    (tmp_path / "broker-2").mkdir()
    (tmp_path / "broker-2" / "broker.log").write_text(REFUSAL + "\n")
    out = tmp_path / "history" / "brokers.jsonl"
    assert logs.collect(out) == 2
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["source"] == "broker-log" and lines[0]["group_id"] == G and lines[0]["offsets_partition"] == 5
    assert [e["broker"] for e in lines[1:]] == [2, 1]  # in time order
    assert history_schema.validate_dir(out.parent) == []


def test_collect_records_a_log_it_could_not_read(tmp_path):
    """A broker whose log cannot be read leaves a broker_log_unread event, which the schema takes and
    expected_refusal reads as 'unknown', never as 'that broker said nothing'."""
    c = _Cluster(tmp_path)
    (tmp_path / "broker-1").mkdir()
    (tmp_path / "broker-1" / "broker.log").write_text("")
    logs = BrokerLog(c, group_id=G)
    logs.since_wall, logs.wall_minus_mono = 0.0, 1795474000.0
    (tmp_path / "broker-1" / "broker.log").write_text(REFUSAL + "\n")  # broker 2 has no log at all
    out = tmp_path / "history" / "brokers.jsonl"
    assert logs.collect(out) == 1
    assert [e["type"] for e in logs.events()] == ["broker"]
    lines = [json.loads(x) for x in out.read_text().splitlines()][1:]
    assert sorted(e["type"] for e in lines) == ["broker", "broker_log_unread"]
    assert history_schema.validate_dir(out.parent) == []
    from harness.record.history import History
    from harness.invariants import CheckSettings, brokers
    from histbuild import history, join, run_end, run_start
    h = history([run_start(0.0), *join("a", 1.0, [0]), run_end(9.0)])
    h2 = History.from_events([*h.events, *[{**e, "source": "broker-log"} for e in lines if e["type"] != "broker"]])
    h2.headers.append({"type": "header", "source": "broker-log", "group_id": G, "member": None})
    assert brokers.check(h2, CheckSettings()).status == "unknown"
