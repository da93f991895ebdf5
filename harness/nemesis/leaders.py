"""The nemesis's actions on partition leaders (a share group's share-partition leaders, KIP-932).

- `move_leaders`: every partition of the run's first topic that a broker leads moves its leadership to another
  in-sync replica, no broker stopping (harness/cluster/leadership.py: the replica list turned, then a
  preferred-leader election). The share-partition leader's state moves with it: the new leader loads it from
  `__share_group_state`.
- `restart_partition_leader`: a graceful restart of the broker that leads one partition. With replicas on other
  brokers the leadership moves away (and the share-partition with it); with `[workload] replication = 1` the
  partition goes offline and comes back on the same broker, which reloads its share-partition state. The result
  says which: the partition's leader before, while the broker was down and after.
"""
from __future__ import annotations

from harness.plan.actions import performs
from harness.base.errors import Indeterminate
from harness.base.steps import Step, fault_of


class LeaderActions:
    """Mixed into `Nemesis`: needs `cluster`, `kind`, `waits`, `fault`."""

    def _first_topic(self) -> str:
        topics = self.kind.input_topics()
        if not topics:
            raise Indeterminate("the run has no topic whose leaders an action could move or restart")
        return topics[0][0]

    def _leader(self, topic: str, partition: int) -> int:
        d = self.cluster.partition_leaders(topic).get(partition)
        if d is None:
            raise Indeterminate(f"topic {topic} has no partition {partition}")
        return d["leader"]

    @performs(Step.MOVE_LEADERS)
    def _do_move_leaders(self, broker: int):
        topic = self._first_topic()
        with self.fault(fault_of(Step.MOVE_LEADERS), targets=[broker], brokers=[broker]):
            moved = self.cluster.move_leadership(topic, broker)
        if not moved:  # said, not silently nothing: the run then judges no leader move
            return {"broker": broker, "topic": topic, "skipped": f"broker {broker} leads no partition of {topic} "
                                                                 "with another replica in sync"}
        return {"broker": broker, "topic": topic, "moved": {str(p): ft for p, ft in sorted(moved.items())}}

    @performs(Step.RESTART_PARTITION_LEADER)
    def _do_restart_partition_leader(self, partition: int = 0, down_s: float = 1.0, same_leader: bool = False):
        topic = self._first_topic()
        before = self._leader(topic, partition)
        if before < 0:
            raise Indeterminate(f"{topic}-{partition} has no leader to restart")
        with self.fault(fault_of(Step.RESTART_PARTITION_LEADER), targets=[before], brokers=[before]):
            self.cluster.terminate_broker(before)
            try:
                self.waits.sleep(down_s)
                now = self.cluster.partition_leaders(topic)
            finally:  # the broker comes back whatever the metadata said
                self.cluster.start_broker(before)
            after = self._wait_leader(topic, partition)
        if same_leader and after != before:  # the scenario restarts a leader with no leadership change: not had
            raise Indeterminate(f"{topic}-{partition} was led by broker {before} before its restart and by {after} "
                                f"after it: the leadership changed (a topic of more than one replica?)")
        # the partitions left without a leader (replication 1): offline from this action's start to its end, which
        # share_served does not count against the members
        return {"broker": before, "topic": topic, "partition": partition, "leader_before": before,
                "leader_while_down": now[partition]["leader"], "leader_after": after,
                "offline": sorted(p for p, d in now.items() if d["leader"] < 0)}

    def _wait_leader(self, topic: str, partition: int, timeout_s: float = 30.0) -> int:
        """The partition's leader once it has one (an offline partition of replication 1 comes back with its
        broker a moment after it registers); -1 after `timeout_s` without one."""
        waited = 0.0
        while (lead := self._leader(topic, partition)) < 0 and waited < timeout_s:
            self.waits.sleep(0.5)
            waited += 0.5
        return lead
