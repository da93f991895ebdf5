"""The Python member's commit modes (HARNESS_COMMIT_MODE), without a broker: its consumer is made (librdkafka
connects lazily) and its commits go to a stand-in that records them."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from confluent_kafka import KafkaError, KafkaException

from harness.record.history import read_file
from harness.members import python_member as pm


@dataclass
class TP:
    topic: str
    partition: int
    offset: int
    error: object = None


class Consumer:
    """Records commit calls; fails them when told."""

    def __init__(self, fail: bool = False) -> None:
        self.calls, self.fail = [], fail

    def commit(self, *, offsets, asynchronous):
        self.calls.append(([(tp.topic, tp.partition, tp.offset) for tp in offsets], asynchronous))
        if self.fail:
            raise KafkaException(KafkaError(KafkaError.REBALANCE_IN_PROGRESS))


@pytest.fixture
def member(tmp_path):
    made = []

    def make(mode: str | None, *, fail: bool = False, consumer=None, **more) -> pm.Member:
        """A member in commit mode `mode`, its consumer the stand-in above holding partitions 0 and 1 (or `consumer`,
        holding nothing), with `more` added to its environment (test_python_member_claim.py uses it too)."""
        env = {"HARNESS_MEMBER_ID": "m1", "HARNESS_TOPIC": "t", "HARNESS_GROUP_ID": "g", "HARNESS_PROTOCOL":
               "classic-cooperative", "HARNESS_BOOTSTRAP": "127.0.0.1:9", "HARNESS_HISTORY": str(tmp_path / "m1.jsonl"),
               **more}
        if mode is not None:
            env["HARNESS_COMMIT_MODE"] = mode
        m = pm.Member(env)
        m.consumer.close()
        m.consumer = consumer if consumer is not None else Consumer(fail=fail)
        m.held = {("t", 0), ("t", 1)} if consumer is None else set()
        made.append(m)
        return m

    yield make
    for m in made:
        m.hist.close()


def commits(tmp_path) -> list[dict]:
    return [e for e in read_file(tmp_path / "m1.jsonl")[1] if e["type"] == "committed"]


def poll(m: pm.Member) -> None:
    """m processed offsets 0..4 of partition 0 and 0..2 of partition 1, then commits as its mode says."""
    m.next_offset.update({("t", 0): 5, ("t", 1): 3})
    m._commit({("t", 0): [0, 1, 2, 3, 4], ("t", 1): [0, 1, 2]})


def test_the_mode_and_the_client_settings():
    env = {"HARNESS_PROTOCOL": "classic-eager"}
    assert pm.consumer_config(env)["enable.auto.commit"] is False
    assert pm.consumer_config({**env, "HARNESS_COMMIT_MODE": "auto"})["enable.auto.commit"] is True
    assert pm.consumer_config({**env, "HARNESS_COMMIT_MODE": "never"})["enable.auto.commit"] is False
    with pytest.raises(SystemExit, match="unknown commit mode 'often'"):
        pm.commit_mode({"HARNESS_COMMIT_MODE": "often"})


@pytest.mark.parametrize("mode", [None, "sync"])
def test_sync_commits_after_each_poll_and_records_it(member, tmp_path, mode):
    m = member(mode)
    poll(m)
    assert m.consumer.calls == [([("t", 0, 5), ("t", 1, 3)], False)]
    m._final_commit()  # nothing left to commit
    m.hist.close()
    (c,) = commits(tmp_path)
    assert (c["ok"], c["offsets"], "requested_mono" in c) == (True, [["t", 0, 5], ["t", 1, 3]], True)


def test_a_failed_sync_commit_is_recorded_and_retried_on_stop(member, tmp_path):
    m = member("sync", fail=True)
    poll(m)
    m._final_commit()
    m.hist.close()
    assert [c["ok"] for c in commits(tmp_path)] == [False, False]
    assert "REBALANCE_IN_PROGRESS" in commits(tmp_path)[0]["error"]


def test_async_records_the_outcome_from_on_commit(member, tmp_path):
    m = member("async")
    poll(m)
    assert m.consumer.calls == [([("t", 0, 5), ("t", 1, 3)], True)]
    assert commits(tmp_path) == []  # not until the callback
    m.on_commit(None, [TP("t", 1, 3), TP("t", 0, 5, error=KafkaError(KafkaError.UNKNOWN_MEMBER_ID))])
    m._final_commit()  # partition 0 failed: committed again, synchronously
    m.hist.close()
    ok, failed, final = commits(tmp_path)
    assert (ok["ok"], ok["offsets"]) == (True, [["t", 1, 3]])
    assert (failed["ok"], failed["offsets"]) == (False, [["t", 0, 5]])
    assert ok["requested_mono"] == failed["requested_mono"] > 0  # the request the callback answers
    assert m.commit_asked == {}
    assert m.consumer.calls[-1] == ([("t", 0, 5)], False) and final["ok"] is True


def test_auto_leaves_commits_to_the_client_and_records_them(member, tmp_path):
    m = member("auto")
    poll(m)
    m._final_commit()
    assert m.consumer.calls == []
    m.on_commit(KafkaError(KafkaError._NO_OFFSET), [])  # a tick with nothing new: no commit made
    m.on_commit(None, [TP("t", 0, 5), TP("t", 1, -1001)])  # a partition with no offset stored is left out
    m.on_commit(KafkaError(KafkaError.REBALANCE_IN_PROGRESS), [TP("t", 0, 7)])
    m.hist.close()
    a, b = commits(tmp_path)
    assert (a["ok"], a["offsets"], "requested_mono" in a) == (True, [["t", 0, 5]], False)
    assert (b["ok"], b["offsets"]) == (False, [["t", 0, 7]])


def test_never_commits_nothing(member, tmp_path):
    m = member("never")
    poll(m)
    m._final_commit()
    m.hist.close()
    assert m.consumer.calls == [] and commits(tmp_path) == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_refused_commit_gets_its_last_chance_on_revoke(member, tmp_path, mode):
    """A commit refused mid-rebalance (ILLEGAL_GENERATION, then the partition revoked) left records uncommitted:
    the member commits them, synchronously, before it records the revoke (commit_progress asks for it)."""
    m = member(mode, fail=True)
    poll(m)
    m.consumer.fail = False
    m.on_revoke(None, [TP("t", 0, -1001)])
    m.hist.close()
    assert m.consumer.calls[-1] == ([("t", 0, 5)], False)  # only the revoked partition, synchronously
    types = [e["type"] for e in read_file(tmp_path / "m1.jsonl")[1] if e["type"] in ("committed", "revoked")]
    assert types[-2:] == ["committed", "revoked"]
    assert ("t", 0) not in m.held


@pytest.mark.parametrize("mode", ["auto", "never"])
def test_no_commit_of_its_own_on_revoke_under_auto_or_never(member, mode):
    m = member(mode)
    poll(m)
    m.on_revoke(None, [TP("t", 0, -1001)])
    assert m.consumer.calls == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_refused_commit_is_retried_after_the_next_poll(member, tmp_path, mode):
    """A commit refused mid-rebalance is asked for again after the next poll, even when that poll brought records
    of other partitions only, or none (commit_progress judges the record against that retry)."""
    m = member(mode, fail=True)
    poll(m)
    m.consumer.fail = False
    m.next_offset[("t", 0)] = 7
    m._commit({("t", 0): [5, 6]})  # records of partition 0 only: partition 1's refused commit goes along
    assert m.consumer.calls[-1] == ([("t", 0, 7), ("t", 1, 3)], mode == "async")
    if mode == "async":
        m.on_commit(None, [TP("t", 0, 7), TP("t", 1, 3)])  # its outcome, from the callback
        assert m.refused == set()
    else:
        assert m.refused == set()
        m.consumer.fail = True
        m.next_offset[("t", 1)] = 4
        m._commit({("t", 1): [3]})
        m.consumer.fail = False
        m._commit({})  # a poll with no record: the refusal is retried all the same
        assert m.consumer.calls[-1] == ([("t", 1, 4)], False) and m.refused == set()
    m.held.discard(("t", 1))
    m.refused.add(("t", 1))
    m._commit({})
    assert m.refused == set()  # a partition given up is not retried


def test_a_revoke_handler_with_a_delay_waits_then_commits_every_position_of_the_revoked_partitions(tmp_path):
    env = {"HARNESS_MEMBER_ID": "m1", "HARNESS_TOPIC": "t", "HARNESS_GROUP_ID": "g", "HARNESS_PROTOCOL":
           "classic-cooperative", "HARNESS_BOOTSTRAP": "127.0.0.1:9", "HARNESS_HISTORY": str(tmp_path / "m1.jsonl"),
           "HARNESS_REVOKE_DELAY_MS": "150"}
    m = pm.Member(env)
    m.consumer.close()
    m.consumer = Consumer()
    m.held = {("t", 0), ("t", 1)}
    assert m.effective["revoke_delay_ms"] == 150.0
    poll(m)  # both partitions committed after the poll: nothing is pending
    m.on_revoke(None, [TP("t", 0, -1001)])
    m.hist.close()
    after_poll, in_handler = commits(tmp_path)
    assert "revoke_began" not in after_poll
    assert in_handler["offsets"] == [["t", 0, 5]] and in_handler["ok"] is True  # committed again, after the wait
    assert in_handler["mono"] - in_handler["revoke_began"] >= 0.15
    revoked = [e for e in read_file(tmp_path / "m1.jsonl")[1] if e["type"] == "revoked"]
    assert revoked[0]["mono"] >= in_handler["mono"]  # given up after the commit, as without a delay


@pytest.mark.parametrize("text", ["-1", "60001", "soon"])
def test_a_revoke_delay_the_member_cannot_take_ends_it_with_one_line(text):
    with pytest.raises(SystemExit, match="HARNESS_REVOKE_DELAY_MS"):
        pm.revoke_delay_ms({"HARNESS_REVOKE_DELAY_MS": text})
    assert pm.revoke_delay_ms({}) == 0.0 and pm.revoke_delay_ms({"HARNESS_REVOKE_DELAY_MS": "250"}) == 250.0
