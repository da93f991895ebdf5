"""The `docker` backend: one container per KRaft node and a Toxiproxy container, on images built here.

The brokers are the local backend's (same server.properties but for the addresses, same admin, topic,
rolling and Toxiproxy fault code: `DockerCluster` subclasses `LocalCluster`); what differs is where
they run. Two networks per cluster, both labelled with the run:

    cluster  inter-broker and controller traffic; each node is `kafka-N` here and nowhere else
    clients  Toxiproxy to each node's client listener; each node is `client-N` here

Toxiproxy publishes one port per node on the host's loopback and the nodes advertise those ports, so
members (host processes) reach brokers only through the proxy, as on the local backend. With request faults
(`request_faults`) the request proxy (harness/kproxy/, in the harness's process) takes the advertised ports and
Toxiproxy publishes a second port per node behind it: client -> request proxy -> Toxiproxy's container -> node. Cutting a node
off the cluster network partitions it from the other brokers and the controller quorum while its
clients still reach it (`partition_broker`), which loopback processes cannot give.

Containers and networks are testcontainers' `DockerContainer` and `Network`, entered on the cluster's
exit stack, which `stop` unwinds (containers, then networks). Readiness is testcontainers' wait strategies:
an HTTP wait on Toxiproxy's API, and a log-message wait per node on the node's own broker.log. docker-py is
used only where testcontainers has no call: kill, graceful stop, pause and resume of a container,
disconnecting it from a network, and listing what a killed harness left behind (`reap`).

Every node's directory (server.properties, data/, broker.log) is a bind mount under the cluster's
work_dir, so data survives a restart or an upgrade onto another image, and `broker_log_path` is the
same file the local backend gives. Containers and networks carry `org.harness.cluster` (this cluster)
and `org.harness.pid` (the harness process) besides testcontainers' own labels; every start first reaps
what a killed harness left behind (Ryuk's image cannot be pulled here, so reaping is the harness's own).
"""
from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

import docker.errors
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import HttpWaitStrategy, LogMessageWaitStrategy

from harness.cluster import docker_engine
from harness.cluster import docker_images
from harness.cluster.local import JVM_OPTS as LOCAL_JVM_OPTS
from harness.cluster.local import LocalCluster, Node, startup_failure, ERROR_WORD as _ERROR_WORD
from harness.base.errors import Indeterminate, SetupError
from harness.record.rundir import BROKER_LOG, TOXIPROXY_LOG, broker_dir
from harness.base.tools import free_ports
from harness.cluster.toxiproxy import ToxiproxyServer

_log = logging.getLogger(__name__)

LABEL_CLUSTER, LABEL_PID = "org.harness.cluster", "org.harness.pid"
CLIENT, INTERNAL, CONTROLLER, API = 9092, 9093, 9094, 8474
JVM_OPTS = " ".join(LOCAL_JVM_OPTS)  # the local backend's: the same heap and log format (harness/cluster/broker_log.py)
STARTED = r"\[KafkaRaftServer nodeId=\d+\] Kafka Server started"  # what a node logs once it is unfenced
POLL_S = 0.1  # how often a wait strategy looks (testcontainers' default is a second)
NOTICE_S = 2.0  # how often notice_exits asks the engine whether a broker's container stopped on its own


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def reap(client, *, progress=_log.info) -> int:
    """Remove the containers and networks of harness processes that are gone; the count removed.
    (docker-py: testcontainers finds nothing by label.)"""
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


class _ConnectOnCreate:
    """testcontainers' DockerClient, but a container it creates is also put on more networks before it starts."""

    def __init__(self, client, networks: list) -> None:
        self._client, self._networks = client, networks

    def create(self, *args, **kw):
        container = self._client.create(*args, **kw)
        for net, aliases in self._networks:
            net.connect(container.id, aliases)
        return container

    def __getattr__(self, name: str):
        return getattr(self._client, name)


class ClusterContainer(DockerContainer):
    """A testcontainers container whose removal may come twice: a replaced broker's container is removed
    at once, and the cluster's exit stack, which entered it, removes it again at the end."""

    def __init__(self, image: str, **kw) -> None:
        super().__init__(image, **kw)
        self._more_networks: list = []

    def also_on(self, network: Network, aliases: list[str]) -> "ClusterContainer":
        """Also on network under aliases from the start: connected once created, before it starts. (Docker
        20.10, API 1.41, refuses two networks at create, so `with_kwargs(networking_config=...)` cannot.)"""
        self._more_networks.append((network, aliases))
        return self

    def get_docker_client(self):
        client = super().get_docker_client()
        return _ConnectOnCreate(client, self._more_networks) if self._more_networks else client

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        if self._container is None:
            return
        try:
            super().stop(force=force, delete_volume=delete_volume)
        except docker.errors.NotFound:
            pass
        finally:
            self._container = None

    def publish(self, port: int, host_port: int) -> "ClusterContainer":
        """Publish port on the host's loopback only (`with_bind_ports` binds every interface)."""
        self.ports[f"{port}/tcp"] = ("127.0.0.1", host_port)  # docker-py takes (address, port) here
        return self


