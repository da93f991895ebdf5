"""Partitions added to the sink connector's topic while the workers run (`add_partitions` on a Connect group), and
the same action refused on Kafka Streams at plan time: histories that must pass and ones that must fail."""
import pytest
from connectbuild import cluster, history
from histbuild import acked, ev, processed
from histbuild import settings as check_settings

from harness.plan import actions
from harness.base.errors import BadInput
from harness.invariants.connect import ConnectCheckSettings, judge_connect

SINK = ConnectCheckSettings.from_dict({"protocol": "sessioned", "scheduled_delay_s": 10.0, "session_timeout_s": 6.0,
                                       "connectors": ["sink"], "sink_connectors": ["sink"], "tasks": {"sink": 3},
                                       "zombie_tolerance_s": 12.0})


def grown(t=10.0, before=3, count=6):
    return ev("action_end", t, "harness", action_id=1, kind="add_partitions", ok=True, error=None, topic="t",
              before=before, count=count, producer_saw_s=0.1)


def _before():
    """Records 0-1 of partitions 0-2 before the growth, all delivered to sink tasks."""
    return [*(acked(5.0, p, o) for p in range(3) for o in range(2)),
            *(processed("m1", 6.0, p, 0, 1) for p in range(3))]


def integrity(*extra):
    h = history(cluster(), *_before(), *extra)
    return judge_connect(h, SINK, check_settings(partitions=3))["record_integrity"]


def test_the_added_partitions_records_delivered_pass_and_are_counted():
    v = integrity(grown(), *(acked(11.0, p, o) for p in range(3, 6) for o in range(3)),
                  *(processed("m2", 16.0, p, 0, 2) for p in range(3, 6)))
    assert v.status == "valid", v.message
    assert v.measurements["added_partitions"] == [3, 4, 5]
    assert v.measurements["added_partition_records"] == 9 and v.measurements["added_partition_lost"] == 0
    assert "9 of them in partitions added" in v.message


def test_an_added_partition_never_read_fails():
    """The sink tasks never learnt of partition 4 (a consumer whose metadata is never refreshed): lost."""
    v = integrity(grown(), *(acked(11.0, p, o) for p in range(3, 6) for o in range(3)),
                  *(processed("m2", 16.0, p, 0, 2) for p in (3, 5)))
    assert v.status == "invalid", v.message
    assert v.measurements["lost"] == 3 and v.measurements["added_partition_lost"] == 3
    assert "3 in partition 4 (added 10.0s into the run by add_partitions)" in v.message


def test_an_added_partition_begun_at_its_end_fails():
    """The sink began partition 3 after its first records (auto.offset.reset=latest would): they are skipped."""
    v = integrity(grown(), acked(10.5, 3, 0), acked(10.6, 3, 1), acked(17.0, 3, 2), processed("m2", 18.0, 3, 2, 2))
    assert v.status == "invalid" and v.measurements["added_partition_lost"] == 2, v.message
    assert v.measurements["added_partition_records"] == 3


def test_without_added_partitions_nothing_is_added_to_the_verdict():
    v = integrity()
    assert v.status == "valid" and "added_partitions" not in v.measurements


def test_add_partitions_is_an_action_of_connect_groups():
    assert actions.kind_refusal("add_partitions", "connect") is None


def test_add_partitions_on_streams_is_refused_with_kafka_streams_rule():
    why = actions.kind_refusal("add_partitions", "streams")
    assert "Kafka Streams refuses it" in why and "changelog" in why and "INCORRECTLY_PARTITIONED_TOPICS" in why
    assert "docs/streams.md" in why and "\n" not in why


def test_the_plan_refuses_add_partitions_on_a_streams_scenario(tmp_path, monkeypatch):
    from harness.kafka import dist as kafka_dist
    from harness.plan.config import RunConfig
    from harness.run.resolve import resolve
    monkeypatch.setattr(kafka_dist, "resolve", lambda v, progress=None: kafka_dist.KafkaDist("4.4.0", tmp_path))
    cfg = RunConfig(scenario="streams-broker-bounce", seed=1, protocol="classic", kafka_version="4.4.0",
                    backend="local", schedule=({"kind": "add_partitions", "params": {"count": 6}},),
                    runs_root=str(tmp_path / "runs"))
    with pytest.raises(BadInput, match=r"step 0 \(add_partitions\) Kafka Streams refuses it: .*has invalid "
                                       r"partitions.*streams-broker-bounce") as e:
        resolve(cfg, progress=lambda *_: None)
    assert "\n" not in str(e.value)


def test_the_sink_consumers_metadata_age_is_a_recorded_connect_setting():
    from harness.plan.kinds.connect import CONNECT_DEFAULTS, WORKER_KEYS, connect_settings
    from harness.plan.config import RunConfig
    assert CONNECT_DEFAULTS["consumer.metadata.max.age.ms"] == 5000 and "consumer.metadata.max.age.ms" in WORKER_KEYS
    cfg = RunConfig(scenario="connect-partitions-added", seed=1, protocol="sessioned")
    sc = cfg.validate()
    assert connect_settings(cfg, sc)["consumer.metadata.max.age.ms"] == 5000
    bad = RunConfig(scenario="connect-partitions-added", seed=1, protocol="sessioned",
                    connect_settings=(("consumer.metadata.max.age.ms", 0),))
    with pytest.raises(BadInput, match="consumer.metadata.max.age.ms"):
        connect_settings(bad, bad.validate())
