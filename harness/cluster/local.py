"""The `local` backend: KRaft broker JVMs on loopback, client listeners behind Toxiproxy.

Each node runs broker and controller roles (combined mode) with a static quorum. It listens for
clients on a private port; Toxiproxy listens on a second port per node and forwards to it, and the
node *advertises the proxy port*, so every client connection after bootstrap also goes through the
proxy (with `request_faults`, the request proxy first: harness/cluster/client_path.py). Inter-broker and
controller traffic stay direct.
"""
from __future__ import annotations

import base64
import logging
import re
import shutil
import socket
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from harness.kafka import dist as kafka_dist
from harness.cluster.base import BrokerSettings, EventSink, noop as _noop
from harness.cluster.client_path import ClientPath
from harness.cluster.leadership import Leadership
from harness.base.errors import BadInput, Indeterminate, SetupError
from harness.base.procs import Proc
from harness.record.rundir import BROKER_LOG, TOXIPROXY_LOG, broker_dir
from harness.base.tools import free_ports
from harness.base.versions import RELEASE_VERSION_FLAG_SINCE, dotted, major_minor
from harness.cluster.toxiproxy import ToxiproxyServer

_log = logging.getLogger(__name__)

JVM_OPTS = ["-Xms128m", "-Xmx768m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true", "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
            "-Dorg.slf4j.simpleLogger.showDateTime=true", "-Dlog4j2.level=warn",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ"]  # wall time: harness/cluster/broker_log.py


@dataclass
class Node:
    node_id: int
    rack: str
    client_port: int
    internal_port: int
    controller_port: int
    proxy_port: int
    data_dir: Path
    config: Path
    log: Path
    version: str
    proc: Proc | None = None
    toxi_port: int = 0  # Toxiproxy's, when the request proxy takes proxy_port (client_path.py)

    @property
    def proxy_name(self) -> str:
        return f"broker-{self.node_id}"


def new_cluster_id() -> str:
    """A random KRaft cluster id. Like Kafka's Uuid.randomUuid, never one that starts with '-' (the
    storage tool would read it as an option)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


#: what a broker says in broker.log when it refuses its configuration at start, or cannot bind a listener
_REFUSAL = re.compile(r"((?:org\.apache\.kafka\.common\.config\.)?ConfigException: .*|"
                      r"java\.lang\.IllegalArgumentException: .*|requirement failed: .*|"
                      r"Socket server failed to bind to .*)")


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-200_000:]
    except OSError:
        return ""


def startup_failure(log: Path) -> str:
    """The reason a broker gave for exiting at start (a refused setting, most often), as one line, or ''."""
    return next((f.strip()[:300] for f in _REFUSAL.findall(_tail(log))), "")


ERROR_WORD = re.compile(r"\b(?:ERROR|FATAL)\b")
_ERROR = re.compile(r"^.*\b(?:ERROR|FATAL)\b.*$", re.M)


def last_error(log: Path) -> str:
    """The last ERROR or FATAL line of a broker's log, as one line (at most 300 characters), or ''."""
    found = _ERROR.findall(_tail(log))
    return found[-1].strip()[:300] if found else ""


#: how many times a start is made when a picked port was taken before it was bound (LocalCluster.start)
PORT_ATTEMPTS = 3


class LocalCluster(ClientPath, Leadership):
    """N KRaft nodes (broker+controller) on loopback behind Toxiproxy (and the request proxy when
    `request_faults`). Use as a context manager."""

    backend = "local"

    def __init__(self, *, work_dir: Path, version: str = "latest", brokers: int = 3, racks: int = 3,
                 settings: BrokerSettings | None = None, on_event: EventSink = _noop, progress=_log.info,
                 request_faults: bool = False) -> None:
        if brokers < 1:
            raise ValueError("brokers must be >= 1")
        if request_faults and self.backend not in ("local", "docker"):
            raise BadInput(f"request faults (the request proxy) are wired into the local and docker backends only, "
                           f"not {self.backend}")
        self.request_faults = request_faults
        self.work_dir = Path(work_dir)
        self.requested_version = version
        self.n = brokers
        self.racks = max(1, racks)
        self.settings = settings or BrokerSettings.for_brokers(brokers)
        self.on_event = on_event
        self.progress = progress
        self.nodes: dict[int, Node] = {}
        self.dists: dict[str, kafka_dist.KafkaDist] = {}
        self.toxiproxy: ToxiproxyServer | None = None
        self.cluster_id = new_cluster_id()
        self._toxics: list[tuple[str, str]] = []
        self._admin: AdminClient | None = None
        self._stopped: set[int] = set()  # broker pids the harness stopped (or saw die): never noticed as died

    # -- lifecycle
    def __enter__(self) -> "LocalCluster":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _dist(self, version: str) -> kafka_dist.KafkaDist:
        if version not in self.dists:
            d = kafka_dist.resolve(version, progress=self.progress)
            self.dists[version] = self.dists[d.version] = d
        return self.dists[version]

    @property
    def version(self) -> str:
        return self._dist(self.requested_version).version

    def start(self, *, timeout_s: float = 120.0) -> None:
        """Resolve Kafka, start Toxiproxy, format and start every node, wait until all are registered. The ports are
        free when picked, but another process may bind one before a broker's JVM does (an outgoing connection takes
        its local port from the same range): a start that fails so is made again on other ports, from empty data
        directories, up to PORT_ATTEMPTS times, and said in the progress; any other failure is raised at once."""
        for attempt in range(1, PORT_ATTEMPTS + 1):
            try:
                return self._start_once(timeout_s)
            except Exception as e:  # noqa: BLE001 - a bind failure anywhere in the start (a broker, Toxiproxy)
                if attempt == PORT_ATTEMPTS or not self._port_was_taken(e):
                    raise
                self.progress(f"a port picked for the cluster was taken before it was bound ({e}); starting again "
                              f"on other ports (attempt {attempt + 1} of {PORT_ATTEMPTS})")
                self.stop()
                for node in self.nodes.values():
                    shutil.rmtree(node.data_dir, ignore_errors=True)
                self.nodes = {}

    def _port_was_taken(self, e: Exception) -> bool:
        """Whether a failed start failed on a port in use (the error's words, a broker's log, Toxiproxy's log)."""
        logs = [n.log for n in self.nodes.values()] + [self.work_dir / TOXIPROXY_LOG]
        for text in [str(e), *(_tail(p) for p in logs)]:
            if "address already in use" in text.lower():
                return True
        return False

    def _start_once(self, timeout_s: float) -> None:
        dist = self._dist(self.requested_version)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        ports = free_ports(5 * self.n + 1)
        self.toxiproxy = ToxiproxyServer(port=ports.pop(), log_path=self.work_dir / TOXIPROXY_LOG,
                                         progress=self.progress)
        self.toxiproxy.start()
        for i in range(self.n):
            nid = i + 1
            (d := broker_dir(self.work_dir, nid)).mkdir(parents=True, exist_ok=True)
            self.nodes[nid] = Node(nid, f"r{i % self.racks}", *ports[5 * i:5 * i + 4], d / "data", d / "server.properties",
                                   d / BROKER_LOG, dist.version, toxi_port=ports[5 * i + 4])
        for node in self.nodes.values():
            self._write_config(node)
        self._front_brokers()
        with ThreadPoolExecutor(max_workers=self.n) as ex:
            list(ex.map(self._format, self.nodes.values()))
        for node in self.nodes.values():
            self._spawn(node)
        self.wait_for_brokers(set(self.nodes), timeout_s=timeout_s)

    def stop(self) -> None:
        """Stop every broker, the request proxy and Toxiproxy; safe to call more than once and after a failed start."""
        for node in self.nodes.values():
            if node.proc and node.proc.alive():
                self._stopped.add(node.proc.pid)
                node.proc.signal(9)
        for node in self.nodes.values():
            if node.proc:
                node.proc.wait(timeout_s=10)
                node.proc = None
        self._stop_request_proxy()
        if self.toxiproxy:
            self.toxiproxy.stop()
            self.toxiproxy = None
        self._admin = None

    # -- configuration
    def _write_config(self, node: Node) -> None:
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes.values())
        props = {
            "process.roles": "broker,controller",
            "node.id": node.node_id,
            "controller.quorum.voters": voters,
            "listeners": f"CLIENT://127.0.0.1:{node.client_port},INTERNAL://127.0.0.1:{node.internal_port},"
                         f"CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"CLIENT://127.0.0.1:{node.proxy_port},INTERNAL://127.0.0.1:{node.internal_port}",
            "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "controller.listener.names": "CONTROLLER",
            "log.dirs": node.data_dir,
            "broker.rack": node.rack,
            **self.settings.properties(),
        }
        from harness.base.properties import properties_text  # no line of its own in a setting
        node.config.write_text(properties_text(props, what=f"broker {node.node_id}'s server.properties"))

    def _java(self, version: str, main: str, *args: str) -> list[str]:
        java = shutil.which("java")
        if not java:
            raise SetupError("'java' was not found on PATH; it is needed to run the Kafka brokers")
        return [java, *JVM_OPTS, "-cp", self._dist(version).classpath, main, *args]

    def _format(self, node: Node) -> None:
        cmd = self._java(node.version, "kafka.tools.StorageTool", "format", "-t", self.cluster_id,
                         "-c", str(node.config), "--ignore-formatted")
        with open(node.log.with_name("format.log"), "w") as log:
            r = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=120)
        if r.returncode != 0:
            why = startup_failure(node.log.with_name("format.log"))
            raise SetupError(f"formatting broker {node.node_id} storage failed{': ' + why if why else ''} "
                             f"(see {node.log.with_name('format.log')})")

    def _spawn(self, node: Node) -> None:
        node.proc = Proc.spawn(self._java(node.version, "kafka.Kafka", str(node.config)),
                               log_path=node.log, name=f"broker-{node.node_id}")
        self.on_event("broker_event", broker=node.node_id, what="start", version=node.version, pid=node.proc.pid)

    # -- reachability
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.proxy_port}" for n in self.nodes.values())

    def broker_ids(self) -> list[int]:
        return sorted(self.nodes)

    def rack_of(self, broker_id: int) -> str:
        return self.nodes[broker_id].rack

    def broker_log_path(self, broker_id: int) -> Path:
        return broker_dir(self.work_dir, broker_id) / BROKER_LOG

    def broker_version(self, broker_id: int) -> str:
        """The Kafka version a broker runs now (it differs from `version` part way through an upgrade)."""
        return self.nodes[broker_id].version

    def racks_in_use(self) -> list[str]:
        return sorted({n.rack for n in self.nodes.values()})

    def admin(self) -> AdminClient:
        """One admin client for the cluster, kept (a dropped client cancels its pending futures)."""
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap(), "socket.timeout.ms": 5000,
                                       "reconnect.backoff.max.ms": 500, "log_level": 2})
        return self._admin

    def reset_admin(self) -> None:
        """Drop the cached admin client; the next admin() call makes a new one."""
        self._admin = None

    def create_topic(self, topic: str, *, partitions: int, replication: int, timeout_s: float = 30.0,
                     config: dict | None = None) -> None:
        """Create a topic, retrying the errors a freshly started cluster gives (an in-flight request on a
        bootstrap connection the client replaces, a controller not elected yet)."""
        deadline = time.monotonic() + timeout_s
        while True:
            fut = self.admin().create_topics([NewTopic(topic, partitions, replication, config=config or {})])[topic]
            try:
                fut.result(timeout=max(1.0, deadline - time.monotonic()))
                return
            except KafkaException as e:
                err = e.args[0] if e.args else None
                if err is not None and err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    return
                if time.monotonic() >= deadline:
                    raise SetupError(f"could not create topic {topic}: {e}") from None
                time.sleep(0.5)

    def registered_brokers(self, *, timeout_s: float = 3.0) -> set[int]:
        try:
            md = self.admin().list_topics(timeout=timeout_s)
        except Exception:
            return set()
        return set(md.brokers)

    def wait_for_brokers(self, ids: set[int], *, timeout_s: float = 120.0) -> None:
        """Wait until every broker in ids is registered and its client port answers."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for nid in ids:
                p = self.nodes[nid].proc
                if p is None or not p.alive():
                    why = startup_failure(self.nodes[nid].log)
                    raise SetupError(f"broker {nid} exited during start-up{': ' + why if why else ''} "
                                     f"(see {self.nodes[nid].log})")
            # ports first: asking for metadata before the listeners are up only grows the client's backoff
            if all(self._port_open(self.nodes[i].client_port) for i in ids) and ids <= self.registered_brokers():
                for nid in ids:
                    self.on_event("broker_event", broker=nid, what="ready", version=self.nodes[nid].version)
                return
            time.sleep(0.1)
        raise SetupError(f"brokers {sorted(ids)} not ready within {timeout_s}s (see {broker_dir(self.work_dir, '*') / BROKER_LOG})")

    @staticmethod
    def _port_open(port: int) -> bool:
        with socket.socket() as s:
            s.settimeout(0.5)
            return s.connect_ex(("127.0.0.1", port)) == 0

    def wait_for_full_isr(self, *, timeout_s: float = 60.0) -> None:
        """Wait until no partition of any topic is under-replicated (safe to take the next broker down)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                md = self.admin().list_topics(timeout=3)
                under = [(t, p) for t, tm in md.topics.items() for p, pm in tm.partitions.items()
                         if len(pm.isrs) < len(pm.replicas)]
                if not under:
                    return
            except Exception:
                pass
            time.sleep(0.3)
        raise SetupError(f"partitions stayed under-replicated for {timeout_s}s")

    # -- broker actions (Killable, Pausable)
    def kill_broker(self, broker_id: int) -> None:
        """SIGKILL the broker's live process; its `broker_event` `kill` is written once the process is gone."""
        node, proc = self.nodes[broker_id], self._live(broker_id, "kill")
        self._stopped.add(proc.pid)
        proc.kill()
        self._gone(broker_id, proc, "kill")
        node.proc = None

    def terminate_broker(self, broker_id: int, *, timeout_s: float = 60.0) -> None:
        """SIGTERM the broker's live process (SIGKILL after timeout_s); its `broker_event` `terminate` is written once
        the process is gone."""
        node, proc = self.nodes[broker_id], self._live(broker_id, "terminate")
        self._stopped.add(proc.pid)
        proc.terminate_and_wait(timeout_s=timeout_s)
        self._gone(broker_id, proc, "terminate")
        node.proc = None

    def notice_exits(self) -> list[int]:
        """The brokers whose process ended on its own since the last look, each recorded once as `broker_event`
        `died` with its exit code and Kafka's own reason (the last error its log holds); a process the harness
        stops is never one (`_stopped`, marked before the signal)."""
        died = []
        for nid, node in list(self.nodes.items()):
            proc = node.proc
            if proc is None or proc.pid in self._stopped or proc.alive():
                continue
            self._stopped.add(proc.pid)
            self.on_event("broker_event", broker=nid, what="died", version=node.version, pid=proc.pid,
                          code=proc.popen.returncode, reason=last_error(node.log))
            died.append(nid)
        return died

    def _live(self, broker_id: int, what: str) -> Proc:
        """The broker's live process, or Indeterminate: nothing is recorded of a broker with none to stop."""
        proc = self.nodes[broker_id].proc
        if proc is None:
            raise Indeterminate(f"cannot {what} broker {broker_id}: it has no process (it is down already)")
        if not proc.alive():
            raise Indeterminate(f"cannot {what} broker {broker_id}: its process {proc.pid} exited on its own "
                                f"(code {proc.popen.returncode}) before the harness stopped it")
        return proc

    def _gone(self, broker_id: int, proc: Proc, what: str) -> None:
        """Record the stop once the process is gone (its pid and exit code); Indeterminate when it still runs."""
        if proc.alive():
            raise Indeterminate(f"broker {broker_id}'s process {proc.pid} still runs after the harness's {what}")
        self.on_event("broker_event", broker=broker_id, what=what, version=self.nodes[broker_id].version,
                      pid=proc.pid, code=proc.popen.returncode)

    def pause_broker(self, broker_id: int) -> None:
        self.on_event("broker_event", broker=broker_id, what="pause", version=self.nodes[broker_id].version)
        self.nodes[broker_id].proc.pause()

    def resume_broker(self, broker_id: int) -> None:
        self.nodes[broker_id].proc.resume()
        self.on_event("broker_event", broker=broker_id, what="resume", version=self.nodes[broker_id].version)

    def start_broker(self, broker_id: int, *, version: str | None = None, timeout_s: float = 120.0) -> None:
        node = self.nodes[broker_id]
        if node.proc and node.proc.alive():
            return
        if version:
            node.version = self._dist(version).version
        self._spawn(node)
        self.wait_for_brokers({broker_id}, timeout_s=timeout_s)

    def restart_broker(self, broker_id: int) -> None:
        self.terminate_broker(broker_id)
        self.start_broker(broker_id)

    def rolling_restart(self, *, version: str | None = None) -> None:
        """Restart each broker in turn, waiting for full ISR before the next."""
        for nid in self.broker_ids():
            self.wait_for_full_isr()
            self.terminate_broker(nid)
            self.start_broker(nid, version=version)
        self.wait_for_full_isr()

    def rolling_upgrade(self, version: str) -> None:
        """Roll every broker onto another Kafka version on the same data, then raise the metadata version."""
        target = self._dist(version)
        self.rolling_restart(version=target.version)
        release = dotted(major_minor(target.version))
        flag = "--release-version" if major_minor(target.version) >= RELEASE_VERSION_FLAG_SINCE else "--metadata"
        cmd = self._java(target.version, "org.apache.kafka.tools.FeatureCommand", "--bootstrap-server",
                         self.bootstrap(), "upgrade", flag, release)
        log = self.work_dir / "feature-upgrade.log"
        with open(log, "w") as out:
            r = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=120)
        if r.returncode != 0:
            raise SetupError(f"raising the metadata version to {release} failed (see {log})")
        self.on_event("broker_event", broker=0, what="metadata_upgrade", version=target.version)

    def brokers_of_rack(self, rack: str) -> list[int]:
        return [n.node_id for n in self.nodes.values() if n.rack == rack]

    def rack_outage(self, rack: str) -> list[int]:
        ids = self.brokers_of_rack(rack)
        for nid in ids:
            self.kill_broker(nid)
        return ids

    def rack_restore(self, rack: str) -> None:
        for nid in self.brokers_of_rack(rack):
            self.start_broker(nid)
