"""Consumer-group members (the Python member on confluent-kafka, the Java member, or any program of the
member contract, chosen per slot).

"Stable" means every partition has exactly one live owner, owned counts differ by at most one.
"""
from __future__ import annotations

from harness.errors import BadInput
from harness.invariants import CheckSettings
from harness.members import MemberSpec
from harness.members import clients


class ConsumerGroup:
    """The consumer-group parts of a run; `run` is the runner (cluster, topic, group_id, say, event)."""

    name = "consumer"
    library = "confluent-kafka"

    @staticmethod
    def check_config(cfg, sc) -> None:
        if cfg.streams_settings:
            raise BadInput(f"scenario {sc.name} has no Kafka Streams members: Streams settings do not apply")

    @staticmethod
    def settings(cfg, sc) -> dict:
        return {}

    def __init__(self, plan, run) -> None:
        self.plan = plan
        self.run = run
        self.cfg = plan.cfg
        self.client_version: str | None = None
        self.client_path: str | None = None
        self.builtin: tuple[str, ...] | None = None  # the built-in member's command (None: the Python member)

    # -- before the members
    def prepare(self) -> dict:
        """Resolve the client library, create the topic; returns what run.json records about them."""
        cfg, sc = self.cfg, self.plan.scenario
        library = self.library
        if cfg.member == "java":
            from harness.members.java_member import java_member_command
            self.builtin = java_member_command(kafka_version=self.plan.kafka_version, progress=self.run.say)
            self.client_version, library = self.plan.kafka_version, "kafka-clients"
        else:
            self.client_version, self.client_path = clients.client_path(cfg.client_version or sc.initial_client,
                                                                        progress=self.run.say)
            if cfg.member_command is None:  # a Python member runs: its client must take the settings
                clients.check_settings(self.client_path, self.client_version, cfg.protocol,
                                       {**self._protocol_timings(), **dict(cfg.client_settings)})
        return {"client_version": self.client_version, "client_library": library,
                "client_settings": {**cfg.client_config(), **dict(cfg.client_settings)}}

    def _protocol_timings(self) -> dict:
        return {} if self.cfg.protocol == "consumer" else self.cfg.client_config()

    def create_topics(self) -> None:
        cfg = self.cfg
        self.run.cluster.create_topic(self.run.topic, partitions=cfg.partitions, replication=min(3, cfg.brokers))

    def check_settings(self) -> dict:
        """The invariants' settings: the run_start event's `settings`."""
        cfg = self.cfg
        return CheckSettings.from_dict({
            "topic": self.run.topic, "partitions": cfg.partitions, "protocol": cfg.protocol,
            "session_timeout_s": cfg.session_timeout_s, "quiet_period_s": cfg.quiet_period_s,
            **commit_stall(cfg),
            **self.plan.scenario.check_overrides(self.plan.context, list(self.plan.schedule))}).to_dict()

    def pool_config(self) -> dict:
        return self.cfg.client_config()

    def member_spec(self, slot: int) -> MemberSpec:
        sc, racks = self.plan.scenario, self.plan.racks
        return MemberSpec(protocol=self.cfg.protocol,
                          instance_id=f"{self.run.group_id}-s{slot}" if sc.static else None,
                          rack=racks[slot % len(racks)] if sc.racks else None,
                          client_path=self.client_path, command=self.cfg.slot_command(slot) or self.builtin,
                          misbehave=self.cfg.misbehave if slot == 0 else None,
                          client_config=dict(self.cfg.client_settings), commit_mode=self.cfg.commit_mode)

    def members_started(self) -> None:
        """The scenario's first members are up; nothing to do for a consumer group."""

    # -- waiting
    def stable_timeout(self) -> float:
        return self.cfg.stable_timeout_s

    def settled(self, observer, live: set[str]) -> tuple[bool, object, str]:
        """(settled now, a snapshot that changes when the assignment does, a one-line summary)."""
        own = {m: ps for m, ps in observer.ownership().items() if m in live}
        held = sorted(p for ps in own.values() for p in ps)
        counts = [len(ps) for ps in own.values()]
        ok = held == list(range(self.cfg.partitions)) and bool(counts) and max(counts) - min(counts) <= 1
        snapshot = tuple(sorted((m, tuple(sorted(ps))) for m, ps in own.items()))
        return ok, snapshot, ", ".join(f"{m}:{len(ps)}" for m, ps in sorted(own.items()))

    # -- the end
    def finish(self) -> None:
        """After the members stopped; nothing more to read for a consumer group."""


#: librdkafka's (and the Java client's) default auto.commit.interval.ms
AUTO_COMMIT_INTERVAL_MS = 5000


def commit_stall(cfg) -> dict:
    """commit_progress's `commit_stall_s` when members auto-commit less often than every 5 s: twice their
    interval (docs/invariants.md); nothing otherwise (the default, 10 s, is twice 5 s)."""
    if cfg.commit_mode != "auto":
        return {}
    try:
        interval_ms = float(dict(cfg.client_settings).get("auto.commit.interval.ms", AUTO_COMMIT_INTERVAL_MS))
    except ValueError:
        return {}  # the client refuses it before the run starts
    return {"commit_stall_s": 2 * interval_ms / 1000} if interval_ms > AUTO_COMMIT_INTERVAL_MS else {}


def set_group_configs(run, settings: dict) -> None:
    """Group settings as GROUP config resources (KIP-848's group configs), set through the Admin API before
    the first member joins; the brokers' refusal is one line (BadInput)."""
    if not settings:
        return
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    res = ConfigResource(ResourceType.GROUP, run.group_id, incremental_configs=[
        ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET) for k, v in settings.items()])
    try:
        run.cluster.admin().incremental_alter_configs([res])[res].result(timeout=30)
    except Exception as e:
        err = e.args[0] if getattr(e, "args", None) else e
        raise BadInput(f"the brokers refused group setting(s) {', '.join(f'{k}={v}' for k, v in settings.items())}: "
                       f"{getattr(err, 'str', lambda: str(err))()}") from None
    run.event("group_config", group_id=run.group_id, config=dict(settings))
