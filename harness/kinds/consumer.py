"""Consumer-group members (the Python member on confluent-kafka, the Java member, or any program of the
member contract, chosen per slot).

"Stable" is the checker's own rule (`harness.invariants.balance.consumer`): every partition of every topic a
live member subscribes to has exactly one live owner, each holds only partitions of topics it subscribes
to, and no member holds two or more partitions more than a member that could take one of them (with one
subscription: owned counts differ by at most one).
"""
from __future__ import annotations

import time

from harness.base.errors import BadInput, SetupError
from harness.base.versions import GROUP_CONFIGS_SINCE, major_minor
from harness.base.vocabulary import ASSIGNOR_MISBEHAVIOURS
from harness.invariants import CheckSettings, balance
from harness.invariants.topics import subscribed_topics
from harness.members import MemberSpec
from harness.members import clients
from harness.plan.kinds import java_clients
from harness.plan.kinds.settings import client_settings
from harness.cluster.topics import add_partitions as add_topic_partitions
from harness.plan.topics import declared, real_subscription
from harness.base.steps import GROUP_CONFIG_EVENT, Step


def check_client_settings(plan, progress) -> None:
    """When a Python member runs, its confluent-kafka (installed now if the run names another release) must take the
    members' client settings, and those a bounce or a settings roll brings in later: BadInput in librdkafka's own
    words before the run begins (harness/run/resolve.py). The settings are the one merge `prepare` records."""
    cfg, sc = plan.cfg, plan.scenario
    if sc.kind != "consumer" or cfg.member != "python" or cfg.member_command is not None:
        return
    version, path = clients.client_path(cfg.client_version or sc.initial_client, progress=progress)
    given = {k: clients.setting_text(v) for k, v in cfg.client_settings}
    rolled = [{k: clients.setting_text(v) for k, v in (a.params.get("client_settings") or {}).items()}
              for a in plan.schedule if a.kind in (Step.BOUNCE, Step.SETTINGS_ROLL)]
    for extra in [{}] + [r for r in rolled if r]:
        clients.check_settings(path, version, cfg.protocol,
                               client_settings(cfg.protocol, cfg.client_config(), {**given, **extra}, version),
                               commit_mode=cfg.commit_mode)


