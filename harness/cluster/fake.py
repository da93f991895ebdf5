"""A fake cluster backend, in-process and file-based, so the runner can be tested without Kafka or a JVM.

What it is for: unit tests of everything around the brokers — the runner's orchestration, the
nemesis's actions and fault brackets, the run directory, STATUS and exit codes, replay, Ctrl-C and
error handling — in a few seconds per run. Fake members (harness/members/fake_member.py) are real child
processes that speak the member contract, so the member pool, the observer and the waits run for real;
`FakeWorkload` (harness/cluster/fake_workload.py) produces into the same files.

What it is not: a model of Kafka. Its coordinator is a thread that hands a topic's partitions to the
live registered members, balanced and sticky, revoking before it reassigns; it has no rebalance
protocol, no generations, no assignors, no static membership, no replication, and broker and network
faults are only recorded (and `broker_event`s emitted): a killed broker changes nothing but which broker
`admin()` names as the group's coordinator. A test that claims something about Kafka's behaviour runs on
the real cluster (harness/cluster/local.py, tests/integration, suites/).

    cluster = FakeCluster(work_dir=tmp, version="4.3.1")   # bootstrap() == "fake:<work_dir>/fake"
    Run(cfg, make_cluster=lambda **kw: FakeCluster(**kw), make_workload=FakeWorkload).execute()

Members register by writing a file with their pid and touching it as a heartbeat; one whose process is
gone (SIGKILL, crash) is dropped at once, one that stops heartbeating (SIGSTOP) after its session
timeout. The file layout is in harness/cluster/fake_workload.py. Every action is appended to `calls`.
"""
from __future__ import annotations

import json
import logging
import threading
import time
import zlib
from pathlib import Path
from types import SimpleNamespace

from harness.base.errors import Indeterminate
from harness.base.steps import Step
from harness.cluster.base import BrokerSettings, EventSink
from harness.cluster.fake_workload import PREFIX, FakeWorkload, topic_dir, write_atomic
from harness.record.rundir import BROKER_LOG, broker_dir

__all__ = ["FakeCluster", "FakeWorkload"]
_log = logging.getLogger(__name__)
TICK_S = 0.05


def _noop(*_a, **_k) -> None:
    pass


def pid_alive(pid: int) -> bool:
    """Whether a process runs (a zombie, exited but not reaped yet, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


class _Done:
    """A finished future, as the admin client's futures are used: `result(timeout=...)`."""

    def __init__(self, value=None, error: Exception | None = None) -> None:
        self.value, self.error = value, error

    def result(self, timeout: float | None = None):
        if self.error is not None:
            raise self.error
        return self.value


class FakeAdmin:
    """Just enough admin client for the nemesis: which broker coordinates a group."""

    def __init__(self, cluster: "FakeCluster") -> None:
        self.cluster = cluster

    def describe_consumer_groups(self, groups) -> dict:
        out = {}
        for g in groups:
            bid = self.cluster.coordinator_of(g)
            out[g] = _Done(SimpleNamespace(group_id=g, coordinator=SimpleNamespace(id=bid))) if bid is not None \
                else _Done(error=RuntimeError(f"no live broker to coordinate {g}"))
        return out


