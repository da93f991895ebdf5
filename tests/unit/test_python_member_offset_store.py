"""The Python member's `harness.offset.store` (docs/member-contract.md): the path its commits' offsets take, explicit
(`commit(offsets=...)`) or through librdkafka's offset store (automatic, `store_offsets(message=...)`,
`store_offsets(offsets=[...])`), committed by the auto-commit timer or by `commit()` without offsets. The setting's
parsing, and the member's calls and events without a broker: its client is made (librdkafka connects lazily), then
its calls go to a stand-in that keeps a store as librdkafka does; one test refuses a store through the real client."""
from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from fakemsg import Message
from harness.base.errors import BadInput
from harness.base.vocabulary import OFFSET_STORE, OFFSET_STORES
from harness.members import clients
from harness.members import python_member as pm
from harness.members.python_settings import effective_settings, offset_store, split_settings
from harness.record.history import read_file

STATE = "StoreOffsets failed: Local: Erroneous state"


class Client:
    """Stands in for the member's consumer as librdkafka's offset store behaves: `store_offsets` stores (message: its
    offset + 1; offsets: as given) for assigned partitions and refuses others with _STATE; `commit()` without offsets
    commits what is stored and not committed yet (nothing: _NO_OFFSET), refusing with `error` while it is set."""

    def __init__(self, assigned) -> None:
        self.assigned, self.stored, self.committed = set(assigned), {}, {}
        self.calls, self.error, self.batches, self.member = [], None, [], None

    def store_offsets(self, *, message=None, offsets=None):
        tps = [(message.topic(), message.partition(), message.offset() + 1)] if message is not None else \
            [(tp.topic, tp.partition, tp.offset) for tp in offsets]
        self.calls.append(("store", "message" if message is not None else "offsets", tps))
        if any((t, p) not in self.assigned for t, p, _ in tps):
            raise KafkaException(KafkaError(KafkaError._STATE, STATE))
        self.stored.update({(t, p): o for t, p, o in tps})

    def commit(self, *, offsets=None, asynchronous=True):
        assert offsets is None, "a store path commits what is stored"
        self.calls.append(("commit", asynchronous))
        if self.error is not None:
            raise KafkaException(KafkaError(self.error))
        due = {tp: o for tp, o in self.stored.items() if self.committed.get(tp) != o}
        if not due:
            raise KafkaException(KafkaError(KafkaError._NO_OFFSET, "Commit failed: Local: No offset stored"))
        self.committed.update(due)
        parts = [TopicPartition(t, p, o) for (t, p), o in sorted(due.items())]
        if asynchronous:
            self.member.on_commit(None, parts)
            return None
        return parts

    def consume(self, num_messages, timeout):
        if not self.batches:
            self.member.running = False
            return []
        return self.batches.pop(0)

    def close(self):
        self.calls.append(("close",))

    def subscribe(self, topics, **callbacks):
        pass


def make_member(tmp_path, store: str | None, mode: str = "sync", **settings) -> pm.Member:
    given = {**settings, **({OFFSET_STORE: store} if store else {})}
    env = {"HARNESS_MEMBER_ID": "m1", "HARNESS_TOPIC": "t", "HARNESS_GROUP_ID": "g", "HARNESS_PROTOCOL": "consumer",
           "HARNESS_BOOTSTRAP": "127.0.0.1:9", "HARNESS_HISTORY": str(tmp_path / "m1.jsonl"),
           "HARNESS_COMMIT_MODE": mode, "HARNESS_CLIENT_CONFIG": json.dumps(given)}
    m = pm.Member(env)
    m.consumer.close()
    m.consumer = Client({("t", 0), ("t", 1)})
    m.consumer.member = m
    m.held = {("t", 0), ("t", 1)}
    return m


def events(tmp_path, *types) -> list[dict]:
    return [e for e in read_file(tmp_path / "m1.jsonl")[1] if e["type"] in types]


def run(m: pm.Member, *batches) -> None:
    m.consumer.batches = [list(b) for b in batches]
    m.loop()
    m.hist.close()


# -- the setting
def test_the_setting_takes_its_four_values_and_refuses_others_in_one_line():
    for value in OFFSET_STORES:
        assert split_settings({OFFSET_STORE: value.upper()})[1] == {OFFSET_STORE: value}
    with pytest.raises(SystemExit, match=r"^member: harness.offset.store is one of explicit, automatic, message, "
                                         r"offsets, not 'bogus'$"):
        split_settings({OFFSET_STORE: "bogus"})


