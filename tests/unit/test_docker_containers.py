"""The docker backend's use of testcontainers (harness/cluster/docker.py, harness/cluster/docker_engine.py), with no
engine: testcontainers' Docker client is replaced by a stub that records what would be asked of an engine.
The real evidence is tests/integration/test_docker_backend.py and suites/test_docker_chaos.py."""
from __future__ import annotations

import docker.errors
import pytest
import testcontainers.core.container as tc_container
import testcontainers.core.network as tc_network
from testcontainers.core.config import ConnectionMode, testcontainers_config
from testcontainers.core.container import DockerContainer
from testcontainers.core.labels import LABEL_SESSION_ID
from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

from harness.cluster import docker_engine
from harness.cluster import docker as dk


class StubNetwork:
    def __init__(self, name, kw):
        self.name, self.kw, self.id, self.removed = name, kw, f"id-{name}", 0

    def remove(self):
        self.removed += 1


class StubDockerClient:
    """Stands in for testcontainers' DockerClient: creating networks is recorded, nothing reaches an engine."""

    networks: list = []

    def __init__(self, **_kw):
        self.client = self

    def client_networks_create(self, name, kw):
        from testcontainers.core.labels import create_labels
        net = StubNetwork(name, {**kw, "labels": create_labels("", kw.get("labels"))})
        StubDockerClient.networks.append(net)
        return net

    def close(self):
        pass


class Wrapped:
    """A docker-py container as testcontainers' waits see it."""

    def __init__(self, status="running"):
        self.status, self.removed = status, 0

    def reload(self):
        pass

    def remove(self, **_kw):
        self.removed += 1
        if self.removed > 1:
            raise docker.errors.NotFound("No such container")


@pytest.fixture
def stub_engine(monkeypatch):
    StubDockerClient.networks = []
    monkeypatch.setattr(tc_container, "DockerClient", StubDockerClient)
    monkeypatch.setattr(tc_network, "DockerClient", StubDockerClient)
    return StubDockerClient


def test_containers_and_networks_are_testcontainers_own(stub_engine, tmp_path):
    assert issubclass(dk.ClusterContainer, DockerContainer) and issubclass(dk.NodeContainer, dk.ClusterContainer)
    cluster = dk.DockerCluster(work_dir=tmp_path)
    net = cluster._network("cluster")
    assert isinstance(net, Network) and net.name == f"{cluster.tag}-cluster"
    made = stub_engine.networks[0]
    assert made.kw["driver"] == "bridge" and made.kw["labels"][dk.LABEL_CLUSTER] == cluster.tag
    assert made.kw["labels"][dk.LABEL_PID] and LABEL_SESSION_ID in made.kw["labels"]  # the harness's and its own
    c = cluster._container(dk.ClusterContainer("img"), "toxiproxy", network="cluster", aliases=["a"]).publish(1, 2)
    assert c._name == f"{cluster.tag}-toxiproxy" and c._network is net and c._network_aliases == ["a"]
    assert c._kwargs["labels"] == cluster._labels() and c.ports == {"1/tcp": ("127.0.0.1", 2)}  # loopback only
    cluster.stop()
    cluster.stop()
    assert made.removed == 1  # the exit stack removed it, once


def test_a_container_is_removed_once_however_often_it_is_stopped(stub_engine):
    c = dk.ClusterContainer("img")
    c._container = w = Wrapped()
    c.stop()
    c.stop()
    assert w.removed == 1 and c._container is None


def test_a_node_container_s_log_is_its_broker_log_since_it_was_made(stub_engine, tmp_path):
    """A restart appends to the same broker.log: the line of the node's previous start does not count."""
    log = tmp_path / "broker.log"
    log.write_text("... [KafkaRaftServer nodeId=1] Kafka Server started\n")
    node = dk.NodeContainer("img", log=log)
    node._container = Wrapped()
    wait = LogMessageWaitStrategy(dk.STARTED).with_startup_timeout(1).with_poll_interval(0.05)
    with pytest.raises(TimeoutError):
        wait.wait_until_ready(node)
    with open(log, "a") as f:
        f.write("2026-11-25T05:56:32.854+0000 [main] INFO kafka.server.KafkaRaftServer - "
                "[KafkaRaftServer nodeId=1] Kafka Server started\n")
    wait.wait_until_ready(node)
    node._container = Wrapped(status="exited")
    log.write_text("")
    with pytest.raises(RuntimeError, match="exited"):  # a container gone before the line: at once
        LogMessageWaitStrategy(dk.STARTED).with_startup_timeout(30).wait_until_ready(node)


def test_testcontainers_is_configured_through_its_config_api(monkeypatch):
    for name in ("ryuk_disabled", "connection_mode_override", "tc_host_override"):
        monkeypatch.setattr(testcontainers_config, name, getattr(testcontainers_config, name))
    monkeypatch.setattr(testcontainers_config, "ryuk_disabled", False)
    docker_engine.configure_testcontainers()
    assert testcontainers_config.ryuk_disabled  # Ryuk's image cannot be pulled here; the harness reaps by label
    assert testcontainers_config.connection_mode_override == ConnectionMode.docker_host
    assert testcontainers_config.tc_host_override == "127.0.0.1"


def test_a_node_is_on_its_second_network_before_it_starts(stub_engine, monkeypatch):
    """As before testcontainers: both networks attached between create and start (Docker 20.10 takes one at
    create), so the broker never runs with only the cluster network."""
    monkeypatch.setattr(testcontainers_config, "ryuk_disabled", True)
    calls = []

    class Made:
        id, short_id = "cid", "cid"

    class Client(StubDockerClient):
        def create(self, image, **kw):
            calls.append(("create", kw["network"]))
            return Made()

        def start(self, container):
            calls.append(("start", container.id))

    class Net:
        def connect(self, container_id, aliases):
            calls.append(("connect", container_id, aliases))

    c = dk.ClusterContainer("img").also_on(Net(), ["client-1"])
    c._docker = Client()
    c.with_network(type("N", (), {"name": "cluster-net"})())
    c.start()
    assert calls == [("create", "cluster-net"), ("connect", "cid", ["client-1"]), ("start", "cid")]
