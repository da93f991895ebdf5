"""Runs a Kafka Streams scenario: Streams instances as members, synthetic state, Streams invariants.

A `StreamsRun` is a `Run` (same run directory, schedule, actions, faults, teardown and verdict table)
whose members are harness/members/streams/StreamsMember.java on the real kafka-streams library
(harness/members/streams_member.py). Before the members start, the harness fills each task's changelog
(`<application.id>-state-changelog`) with `harness.records.per.task` records, the synthetic state a
new instance must restore; the member applies restores at `harness.restore.records.per.second`, so the
restore time per task is records / rate (docs/streams.md). "Stable" means every task active on exactly
one live instance and running, each with its configured standbys and no warmup left, for stable_s.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

from harness import kafka_dist
from harness.errors import BadInput
from harness.history import History, HistoryWriter
from harness.invariants import CheckSettings, integrity
from harness.invariants.core import verdict
from harness.invariants.streams import StreamsCheckSettings, check_streams
from harness.members import MemberPool, MemberSpec
from harness.runner import Run, RunResult
from harness.scenarios import Scenario
from harness.members.streams_member import streams_member_command, version_for_brokers

#: Streams settings of every run unless the scenario or --streams-set says otherwise; tuned for quick tests
STREAMS_DEFAULTS: dict = {
    "num.standby.replicas": 0,
    "max.warmup.replicas": 2,
    "acceptable.recovery.lag": 1000,
    "probing.rebalance.interval.ms": 60000,  # Kafka's minimum
    "processing.guarantee": "at_least_once",
    "num.stream.threads": 1,
    "commit.interval.ms": 1000,
    "harness.records.per.task": 10000,  # synthetic state per task, written to the changelog before the run
    "harness.restore.records.per.second": 1000,  # restore cost: 10 s per task with the defaults
    "harness.rack.aware": False,  # client.tag.rack and rack.aware.assignment.tags=rack
}
GUARANTEES = ("at_least_once", "exactly_once_v2")
#: huge enough that every instance counts as caught up: warmups never happen (the defeat-warmup self-test)
DEFEATING_LAG = 1 << 62
#: the streams group protocol (KIP-1071) is served by brokers from this version
STREAMS_PROTOCOL_SINCE = (4, 1)


def _int(settings: dict, key: str, lo: int) -> int:
    v = settings[key]
    try:
        n = int(v)
    except (TypeError, ValueError):
        raise BadInput(f"Streams setting {key}={v!r} is not a whole number") from None
    if n < lo or float(v) != n:
        raise BadInput(f"Streams setting {key}={v!r} must be a whole number of at least {lo}")
    return n


def streams_settings(cfg, sc: Scenario) -> dict:
    """The Streams settings of a run (defaults, the scenario's, the run's own), checked: BadInput if wrong."""
    settings = {**STREAMS_DEFAULTS, **sc.streams}
    for k, v in cfg.streams_settings:
        if k not in STREAMS_DEFAULTS:
            raise BadInput(f"unknown Streams setting {k!r}; known: {', '.join(STREAMS_DEFAULTS)}")
        settings[k] = v
    most = sc.max_members or sc.members
    standbys = _int(settings, "num.standby.replicas", 0)
    if standbys > most - 1:
        raise BadInput(f"num.standby.replicas={standbys} cannot be placed: scenario {sc.name} runs at most {most} "
                       f"instances, so a task can have at most {most - 1} standby(s)")
    _int(settings, "max.warmup.replicas", 1)
    _int(settings, "acceptable.recovery.lag", 0)
    if _int(settings, "probing.rebalance.interval.ms", 0) < 60000:
        raise BadInput("probing.rebalance.interval.ms must be at least 60000 (Kafka Streams' minimum)")
    _int(settings, "num.stream.threads", 1)
    _int(settings, "commit.interval.ms", 0)
    _int(settings, "harness.records.per.task", 0)
    if settings["processing.guarantee"] not in GUARANTEES:
        raise BadInput(f"processing.guarantee={settings['processing.guarantee']!r}; known: {', '.join(GUARANTEES)}")
    if float(settings["harness.restore.records.per.second"]) < 0:
        raise BadInput("harness.restore.records.per.second must not be negative (0: no restore cost)")
    if cfg.protocol == "streams":
        if sc.static:
            raise BadInput("the streams protocol does not support static membership (group.instance.id)")
    return settings


class StreamsRun(Run):
    """One Streams scenario run; use `execute()`."""

    def __init__(self, cfg, **kw) -> None:
        super().__init__(cfg, **kw)
        self.settings = streams_settings(cfg, self.sc)
        self.tasks = [f"0_{p}" for p in range(cfg.partitions)]
        self.standbys = int(self.settings["num.standby.replicas"])
        self.output_topic = f"{self.topic}-out"

    # -- set-up
    def _setup(self, meta: dict) -> None:
        cfg = self.cfg
        shared = self.shared_cluster and not self.sc.initial_kafka
        dist = kafka_dist.resolve(self.shared_cluster.requested_version if shared else cfg.kafka_version,
                                  progress=self.say)
        if cfg.protocol == "streams" and tuple(int(x) for x in dist.version.split(".")[:2]) < STREAMS_PROTOCOL_SINCE:
            raise BadInput(f"protocol streams needs Kafka {'.'.join(map(str, STREAMS_PROTOCOL_SINCE))} or newer; "
                           f"the cluster runs {dist.version}")
        self._start_cluster()
        streams_version = cfg.client_version or version_for_brokers(dist.version, progress=self.say)
        self.command = cfg.member_command or streams_member_command(streams_version, progress=self.say)
        self._plan()
        s = self.settings
        self.check_settings = CheckSettings.from_dict({
            "topic": self.topic, "partitions": cfg.partitions, "protocol": cfg.protocol,
            "session_timeout_s": cfg.session_timeout_s, "quiet_period_s": cfg.quiet_period_s})
        self.streams_check = StreamsCheckSettings.from_dict({
            "tasks": cfg.partitions, "standby_replicas": self.standbys,
            "max_warmup_replicas": int(s["max.warmup.replicas"]),
            "acceptable_recovery_lag": int(s["acceptable.recovery.lag"]),
            "probing_interval_s": int(s["probing.rebalance.interval.ms"]) / 1000,
            "rack_aware": bool(s["harness.rack.aware"]), "protocol": cfg.protocol,
            "zombie_tolerance_s": 2 * cfg.session_timeout_s,
            "exactly_once": s["processing.guarantee"] == "exactly_once_v2"})
        self.changelog = f"{self.group_id}-state-changelog"
        meta.update({
            "kind": "streams", "scenario": cfg.scenario, "seed": cfg.seed, "protocol": cfg.protocol,
            "topic": self.topic, "group_id": self.group_id, "changelog": self.changelog,
            "kafka_version": self.cluster.version, "client_version": streams_version, "client_library": "kafka-streams",
            "backend": "local", "brokers": cfg.brokers, "broker_settings": self.cluster.settings.properties(),
            "client_settings": self._member_config(0), "streams_settings": s,
            "check_settings": self.check_settings.to_dict(), "streams_check_settings": self.streams_check.to_dict(),
            "cluster_dir": str(self.cluster.work_dir), "schedule": [a.to_dict() for a in self.schedule],
            "replay": f"harness replay {self.dir}",
        })
        self._write_json("run.json", meta)
        self._write_json("schedule.json", [a.to_dict() for a in self.schedule])
        self.event("run_start", run_id=self.run_id, scenario=cfg.scenario, seed=cfg.seed,
                   settings={**self.check_settings.to_dict(), **self.streams_check.to_dict()})
        replication = min(3, cfg.brokers)
        self.cluster.create_topic(self.topic, partitions=cfg.partitions, replication=replication)
        self.cluster.create_topic(self.output_topic, partitions=cfg.partitions, replication=replication)
        self._seed_state(replication)
        if cfg.protocol == "streams" and self.standbys:
            self._set_group_standbys()
        self.pool = MemberPool(bootstrap=self.cluster.bootstrap(), group_id=self.group_id, topic=self.topic,
                               history_dir=self.dir / "history", log_dir=self.dir / "logs", on_event=self.event)
        self._start_load_and_members(f"Streams instances ({cfg.protocol}, kafka-streams {streams_version})")

    def _seed_state(self, replication: int) -> None:
        """The synthetic state: records_per_task records in each partition of the store's changelog."""
        from confluent_kafka import Producer
        n = int(self.settings["harness.records.per.task"])
        self.cluster.create_topic(self.changelog, partitions=self.cfg.partitions, replication=replication,
                                  config={"cleanup.policy": "compact"})
        self.say(f"writing {n} records of state per task into {self.changelog}")
        prod = Producer({"bootstrap.servers": self.cluster.bootstrap(), "linger.ms": 50, "acks": "all",
                         "enable.idempotence": True, "log_level": 3})
        value = b"v" * 100
        for p in range(self.cfg.partitions):
            for i in range(n):
                while True:
                    try:
                        prod.produce(self.changelog, key=f"seed-{p}-{i}".encode(), value=value, partition=p)
                        break
                    except BufferError:
                        prod.poll(0.1)
            prod.poll(0)
        left = prod.flush(60)
        if left:
            raise BadInput(f"could not write the synthetic state: {left} records unacknowledged")
        self.event("state_seeded", changelog=self.changelog, changelog_partitions=self.cfg.partitions,
                   records_per_task=n)

    def _set_group_standbys(self) -> None:
        """Under the streams protocol standbys are a group setting on the brokers (KIP-1071), set before
        the first instance joins."""
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
        res = ConfigResource(ResourceType.GROUP, self.group_id, incremental_configs=[ConfigEntry(
            "streams.num.standby.replicas", str(self.standbys), incremental_operation=AlterConfigOpType.SET)])
        try:
            self.cluster.admin().incremental_alter_configs([res])[res].result(timeout=30)
        except Exception as e:
            raise BadInput(f"the brokers refused streams.num.standby.replicas={self.standbys} for the group: {e}") \
                from None
        self.event("group_config", group_id=self.group_id, config={"streams.num.standby.replicas": self.standbys})

    def _member_config(self, slot: int) -> dict:
        s = self.settings
        conf = {k: v for k, v in s.items() if not k.startswith("harness.") or k == "harness.restore.records.per.second"}
        conf["state.dir"] = str((self.dir / "state" / f"slot-{slot}").resolve())
        conf["harness.output.topic"] = self.output_topic
        conf["harness.start.gate"] = str(self._gate().resolve())
        if self.cfg.misbehave == "defeat-warmup":
            conf["acceptable.recovery.lag"] = DEFEATING_LAG
        if self.cfg.misbehave == "fake-eos":  # judged as exactly_once_v2, runs at_least_once
            conf["processing.guarantee"] = "at_least_once"
        if s["harness.rack.aware"]:
            conf["rack.aware.assignment.tags"] = "rack"
        if self.cfg.protocol == "classic":  # group timings are client settings only under the classic protocol
            conf["session.timeout.ms"] = int(self.cfg.session_timeout_s * 1000)
            conf["heartbeat.interval.ms"] = int(self.cfg.heartbeat_interval_s * 1000)
        else:
            for k in ("num.standby.replicas", "max.warmup.replicas", "acceptable.recovery.lag",
                      "probing.rebalance.interval.ms"):
                conf.pop(k, None)  # broker-side or unsupported under the streams protocol
        return conf

    def _gate(self) -> Path:
        return self.dir / "state" / "start-gate"

    def _members_started(self) -> None:
        """Open the start gate: the first instances, each waiting in front of KafkaStreams.start(), join
        the group together, so the first assignment spreads the tasks evenly; joined a second apart, the
        tasks already restoring on the first instance would stay there (most caught-up) and take a probing
        interval to balance. Instances started later find the gate open."""
        gate = self._gate()
        gate.parent.mkdir(parents=True, exist_ok=True)
        gate.touch()
        self.event("start_gate_opened", members=[m.member_id for m in self.slots])

    def _new_spec(self, racks: list[str]) -> MemberSpec:
        i = len(self.specs)
        return MemberSpec(protocol=self.cfg.protocol,
                          instance_id=f"{self.group_id}-s{i}" if self.sc.static else None,
                          rack=racks[i % len(racks)] if (self.sc.racks or self.settings["harness.rack.aware"]) else None,
                          command=self.command, misbehave=self.cfg.misbehave,
                          client_config=self._member_config(i))

    # -- waiting
    def _stable_timeout(self) -> float:
        """Long enough for the probing rebalances that move warmed-up tasks (one per max.warmup.replicas)."""
        s = self.settings
        rounds = math.ceil(len(self.tasks) / int(s["max.warmup.replicas"])) + 1
        restore = len(self.tasks) * int(s["harness.records.per.task"]) / max(1.0, float(
            s["harness.restore.records.per.second"]) or 1e9)
        return max(self.cfg.stable_timeout_s, min(900.0, int(s["probing.rebalance.interval.ms"]) / 1000 * rounds
                                                  + restore + 30))

    def wait_stable(self, what: str, *, timeout_s: float | None = None) -> bool:
        """Every task active and running on exactly one live instance, its standbys in place, no warmup left,
        active counts within one, unchanged for stable_s. On timeout: `wait_timeout`, and the checkers judge."""
        timeout_s = timeout_s or self._stable_timeout()
        deadline = time.monotonic() + timeout_s
        last, since = None, time.monotonic()
        while time.monotonic() < deadline:
            self.pool.reap()
            live = {m.member_id for m in self.pool.live()}
            view = streams_view(self.dir / "history", live)
            snapshot = tuple(sorted((m, tuple(sorted(v["active"])), tuple(sorted(v["standby"])))
                                    for m, v in view.items()))
            if snapshot != last:
                last, since = snapshot, time.monotonic()
            if self._settled(view, live) and time.monotonic() - since >= self.cfg.stable_s:
                self.say(f"stable ({what}): " + ", ".join(
                    f"{m}:{len(v['active'])}a/{len(v['standby'])}s" for m, v in sorted(view.items())))
                return True
            time.sleep(0.5)
        self.say(f"not stable after {timeout_s:.0f}s ({what}); continuing, the invariants will judge")
        self.event("wait_timeout", what=what, timeout_s=timeout_s)
        return False

    def _settled(self, view: dict, live: set[str]) -> bool:
        if not live or set(view) != live or any(v["state"] != "RUNNING" for v in view.values()):
            return False
        actives = [t for v in view.values() for t in v["active"]]
        if sorted(actives) != sorted(self.tasks):
            return False
        if any(t not in v["running"] for v in view.values() for t in v["active"]):
            return False  # still restoring
        want = min(self.standbys, len(live) - 1)
        standbys = [t for v in view.values() for t in v["standby"]]
        if any(standbys.count(t) != want for t in self.tasks):
            return False  # a warmup still in place, or a standby missing
        counts = [len(v["active"]) for v in view.values()]
        return max(counts) - min(counts) <= 1

    # -- the end
    def _finish(self) -> None:
        super()._finish()
        self._read_output()

    def _read_output(self, *, timeout_s: float = 60.0) -> None:
        """Read the output topic back with read_committed into history/output.jsonl: what the instances
        committed, each record naming the input record it came from ("partition:offset")."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
        self.say(f"reading {self.output_topic} back (read_committed)")
        c = Consumer({"bootstrap.servers": self.cluster.bootstrap(), "group.id": f"{self.group_id}-reader",
                      "isolation.level": "read_committed", "enable.auto.commit": False, "log_level": 3})
        out = HistoryWriter(self.dir / "history" / "output.jsonl", source="harness-output", member=None)
        n, complete = 0, False
        try:
            parts = [TopicPartition(self.output_topic, p, OFFSET_BEGINNING) for p in range(self.cfg.partitions)]
            high = {p.partition: c.get_watermark_offsets(p, timeout=10)[1] for p in parts}
            c.assign(parts)
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                for msg in c.consume(500, timeout=0.5):
                    if msg.error():
                        continue
                    src_p, _, src_o = msg.value().decode().partition(":")
                    out.event("output", topic=self.topic, partition=int(src_p), offset=int(src_o),
                              out_partition=msg.partition(), out_offset=msg.offset())
                    n += 1
                pos = {tp.partition: tp.offset for tp in c.position(parts)}
                if all(pos.get(p, -1) >= h for p, h in high.items()):
                    complete = True  # past every record and transaction marker written before the read
                    break
            out.event("output_read", topic=self.topic, output_topic=self.output_topic, records=n, complete=complete,
                      end_offsets=high)
        finally:
            out.close()
            c.close()
        self.say(f"output: {n} committed records" + ("" if complete else f", incomplete after {timeout_s:.0f}s"))

    def _judge(self, meta: dict) -> RunResult:
        self.event("run_end", status="complete")
        self.hist.close()
        verdicts = judge(History.load(self.dir / "history"), self.streams_check, self.check_settings)
        return self._record_verdicts(meta, verdicts)


def judge(history: History, streams_check: StreamsCheckSettings, check: CheckSettings) -> dict:
    """The verdicts of a Streams run: the Streams invariants, then record integrity of the input topic."""
    verdicts = check_streams(history, streams_check)
    try:
        verdicts["record_integrity"] = integrity.check(history, check)
    except Exception as e:  # a checker that fails decides nothing
        verdicts["record_integrity"] = verdict("record_integrity", "unknown", f"checker raised {type(e).__name__}: {e}")
    return verdicts


def streams_view(history_dir: Path, live: set[str]) -> dict[str, dict]:
    """Per live instance: its latest tasks snapshot (active, standby, state) and the tasks it runs now."""
    view: dict[str, dict] = {}
    for e in History.load(history_dir):
        m = e.get("member")
        if m not in live or e.get("source") != "member":
            continue
        v = view.setdefault(m, {"active": {}, "standby": {}, "state": "CREATED", "running": set()})
        t = e["type"]
        if t == "tasks":
            v["active"], v["standby"] = e["active"], e["standby"]
        elif t == "stream_state":
            v["state"] = e["to"]
        elif t == "task_active":
            v["running"].add(e["task"])
        elif t == "task_active_end":
            v["running"].discard(e["task"])
    return {m: v for m, v in view.items() if m in live}
