"""The consumer-group assignment watch (harness/kinds/group_watch.py) without a broker: what it makes of the Admin
client's answer (confluent-kafka's own description classes), and the loop it shares with the share watch
(harness/kinds/assignment_watch.py): changes only, errors once, the spacing of unchanged answers, the last event.
The real coordinator's answers are recorded in every real consumer-group run (tests/integration/test_claims.py)."""
import os
import sys
import time
from concurrent.futures import Future

import pytest

from confluent_kafka import ConsumerGroupState, ConsumerGroupType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import ConsumerGroupDescription, MemberAssignment, MemberDescription

from harness.kinds.group_watch import GroupAssignmentWatch, _ProcessAsker, describe


class Admin:
    def __init__(self, answer):
        self.answer, self.asked = answer, []

    def describe_consumer_groups(self, groups, request_timeout):
        self.asked.append((groups, request_timeout))
        f = Future()
        f.set_exception(self.answer) if isinstance(self.answer, Exception) else f.set_result(self.answer)
        return {groups[0]: f}


def member(name, parts, instance=None):
    return MemberDescription(f"id-{name}", name, "/127.0.0.1",
                             MemberAssignment([TopicPartition("t", p) for p in parts]), group_instance_id=instance)


def test_describe_reads_members_partitions_type_and_state():
    from confluent_kafka import Node
    g = ConsumerGroupDescription("g", False, [member("m2", [3, 1], "g-s1"), member("m1", [0])], "", ConsumerGroupState.STABLE,
                                 Node(3, "127.0.0.1", 9092), type=ConsumerGroupType.CLASSIC)
    admin = Admin(g)
    got = describe(admin, "g", timeout_s=1.5)
    assert admin.asked == [(["g"], 1.5)]
    assert got == {"members": [{"member": "m1", "consumer_id": "id-m1", "instance_id": None, "partitions": [["t", 0]],
                                "target": None},
                               {"member": "m2", "consumer_id": "id-m2", "instance_id": "g-s1",
                                "partitions": [["t", 1], ["t", 3]], "target": None}],
                   "group_type": "classic", "state": "stable", "coordinator": 3}  # the broker that answered


def test_describe_reads_a_consumer_protocol_members_target_assignment():
    """The target (what the coordinator decided to give the member) beside what it holds."""
    m = MemberDescription("id-m1", "m1", "/127.0.0.1", MemberAssignment([TopicPartition("t", 0)]),
                          target_assignment=MemberAssignment([TopicPartition("t", 2), TopicPartition("t", 0)]))
    g = ConsumerGroupDescription("g", False, [m], "", ConsumerGroupState.STABLE, None, type=ConsumerGroupType.CONSUMER)
    got = describe(Admin(g), "g", timeout_s=1.5)
    assert got["members"] == [{"member": "m1", "consumer_id": "id-m1", "instance_id": None,
                               "partitions": [["t", 0]], "target": [["t", 0], ["t", 2]]}]


def test_a_rebalancing_classic_group_is_said_so():
    g = ConsumerGroupDescription("g", False, [member("m1", [])], "", ConsumerGroupState.PREPARING_REBALANCING, None,
                                 type=ConsumerGroupType.CLASSIC)
    assert describe(Admin(g), "g")["state"] == "preparing_rebalancing"


def test_the_watch_writes_changes_errors_gaps_and_its_end():
    seq = [{"members": [], "state": "empty"}, {"members": [], "state": "empty"},
           KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out")), {"members": [], "state": "empty"},
           {"members": [{"member": "m1"}], "state": "stable"}]

    def ask():
        x = seq.pop(0) if len(seq) > 1 else seq[0]
        if isinstance(x, Exception):
            raise RuntimeError(f"DescribeConsumerGroups: {x.args[0].str()}")
        return x

    events = []
    watch = GroupAssignmentWatch("unused:1", "g", lambda t, **f: events.append((t, f)), interval_s=0.02, ask=ask).start()
    deadline = time.monotonic() + 10
    while len(events) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)
    watch.stop()
    assert not watch._thread.is_alive()
    assert all(t == "group_assignment" and f["interval_s"] == 0.02 for t, f in events)
    said = [(f["error"], f["members"], f.get("stopped", False)) for _, f in events]
    assert said == [(None, [], False), ("DescribeConsumerGroups: timed out", None, False), (None, [], False),
                    (None, [{"member": "m1"}], False), (None, None, True)]
    assert events[0][1]["longest_gap_s"] is None  # the first: no gap before it
    assert events[1][1]["longest_gap_s"] >= 0.015  # the unchanged second answer came between
    assert events[-1][1]["group_type"] is None and events[0][1]["group_type"] is None  # defaults written as null


def test_the_fake_backend_gets_no_watch():
    from types import SimpleNamespace
    from harness.kinds.consumer import ConsumerGroup
    kind = ConsumerGroup.__new__(ConsumerGroup)
    kind.ctx = SimpleNamespace(cluster=SimpleNamespace(backend="fake"))
    kind.members_started([])
    assert getattr(kind, "watch", None) is None
    kind.close()  # nothing to stop


CHILD = """
import json, os, sys
for i, _ in enumerate(sys.stdin):
    if i == 1:
        os.abort()  # as librdkafka's assertion does (confluentinc/librdkafka#4605)
    print(json.dumps({"answer": {"members": [], "group_type": "consumer", "state": "stable", "n": i}}), flush=True)
"""


def test_the_admin_process_aborting_costs_one_answer_not_the_run():
    """The watch asks through a process of its own: when it aborts, that ask fails naming the abort, and the next
    one starts another process and is answered."""
    ask = _ProcessAsker("127.0.0.1:1", "g")
    ask.cmd = [sys.executable, "-c", CHILD]
    try:
        assert ask()["n"] == 0
        with pytest.raises(RuntimeError, match=r"exit -6\): librdkafka aborted"):
            ask()
        assert ask()["n"] == 0  # a new process
        pid = ask.proc.pid
    finally:
        ask.close()
    assert ask.proc is None and not os.path.exists(f"/proc/{pid}")  # ended and reaped
