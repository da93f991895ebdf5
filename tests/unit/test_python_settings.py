"""The Python member's effective settings record what decides its assignor (harness/members/python_settings.py)."""
from harness.base.vocabulary import LIBRDKAFKA_DEFAULT_STRATEGY
from harness.members.python_settings import effective_settings


def test_the_consumer_protocols_remote_assignor_is_recorded():
    eff, _ = effective_settings({"group.protocol": "consumer", "group.remote.assignor": "range"}, "sync")
    assert eff["group.remote.assignor"] == "range" and eff["partition.assignment.strategy"] is None
    eff, _ = effective_settings({"group.protocol": "consumer"}, "sync")
    assert eff["group.remote.assignor"] is None  # named none: the brokers' group.consumer.assignors decides


def test_a_classic_member_records_its_strategy_and_no_remote_assignor():
    eff, _ = effective_settings({}, "sync")
    assert eff["group.remote.assignor"] is None
    assert eff["partition.assignment.strategy"] == LIBRDKAFKA_DEFAULT_STRATEGY


def test_the_members_work_per_record_is_recorded():
    assert effective_settings({}, "sync", 0.0, 20.0)[0]["processing_ms"] == 20.0
    assert effective_settings({}, "sync")[0]["processing_ms"] == 0.0


def test_librdkafkas_version_is_read_from_a_tuple_or_from_its_text(monkeypatch):
    """confluent-kafka 2.12.0's libversion() is the text alone; the gate compares librdkafka's own number."""
    import confluent_kafka

    from harness.base.versions import librdkafka_number
    from harness.members import python_settings as ps
    monkeypatch.setattr(confluent_kafka, "libversion", lambda: "2.12.0")
    assert ps.librdkafka_version() == ("2.12.0", 0x020C00FF)
    assert ps.librdkafka_version()[1] >= librdkafka_number((2, 12))
    monkeypatch.setattr(confluent_kafka, "libversion", lambda: ("2.3.0", 0x020300FF))
    assert ps.librdkafka_version() == ("2.3.0", 0x020300FF)
    assert ps.librdkafka_version()[1] < librdkafka_number((2, 4))
    assert ps.librdkafka_text_number("2.4.0-RC2") < librdkafka_number((2, 4)) + 0xFF
    assert ps.librdkafka_text_number("2.4.0-RC2") == librdkafka_number((2, 4))