def test_the_path_follows_the_commit_mode_and_refuses_a_store_setting_against_it():
    assert offset_store("sync", {}, {}) == "explicit"
    assert offset_store("auto", {}, {}) == "automatic"  # auto-commit commits what librdkafka stored as it handed over
    assert offset_store("async", {}, {OFFSET_STORE: "message"}) == "message"
    assert offset_store("sync", {"enable.auto.offset.store": "false"}, {}) == "explicit"  # it names the offsets
    assert offset_store("auto", {"enable.auto.offset.store": "false"}, {OFFSET_STORE: "offsets"}) == "offsets"
    with pytest.raises(SystemExit, match="harness.offset.store=message needs enable.auto.offset.store=false: it "
                                         "stores the offsets itself; it was given 'true'"):
        offset_store("sync", {"enable.auto.offset.store": "true"}, {OFFSET_STORE: "message"})
    with pytest.raises(SystemExit, match=r"commit mode auto \(its harness.offset.store is automatic\) needs "
                                         r"enable.auto.offset.store=true"):
        offset_store("auto", {"enable.auto.offset.store": "false"}, {})


@pytest.mark.parametrize("store, mode, want", [("explicit", "sync", None), ("automatic", "sync", True),
                                               ("message", "async", False), ("offsets", "auto", False),
                                               (None, "auto", True)])
def test_the_client_is_made_with_the_store_its_path_needs_and_started_names_both(store, mode, want):
    given = {OFFSET_STORE: store} if store else {}
    env = {"HARNESS_PROTOCOL": "consumer", "HARNESS_COMMIT_MODE": mode, "HARNESS_CLIENT_CONFIG": json.dumps(given)}
    conf = pm.consumer_config(env)
    assert conf.get("enable.auto.offset.store") is want and OFFSET_STORE not in conf
    eff, _ = effective_settings(conf, mode, 0.0, store=offset_store(mode, *split_settings(given)))
    assert eff["offset_store"] == store or (store is None and eff["offset_store"] == "automatic")
    assert eff["enable.auto.offset.store"] is (want is not False)  # unset: librdkafka's default, true


def test_the_run_refuses_a_bad_value_at_set_up_in_the_members_own_words():
    with pytest.raises(BadInput, match="harness.offset.store is one of explicit, automatic, message, offsets, not "
                                       "'by-message'"):
        clients.check_settings(None, "bundled", "consumer", {OFFSET_STORE: "by-message"}, commit_mode="sync")
    with pytest.raises(BadInput, match="commit mode auto .* needs enable.auto.offset.store=true"):
        clients.check_settings(None, "bundled", "consumer", {"enable.auto.offset.store": "false"}, commit_mode="auto")
    clients.check_settings(None, "bundled", "consumer", {OFFSET_STORE: "offsets"}, commit_mode="auto")


# -- the member's calls and events
def test_by_message_it_stores_each_record_after_processing_and_commits_the_store_after_the_poll(tmp_path):
    m = make_member(tmp_path, "message")
    run(m, [Message(0, 0), Message(0, 1), Message(1, 7)])
    stores = [c for c in m.consumer.calls if c[0] == "store"]
    assert stores == [("store", "message", [("t", 0, 1)]), ("store", "message", [("t", 0, 2)]),
                      ("store", "message", [("t", 1, 8)])]
    assert m.consumer.calls[3:] == [("commit", False), ("commit", False), ("close",)]  # after the poll; at the stop
    [c] = events(tmp_path, "committed")  # the stop's commit had nothing new: _NO_OFFSET, no commit, no event
    assert c["ok"] and c["offsets"] == [["t", 0, 2], ["t", 1, 8]] and c["requested_mono"] <= c["mono"]
    [started] = events(tmp_path, "started")
    assert started["effective"]["offset_store"] == "message" and started["effective"]["enable.auto.offset.store"] \
        is False


def test_by_offsets_it_stores_each_partitions_next_offset_once_a_poll(tmp_path):
    m = make_member(tmp_path, "offsets", mode="async")
    run(m, [Message(0, 0), Message(0, 1), Message(1, 7)], [Message(0, 2)])
    stores = [c for c in m.consumer.calls if c[0] == "store"]
    assert stores == [("store", "offsets", [("t", 0, 2)]), ("store", "offsets", [("t", 1, 8)]),
                      ("store", "offsets", [("t", 0, 3)])]
    assert [c for c in m.consumer.calls if c[0] == "commit"] == [("commit", True), ("commit", True), ("commit", False)]
    got = events(tmp_path, "committed")  # from on_commit, each with when it was asked for
    assert [c["offsets"] for c in got] == [[["t", 0, 2], ["t", 1, 8]], [["t", 0, 3]]]
    assert all(c["ok"] and c["requested_mono"] <= c["mono"] for c in got) and m.store_asked == []


