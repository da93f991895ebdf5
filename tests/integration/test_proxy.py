"""Verify: clients reach the brokers only through Toxiproxy.

Setup: the shared local cluster; a member consuming from a fresh topic.
Then: (1) metadata advertises only the proxy ports; (2) every TCP connection of the member process
to a broker goes to a proxy port; (3) with the proxies disabled, a new client cannot reach the cluster
at all, though the brokers' own client ports are still open.
"""
import time

import psutil
import pytest
from confluent_kafka import Consumer, KafkaException

from harness.plan.kinds.settings import client_settings
from harness.members import MemberPool, MemberSpec

pytestmark = pytest.mark.integration


def test_metadata_advertises_only_proxy_ports(kafka_cluster):
    md = kafka_cluster.admin().list_topics(timeout=10)
    assert {b.port for b in md.brokers.values()} == kafka_cluster.proxy_ports()
    assert not kafka_cluster.proxy_ports() & kafka_cluster.client_ports()


def test_member_connects_only_to_proxies(kafka_cluster, tmp_path):
    topic = "bypass-check"
    kafka_cluster.create_topic(topic, partitions=6, replication=3)
    events = []
    pool = MemberPool(merge_settings=client_settings, bootstrap=kafka_cluster.bootstrap(), group_id="g-bypass", topic=topic,
                      history_dir=tmp_path, log_dir=tmp_path, on_event=lambda t, **f: events.append(t))
    try:
        m = pool.start(MemberSpec(protocol="classic-cooperative"))
        # it connects to every partition leader and the coordinator as it goes (seconds; longer on a loaded machine):
        # every connection it has meanwhile goes through a proxy
        broker_side, deadline = set(), time.monotonic() + 30
        while len(broker_side) < len(kafka_cluster.broker_ids()) and time.monotonic() < deadline:
            time.sleep(0.5)
            remote = {c.raddr.port for c in psutil.Process(m.pid).net_connections(kind="tcp") if c.raddr}
            now = remote & (kafka_cluster.proxy_ports() | kafka_cluster.client_ports())
            assert now <= kafka_cluster.proxy_ports(), f"bypassed the proxy: {now - kafka_cluster.proxy_ports()}"
            broker_side |= now
        assert broker_side, "member has no broker connection at all"
        assert len(broker_side) == len(kafka_cluster.broker_ids()), "expected a connection to every broker's proxy"
    finally:
        pool.stop_all()


def test_disabled_proxies_cut_clients_off(kafka_cluster):
    proxies = [kafka_cluster.toxiproxy.proxy(f"broker-{i}") for i in kafka_cluster.broker_ids()]
    for p in proxies:
        p.disable()
    try:
        assert all(kafka_cluster._port_open(p) for p in kafka_cluster.client_ports())
        c = Consumer({"bootstrap.servers": kafka_cluster.bootstrap(), "group.id": "g-cut", "log_level": 0})
        with pytest.raises(KafkaException):
            c.list_topics(timeout=3)
        c.close()
    finally:
        for p in proxies:
            p.enable()
    assert kafka_cluster.registered_brokers(timeout_s=10) == set(kafka_cluster.broker_ids())
