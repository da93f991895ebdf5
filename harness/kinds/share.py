"""Share-group members (KIP-932): the Python share member on confluent-kafka's ShareConsumer
(harness/members/share_member.py), the Java one on KafkaShareConsumer (`--member java`,
harness/members/java/ShareMember.java), or any program of the member contract that writes the share events.

The group's configs (record lock duration, delivery count limit, record-lock limit, session timings,
`share.auto.offset.reset=earliest` unless the run says `latest`) are set on the run's group before the first member joins
(harness/plan/kinds/share.py) and read back into the `group_settings` event, which the checkers judge by.
"Stable" is `harness.invariants.balance.share`: every live member has been delivered records since it
started (share groups give a partition to several members, and neither client reports an assignment).
"""
from __future__ import annotations

import sys
from pathlib import Path

from harness.invariants import CheckSettings, balance
from harness.invariants.share import ShareCheckSettings
from harness.kinds import share_dlq
from harness.kinds.consumer import ConsumerGroup
from harness.plan.kinds.share import as_group_configs, dlq_topic
from harness.members import MemberSpec
from harness.members import clients

SHARE_MEMBER = Path(__file__).parents[1] / "members" / "share_member.py"


class ShareGroup(ConsumerGroup):
    """The share-group parts of a run; `ctx` is what it is handed of the run (harness/run/context.py: the plan, the
    topics, the group id, the run directory, the cluster and the observer once they exist, say, event). What it
    does as a consumer group does (its topics, no state, the waits' timeout, nothing to read at the end) it
    inherits."""

    name = "share"
    java_builder = "java_share_member_command"  # harness/members/java/ShareMember.java

    # -- before the members
    def prepare(self) -> dict:
        cfg, library = self.cfg, self.library
        if cfg.member == "java":  # harness/members/java/ShareMember.java on the brokers' kafka-clients, or another
            first = cfg.client_version or self.plan.scenario.initial_client
            self.builtin = self.java_command(first)
            version, library = first or self.plan.kafka_version, "kafka-clients"
        else:
            version, self.client_path = clients.client_path(cfg.client_version or self.plan.scenario.initial_client,
                                                            progress=self.ctx.say)
        return {"client_version": version, "client_library": library,
                "client_settings": dict(cfg.client_settings), "share_group_configs": self.group_configs(),
                "share_broker_settings": dict(self.plan.broker_settings)}

    def group_configs(self) -> dict:
        """The share group's configs, set before the first member joins: its settings the brokers' release takes as
        group configs (the others are in the brokers' own config since their start: the plan's `broker_settings`)."""
        return as_group_configs(self.plan.settings, self.plan.kafka_version)

    def check_settings(self) -> dict:
        cfg, ts = self.cfg, self.ctx.topics
        return CheckSettings.from_dict({
            "topic": self.ctx.topic, "partitions": sum(t.partitions for t in ts), "protocol": "classic-eager",
            "session_timeout_s": cfg.session_timeout_s, "quiet_period_s": cfg.quiet_period_s}).to_dict()

    def share_check_settings(self) -> dict:
        """The share checkers' own settings (the group's come from the history's group_settings event)."""
        return ShareCheckSettings.from_dict({"topics": [t.real for t in self.ctx.topics]}).to_dict()

    def pool_config(self) -> dict:
        return {}

    def member_spec(self, slot: int) -> MemberSpec:
        sc, racks, cfg = self.plan.scenario, self.plan.racks, self.cfg
        lock_ms = self.plan.settings["share.record.lock.duration.ms"]
        return MemberSpec(protocol="share", rack=racks[slot % len(racks)] if sc.racks else None,
                          client_path=self.client_path,
                          command=cfg.slot_command(slot) or self.builtin or (sys.executable, str(SHARE_MEMBER)),
                          misbehave=cfg.misbehave if slot == 0 else None, client_config=dict(cfg.client_settings),
                          processing_ms=cfg.processing_ms, env={"HARNESS_SHARE_LOCK_MS": str(lock_ms)},
                          topics=self.real_subscription(cfg.slot_subscription(slot)))

    def create_topics(self) -> dict:
        """The run's topics, and the group's dead-letter topic when it has one (harness/kinds/share_dlq.py)."""
        recorded = super().create_topics()
        self.dlq = dlq_topic(self.plan.settings)
        if self.dlq:
            share_dlq.create(self.ctx, self.dlq, replication=min(3, self.cfg.brokers))
        return recorded

    def finish(self) -> None:
        """After the members stopped: the group's start offsets in the brokers' words (`share_start_offsets`,
        harness/kinds/share_offsets.py) and the dead-letter topic read back (share_dlq_record, share_dlq_read)."""
        self.close()
        if getattr(self.ctx.cluster, "backend", None) != "fake":
            from harness.kinds import share_offsets
            self.ctx.say("reading the group's start offsets (ListShareGroupOffsets)")
            self.ctx.event("share_start_offsets", group_id=self.ctx.group_id,
                           **share_offsets.read(self.ctx, self.plan.kafka_version))
        if getattr(self, "dlq", None):
            share_dlq.read_back(self.ctx, self.dlq)

    def members_started(self, members: list) -> None:
        """The observer learns the delivery count limit (a record released at it is archived, done with), the
        record lock (an acknowledgement whose answer was lost is taken once the lock ran out without it back) and the
        reset policy (under latest the drain does not wait for what the group skipped by it).
        From now until the members stopped, the group's assignment as its coordinator reports it is recorded
        (`share_assignment`, harness/kinds/share_watch.py)."""
        self.ctx.observer.share_limit = int(self.plan.settings["share.delivery.count.limit"])
        self.ctx.observer.share_lock_s = int(self.plan.settings["share.record.lock.duration.ms"]) / 1000
        self.ctx.observer.share_reset = str(self.plan.settings["share.auto.offset.reset"]).strip().lower()
        if getattr(self.ctx.cluster, "backend", None) != "fake":
            from harness.kinds.share_watch import ShareAssignmentWatch
            self.watch = ShareAssignmentWatch(self.ctx.cluster.bootstrap(), self.ctx.group_id, self.ctx.event).start()

    # -- waiting
    def settled(self, observer, live: set[str]) -> tuple[bool, object, str]:
        """Every live member delivered records since its start: `balance.share`, the checker's rule."""
        got = {m: observer.share_deliveries.get(m, 0) for m in live}
        ok = balance.share(got).ok
        return ok, tuple(sorted(m for m, n in got.items() if n)), ", ".join(f"{m}:{n}" for m, n in sorted(got.items()))