def test_the_automatic_store_is_librdkafkas_so_the_member_stores_nothing_and_commits_the_store(tmp_path):
    m = make_member(tmp_path, "automatic")
    m.consumer.stored = {("t", 0): 2}  # what librdkafka stored as it handed the records over
    run(m, [Message(0, 0), Message(0, 1)])
    assert [c for c in m.consumer.calls if c[0] == "store"] == []
    assert [c["offsets"] for c in events(tmp_path, "committed")] == [[["t", 0, 2]]]


def test_under_auto_commit_the_member_stores_and_the_client_commits(tmp_path):
    m = make_member(tmp_path, "message", mode="auto")
    run(m, [Message(1, 4)])
    assert m.consumer.calls == [("store", "message", [("t", 1, 5)]), ("close",)]
    assert m.effective["commit_mode"] == "auto" and m.effective["enable.auto.commit"] is True


def test_a_store_librdkafka_refuses_is_an_error_event_with_its_reason(tmp_path):
    m = make_member(tmp_path, "message")
    m.consumer.assigned = {("t", 0)}  # partition 1 is no longer assigned: librdkafka refuses its store
    run(m, [Message(0, 0), Message(1, 3), Message(1, 4)])
    [err] = events(tmp_path, "error")
    assert err["fatal"] is False and err["store"] == [["t", 1, 5]] and err["count"] == 2
    assert err["error"].startswith("store_offsets: KafkaError{code=_STATE") and STATE in err["error"]
    assert [c["offsets"] for c in events(tmp_path, "committed")] == [[["t", 0, 1]]]  # what was stored is committed


def test_the_real_client_refuses_a_store_of_a_partition_it_was_not_given_in_librdkafkas_words(tmp_path):
    env = {"HARNESS_MEMBER_ID": "m1", "HARNESS_TOPIC": "t", "HARNESS_GROUP_ID": "g", "HARNESS_PROTOCOL": "consumer",
           "HARNESS_BOOTSTRAP": "127.0.0.1:9", "HARNESS_HISTORY": str(tmp_path / "m1.jsonl"),
           "HARNESS_CLIENT_CONFIG": json.dumps({OFFSET_STORE: "offsets"})}
    m = pm.Member(env)
    m.next_offset[("t", 0)] = 5
    m._store([], {("t", 0): [4]})
    m.consumer.close()
    m.hist.close()
    [err] = events(tmp_path, "error")
    assert err["store"] == [["t", 0, 5]] and "StoreOffsets failed: Local: Unknown partition" in err["error"]


def test_a_refused_commit_of_the_store_is_recorded_and_the_next_poll_commits_the_store_again(tmp_path):
    m = make_member(tmp_path, "offsets")
    m.consumer.error = KafkaError.REBALANCE_IN_PROGRESS
    m.consumer.batches = [[Message(0, 0)]]
    m.consumer.consume = lambda num_messages, timeout: m.consumer.batches.pop(0) if m.consumer.batches else []
    msgs = m.consumer.consume(500, 0.2)
    m._store(msgs, m._record_batch(msgs))
    m._commit({("t", 0): [0]})
    [refused] = events(tmp_path, "committed")
    assert not refused["ok"] and "REBALANCE_IN_PROGRESS" in refused["error"] and refused["offsets"] == [["t", 0, 1]]
    assert m.refused == {("t", 0)}
    m.consumer.error = None
    m._commit({})  # a poll without records: the refused commit is made again, of what is still stored
    assert events(tmp_path, "committed")[-1]["ok"] and m.refused == set()
    m.hist.close()


def test_on_revoke_it_commits_the_store_before_it_writes_revoked(tmp_path):
    m = make_member(tmp_path, "message")
    m.consumer.stored = {("t", 1): 9}
    m.on_revoke(m.consumer, [SimpleNamespace(topic="t", partition=1)])
    m.hist.close()
    assert [e["type"] for e in events(tmp_path, "committed", "revoked")] == ["committed", "revoked"]
    assert m.consumer.calls == [("commit", False)]


def test_the_member_script_refuses_the_bad_value_before_it_starts():
    env = {"PATH": "/usr/bin:/bin", "HARNESS_CHECK_CONFIG": "1", "HARNESS_PROTOCOL": "consumer",
           "HARNESS_CLIENT_CONFIG": json.dumps({OFFSET_STORE: "nope"})}
    r = subprocess.run([sys.executable, pm.__file__], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert r.stderr.strip().splitlines()[-1] == ("member: harness.offset.store is one of explicit, automatic, "
                                                 "message, offsets, not 'nope'")