class ConsumerGroup:
    """The consumer-group parts of a run; `ctx` is what it is handed of the run (harness/run/context.py: the plan,
    the topics, the group id, the cluster once it is up, say, event)."""

    name = "consumer"
    library = "confluent-kafka"
    java_builder = "java_member_command"  # the harness.members.java_member function that builds the Java member

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.plan = ctx.plan
        self.cfg = ctx.plan.cfg
        self.client_version: str | None = None
        self.client_path: str | None = None
        self.builtin: tuple[str, ...] | None = None  # the built-in member's command (None: the Python member)
        self.java_commands: set[tuple[str, ...]] = set()  # the built-in Java member's commands, one per kafka-clients

    # -- before the members
    def prepare(self) -> dict:
        """Resolve the client library; returns what run.json records about it: the client settings the members start
        with, merged once (`harness.plan.kinds.settings.client_settings`) for the check (`check_client_settings`,
        before the run began), the record and the pool."""
        cfg, sc = self.cfg, self.plan.scenario
        library, given = self.library, {k: clients.setting_text(v) for k, v in cfg.client_settings}
        if cfg.member == "java":  # on the brokers' kafka-clients, or the release --client-version names
            first = cfg.client_version or sc.initial_client
            self.builtin = self.java_command(first)
            self.client_version, library = first or self.plan.kafka_version, "kafka-clients"
        else:  # the client install `check_client_settings` made (or found) before the run began
            self.client_version, self.client_path = clients.client_path(cfg.client_version or sc.initial_client,
                                                                        progress=self.ctx.say)
        return {"client_version": self.client_version, "client_library": library,
                "client_settings": client_settings(cfg.protocol, cfg.client_config(), given,
                                                   None if cfg.member == "java" else self.client_version)}

    def create_topics(self) -> dict:
        """The run's topics on the cluster; returns what run.json records about them (nothing more here)."""
        cluster, r = self.ctx.cluster, self.cfg.replication or min(3, self.cfg.brokers)
        # fewer replicas than the brokers' min ISR would refuse every produce: the topic's own min ISR is then r
        isr = cluster.settings.min_insync_replicas
        config = {"min.insync.replicas": str(r)} if r < isr else None
        for t in self.ctx.topics:
            cluster.create_topic(t.real, partitions=t.partitions, replication=r, config=config)
        return {}

    def check_settings(self) -> dict:
        """The invariants' settings: the run_start event's `settings`."""
        cfg, ts = self.cfg, self.ctx.topics
        # every named topic, those a `create_topic` step makes later too (the checkers count their partitions from it)
        named = {"topics": [[t.real, t.partitions] for t in declared(self.ctx.run_id, cfg.topics)]} if cfg.topics else {}
        return CheckSettings.from_dict({
            **named, "topic": self.ctx.topic, "partitions": sum(t.partitions for t in ts), "protocol": cfg.protocol,
            "session_timeout_s": cfg.session_timeout_s, "heartbeat_interval_s": cfg.heartbeat_interval_s,
            "max_poll_interval_s": cfg.max_poll_interval_s, "quiet_period_s": cfg.quiet_period_s,
            **self.plan.scenario.check_overrides(self.plan.context, list(self.plan.schedule))}).to_dict()

    def pool_config(self) -> dict:
        return self.cfg.client_config()

    def group_configs(self) -> dict:
        """The group configs set before the first member joins: the run's own (`--group-set`)."""
        return dict(self.cfg.group_settings)

    def member_spec(self, slot: int) -> MemberSpec:
        sc, racks = self.plan.scenario, self.plan.racks
        return MemberSpec(protocol=self.cfg.protocol,
                          instance_id=f"{self.ctx.group_id}-s{slot}" if sc.static else None,
                          rack=racks[slot % len(racks)] if sc.racks else None,
                          client_path=self.client_path, command=self.cfg.slot_command(slot) or self.builtin,
                          misbehave=self.cfg.misbehave if slot == 0 or self.cfg.misbehave in ASSIGNOR_MISBEHAVIOURS
                          else None,
                          client_config=dict(self.cfg.client_settings), commit_mode=self.cfg.commit_mode,
                          processing_ms=self.cfg.processing_ms, revoke_delay_ms=self.cfg.revoke_delay_ms,
                          topics=self.real_subscription(self.cfg.slot_subscription(slot)))

    def java_command(self, client_version: str | None) -> tuple[str, ...]:
        """The built-in Java member's command on kafka-clients `client_version` (None: the brokers' own), remembered
        as the built-in's so that a bounce onto another version knows the slot runs it."""
        from harness.members import java_member
        cmd = getattr(java_member, self.java_builder)(kafka_version=self.plan.kafka_version,
                                                      client_version=client_version, progress=self.ctx.say)
        self.java_commands.add(cmd)
        return cmd

    def with_version(self, spec: MemberSpec, version: str) -> MemberSpec:
        """The slot's spec on another client release (a bounce's `client_version`; `default`: the built-in member's
        own): the Java member rebuilt on that kafka-clients, the Python member on that confluent-kafka install; a
        slot that runs a program of its own keeps it."""
        from dataclasses import replace
        if spec.command is not None and spec.command in self.java_commands:
            return replace(spec, command=self.java_command(None if version == java_clients.DEFAULT else version))
        if spec.command is not None:
            return spec
        _, path = clients.client_path(version, progress=self.ctx.say)
        return replace(spec, client_path=path)

    def add_partitions(self, topic: str | None, count: int) -> tuple[str, int]:
        """Partitions up to `count` in all for the run's topic of that name: `harness.cluster.topics.add_partitions`."""
        return add_topic_partitions(self.ctx.topics, self.ctx.cluster, topic, count)

    def input_topics(self) -> list[tuple[str, int]]:
        """The topics the group reads, as (name, partitions): the run's topics (its lag is over them)."""
        return [(t.real, t.partitions) for t in self.ctx.topics]

    def real_subscription(self, entries: tuple[str, ...]) -> tuple[str, ...]:
        """A subscription's entries (the run's topic names, ^regexes) as the member's client says them."""
        return real_subscription(self.ctx.run_id, self.ctx.topics, entries)

    def wipe_state(self, slot: int) -> dict:
        """A consumer member keeps no local state: nothing to wipe."""
        return {}

    def members_started(self, members: list) -> None:
        """The scenario's first members are up (`members`, as the pool started them): from now until they stopped,
        the group's assignment as its coordinator reports it is recorded (`group_assignment`,
        harness/kinds/group_watch.py), on real brokers (the fake backend has no coordinator to ask)."""
        if getattr(self.ctx.cluster, "backend", None) != "fake":
            from harness.kinds.group_watch import GroupAssignmentWatch
            self.watch = GroupAssignmentWatch(self.ctx.cluster.bootstrap(), self.ctx.group_id, self.ctx.event).start()

    # -- waiting
    def stable_timeout(self) -> float:
        return self.cfg.stable_timeout_s

    def settled(self, observer, live: set[str]) -> tuple[bool, object, str]:
        """(settled now, a snapshot that changes when the assignment does, a one-line summary): the group's
        assignment among the live members complete and balanced by `balance.consumer`, the checker's rule."""
        owned, names = observer.ownership(), [t.real for t in self.ctx.topics]
        own = {m: owned.get(m, set()) for m in live}
        subs = {m: subscribed_topics(observer.subscriptions.get(m), names) for m in own}
        ok = balance.consumer(own, subs, {t.real: t.partitions for t in self.ctx.topics}).ok
        snapshot = tuple(sorted((m, tuple(sorted(ps))) for m, ps in own.items()))
        return ok, snapshot, ", ".join(f"{m}:{len(ps)}" for m, ps in sorted(own.items()))

    def read_offsets(self, *, after: str, step_kind: str | None = None) -> None:
        """The group's committed offsets as its coordinator returns them now, as an `offsets_read` event
        (harness/kinds/offsets_read.py; `commit_durability`): consumer groups on real brokers."""
        if self.name != "consumer" or getattr(self.ctx.cluster, "backend", None) == "fake":
            return
        if after == "end":
            self.ctx.say("reading the group's committed offsets (ListConsumerGroupOffsets)")
        if getattr(self, "offsets", None) is None:
            from harness.kinds.offsets_read import OffsetsReader
            self.offsets = OffsetsReader(self.ctx.cluster.bootstrap(), self.ctx.group_id, self.ctx.event)
        self.offsets.read(after=after, step_kind=step_kind)

    # -- the end
    def finish(self) -> None:
        """After the members stopped: the coordinator's assignment is no longer recorded; the group's committed
        offsets are read once more first (`read_offsets`, after="end")."""
        self.read_offsets(after="end")
        self.close()

    def close(self) -> None:
        """The run is over, however it ended (the runner's teardown, before its history closes), or its members
        stopped: stop recording the group's assignment, and end the offsets reader's admin process."""
        watch, self.watch = getattr(self, "watch", None), None
        if watch is not None:
            watch.stop()
        reader, self.offsets = getattr(self, "offsets", None), None
        if reader is not None:
            reader.close()