class NodeContainer(ClusterContainer):
    """A KRaft node. Its image writes the broker's log to the bind-mounted broker.log, not to the container's
    output, so that file from where it ended when the container was made is this container's log: what
    testcontainers' log-message wait reads."""

    def __init__(self, image: str, *, log: Path) -> None:
        super().__init__(image)
        self.log_path = log
        self.log_offset = log.stat().st_size if log.exists() else 0

    def get_logs(self) -> tuple[bytes, bytes]:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self.log_offset)
                return f.read(), b""
        except OSError:
            return b"", b""


class ContainerToxiproxy(ToxiproxyServer):
    """Toxiproxy in a container: its API and one proxy port per node published on the host's loopback."""

    def __init__(self, cluster: "DockerCluster", *, port: int, proxy_ports: list[int]) -> None:
        self.port, self.cluster, self.proxy_ports = port, cluster, proxy_ports
        self.log_path = cluster.work_dir / TOXIPROXY_LOG
        self.proc: ClusterContainer | None = None
        from toxiproxy import Toxiproxy
        self.client = Toxiproxy()

    def start(self, *, timeout_s: float = 30.0) -> None:
        c = self.cluster._container(ClusterContainer(self.cluster.images.toxiproxy), "toxiproxy", network="clients",
                                    aliases=[])
        c.publish(API, self.port)
        for p in self.proxy_ports:
            c.publish(p, p)
        c.waiting_for(HttpWaitStrategy(API, "/version").with_startup_timeout(timeout_s).with_poll_interval(POLL_S))
        try:
            self.proc = self.cluster._stack.enter_context(c)
        except (TimeoutError, RuntimeError) as e:  # testcontainers removed it, its output in the error's notes
            self.log_path.write_text("\n".join([str(e), *getattr(e, "__notes__", [])]))
            raise SetupError(f"the Toxiproxy container did not answer on port {self.port} within {timeout_s}s "
                             f"(see {self.log_path})") from None
        self.cluster._stack.callback(self._save_log, c)  # unwound first: before the container goes

    def _save_log(self, c: ClusterContainer) -> None:
        with contextlib.suppress(Exception):
            out, err = c.get_logs()
            self.log_path.write_bytes(out + err)

    def stop(self) -> None:
        self.proc = None  # its log is saved and it is removed when the cluster's exit stack unwinds


