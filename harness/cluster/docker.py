"""The `docker` backend: one container per KRaft node and a Toxiproxy container, on images built here.

The brokers are the local backend's (same server.properties but for the addresses, same admin, topic,
rolling and Toxiproxy fault code: `DockerCluster` subclasses `LocalCluster`); what differs is where
they run. Two networks per cluster, both labelled with the run:

    cluster  inter-broker and controller traffic; each node is `kafka-N` here and nowhere else
    clients  Toxiproxy to each node's client listener; each node is `client-N` here

Toxiproxy publishes one port per node on the host's loopback and the nodes advertise those ports, so
members (host processes) reach brokers only through the proxy, as on the local backend. Cutting a node
off the cluster network partitions it from the other brokers and the controller quorum while its
clients still reach it (`partition_broker`), which loopback processes cannot give.

Every node's directory (server.properties, data/, broker.log) is a bind mount under the cluster's
work_dir, so data survives a restart or an upgrade onto another image, and `broker_log_path` is the
same file the local backend gives. Containers and networks carry `org.harness.cluster` (this cluster)
and `org.harness.pid` (the harness process); `stop` removes them, and every start first reaps what a
killed harness left behind (Ryuk's image cannot be pulled here, so reaping is the harness's own).
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from harness import docker_engine, docker_images
from harness.cluster.local import JVM_OPTS as LOCAL_JVM_OPTS
from harness.cluster.local import LocalCluster, Node, startup_failure
from harness.errors import SetupError
from harness.rundir import BROKER_LOG, TOXIPROXY_LOG, broker_dir
from harness.tools import free_ports
from harness.toxiproxy import ToxiproxyServer

_log = logging.getLogger(__name__)

LABEL_CLUSTER, LABEL_PID = "org.harness.cluster", "org.harness.pid"
CLIENT, INTERNAL, CONTROLLER, API = 9092, 9093, 9094, 8474
JVM_OPTS = " ".join(LOCAL_JVM_OPTS)  # the local backend's: the same heap and log format (harness/broker_log.py)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def reap(client, *, progress=_log.info) -> int:
    """Remove the containers and networks of harness processes that are gone; the count removed."""
    gone = 0
    for c in client.containers.list(all=True, filters={"label": LABEL_PID}):
        if not _pid_alive(int(c.labels.get(LABEL_PID, "0"))):
            c.remove(force=True)
            gone += 1
    for n in client.networks.list(filters={"label": LABEL_PID}):
        if not _pid_alive(int(n.attrs.get("Labels", {}).get(LABEL_PID, "0"))):
            n.remove()
            gone += 1
    if gone:
        progress(f"reaped {gone} container(s)/network(s) a killed harness left behind")
    return gone


class ContainerToxiproxy(ToxiproxyServer):
    """Toxiproxy in a container: its API and one proxy port per node published on the host's loopback."""

    def __init__(self, cluster: "DockerCluster", *, port: int, proxy_ports: list[int]) -> None:
        self.port, self.cluster, self.proxy_ports = port, cluster, proxy_ports
        self.log_path = cluster.work_dir / TOXIPROXY_LOG
        self.proc = None
        from toxiproxy import Toxiproxy
        self.client = Toxiproxy()

    def start(self, *, timeout_s: float = 30.0) -> None:
        ports = {f"{API}/tcp": ("127.0.0.1", self.port), **{f"{p}/tcp": ("127.0.0.1", p) for p in self.proxy_ports}}
        self.proc = self.cluster._container(self.cluster.images.toxiproxy, "toxiproxy", ports=ports,
                                            networks={"clients": []})
        self.proc.start()
        self.activate()
        import urllib.request
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/version", timeout=1).read()
                return
            except OSError:
                time.sleep(0.2)
        raise SetupError(f"the Toxiproxy container did not answer on port {self.port} within {timeout_s}s")

    def stop(self) -> None:
        if self.proc is not None:
            try:
                self.log_path.write_bytes(self.proc.logs())
            except Exception:
                pass
        self.proc = None  # removed with the cluster's containers