def set_group_configs(ctx, settings: dict) -> None:
    """Group settings as GROUP config resources (KIP-848's group configs), set through the Admin API before
    the first member joins; the brokers' refusal is one line (BadInput)."""
    if not settings:
        return
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    res = ConfigResource(ResourceType.GROUP, ctx.group_id, incremental_configs=[
        ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET) for k, v in settings.items()])
    try:
        ctx.cluster.admin().incremental_alter_configs([res])[res].result(timeout=30)
    except Exception as e:
        err = e.args[0] if getattr(e, "args", None) else e
        raise BadInput(f"the brokers refused group setting(s) {', '.join(f'{k}={v}' for k, v in settings.items())}: "
                       f"{getattr(err, 'str', lambda: str(err))()}") from None
    ctx.event(GROUP_CONFIG_EVENT, group_id=ctx.group_id, config=dict(settings))
    wait_group_configs(ctx, settings)


#: how long the brokers have to show group configs just set (KRaft hands them to the brokers after the call returns)
GROUP_CONFIG_WAIT_S = 15.0


def wait_group_configs(ctx, settings: dict, *, timeout_s: float = GROUP_CONFIG_WAIT_S) -> None:
    """Until DescribeConfigs of the run's group shows `settings` three reads in a row (the Admin client asks any
    broker): the controller has them when IncrementalAlterConfigs returns, the brokers a moment later (a member
    joining, or the group_settings event, before then would see the old values). SetupError when they do not
    within `timeout_s`."""
    from confluent_kafka.admin import ConfigResource, ResourceType
    want = {k: str(v) for k, v in settings.items()}
    deadline, seen, agreeing = ctx.clock() + timeout_s, {}, 0
    while True:
        try:
            fs = ctx.cluster.admin().describe_configs([ConfigResource(ResourceType.GROUP, ctx.group_id)],
                                                      request_timeout=5)
            seen = {k: c.value for f in fs.values() for k, c in f.result(timeout=10).items() if k in want}
        except Exception:  # noqa: BLE001 - asked again until the deadline
            seen = {}
        agreeing = agreeing + 1 if seen == want else 0
        if agreeing >= 3:
            return
        if ctx.clock() > deadline:
            raise SetupError(f"the brokers did not show the group settings {want} within {timeout_s:g}s "
                             f"(they show {seen})")
        time.sleep(0.2)


