"""Verify: the request proxy's faults bite on a real broker and client, and each is recorded.

Setup: a one-broker local cluster started with request faults (client -> request proxy -> Toxiproxy ->
broker); a confluent-kafka consumer per test, in its own group, whose client.id is a member id.
Then: (a) a SyncGroup delayed by N seconds makes the join take at least N seconds; (b) NOT_COORDINATOR
answered to FindCoordinator and to JoinGroup makes the client look again and still join; (c) a Heartbeat
whose answer is dropped is a timeout to the client; every fault is recorded with its API, member, broker
and correlation id, as the history schema wants.
"""
import logging
import time
import uuid

import pytest
from confluent_kafka import Consumer

from harness.record import schema as hs
from harness.cluster.local import LocalCluster
from harness.kproxy import delay_request, drop_response, error_response

pytestmark = pytest.mark.integration

HEADER = {"type": "header", "schema": "rebalance-history", "version": 1, "source": "harness", "member": None}


@pytest.fixture(scope="module")
def cluster(pytestconfig, tmp_path_factory):
    events = []
    c = LocalCluster(work_dir=tmp_path_factory.mktemp("kproxy"), version=pytestconfig.getoption("harness_kafka_version"),
                     brokers=1, request_faults=True,
                     on_event=lambda t, **f: events.append({"type": t, "mono": time.monotonic(), "wall": time.time(), **f}))
    with c:
        c.create_topic("kp-topic", partitions=3, replication=1)
        c.events = events
        yield c


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append((time.monotonic(), record.getMessage()))


def _consumer(cluster, member_id):
    logger = logging.getLogger(f"kproxy-test-{member_id}")
    logger.propagate = False
    logger.addHandler(lines := _Lines())
    c = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": f"g-kp-{uuid.uuid4().hex[:8]}",
                  "client.id": member_id, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                  "debug": "cgrp,protocol", "logger": logger})
    return c, lines


def _join_s(consumer, timeout_s=60.0):
    assigned = []
    consumer.subscribe(["kp-topic"], on_assign=lambda c, parts: assigned.append(time.monotonic()))
    t0 = time.monotonic()
    while not assigned and time.monotonic() - t0 < timeout_s:
        consumer.poll(0.1)
    assert assigned, f"no assignment within {timeout_s}s"
    return assigned[0] - t0


def _faults(cluster, rule):
    starts = [e for e in cluster.events if e["type"] == "fault_start" and e.get("rule") == rule]
    ids = {e["fault_id"] for e in starts}
    return starts, [e for e in cluster.events if e["type"] == "fault_end" and e["fault_id"] in ids]


def _valid(events):
    for e in events:
        assert hs.validate_line(HEADER, e) == [], e


def test_delayed_sync_group_delays_the_join(cluster):
    rule = cluster.kproxy.install(delay_request("SyncGroup", delay_s=3.0, member="m1", count=1))
    c, _ = _consumer(cluster, "m1")
    try:
        took = _join_s(c)
    finally:
        c.close()
    assert took >= 3.0, f"joined in {took:.2f}s despite a 3s SyncGroup delay"
    (start,), (end,) = _faults(cluster, rule)
    assert (start["kind"], start["api"], start["member"], start["broker"], start["delay_s"]) == \
        ("delay_request", "SyncGroup", "m1", 1, 3.0)
    assert isinstance(start["correlation_id"], int) and start["client_id"] == "m1"
    assert end["outcome"] == "forwarded" and end["mono"] - start["mono"] >= 3.0
    _valid([start, end])


def test_not_coordinator_makes_the_client_look_again_and_join(cluster):
    find = cluster.kproxy.install(error_response("FindCoordinator", error="NOT_COORDINATOR", member="m2", count=2))
    join = cluster.kproxy.install(error_response("JoinGroup", error="NOT_COORDINATOR", member="m2", count=1))
    c, _ = _consumer(cluster, "m2")
    try:
        _join_s(c)
    finally:
        c.close()
    assert cluster.kproxy.applied(find) == 2 and cluster.kproxy.applied(join) == 1
    for rule, api in ((find, "FindCoordinator"), (join, "JoinGroup")):
        starts, ends = _faults(cluster, rule)
        assert {(s["api"], s["member"], s["error"], s["error_code"]) for s in starts} == {(api, "m2", "NOT_COORDINATOR", 16)}
        assert [e["outcome"] for e in ends] == ["answered"] * len(starts)
        _valid(starts + ends)


def test_dropped_heartbeat_answer_is_a_timeout_to_the_client(cluster):
    c, lines = _consumer(cluster, "m3")
    try:
        _join_s(c)
        rule = cluster.kproxy.install(drop_response("Heartbeat", member="m3", count=1))
        assert cluster.kproxy.wait_for_applied(rule, timeout_s=10)
        deadline = time.monotonic() + 20
        timed_out = []
        while not timed_out and time.monotonic() < deadline:
            c.poll(0.1)
            # librdkafka: "GroupCoordinator/1: Timed out 1 in-flight, ..." (REQTMOUT; with some debug contexts
            # also "Timed out HeartbeatRequest in flight"): the only request in flight there is the heartbeat
            timed_out = [m for _, m in lines.lines if "GroupCoordinator" in m and "Timed out" in m]
        assert timed_out, "the client never timed the heartbeat out"
    finally:
        c.close()
    (start,), ends = _faults(cluster, rule)
    assert (start["kind"], start["api"], start["member"]) == ("drop_response", "Heartbeat", "m3")
    assert [e["outcome"] for e in ends] == ["closed"]  # a stalled connection: over when the client closed it
    _valid([start, *ends])
