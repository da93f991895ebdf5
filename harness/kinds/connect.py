"""Kafka Connect distributed workers: connect-runtime from Maven Central running the harness's connectors.

Each member is a worker process (`harness/members/connect_member.py`) with a generated worker config of its
slot: a REST port of its own, the run's three storage topics, the group settings tuned down for tests (all
recorded in run.json). Once the first workers run, the harness creates two connectors through the REST API:
HarnessSource (`harness.source.tasks` tasks, each writing numbered records into `<topic>-src`) and HarnessSink
(`harness.sink.tasks` tasks reading the run's topic, which the workload writes). Their tasks write the
history (docs/connect.md). "Stable" means every connector and task running on exactly one live worker and the
counts per worker balanced, by the tasks' own events: the checker's rule, `harness.invariants.balance.connect`. Beside that, the REST status of each connector is recorded as `connect_status` events,
the coordinator's view. At the end the source topic is read back (`connect_record` events in output.jsonl).
"""
from __future__ import annotations

import json
import socket
import urllib.request

from harness.base.errors import Indeterminate
from harness.record.history import HistoryWriter
from harness.invariants import CheckSettings, balance
from harness.invariants.connect import ConnectCheckSettings
from harness.plan.kinds.checks import BROKERS
from harness.plan.kinds.connect import MISREPORT, WORKER_KEYS
from harness.members import MemberSpec
from harness.record.rundir import OUTPUT_HISTORY
from harness.cluster.topics import add_partitions as add_topic_partitions

