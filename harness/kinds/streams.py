"""Kafka Streams members: harness/members/streams/StreamsMember.java on the real kafka-streams library.

Before the members start, the harness fills each task's changelog (`<application.id>-state-changelog`)
with `harness.records.per.task` records, the synthetic state a new instance must restore; the member
applies restores at `harness.restore.records.per.second`, so the restore time per task is records / rate
(docs/streams.md). "Stable" means every instance RUNNING with its active tasks running, and the assignment
settled by the checkers' own rule (`harness.invariants.balance.streams`): every task active on exactly one
live instance, each with its configured standbys and no warmup left, counts within the checkers' slacks.
At the end the output topic is read back (read_committed).
"""
from __future__ import annotations

import math
import shutil
from dataclasses import replace
from pathlib import Path

from harness.base.errors import BadInput
from harness.record.history import HistoryWriter
from harness.invariants import CheckSettings, balance
from harness.invariants.streams import StreamsCheckSettings
from harness.kinds.consumer import set_group_configs
from harness.plan.kinds.streams import DEFEATING_LAG
from harness.members import MemberSpec
from harness.members.streams_member import streams_member_command, version_for_brokers
from harness.record.rundir import OUTPUT_HISTORY


class StreamsApp:
    """The Streams parts of a run; `ctx` is what it is handed of the run (harness/run/context.py: the plan, the
    topic, the group id, the run directory, the cluster once it is up, say, event)."""

    name = "streams"
    library = "kafka-streams"

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.plan = ctx.plan
        self.cfg = ctx.plan.cfg
        self.s = ctx.plan.settings
        self.tasks = [f"0_{p}" for p in range(self.cfg.partitions)]
        self.standbys = int(self.s["num.standby.replicas"])
        self.output_topic = f"{ctx.topic}-out"
        self.changelog = f"{ctx.group_id}-state-changelog"
        self._standbys_set = False

    # -- before the members
    def prepare(self) -> dict:
        """Resolve kafka-streams and build the member; returns what run.json records about them."""
        cfg = self.cfg
        self.version = cfg.client_version or version_for_brokers(self.plan.kafka_version, progress=self.ctx.say)
        self.command = cfg.member_command or streams_member_command(self.version, progress=self.ctx.say)
        return {"kind": "streams", "client_version": self.version, "client_library": self.library,
                "client_settings": self._member_config(0), "streams_settings": self.s, "changelog": self.changelog,
                "streams_check_settings": self.streams_check_settings()}

    def create_topics(self) -> dict:
        """The input and output topics and the seeded changelog; returns what run.json records (nothing more)."""
        replication = min(3, self.cfg.brokers)
        for t in (self.ctx.topic, self.output_topic):
            self.ctx.cluster.create_topic(t, partitions=self.cfg.partitions, replication=replication)
        self._seed_state(replication)
        if self.cfg.protocol == "streams" and self.standbys:
            self._set_group_standbys()
        return {}

    def check_settings(self) -> dict:
        cfg = self.cfg
        return CheckSettings.from_dict({
            "topic": self.ctx.topic, "partitions": cfg.partitions, "protocol": cfg.protocol,
            "session_timeout_s": cfg.session_timeout_s, "quiet_period_s": cfg.quiet_period_s}).to_dict()

    def streams_check_settings(self) -> dict:
        s, cfg = self.s, self.cfg
        return StreamsCheckSettings.from_dict({
            "tasks": cfg.partitions, "standby_replicas": self.standbys,
            "max_warmup_replicas": int(s["max.warmup.replicas"]),
            "acceptable_recovery_lag": int(s["acceptable.recovery.lag"]),
            "probing_interval_s": int(s["probing.rebalance.interval.ms"]) / 1000,
            "rack_aware": bool(s["harness.rack.aware"]), "protocol": self._judged_protocol(),
            "seeded_keys": int(s["harness.records.per.task"]),
            "zombie_tolerance_s": 2 * cfg.session_timeout_s,
            "exactly_once": s["processing.guarantee"] == "exactly_once_v2"}).to_dict()

    def _judged_protocol(self) -> str:
        """The protocol whose promises the run is judged by: `streams` if any instance runs it (a migration
        moves the group there): its broker-side assignor promises neither warmups nor rack-aware standbys, so
        those rules are measured, not judged, over the whole run."""
        moved = {a.params.get("protocol") for a in self.plan.schedule}
        return "streams" if "streams" in moved | {self.cfg.protocol} else self.cfg.protocol

    def group_configs(self) -> dict:
        """The group configs set before the first member joins: the run's own (`--group-set`)."""
        return dict(self.cfg.group_settings)

    def pool_config(self) -> dict:
        return {}

    def _seed_state(self, replication: int) -> None:
        """The synthetic state: records_per_task records in each partition of the store's changelog."""
        from confluent_kafka import Producer
        n, cluster = int(self.s["harness.records.per.task"]), self.ctx.cluster
        cluster.create_topic(self.changelog, partitions=self.cfg.partitions, replication=replication,
                             config={"cleanup.policy": "compact"})
        self.ctx.say(f"writing {n} records of state per task into {self.changelog}")
        prod = Producer({"bootstrap.servers": cluster.bootstrap(), "linger.ms": 50, "acks": "all",
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
        self.ctx.event("state_seeded", changelog=self.changelog, changelog_partitions=self.cfg.partitions,
                       records_per_task=n)

    def _set_group_standbys(self) -> None:
        """Under the streams protocol standbys are a group setting on the brokers (KIP-1071), set before
        the first instance joins."""
        set_group_configs(self.ctx, {"streams.num.standby.replicas": self.standbys})
        self._standbys_set = True

    def _member_config(self, slot: int, protocol: str | None = None) -> dict:
        s, cfg = self.s, self.cfg
        protocol = protocol or cfg.protocol
        conf = {k: v for k, v in s.items() if not k.startswith("harness.") or k == "harness.restore.records.per.second"}
        conf["state.dir"] = str((self.ctx.run_dir.state_dir / f"slot-{slot}").resolve())
        conf["harness.output.topic"] = self.output_topic
        conf["harness.start.gate"] = str(self._gate().resolve())
        if cfg.processing_ms:
            conf["harness.processing.ms"] = cfg.processing_ms  # simulated work per record, in the processor
        if cfg.misbehave == "defeat-warmup":  # runs with a lag that makes every copy caught up, records the run's
            conf["acceptable.recovery.lag"] = DEFEATING_LAG
            conf["harness.misreport"] = {"acceptable.recovery.lag": s["acceptable.recovery.lag"]}
        if cfg.misbehave == "fake-eos":  # runs at_least_once, records exactly_once_v2
            conf["processing.guarantee"] = "at_least_once"
            conf["harness.misreport"] = {**conf.get("harness.misreport", {}), "processing.guarantee": "exactly_once_v2"}
        if cfg.misbehave == "forget-state" and slot == 0:  # its tasks start on emptied stores
            conf["harness.forget.state"] = True
        if cfg.misbehave == "streams-phantom-commit":  # records, as it closes, a commit it never sent
            conf["harness.phantom.commit"] = True
        if cfg.misbehave == "thread-churn" and slot == 0:  # adds and removes a stream thread every second
            conf["harness.thread.churn"] = True
        if s["harness.rack.aware"]:
            conf["rack.aware.assignment.tags"] = "rack"
        if protocol == "classic":  # group timings are client settings only under the classic protocol
            conf["session.timeout.ms"] = int(cfg.session_timeout_s * 1000)
            conf["heartbeat.interval.ms"] = int(cfg.heartbeat_interval_s * 1000)
        else:
            for k in ("num.standby.replicas", "max.warmup.replicas", "acceptable.recovery.lag",
                      "probing.rebalance.interval.ms"):
                conf.pop(k, None)  # broker-side or unsupported under the streams protocol
        return conf

    def with_protocol(self, spec: MemberSpec, slot: int, protocol: str) -> MemberSpec:
        """The slot's spec on another group protocol (an offline migration, docs/migration.md): the settings
        that protocol takes; moving to `streams` with standbys sets them as a group setting first."""
        if protocol == "streams" and self.standbys and not self._standbys_set:
            self._set_group_standbys()
        return replace(spec, protocol=protocol, client_config=self._member_config(slot, protocol))

    def _gate(self) -> Path:
        return self.ctx.run_dir.state_dir / "start-gate"

    def member_spec(self, slot: int) -> MemberSpec:
        sc, racks = self.plan.scenario, self.plan.racks
        return MemberSpec(protocol=self.cfg.protocol,
                          instance_id=f"{self.ctx.group_id}-s{slot}" if sc.static else None,
                          rack=racks[slot % len(racks)] if (sc.racks or self.s["harness.rack.aware"]) else None,
                          command=self.command, misbehave=self.cfg.misbehave, client_config=self._member_config(slot),
                          processing_ms=self.cfg.processing_ms)

    def input_topics(self) -> list[tuple[str, int]]:
        """The topics the application reads, as (name, partitions): its input topic (its lag is over it)."""
        return [(self.ctx.topic, self.cfg.partitions)]

    def wipe_state(self, slot: int) -> dict:
        """Delete the slot's state directory while its instance is down: it comes back as a fresh pod would
        (a bounce otherwise keeps the directory, as a StatefulSet's volume does)."""
        d = self.ctx.run_dir.state_dir / f"slot-{slot}"
        size = sum(f.stat().st_size for f in d.rglob("*") if f.is_file()) if d.exists() else 0
        shutil.rmtree(d, ignore_errors=True)
        self.ctx.event("state_wiped", slot=slot, path=str(d), bytes=size)
        return {"state_wiped_bytes": size}

    def members_started(self, members: list) -> None:
        """Open the start gate: the first instances, each waiting in front of KafkaStreams.start(), join
        the group together, so the first assignment spreads the tasks evenly; joined a second apart, the
        tasks already restoring on the first instance would stay there (most caught-up) and take a probing
        interval to balance. Instances started later find the gate open. `members`: the first instances, as the pool
        started them."""
        gate = self._gate()
        gate.parent.mkdir(parents=True, exist_ok=True)
        gate.touch()
        self.ctx.event("start_gate_opened", members=[m.member_id for m in members])

    # -- waiting
    def stable_timeout(self) -> float:
        """Long enough for the probing rebalances that move warmed-up tasks (one per max.warmup.replicas)."""
        s = self.s
        rounds = math.ceil(len(self.tasks) / int(s["max.warmup.replicas"])) + 1
        restore = len(self.tasks) * int(s["harness.records.per.task"]) / max(1.0, float(
            s["harness.restore.records.per.second"]) or 1e9)
        return max(self.cfg.stable_timeout_s, min(900.0, int(s["probing.rebalance.interval.ms"]) / 1000 * rounds
                                                  + restore + 30))

    def settled(self, observer, live: set[str]) -> tuple[bool, object, str]:
        """Every live instance RUNNING with its active tasks running (restored), and the assignment settled by
        `balance.streams`, the checkers' rule: every task active once, its standbys in place, no warmup left,
        counts within the slacks the checkers judge with."""
        view = observer.streams_view(live)
        snapshot = tuple(sorted((m, tuple(sorted(v["active"])), tuple(sorted(v["standby"])))
                                for m, v in view.items()))
        summary = ", ".join(f"{m}:{len(v['active'])}a/{len(v['standby'])}s" for m, v in sorted(view.items()))
        return self._settled(view, live), snapshot, summary

    def _settled(self, view: dict, live: set[str]) -> bool:
        if not live or set(view) != live or any(v["state"] != "RUNNING" for v in view.values()):
            return False
        if any(t not in v["running"] for v in view.values() for t in v["active"]):
            return False  # still restoring
        judged = StreamsCheckSettings.from_dict(self.streams_check_settings())
        return balance.streams({m: v["active"] for m, v in view.items()}, {m: v["standby"] for m, v in view.items()},
                               self.tasks, self.standbys, judged.active_balance_slack,
                               judged.stateful_balance_slack).settled

    # -- the end
    def read_offsets(self, *, after: str, step_kind: str | None = None) -> None:
        """The application's group's committed offsets as its coordinator returns them now, as an `offsets_read`
        event (harness/kinds/offsets_read.py; `commit_durability`), on real brokers."""
        if getattr(self, "offsets", None) is None:
            from harness.kinds.offsets_read import GroupsReader
            self.offsets = GroupsReader(self.ctx, lambda: [self.ctx.group_id])
        self.offsets.read(after=after, step_kind=step_kind)

    def close(self) -> None:
        """The run is over, however it ended: the offsets reader's admin process ends (nothing else runs beside
        the members of a Kafka Streams application)."""
        reader, self.offsets = getattr(self, "offsets", None), None
        if reader is not None:
            reader.close()

    def finish(self, *, timeout_s: float = 60.0) -> None:
        """The group's committed offsets read once more (`read_offsets`, after="end"); then the output topic read
        back with read_committed into history/output.jsonl: what the instances committed, each record naming the
        input record it came from ("partition:offset")."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
        self.read_offsets(after="end")
        ctx = self.ctx
        ctx.say(f"reading {self.output_topic} back (read_committed)")
        c = Consumer({"bootstrap.servers": ctx.cluster.bootstrap(), "group.id": f"{ctx.group_id}-reader",
                      "isolation.level": "read_committed", "enable.auto.commit": False, "log_level": 3})
        out = HistoryWriter(ctx.run_dir.history_file(OUTPUT_HISTORY), source="harness-output", member=None)
        n, complete = 0, False
        try:
            parts = [TopicPartition(self.output_topic, p, OFFSET_BEGINNING) for p in range(self.cfg.partitions)]
            high = {p.partition: c.get_watermark_offsets(p, timeout=10)[1] for p in parts}
            c.assign(parts)
            deadline = ctx.clock() + timeout_s
            while ctx.clock() < deadline:
                for msg in c.consume(500, timeout=0.5):
                    if msg.error():
                        continue
                    src_p, _, src_o = msg.value().decode().partition(":")
                    out.event("output", topic=ctx.topic, partition=int(src_p), offset=int(src_o),
                              out_partition=msg.partition(), out_offset=msg.offset())
                    n += 1
                pos = {tp.partition: tp.offset for tp in c.position(parts)}
                if all(pos.get(p, -1) >= h for p, h in high.items()):
                    complete = True  # past every record and transaction marker written before the read
                    break
            out.event("output_read", topic=ctx.topic, output_topic=self.output_topic, records=n, complete=complete,
                      end_offsets=high)
        finally:
            out.close()
            c.close()
        ctx.say(f"output: {n} committed records" + ("" if complete else f", incomplete after {timeout_s:.0f}s"))