class _Group:
    """The coordinator's view of one group: what it gave each member, and what is still being revoked."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.given: dict[str, set[int]] = {}  # in the member's latest assignment file
        self.releasing: dict[str, tuple[int, set[int]]] = {}  # revoked at epoch n, not yet acknowledged
        self.joined: dict[str, float] = {}

    def forget(self, m: str) -> None:
        self.given.pop(m, None)
        self.releasing.pop(m, None)
        self.joined.pop(m, None)


class FakeCluster:
    """Fake brokers and a fake group coordinator on files under work_dir (see the module docstring)."""

    backend = "fake"

    def __init__(self, *, work_dir, version: str = "4.3.1", brokers: int = 3, racks: int = 3,
                 settings: BrokerSettings | None = None, on_event: EventSink = _noop, progress=_log.info) -> None:
        if brokers < 1:
            raise ValueError("brokers must be >= 1")
        self.work_dir = Path(work_dir)
        self.root = self.work_dir / "fake"
        self.version = version
        self.settings = settings or BrokerSettings(replication_factor=min(3, brokers),
                                                   min_insync_replicas=min(2, brokers))
        self.on_event = on_event
        self.progress = progress
        self.racks = {b: f"r{(b - 1) % max(1, racks)}" for b in range(1, brokers + 1)}
        self.versions = {b: version for b in self.racks}
        self.up: set[int] = set()
        self.calls: list[tuple[str, dict]] = []
        self.latency: dict | None = None
        self.blackholed: set[int] = set()
        self.topic_partitions: dict[str, int] = {}
        self.moved: dict[tuple[str, int], int] = {}  # (topic, partition) -> its leader after a move
        self._groups: dict[str, _Group] = {}
        self._epoch = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors: list[str] = []  # what the coordinator thread hit (a test can assert it stays empty)

    def _call(self, name: str, **args) -> None:
        self.calls.append((name, args))

    def call_names(self) -> list[str]:
        return [c[0] for c in self.calls]

    # -- lifecycle
    def __enter__(self) -> "FakeCluster":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self._call("start")
        (self.root / "topics").mkdir(parents=True, exist_ok=True)
        (self.root / "groups").mkdir(parents=True, exist_ok=True)
        for b in self.broker_ids():
            log = self.broker_log_path(b)  # a fake broker logs nothing, but its log is there to be read (empty)
            log.parent.mkdir(parents=True, exist_ok=True)
            log.touch(exist_ok=True)
            self._up(b)
        self._stop.clear()
        self._thread = threading.Thread(target=self._coordinate, name="fake-coordinator", daemon=True)
        self._thread.start()
        self.progress(f"fake cluster: {len(self.racks)} brokers ({self.version}) at {self.root}")

    def stop(self) -> None:
        """Stop the coordinator; safe to call more than once and before start."""
        self._call("stop")
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.up.clear()

    def notice_exits(self) -> list[int]:
        """Fake brokers are files and a thread: none dies on its own (the backends' `notice_exits`)."""
        return []

    # -- reachability
    def bootstrap(self) -> str:
        return PREFIX + str(self.root)

    def broker_ids(self) -> list[int]:
        return sorted(self.racks)

    def rack_of(self, broker_id: int) -> str:
        return self.racks[broker_id]

    def broker_log_path(self, broker_id: int) -> Path:
        """A fake broker's log: created empty at the start (nothing writes it; a test may, in the local layout)."""
        return broker_dir(self.root, broker_id) / BROKER_LOG

    def racks_in_use(self) -> list[str]:
        return sorted(set(self.racks.values()))

    def brokers_of_rack(self, rack: str) -> list[int]:
        return [b for b in self.broker_ids() if self.racks[b] == rack]

    def broker_version(self, broker_id: int) -> str:
        return self.versions[broker_id]

    def admin(self) -> FakeAdmin:
        return FakeAdmin(self)

    def reset_admin(self) -> None:
        self._call("reset_admin")

    def coordinator_of(self, group: str) -> int | None:
        """The group's coordinator: a broker picked by the group id's hash, or the next live one."""
        ids = self.broker_ids()
        first = zlib.crc32(group.encode()) % len(ids)
        return next((b for b in ids[first:] + ids[:first] if b in self.up), None)

    def create_topic(self, topic: str, *, partitions: int, replication: int = 1, timeout_s: float = 30.0,
                     config: dict | None = None) -> None:
        # the Admin call's name, the same word as the step's (spelled once: harness/base/steps.py)
        self._call(Step.CREATE_TOPIC.value, topic=topic, partitions=partitions, replication=replication)
        self.topic_partitions[topic] = partitions
        d = topic_dir(self.root, topic)
        d.mkdir(parents=True, exist_ok=True)
        for p in range(partitions):
            (d / f"p{p}.log").touch()
        if not (d / "meta.json").exists():
            write_atomic(d / "meta.json", json.dumps({"partitions": partitions, "replication": replication}))

    # -- brokers
    def _up(self, b: int, version: str | None = None) -> None:
        if version:
            self.versions[b] = version
        self.up.add(b)
        self.on_event("broker_event", broker=b, what="start", version=self.versions[b])
        self.on_event("broker_event", broker=b, what="ready", version=self.versions[b])

    def _down(self, b: int, what: str) -> None:
        self.up.discard(b)
        self.on_event("broker_event", broker=b, what=what, version=self.versions[b])

    def kill_broker(self, broker_id: int) -> None:
        """The broker down, as `kill`; Indeterminate (nothing recorded) for a broker that is not up."""
        self._call("kill_broker", broker_id=broker_id)
        self._stoppable(broker_id, "kill")
        self._down(broker_id, "kill")

    def terminate_broker(self, broker_id: int, *, timeout_s: float = 60.0) -> None:
        """The broker down, as `terminate`; Indeterminate (nothing recorded) for a broker that is not up."""
        self._call("terminate_broker", broker_id=broker_id)
        self._stoppable(broker_id, "terminate")
        self._down(broker_id, "terminate")

    def _stoppable(self, broker_id: int, what: str) -> None:
        """As the real backends: a broker with no live process is not stopped, and no stop of it is recorded."""
        if broker_id not in self.up:
            raise Indeterminate(f"cannot {what} broker {broker_id}: it has no process (it is down already)")

    def start_broker(self, broker_id: int, *, version: str | None = None, timeout_s: float = 60.0) -> None:
        self._call("start_broker", broker_id=broker_id, version=version)
        if broker_id not in self.up:
            self._up(broker_id, version)

    def restart_broker(self, broker_id: int) -> None:
        self._call("restart_broker", broker_id=broker_id)
        self._down(broker_id, "terminate")
        self._up(broker_id)

    def pause_broker(self, broker_id: int) -> None:
        self._call("pause_broker", broker_id=broker_id)
        self.on_event("broker_event", broker=broker_id, what="pause", version=self.versions[broker_id])

    def resume_broker(self, broker_id: int) -> None:
        self._call("resume_broker", broker_id=broker_id)
        self.on_event("broker_event", broker=broker_id, what="resume", version=self.versions[broker_id])

    def rolling_restart(self, *, version: str | None = None) -> None:
        self._call("rolling_restart", version=version)
        for b in self.broker_ids():
            self._down(b, "terminate")
            self._up(b, version)

    def rolling_upgrade(self, version: str) -> None:
        self._call("rolling_upgrade", version=version)
        for b in self.broker_ids():
            self._down(b, "terminate")
            self._up(b, version)
        self.version = version
        self.on_event("broker_event", broker=0, what="metadata_upgrade", version=version)

    def rack_outage(self, rack: str) -> list[int]:
        self._call(self.rack_outage.__name__, rack=rack)  # the call record names the backend method
        ids = self.brokers_of_rack(rack)
        for b in ids:
            self._down(b, "kill")
        return ids

    def rack_restore(self, rack: str) -> None:
        self._call("rack_restore", rack=rack)
        for b in self.brokers_of_rack(rack):
            if b not in self.up:
                self._up(b)

    # -- partition leadership: partition p led by broker p % n + 1 (its only replica) until moved
    def partition_leaders(self, topic: str, *, timeout_s: float = 10.0) -> dict[int, dict]:
        n, out = len(self.racks), {}
        for p in range(self.topic_partitions.get(topic, 6)):
            lead = self.moved.get((topic, p), p % n + 1)
            out[p] = {"leader": lead if lead in self.up else -1, "replicas": [lead], "isr": [lead] if lead in self.up else []}
        return out

    def move_leadership(self, topic: str, broker: int, *, timeout_s: float = 60.0) -> dict[int, list[int]]:
        self._call("move_leadership", topic=topic, broker=broker)
        n, out = len(self.racks), {}
        for p, d in self.partition_leaders(topic).items():
            if d["leader"] == broker and n > 1:
                self.moved[(topic, p)] = broker % n + 1
                out[p] = [broker, broker % n + 1]
        return out

    # -- network faults: recorded only
    def add_latency(self, *, latency_ms: int, jitter_ms: int = 0, broker_ids: list[int] | None = None) -> None:
        self._call("add_latency", latency_ms=latency_ms, jitter_ms=jitter_ms, broker_ids=broker_ids)
        self.latency = {"latency_ms": latency_ms, "jitter_ms": jitter_ms, "broker_ids": broker_ids}

    def blackhole(self, *, broker_ids: list[int] | None = None) -> None:
        self._call("blackhole", broker_ids=broker_ids)
        self.blackholed |= set(broker_ids or self.broker_ids())

    def heal(self) -> None:
        self._call("heal")
        self.latency = None
        self.blackholed.clear()

    # -- the coordinator thread
    def _coordinate(self) -> None:
        while not self._stop.wait(TICK_S):
            if not self.up:
                continue  # no broker, no coordinator
            for gdir in sorted((self.root / "groups").glob("*")):
                try:
                    self._tick(self._groups.setdefault(gdir.name, _Group(gdir)))
                except Exception as e:  # keep coordinating; a test sees what went wrong
                    self.errors.append(f"{gdir.name}: {type(e).__name__}: {e}")
                    _log.exception("fake coordinator")

    def _registrations(self, g: _Group) -> dict[str, dict]:
        regs = {}
        for f in (g.path / "members").glob("*.json"):
            try:
                regs[f.stem] = {**json.loads(f.read_text()), "heartbeat": f.stat().st_mtime, "file": f}
            except (FileNotFoundError, ValueError):
                continue  # left meanwhile, or torn (registrations are written atomically, so: left)
        return regs

    def _tick(self, g: _Group) -> None:
        regs = self._registrations(g)
        default_session = self.settings.consumer_session_timeout_ms / 1000
        live = {}
        for m, r in regs.items():
            session = r.get("session_timeout_s") or default_session
            if pid_alive(r["pid"]) and time.time() - r["heartbeat"] <= session:
                live[m] = r
            else:  # gone, or silent past its session timeout: out of the group (it rejoins if it runs again)
                r["file"].unlink(missing_ok=True)
        for m in list(g.given):
            if m not in live:
                g.forget(m)
        if not live:
            return
        topic = next(iter(live.values()))["topic"]
        meta = topic_dir(self.root, topic) / "meta.json"
        if not meta.exists():
            return
        n = json.loads(meta.read_text())["partitions"]
        for m, r in live.items():
            g.given.setdefault(m, set())
            g.joined.setdefault(m, r.get("joined", 0.0))
            if m in g.releasing:
                try:
                    acked = int((g.path / "ack" / m).read_text() or 0)
                except (FileNotFoundError, ValueError):
                    acked = 0
                if acked >= g.releasing[m][0]:
                    del g.releasing[m]
        target = balanced(n, {m: g.given[m] for m in live}, g.joined)
        drops = {m: g.given[m] - target[m] for m in live if g.given[m] - target[m]}
        for m, drop in drops.items():  # revoke first ...
            g.given[m] -= drop
        held = {p for m in live for p in g.given[m] | g.releasing.get(m, (0, set()))[1] | drops.get(m, set())}
        adds = {m: target[m] - held for m in live if target[m] - held}
        for m, add in adds.items():  # ... then give only what nobody holds any more
            g.given[m] |= add
        for m in sorted(set(drops) | set(adds)):
            self._epoch += 1
            if m in drops:  # released once the member has acted on this epoch
                g.releasing[m] = (self._epoch, g.releasing.get(m, (0, set()))[1] | drops[m])
            (g.path / "assign").mkdir(exist_ok=True)
            write_atomic(g.path / "assign" / f"{m}.json",
                         json.dumps({"epoch": self._epoch, "partitions": sorted(g.given[m])}))

def balanced(n: int, current: dict[str, set[int]], joined: dict[str, float]) -> dict[str, set[int]]:
    """A balanced, sticky assignment of partitions 0..n-1: the larger quotas go to the members holding the
    most, each keeps what it holds up to its quota, and the rest goes to whoever has room (fewest moves)."""
    members = sorted(current, key=lambda m: (-len(current[m]), joined.get(m, 0.0), m))
    k = len(members)
    quota = {m: n // k + (1 if i < n % k else 0) for i, m in enumerate(members)}
    target: dict[str, set[int]] = {m: set() for m in members}
    placed: set[int] = set()
    for m in members:
        for p in sorted(current[m]):
            if p < n and len(target[m]) < quota[m] and p not in placed:
                target[m].add(p)
                placed.add(p)
    for p in range(n):
        if p not in placed:
            m = next(x for x in members if len(target[x]) < quota[x])
            target[m].add(p)
    return target