#: the brokers' group settings the checkers judge with (harness/invariants/settings.py), where the release has them
BROKER_GROUP_KEYS = ("group.consumer.session.timeout.ms", "group.consumer.heartbeat.interval.ms",
                     "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms",
                     "group.streams.session.timeout.ms", "group.streams.heartbeat.interval.ms",
                     "group.streams.num.standby.replicas",
                     "group.share.session.timeout.ms", "group.share.heartbeat.interval.ms",
                     "group.min.session.timeout.ms", "group.max.session.timeout.ms",
                     "group.initial.rebalance.delay.ms", "group.consumer.migration.policy", "group.consumer.assignors",
                     "group.share.record.lock.duration.ms", "group.share.delivery.count.limit",
                     "group.share.partition.max.record.locks")


def record_group_settings(ctx) -> dict:
    """The group-side settings as the brokers report them (DescribeConfigs of every broker, and of the run's group
    on Kafka 4.0+), recorded as a `group_settings` event: what the consumer and streams protocols' session and
    heartbeat timings are. What could not be read is said in `error` and, per resource, in `unread` ("group",
    "broker <id>" -> why), never guessed: the checkers that need a value from it are then unknown."""
    from confluent_kafka.admin import ConfigResource, ResourceType
    admin, out, errors = ctx.cluster.admin(), {"broker": {}, "brokers": {}, "group": {}}, []
    unread: dict[str, str] = {}
    res = [ConfigResource(ResourceType.BROKER, str(b)) for b in ctx.cluster.broker_ids()]
    if major_minor(ctx.cluster.version) >= GROUP_CONFIGS_SINCE:
        res.append(ConfigResource(ResourceType.GROUP, ctx.group_id))

    def scope(r) -> str:
        return "group" if r.restype == ResourceType.GROUP else f"broker {r.name}"

    futures = {}
    for r in res:  # one resource a call: the Admin client takes one BROKER resource per DescribeConfigs
        try:
            futures.update(admin.describe_configs([r], request_timeout=15))
        except Exception as e:  # noqa: BLE001 - recorded: the checkers that need it are then unknown
            errors.append(f"DescribeConfigs {r.name}: {e}")
            unread[scope(r)] = f"DescribeConfigs: {e}"
    for r, f in futures.items():
        try:
            entries = f.result(timeout=20)
        except Exception as e:  # noqa: BLE001
            errors.append(f"{r.restype_name if hasattr(r, 'restype_name') else r} {r.name}: {e}")
            unread[scope(r)] = f"DescribeConfigs: {e}"
            continue
        if r.restype == ResourceType.GROUP:
            out["group"] = {k: c.value for k, c in entries.items()}
        else:
            vals = {k: entries[k].value for k in BROKER_GROUP_KEYS if k in entries}
            out["brokers"][r.name] = vals
            out["broker"] = out["broker"] or vals
    ctx.event("group_settings", group_id=ctx.group_id, via="DescribeConfigs", **out,
              **({"error": "; ".join(errors), "unread": unread} if errors else {}))
    return out
