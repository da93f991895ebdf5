"""The nemesis's actions on the group's coordinator and its partition of `__consumer_offsets`.

- `restart_coordinator`: a graceful restart (SIGTERM, controlled shutdown) of the broker that coordinates
  the group; the group moves to another broker and back, rebuilt each time from its offsets partition.
- `wait_offsets_compacted`: wait until the log cleaner has compacted the group's offsets partition on the
  coordinator's broker since the action began (seen in that broker's log, `harness/cluster/broker_log.py`), so a
  coordinator that loads the group afterwards loads it from a compacted log. The run's broker settings
  must let the cleaner run within the run (the coordinator-* scenario files set `log.roll.ms`,
  `log.cleaner.backoff.ms`, `log.cleaner.min.cleanable.ratio`; they are recorded in run.json); without
  them it times out and the run is indeterminate rather than judged as if it had compacted.
"""
from __future__ import annotations

import re
import time

from harness.plan.actions import performs
from harness.cluster.broker_log import BrokerLog
from harness.base.errors import Indeterminate
from harness.base.steps import Step, action_id, fault_of
from harness.kinds.offsets_read import reads_after

#: what the log cleaner says when it has cleaned a segment of a log (the line names the log's directory)
CLEANED = re.compile(r"Swapping in cleaned segment")


class CoordinatorActions:
    """Mixed into `Nemesis`: needs `cluster`, `waits`, `fault`, `coordinator()`, `coordinator_or_skip()`, `say`,
    `group_id`, `kind`, `ctx`."""

    def step_done(self, step: int) -> None:
        """The other mixins' word that step `step` ended (a hold released), then, after a step that acts on brokers,
        the group's committed offsets as its coordinator returns them now (the kind's `read_offsets`, where it has
        one: `commit_durability`)."""
        super().step_done(step)
        read = getattr(self.kind, "read_offsets", None)
        action = self.ctx.plan.schedule[step] if read is not None else None
        if action is not None and reads_after(action.kind):
            read(after=action_id(step), step_kind=str(action.kind))

    @performs(Step.RESTART_COORDINATOR)
    def _do_restart_coordinator(self, down_s: float = 1.0):
        bid, skipped = self.coordinator_or_skip()
        if skipped:
            return skipped
        with self.fault(fault_of(Step.RESTART_COORDINATOR), targets=[bid], brokers=[bid]):
            self.cluster.terminate_broker(bid)
            self.waits.sleep(down_s)
            self.cluster.start_broker(bid)
        return {"broker": bid}

    @performs(Step.WAIT_OFFSETS_COMPACTED)
    def _do_wait_offsets_compacted(self, timeout_s: float = 90.0):
        bid = self.coordinator()
        logs = BrokerLog(self.cluster, group_id=self.group_id)
        pattern = re.compile(rf"__consumer_offsets-{logs.partition}(?!\d)")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for e in logs.events():
                if e["broker"] == bid and pattern.search(e["message"]) and CLEANED.search(e["message"]):
                    return {"broker": bid, "partition": logs.partition, "cleaner": e["message"][:300]}
            self.waits.sleep(1.0)
        raise Indeterminate(f"the log cleaner did not compact __consumer_offsets-{logs.partition} on broker {bid} "
                            f"within {timeout_s}s (do the broker settings let it run? see docs/migration.md)")

    @performs(Step.BROKER_PARTITION)
    def _do_broker_partition(self, broker: int | str = "coordinator", duration_s: float = 10.0):
        """Cut a broker (the group's coordinator by default) off the other brokers and the controller quorum
        while its clients still reach it, then heal (the docker backend; the plan refuses it elsewhere)."""
        coord, skipped = self.coordinator_or_skip() if broker == "coordinator" else (self._coordinator_seen(), None)
        if skipped:
            return skipped
        bid = coord if broker == "coordinator" else int(broker)
        with self.fault(fault_of(Step.BROKER_PARTITION), targets=[bid], brokers=[bid],
                        members=self._cut_off_with([bid], coord)):
            try:
                self.cluster.partition_broker(bid)
                self.waits.sleep(duration_s)
                during = self._coordinator_seen()
            finally:
                self.cluster.heal_partitions()
        return {"broker": bid, "coordinator_during": during, "coordinator_after": self._coordinator_seen()}

    def _cut_off_with(self, brokers: list[int], coordinator: int | None) -> list[str]:
        """The members a partition of these brokers affects: every live member when the group's coordinator is
        among them (or could not be found). Such a member may not hear the broker that takes the group over
        (it loads the group from its offsets partition and expires members that do not heartbeat it) while
        the cut-off one keeps the group in memory; it holds its partitions in its own view until its client
        times the session out and it polls again, or its commit is refused: a possible zombie, as a paused
        member is. Kafka fences its commits (Kafka 4.4.0, confluent-kafka 2.16.1: docs/findings.md)."""
        return self._live_ids() if coordinator is None or coordinator in brokers else []

    def _coordinator_seen(self):
        """The coordinator a fresh admin client is told of now, or None when none answers in time."""
        self.cluster.reset_admin()
        try:
            return self.coordinator(timeout_s=10.0)
        except Exception:
            return None

    @performs(Step.RACK_PARTITION)
    def _do_rack_partition(self, rack: str = "r0", duration_s: float = 10.0):
        """Cut every broker of a rack off the brokers of the other racks and the controller quorum (their
        clients still reach them), then heal (the docker backend)."""
        brokers = self.cluster.brokers_of_rack(rack)
        coord = self._coordinator_seen()
        with self.fault(fault_of(Step.RACK_PARTITION), targets=[rack], brokers=brokers,
                        members=self._cut_off_with(brokers, coord)):
            try:
                for bid in brokers:
                    self.cluster.partition_broker(bid)
                self.waits.sleep(duration_s)
            finally:
                self.cluster.heal_partitions()
        return {"brokers": brokers}