SOURCE, SINK = "harness-source", "harness-sink"
STATUS_EVERY_S = 1.0
#: how long a worker has to write `started` (its plugin scan, storage topics and herder first; slow on a busy host)
START_WAIT_S = 90.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ConnectCluster:
    """The Connect parts of a run; `ctx` is what it is handed of the run (harness/run/context.py: the plan, the
    topics, the group id, the run directory, the cluster, pool and waits once they exist, say, event, the clock)."""

    name = "connect"
    library = "connect-runtime"

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.plan = ctx.plan
        self.cfg = ctx.plan.cfg
        self.s = ctx.plan.settings
        self.ports: dict[int, int] = {}
        self.source_topic = f"{ctx.topic}-src"
        self.storage = {k: f"{ctx.group_id}-{k}" for k in ("configs", "offsets", "status")}
        self._status_at = 0.0
        self._status_seen: dict[str, object] = {}
        self.connectors_created = False

    # -- before the members
    def prepare(self) -> dict:
        """Resolve connect-runtime and build the worker; returns what run.json records about them."""
        from harness.members.connect_member import check_version, connect_worker_command, version_for_brokers
        cfg = self.cfg
        first = cfg.client_version or self.plan.scenario.initial_client
        self.version = (check_version(first) if first
                        else version_for_brokers(self.plan.kafka_version, progress=self.ctx.say))
        self.command = connect_worker_command(self.version, progress=self.ctx.say)
        return {"kind": "connect", "client_version": self.version, "client_library": self.library,
                "connect_settings": self.s,
                "connect_check_settings": self.connect_check_settings(), "source_topic": self.source_topic}

    def create_topics(self) -> dict:
        """The run's topic, the source topic and the three storage topics; returns what run.json records: the
        first worker's config, now with the brokers' address."""
        replication = min(3, self.cfg.brokers)
        cluster = self.ctx.cluster
        for t in (self.ctx.topic, self.source_topic):
            cluster.create_topic(t, partitions=self.cfg.partitions, replication=replication)
        compact = {"cleanup.policy": "compact"}
        cluster.create_topic(self.storage["configs"], partitions=1, replication=replication, config=compact)
        cluster.create_topic(self.storage["offsets"], partitions=5, replication=replication, config=compact)
        cluster.create_topic(self.storage["status"], partitions=3, replication=replication, config=compact)
        return {"worker_config": self._worker_config(0)}

    def check_settings(self) -> dict:
        cfg = self.cfg
        return CheckSettings.from_dict({
            "topic": self.ctx.topic, "partitions": cfg.partitions, "protocol": "classic-eager",
            "session_timeout_s": cfg.session_timeout_s, "quiet_period_s": cfg.quiet_period_s}).to_dict()

    def connect_check_settings(self) -> dict:
        s, cfg = self.s, self.cfg
        delay = int(s["scheduled.rebalance.max.delay.ms"])  # the fallback: each worker records its own
        return ConnectCheckSettings.from_dict({
            "protocol": cfg.protocol, "scheduled_delay_s": delay / 1000,
            "session_timeout_s": cfg.session_timeout_s, "rebalance_timeout_s": int(s["rebalance.timeout.ms"]) / 1000,
            "connectors": [c for c, n in ((SOURCE, s["harness.source.tasks"]), (SINK, s["harness.sink.tasks"])) if int(n)],
            "tasks": {c: int(n) for c, n in ((SOURCE, s["harness.source.tasks"]), (SINK, s["harness.sink.tasks"]))
                      if int(n)},
            "source_connectors": [SOURCE] if int(s["harness.source.tasks"]) else [],
            "sink_connectors": [SINK] if int(s["harness.sink.tasks"]) else [],
            "source_topic": self.source_topic, "quiet_period_s": cfg.quiet_period_s,
            "zombie_tolerance_s": 2 * cfg.session_timeout_s}).to_dict()

    def group_configs(self) -> dict:
        """The group configs set before the first member joins: the run's own (`--group-set`)."""
        return dict(self.cfg.group_settings)

    def pool_config(self) -> dict:
        return {}

    def _port(self, slot: int) -> int:
        if slot not in self.ports:
            self.ports[slot] = _free_port()
        return self.ports[slot]

    def _worker_config(self, slot: int) -> dict:
        s, cfg, ctx = self.s, self.cfg, self.ctx
        replication = min(3, cfg.brokers)
        port = self._port(slot)
        conf = {
            "bootstrap.servers": ctx.cluster.bootstrap(), "group.id": ctx.group_id,
            "connect.protocol": cfg.protocol, "listeners": f"http://127.0.0.1:{port}",
            "rest.advertised.host.name": "127.0.0.1", "rest.advertised.port": port,
            "config.storage.topic": self.storage["configs"], "offset.storage.topic": self.storage["offsets"],
            "status.storage.topic": self.storage["status"], "config.storage.replication.factor": replication,
            "offset.storage.replication.factor": replication, "status.storage.replication.factor": replication,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "session.timeout.ms": int(cfg.session_timeout_s * 1000),
            "heartbeat.interval.ms": int(cfg.heartbeat_interval_s * 1000),
            # the sink tasks' consumers: a killed worker's sink partitions move after the run's session timeout,
            # not the consumer's default 45 s
            "consumer.session.timeout.ms": int(cfg.session_timeout_s * 1000),
            "consumer.heartbeat.interval.ms": int(cfg.heartbeat_interval_s * 1000),
            # the connectors' ServiceLoader manifests, no scan of the class path (KIP-898; ignored before 3.6)
            "plugin.discovery": "service_load",
            **{k: s[k] for k in WORKER_KEYS},
        }
        if cfg.misbehave == "wrong-delay":  # the workers run with their delay and record three times it (or 10 s)
            real = int(s["scheduled.rebalance.max.delay.ms"])
            conf[MISREPORT + "scheduled.rebalance.max.delay.ms"] = real * 3 if real else 10000
        return {k: str(v) for k, v in conf.items()}

    def member_spec(self, slot: int) -> MemberSpec:
        sc, racks = self.plan.scenario, self.plan.racks
        rack = racks[slot % len(racks)] if sc.racks else None
        conf = self._worker_config(slot)
        if rack:
            conf["client.rack"] = conf["consumer.client.rack"] = rack
        path = self.ctx.run_dir.connect_dir / f"worker-slot{slot}.properties"
        path.parent.mkdir(parents=True, exist_ok=True)
        from harness.base.properties import properties_text  # no line of its own in a setting
        path.write_text(properties_text(dict(sorted(conf.items())), what=path.name))
        return MemberSpec(protocol=self.cfg.protocol, rack=rack, command=(*self.command, str(path)),
                          start_wait_s=START_WAIT_S, misbehave=self._misbehave(slot))

    def _misbehave(self, slot: int) -> str | None:
        """The self-test the slot's worker carries out (HARNESS_MISBEHAVE): zombie-task every worker's source tasks,
        connect-rejoin-storm slot 0's worker (HarnessWorker.java); wrong-delay is in the worker config."""
        bad = self.cfg.misbehave
        if bad == "zombie-task" or (bad == "connect-rejoin-storm" and slot == 0):
            return bad
        return None

    def with_version(self, spec: MemberSpec, version: str) -> MemberSpec:
        """The slot's spec with its worker on connect-runtime `version` (`brokers`: the brokers' own), its worker
        properties kept: a rolling upgrade of the workers."""
        from dataclasses import replace

        from harness.members.connect_member import check_version, connect_worker_command, version_for_brokers
        v = (version_for_brokers(self.plan.kafka_version, progress=self.ctx.say) if version == BROKERS
             else check_version(version))
        return replace(spec, command=(*connect_worker_command(v, progress=self.ctx.say), spec.command[-1]))

    @property
    def drains(self) -> bool:
        """Whether anything consumes the workload's topic (the sink connector), so that the run waits for it."""
        return bool(int(self.s["harness.sink.tasks"]))

    def input_topics(self) -> list[tuple[str, int]]:
        """The topic the sink connector reads, with its partitions now (its lag is over it)."""
        return [(t.real, t.partitions) for t in self.ctx.topics]

    def add_partitions(self, topic: str | None, count: int) -> tuple[str, int]:
        """Partitions up to `count` in all for the sink connector's topic (`harness.cluster.topics.add_partitions`); the
        sink tasks' consumers learn of them at their next metadata refresh (`consumer.metadata.max.age.ms`,
        a worker setting of the run) and the group's leader rebalances them in."""
        return add_topic_partitions(self.ctx.topics, self.ctx.cluster, topic, count)

    def wipe_state(self, slot: int) -> dict:
        return {}

    # -- the REST API
    def _urls(self) -> list[str]:
        return [m.started.get("rest_url") for m in self.ctx.pool.live() if m.started.get("rest_url")]

    def _rest(self, method: str, path: str, body: dict | None = None, timeout_s: float = 10.0):
        last = None
        for url in self._urls():
            req = urllib.request.Request(url + path, method=method, data=json.dumps(body).encode() if body else None,
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=timeout_s) as r:
                    return json.loads(r.read() or b"null")
            except Exception as e:  # noqa: BLE001 - another worker may answer (a rebalance answers 409)
                last = e
        raise Indeterminate(f"no Connect worker answered {method} {path}: {last}")

    def members_started(self, members: list) -> None:
        """Create the connectors through the REST API of a live worker (retried while the group forms): any live
        worker of the pool answers, not only the first `members`."""
        s, ctx = self.s, self.ctx
        configs = {}
        if int(s["harness.source.tasks"]):
            configs[SOURCE] = {"connector.class": "HarnessSource", "tasks.max": str(s["harness.source.tasks"]),
                               "topic": self.source_topic, "harness.batch.size": str(s["harness.batch.size"]),
                               "harness.interval.ms": str(s["harness.interval.ms"])}
        if int(s["harness.sink.tasks"]):
            configs[SINK] = {"connector.class": "HarnessSink", "tasks.max": str(s["harness.sink.tasks"]),
                             "topics": ctx.topic, "consumer.override.auto.offset.reset": "earliest"}
        deadline = ctx.clock() + 60
        for name, conf in configs.items():
            asked = ctx.clock()  # a PUT that timed out may still have been written: from the first one
            while True:
                try:
                    self._rest("PUT", f"/connectors/{name}/config", conf)
                    break
                except Indeterminate:
                    if ctx.clock() > deadline:
                        raise
                    ctx.waits.sleep(1.0)
            ctx.event("connect_connector_created", connector=name, config=conf, asked_mono=asked)
        self.connectors_created = True

    def _record_status(self) -> None:
        """The REST status of each connector (the coordinator's view), recorded when it changed."""
        now = self.ctx.clock()
        if not self.connectors_created or now - self._status_at < STATUS_EVERY_S:
            return
        self._status_at = now
        by_url = {m.started.get("rest_url", "").replace("http://", ""): m.member_id for m in self.ctx.pool.live()}
        for name in self.connect_check_settings()["connectors"]:
            try:
                st = self._rest("GET", f"/connectors/{name}/status", timeout_s=2.0)
            except Indeterminate:
                continue
            view = {"connector_state": st["connector"]["state"],
                    "connector_worker": by_url.get(st["connector"].get("worker_id"), st["connector"].get("worker_id")),
                    "tasks": sorted([t["id"], t["state"], by_url.get(t.get("worker_id"), t.get("worker_id"))]
                                    for t in st.get("tasks", []))}
            if self._status_seen.get(name) != view:
                self._status_seen[name] = view
                self.ctx.event("connect_status", connector=name, **view)

    # -- waiting
    def stable_timeout(self) -> float:
        """Long enough for a departed worker's scheduled delay, its detection and two rebalance rounds."""
        s, cfg = self.s, self.cfg
        return max(cfg.stable_timeout_s, int(s["scheduled.rebalance.max.delay.ms"]) / 1000 + cfg.session_timeout_s
                   + 2 * int(s["rebalance.timeout.ms"]) / 1000 + 30)

    def settled(self, observer, live: set[str]) -> tuple[bool, object, str]:
        """The connectors created, and every connector and task running on exactly one live worker with the counts
        per worker balanced (by the tasks' own events): `balance.connect`, the checker's rule."""
        self._record_status()
        view = {m: observer.connect.get(m, {"connectors": set(), "tasks": set()}) for m in live}
        snapshot = tuple(sorted((m, tuple(sorted(v["connectors"])), tuple(sorted(v["tasks"]))) for m, v in view.items()))
        summary = ", ".join(f"{m}:{len(v['connectors'])}c/{len(v['tasks'])}t" for m, v in sorted(view.items()))
        want = ConnectCheckSettings.from_dict(self.connect_check_settings())
        runs = {m: [("connector", c, None) for c in v["connectors"]] + [("task", c, i) for c, i in v["tasks"]]
                for m, v in view.items()}
        ok = self.connectors_created and balance.connect(runs, want.connectors, want.tasks, want.balance_slack).ok
        return ok, snapshot, summary

    # -- the end
    def sink_groups(self) -> list[str]:
        """The groups the sink connectors' tasks commit through (Connect names each `connect-<connector>`)."""
        return [f"connect-{c}" for c in self.connect_check_settings()["sink_connectors"]]

    def read_offsets(self, *, after: str, step_kind: str | None = None) -> None:
        """The sink connectors' groups' committed offsets as their coordinators return them now, as `offsets_read`
        events (harness/kinds/offsets_read.py; `commit_durability`), on real brokers."""
        if getattr(self, "offsets", None) is None:
            from harness.kinds.offsets_read import GroupsReader
            self.offsets = GroupsReader(self.ctx, self.sink_groups)
        self.offsets.read(after=after, step_kind=step_kind)

    def close(self) -> None:
        """The run is over, however it ended: the offsets readers' admin processes end (nothing else runs beside
        the members of a Connect cluster)."""
        reader, self.offsets = getattr(self, "offsets", None), None
        if reader is not None:
            reader.close()

    def finish(self, *, timeout_s: float = 60.0) -> None:
        """The sink groups' committed offsets read once more (`read_offsets`, after="end"); then the source topic
        read back into history/output.jsonl: a `connect_record` per record (its connector, task and sequence
        number), then `connect_read`."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
        self.read_offsets(after="end")
        ctx = self.ctx
        if not int(self.s["harness.source.tasks"]):
            return
        ctx.say(f"reading {self.source_topic} back")
        c = Consumer({"bootstrap.servers": ctx.cluster.bootstrap(), "group.id": f"{ctx.group_id}-reader",
                      "enable.auto.commit": False, "log_level": 3})
        out = HistoryWriter(ctx.run_dir.history_file(OUTPUT_HISTORY), source="harness-output", member=None)
        n, complete = 0, False
        try:
            parts = [TopicPartition(self.source_topic, p, OFFSET_BEGINNING) for p in range(self.cfg.partitions)]
            marks = {p.partition: c.get_watermark_offsets(p, timeout=10) for p in parts}
            high = {p: hi for p, (lo, hi) in marks.items() if hi > lo}  # an empty partition is read at once
            c.assign(parts)
            deadline = ctx.clock() + timeout_s
            while ctx.clock() < deadline:
                for msg in c.consume(1000, timeout=0.5):
                    if msg.error():
                        continue
                    connector, task, seq = msg.value().decode().rsplit(":", 2)
                    out.event("connect_record", connector=connector, task=int(task), seq=int(seq),
                              partition=msg.partition(), offset=msg.offset())
                    n += 1
                pos = {tp.partition: tp.offset for tp in c.position(parts)}
                if all(pos.get(p, -1) >= h for p, h in high.items()):
                    complete = True
                    break
            out.event("connect_read", topic=self.source_topic, records=n, complete=complete)
        finally:
            out.close()
            c.close()
        ctx.say(f"source topic: {n} records" + ("" if complete else f", incomplete after {timeout_s:.0f}s"))