class DockerCluster(LocalCluster):
    """N KRaft nodes in containers behind a Toxiproxy container. Use as a context manager."""

    backend = "docker"

    @classmethod
    def preflight(cls, *, progress=_log.info) -> None:
        """An engine that answers (started here when none does); SetupError, exit 2, when none can be."""
        docker_engine.ensure_engine(progress=progress)

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.client = None
        self.images = None
        self.containers: dict[str, object] = {}  # name -> docker-py container
        self.networks: dict[str, object] = {}  # "cluster" / "clients" -> docker-py network
        self.tag = f"h{os.getpid()}-{self.cluster_id[:8].lower().replace('_', 'x').replace('-', 'y')}"

    # -- containers and networks
    def _labels(self) -> dict:
        return {LABEL_CLUSTER: self.tag, LABEL_PID: str(os.getpid())}

    def _container(self, image: str, name: str, *, networks: dict, ports=None, volumes=None, env=None):
        """Create (not start) a labelled container attached to the named networks with those aliases."""
        first, *rest = networks
        c = self.client.containers.create(image, name=f"{self.tag}-{name}", labels=self._labels(), ports=ports or {},
                                          volumes=volumes or {}, environment=env or {}, detach=True,
                                          network=self.networks[first].name, cap_add=["NET_ADMIN"])
        if networks[first]:
            self.networks[first].disconnect(c)
            self.networks[first].connect(c, aliases=networks[first])
        for net in rest:
            self.networks[net].connect(c, aliases=networks[net])
        self.containers[name] = c
        return c

    def start(self, *, timeout_s: float = 120.0) -> None:
        """Engine, images, networks, Toxiproxy, then every node; wait until all are registered."""
        dist = self._dist(self.requested_version)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.client = docker_engine.client_for(docker_engine.ensure_engine(progress=self.progress))
        reap(self.client, progress=self.progress)
        self.images = docker_images.ensure_images(self.client, [dist.version], progress=self.progress)
        for net in ("cluster", "clients"):
            self.networks[net] = self.client.networks.create(f"{self.tag}-{net}", driver="bridge",
                                                             labels=self._labels())
        ports = free_ports(self.n + 1)
        self.toxiproxy = ContainerToxiproxy(self, port=ports.pop(), proxy_ports=ports)
        self.toxiproxy.start()
        for i in range(self.n):
            nid = i + 1
            d = broker_dir(self.work_dir, nid)
            (d / "data").mkdir(parents=True, exist_ok=True)
            self.nodes[nid] = Node(nid, f"r{i % self.racks}", CLIENT, INTERNAL, CONTROLLER, ports[i], d / "data",
                                   d / "server.properties", d / BROKER_LOG, dist.version)
        for node in self.nodes.values():
            self._write_config(node)
            self.toxiproxy.create(name=node.proxy_name, listen=f"0.0.0.0:{node.proxy_port}",
                                  upstream=f"client-{node.node_id}:{CLIENT}")
        for node in self.nodes.values():
            self._spawn(node)
        self.wait_for_brokers(set(self.nodes), timeout_s=timeout_s)

    def stop(self) -> None:
        """Remove every container and network of this cluster; safe more than once and after a failed start."""
        if self.toxiproxy:
            self.toxiproxy.stop()
            self.toxiproxy = None
        for name, c in list(self.containers.items()):
            try:
                c.remove(force=True)
            except Exception as e:  # already gone: fine; anything else is said, the next start reaps it
                if "No such container" not in str(e):
                    _log.warning("could not remove container %s: %s", name, e)
        self.containers.clear()
        for net in list(self.networks.values()):
            try:
                net.remove()
            except Exception as e:
                _log.warning("could not remove network %s: %s", net.name, e)
        self.networks.clear()
        self._admin = None

    # -- configuration: the local backend's properties with container addresses
    def _write_config(self, node: Node) -> None:
        voters = ",".join(f"{n.node_id}@kafka-{n.node_id}:{CONTROLLER}" for n in self.nodes.values())
        props = {
            "process.roles": "broker,controller", "node.id": node.node_id, "controller.quorum.voters": voters,
            "listeners": f"CLIENT://0.0.0.0:{CLIENT},INTERNAL://0.0.0.0:{INTERNAL},CONTROLLER://0.0.0.0:{CONTROLLER}",
            "advertised.listeners": f"CLIENT://127.0.0.1:{node.proxy_port},INTERNAL://kafka-{node.node_id}:{INTERNAL}",
            "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL", "controller.listener.names": "CONTROLLER",
            "log.dirs": "/node/data", "broker.rack": node.rack, **self.settings.properties(),
        }
        node.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    def _spawn(self, node: Node) -> None:
        """A fresh container of the node's version on the node's directory (a restart or an upgrade alike)."""
        name = f"broker-{node.node_id}"
        old = self.containers.pop(name, None)
        if old is not None:
            old.remove(force=True)
        image = self.images.kafka.get(node.version) or self._image_of(node.version)
        c = self._container(image, name, networks={"cluster": [f"kafka-{node.node_id}"],
                                                   "clients": [f"client-{node.node_id}"]},
                            volumes={str(node.config.parent.resolve()): {"bind": "/node", "mode": "rw"}},
                            env={"CLUSTER_ID": self.cluster_id, "KAFKA_JVM_OPTS": JVM_OPTS})
        c.start()
        node.proc = c
        self.on_event("broker_event", broker=node.node_id, what="start", version=node.version, container=c.short_id)

    def _image_of(self, version: str) -> str:
        extra = docker_images.ensure_images(self.client, [version], progress=self.progress)
        self.images.kafka.update(extra.kafka)
        return extra.kafka[version]

    def _running(self, nid: int) -> bool:
        c = self.nodes[nid].proc
        if c is None:
            return False
        c.reload()
        return c.status in ("running", "paused")

    def wait_for_brokers(self, ids: set[int], *, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for nid in ids:
                if not self._running(nid):
                    log = self.nodes[nid].log
                    why = startup_failure(log) or startup_failure(log.with_name("format.log"))
                    raise SetupError(f"broker {nid} exited during start-up{': ' + why if why else ''} (see {log})")
            if ids <= self.registered_brokers() and all(self._answers(i) for i in ids):
                for nid in ids:
                    self.on_event("broker_event", broker=nid, what="ready", version=self.nodes[nid].version)
                return
            time.sleep(0.3)
        raise SetupError(f"brokers {sorted(ids)} not ready within {timeout_s}s (see {broker_dir(self.work_dir, '*') / BROKER_LOG})")

    def _answers(self, nid: int) -> bool:
        """Whether the node itself answers a metadata request through its own proxy port."""
        from confluent_kafka.admin import AdminClient
        try:
            AdminClient({"bootstrap.servers": f"127.0.0.1:{self.nodes[nid].proxy_port}", "log_level": 0}) \
                .list_topics(timeout=2)
            return True
        except Exception:
            return False

    # -- broker actions
    def kill_broker(self, broker_id: int) -> None:
        node = self.nodes[broker_id]
        self.on_event("broker_event", broker=broker_id, what="kill", version=node.version)
        if self._running(broker_id):
            node.proc.kill()
        node.proc = None

    def terminate_broker(self, broker_id: int, *, timeout_s: float = 60.0) -> None:
        node = self.nodes[broker_id]
        self.on_event("broker_event", broker=broker_id, what="terminate", version=node.version)
        if self._running(broker_id):
            node.proc.stop(timeout=int(timeout_s))
        node.proc = None

    def pause_broker(self, broker_id: int) -> None:
        self.on_event("broker_event", broker=broker_id, what="pause", version=self.nodes[broker_id].version)
        self.nodes[broker_id].proc.pause()

    def resume_broker(self, broker_id: int) -> None:
        self.nodes[broker_id].proc.unpause()
        self.on_event("broker_event", broker=broker_id, what="resume", version=self.nodes[broker_id].version)

    def start_broker(self, broker_id: int, *, version: str | None = None, timeout_s: float = 120.0) -> None:
        node = self.nodes[broker_id]
        if self._running(broker_id):
            return
        if version:
            node.version = self._dist(version).version
        self._spawn(node)
        self.wait_for_brokers({broker_id}, timeout_s=timeout_s)

    # -- faults only a network of containers gives (BrokerPartitions)
    def partition_broker(self, broker_id: int) -> None:
        """Cut a node off the other brokers and the controller quorum; its clients still reach it."""
        self.networks["cluster"].disconnect(self.nodes[broker_id].proc, force=True)
        self._partitioned = getattr(self, "_partitioned", set()) | {broker_id}

    def heal_partitions(self) -> None:
        for nid in sorted(getattr(self, "_partitioned", set())):
            c = self.nodes[nid].proc
            if c is not None:
                self.networks["cluster"].connect(c, aliases=[f"kafka-{nid}"])
        self._partitioned = set()

    def client_ports(self) -> set[int]:
        """No client listener is reachable from the host: the nodes' own ports stay inside their networks."""
        return set()

    def broker_log_path(self, broker_id: int) -> Path:
        return broker_dir(self.work_dir, broker_id) / BROKER_LOG
