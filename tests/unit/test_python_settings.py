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
