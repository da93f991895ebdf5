"""The Python member's `harness.lost.on.refused.commit` (docs/member-contract.md): under the consumer protocol a commit
refused because the group no longer knows the member makes it take its assignment for lost, the workaround of
docs/findings.md's librdkafka livelock. Without a broker: the member's consumer is made (librdkafka connects lazily)
and its commits go to a stand-in that refuses them as told."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from fakemsg import Message
from harness.members import python_member as pm
from harness.base.vocabulary import LOST_ON_REFUSED_COMMIT
from harness.members.python_member import consumer_config
from harness.members.python_settings import refused_commit_is_lost, split_settings
from harness.record.history import read_file


class Consumer:
    """Records commits and (un)subscriptions; refuses commits with `error` while it is set; `consume` hands over
    `batch` once and stops the member."""

    def __init__(self, error: int | None) -> None:
        self.calls, self.error, self.batch, self.member = [], error, [], None

    def consume(self, num_messages, timeout):
        self.member.running = False
        batch, self.batch = self.batch, []
        return batch

    def close(self):
        self.calls.append(("close",))

    def commit(self, *, offsets, asynchronous):
        self.calls.append(("commit", sorted((tp.topic, tp.partition, tp.offset) for tp in offsets)))
        if self.error is not None:
            raise KafkaException(KafkaError(self.error))

    def unsubscribe(self):
        self.calls.append(("unsubscribe",))

    def subscribe(self, topics, **callbacks):
        self.calls.append(("subscribe", tuple(topics)))


@pytest.fixture
def member(tmp_path):
    made = []

    def make(protocol: str, error: int | None, **settings) -> pm.Member:
        env = {"HARNESS_MEMBER_ID": "m1", "HARNESS_TOPIC": "t", "HARNESS_GROUP_ID": "g", "HARNESS_PROTOCOL": protocol,
               "HARNESS_BOOTSTRAP": "127.0.0.1:9", "HARNESS_HISTORY": str(tmp_path / "m1.jsonl"),
               "HARNESS_CLIENT_CONFIG": pm.json.dumps(settings)}
        m = pm.Member(env)
        m.consumer.close()
        m.consumer = Consumer(error)
        m.consumer.member = m
        m.held = {("t", 0), ("t", 1)}
        m.next_offset.update({("t", 0): 5, ("t", 1): 3})
        made.append(m)
        return m

    yield make
    for m in made:
        m.hist.close()


def events(tmp_path, *types) -> list[dict]:
    return [e for e in read_file(tmp_path / "m1.jsonl")[1] if e["type"] in types]


def test_a_commit_the_group_refused_for_an_unknown_member_is_a_lost_assignment_under_the_consumer_protocol():
    unknown = str(KafkaError(KafkaError.UNKNOWN_MEMBER_ID))
    assert refused_commit_is_lost("consumer", unknown)
    assert refused_commit_is_lost("consumer", str(KafkaError(KafkaError.FENCED_MEMBER_EPOCH)))
    # a stale epoch is a member whose epoch moved on mid-rebalance: it still owns what it held
    assert not refused_commit_is_lost("consumer", str(KafkaError(KafkaError.STALE_MEMBER_EPOCH)))
    assert not refused_commit_is_lost("consumer", str(KafkaError(KafkaError.REBALANCE_IN_PROGRESS)))
    assert not refused_commit_is_lost("consumer", None)
    # the classic protocols' librdkafka resets the member and rejoins by itself on UNKNOWN_MEMBER_ID
    assert not refused_commit_is_lost("classic-cooperative", unknown)


def test_the_members_own_settings_are_taken_out_of_the_clients_and_checked():
    given = {"session.timeout.ms": 6000, LOST_ON_REFUSED_COMMIT: "TRUE"}
    assert split_settings(given) == ({"session.timeout.ms": 6000}, {LOST_ON_REFUSED_COMMIT: "true"})
    env = {"HARNESS_PROTOCOL": "consumer", "HARNESS_CLIENT_CONFIG": pm.json.dumps(given)}
    assert LOST_ON_REFUSED_COMMIT not in consumer_config(env) and consumer_config(env)["session.timeout.ms"] == 6000
    with pytest.raises(SystemExit, match="unknown member setting 'harness.lost.on.refused'"):
        split_settings({"harness.lost.on.refused": "true"})
    with pytest.raises(SystemExit, match="harness.lost.on.refused.commit is true or false, not 'yes'"):
        split_settings({LOST_ON_REFUSED_COMMIT: "yes"})


def test_with_the_setting_a_refused_commit_writes_lost_commits_nothing_more_and_subscribes_again(member, tmp_path):
    m = member("consumer", KafkaError.UNKNOWN_MEMBER_ID, **{LOST_ON_REFUSED_COMMIT: "true"})
    m._commit({("t", 0): [0, 1, 2, 3, 4], ("t", 1): [0, 1, 2]})
    assert m.consumer.calls == [("commit", [("t", 0, 5), ("t", 1, 3)])]
    [refused] = events(tmp_path, "committed")
    [lost] = events(tmp_path, "lost")
    assert not refused["ok"] and "UNKNOWN_MEMBER_ID" in refused["error"] and lost["mono"] >= refused["mono"]
    assert lost["partitions"] == [["t", 0], ["t", 1]] and LOST_ON_REFUSED_COMMIT in lost["reason"]
    assert m.held == set() and m.resubscribe
    # the client's own word of the old partitions, when it comes, is not recorded twice
    tps = [SimpleNamespace(topic="t", partition=0), SimpleNamespace(topic="t", partition=1)]
    m.on_revoke(m.consumer, tps)
    m.on_lost(m.consumer, tps)
    assert [e["partitions"] for e in events(tmp_path, "revoked", "lost")] == [[["t", 0], ["t", 1]], [], []]
    m.on_assign(m.consumer, tps[:1])  # given back: its own again
    assert m.given_up == {("t", 1)} and m.held == {("t", 0)}
    # the loop subscribes again (not the commit, which may run in a callback), and drops the records of the old
    # assignment the client still hands over: none is processed, nothing more is committed
    m.consumer.batch, m.consumer.error = [Message(1, 3), Message(1, 4)], None
    m.loop()
    assert m.consumer.calls[1:] == [("subscribe", ("t",)), ("unsubscribe",), ("subscribe", ("t",)),
                                    ("commit", [("t", 0, 5)]), ("close",)]  # at the stop, what it holds again
    assert events(tmp_path, "processed") == []


@pytest.mark.parametrize("proto, code, own", [
    ("consumer", KafkaError.UNKNOWN_MEMBER_ID, {}),  # without the setting: the client is left to say so
    ("consumer", KafkaError.STALE_MEMBER_EPOCH, {LOST_ON_REFUSED_COMMIT: "true"}),
    ("classic-cooperative", KafkaError.UNKNOWN_MEMBER_ID, {LOST_ON_REFUSED_COMMIT: "true"}),
    ("consumer", KafkaError.UNKNOWN_MEMBER_ID, {LOST_ON_REFUSED_COMMIT: "false"}),
])
def test_otherwise_a_refused_commit_is_retried_and_nothing_is_lost(member, tmp_path, proto, code, own):
    m = member(proto, code, **own)
    m._commit({("t", 0): [0, 1, 2, 3, 4], ("t", 1): [0, 1, 2]})
    m._commit({})
    assert len(m.consumer.calls) == 2 and m.held == {("t", 0), ("t", 1)} and not m.resubscribe
    assert events(tmp_path, "lost") == []


def test_the_java_member_is_refused_the_python_members_own_settings():
    from dataclasses import replace

    from harness.base.errors import BadInput
    from harness.plan.config import RunConfig
    cfg = RunConfig(scenario="livelock-commit-starves-heartbeat", seed=1, protocol="consumer",
                    client_settings=((LOST_ON_REFUSED_COMMIT, "true"),))
    cfg.validate()
    with pytest.raises(BadInput, match="harness.lost.on.refused.commit is a setting of the harness's Python member"):
        replace(cfg, member="java").validate()
    replace(cfg, member="java", member_command=("prog",)).validate()  # a program of its own takes what it takes