class DockerCluster(LocalCluster):
    """N KRaft nodes in containers behind a Toxiproxy container. Use as a context manager."""
    backend = "docker"

    @classmethod
    def preflight(cls, *, progress=_log.info) -> None:
        """An engine that answers (started here when none does); SetupError, exit 2, when none can be."""
        docker_engine.ensure_engine(progress=progress)

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.client = None  # docker-py, for what testcontainers has no call for
        self._noticed = 0.0  # when notice_exits last asked the engine
        self.images = None
        self.containers: dict[str, ClusterContainer] = {}  # name -> the container of that name now
        self.networks: dict[str, Network] = {}  # "cluster" / "clients"
        self._stack = contextlib.ExitStack()
        self._partitioned: set[int] = set()
        self.tag = f"h{os.getpid()}-{self.cluster_id[:8].lower().replace('_', 'x').replace('-', 'y')}"

    # -- containers and networks
    def _labels(self) -> dict:
        return {LABEL_CLUSTER: self.tag, LABEL_PID: str(os.getpid())}

    def _network(self, role: str) -> Network:
        net = Network(docker_network_kw={"driver": "bridge", "labels": self._labels()})
        net.name = f"{self.tag}-{role}"
        self.networks[role] = self._stack.enter_context(net)
        return net

    def _container(self, c: ClusterContainer, name: str, *, network: str, aliases: list[str]) -> ClusterContainer:
        """c, named and labelled for this cluster (not started), on one of its networks under those aliases."""
        c.with_name(f"{self.tag}-{name}").with_network(self.networks[network])
        if aliases:
            c.with_network_aliases(*aliases)
        c.with_kwargs(labels=self._labels(), cap_add=["NET_ADMIN"])
        self.containers[name] = c
        return c

    def start(self, *, timeout_s: float = 120.0) -> None:
        """Engine, images, networks, Toxiproxy, then every node; wait until all are registered."""
        dist = self._dist(self.requested_version)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.client = docker_engine.client_for(docker_engine.ensure_engine(progress=self.progress))
        reap(self.client, progress=self.progress)
        self.images = docker_images.ensure_images(self.client, [dist.version], progress=self.progress)
        for role in ("cluster", "clients"):
            self._network(role)
        # with request faults each node has a second host port: Toxiproxy's, behind the request proxy's
        ports = free_ports((2 if self.request_faults else 1) * self.n + 1)
        api = ports.pop()
        toxi = ports[self.n:] if self.request_faults else [0] * self.n
        for i in range(self.n):
            nid = i + 1
            d = broker_dir(self.work_dir, nid)
            (d / "data").mkdir(parents=True, exist_ok=True)
            self.nodes[nid] = Node(nid, f"r{i % self.racks}", CLIENT, INTERNAL, CONTROLLER, ports[i], d / "data",
                                   d / "server.properties", d / BROKER_LOG, dist.version, toxi_port=toxi[i])
        self.toxiproxy = ContainerToxiproxy(self, port=api, proxy_ports=[self._toxi_port(n) for n in self.nodes.values()])
        self.toxiproxy.start()
        for node in self.nodes.values():
            self._write_config(node)
            self.toxiproxy.create(name=node.proxy_name, listen=f"0.0.0.0:{self._toxi_port(node)}",
                                  upstream=f"client-{node.node_id}:{CLIENT}")
        self._start_request_proxy()
        for node in self.nodes.values():
            self._spawn(node)
        self.wait_for_brokers(set(self.nodes), timeout_s=timeout_s)

    def stop(self) -> None:
        """Remove every container and network of this cluster (the exit stack, last in first out); safe more
        than once and after a failed start. What cannot be removed is said; the next start reaps it."""
        self._stop_request_proxy()
        if self.toxiproxy:
            self.toxiproxy.stop()
            self.toxiproxy = None
        try:
            self._stack.close()
        except Exception as e:
            _log.warning("could not remove all of cluster %s: %s (the next start reaps it)", self.tag, e)
        self.containers.clear()
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
        from harness.base.properties import properties_text  # no line of its own in a setting
        node.config.write_text(properties_text(props, what=f"broker {node.node_id}'s server.properties"))

    def _spawn(self, node: Node) -> None:
        """A fresh container of the node's version on the node's directory (a restart or an upgrade alike),
        on both networks before it starts; it is not waited for here (`wait_for_brokers`)."""
        name = f"broker-{node.node_id}"
        old = self.containers.pop(name, None)
        if old is not None:
            old.stop()
        image = self.images.kafka.get(node.version) or self._image_of(node.version)
        c = self._container(NodeContainer(image, log=node.log), name, network="cluster",
                            aliases=[f"kafka-{node.node_id}"])
        c.with_volume_mapping(str(node.config.parent.resolve()), "/node", "rw")
        c.with_envs(CLUSTER_ID=self.cluster_id, KAFKA_JVM_OPTS=JVM_OPTS)
        c.also_on(self.networks["clients"], [f"client-{node.node_id}"])
        self._stack.enter_context(c)
        node.proc = c
        self.on_event("broker_event", broker=node.node_id, what="start", version=node.version,
                      container=c.get_wrapped_container().short_id)

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
        """Each node has logged that it started (testcontainers' log-message wait on its broker.log since its
        container was made), then the quorum lists them all and each answers through its own proxy port."""
        deadline = time.monotonic() + timeout_s
        for nid in sorted(ids):
            self._wait_started(nid, deadline - time.monotonic())
        while not (ids <= self.registered_brokers() and all(self._answers(i) for i in ids)):
            if time.monotonic() > deadline:
                raise SetupError(f"brokers {sorted(ids)} not ready within {timeout_s}s "
                                 f"(see {broker_dir(self.work_dir, '*') / BROKER_LOG})")
            time.sleep(POLL_S)
        for nid in ids:
            self.on_event("broker_event", broker=nid, what="ready", version=self.nodes[nid].version)

    def _wait_started(self, nid: int, timeout_s: float) -> None:
        node = self.nodes[nid]
        if node.proc is None:
            raise SetupError(f"broker {nid} is not running")
        wait = LogMessageWaitStrategy(STARTED).with_startup_timeout(max(1, int(timeout_s))).with_poll_interval(POLL_S)
        try:
            wait.wait_until_ready(node.proc)
        except RuntimeError:  # the container exited before the line
            why = startup_failure(node.log) or startup_failure(node.log.with_name("format.log"))
            raise SetupError(f"broker {nid} exited during start-up{': ' + why if why else ''} (see {node.log})") \
                from None
        except TimeoutError:
            raise SetupError(f"broker {nid} did not start within {timeout_s:.0f}s (see {node.log})") from None

    def _answers(self, nid: int) -> bool:
        """Whether the node itself answers a metadata request through its own proxy port."""
        from confluent_kafka.admin import AdminClient
        try:
            AdminClient({"bootstrap.servers": f"127.0.0.1:{self.nodes[nid].proxy_port}", "log_level": 0}) \
                .list_topics(timeout=2)
            return True
        except Exception:
            return False

    # -- broker actions (docker-py: testcontainers has no kill, graceful stop, pause or resume)
    def kill_broker(self, broker_id: int) -> None:
        """SIGKILL the broker's running container; its `broker_event` `kill` is written once the container stopped."""
        c = self._live(broker_id, "kill")
        self._stopped.add(id(self.nodes[broker_id].proc))
        c.kill()
        with contextlib.suppress(Exception):  # not stopped within it: _gone says so
            c.wait(timeout=30)
        self._gone(broker_id, c, "kill")

    def terminate_broker(self, broker_id: int, *, timeout_s: float = 60.0) -> None:
        """Stop the broker's running container (SIGTERM, SIGKILL after timeout_s); its `broker_event` `terminate` is
        written once the container stopped."""
        c = self._live(broker_id, "terminate")
        self._stopped.add(id(self.nodes[broker_id].proc))
        c.stop(timeout=int(timeout_s))
        self._gone(broker_id, c, "terminate")

    def notice_exits(self) -> list[int]:
        """The local backend's `notice_exits` for containers: a broker's container that stopped with no step of
        the harness's, recorded once as `broker_event` `died` with its exit code and its log's last error. Looked
        at every NOTICE_S at most (a look is an engine call per broker)."""
        if time.monotonic() - self._noticed < NOTICE_S:
            return []
        self._noticed, died = time.monotonic(), []
        for nid, node in list(self.nodes.items()):
            c = node.proc
            if c is None or id(c) in self._stopped or self._running(nid) or c.status in ("created", "restarting"):
                continue
            self._stopped.add(id(c))
            w = c.get_wrapped_container()
            errors = [ln for ln in w.logs(tail=400).decode(errors="replace").splitlines() if _ERROR_WORD.search(ln)]
            self.on_event("broker_event", broker=nid, what="died", version=node.version,
                          code=(w.attrs.get("State") or {}).get("ExitCode"), reason=errors[-1].strip()[:300] if errors else "")
            died.append(nid)
        return died

    def _live(self, broker_id: int, what: str):
        """The broker's running (or paused) container, or Indeterminate: nothing is recorded of a broker with none."""
        if not self._running(broker_id):
            c = self.nodes[broker_id].proc
            state = "it has no container (it is down already)" if c is None else \
                f"its container is {c.status} (it stopped on its own)"
            raise Indeterminate(f"cannot {what} broker {broker_id}: {state}")
        return self.nodes[broker_id].proc.get_wrapped_container()

    def _gone(self, broker_id: int, c, what: str) -> None:
        """Record the stop once the container is no longer running (its exit code); Indeterminate while it runs."""
        c.reload()
        if c.status in ("running", "paused", "restarting"):
            raise Indeterminate(f"broker {broker_id}'s container is still {c.status} after the harness's {what}")
        self.on_event("broker_event", broker=broker_id, what=what, version=self.nodes[broker_id].version,
                      code=(c.attrs.get("State") or {}).get("ExitCode"))
        self.nodes[broker_id].proc = None

    def pause_broker(self, broker_id: int) -> None:
        self.on_event("broker_event", broker=broker_id, what="pause", version=self.nodes[broker_id].version)
        self.nodes[broker_id].proc.get_wrapped_container().pause()

    def resume_broker(self, broker_id: int) -> None:
        self.nodes[broker_id].proc.get_wrapped_container().unpause()
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
        """Cut a node off the other brokers and the controller quorum; its clients still reach it.
        (docker-py: testcontainers' Network connects but does not disconnect.)"""
        self.client.api.disconnect_container_from_network(self.nodes[broker_id].proc.get_container_id(),
                                                          self.networks["cluster"].id, force=True)
        self._partitioned.add(broker_id)

    def heal_partitions(self) -> None:
        for nid in sorted(self._partitioned):
            c = self.nodes[nid].proc
            if c is not None:
                self.networks["cluster"].connect(c.get_container_id(), [f"kafka-{nid}"])
        self._partitioned = set()

    def client_ports(self) -> set[int]:
        """No client listener is reachable from the host: the nodes' own ports stay inside their networks."""
        return set()

    def broker_log_path(self, broker_id: int) -> Path:
        return broker_dir(self.work_dir, broker_id) / BROKER_LOG
