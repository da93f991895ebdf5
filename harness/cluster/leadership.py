"""Partition leadership of a real cluster: read it, and move it off a broker that stays up.

- `partition_leaders(topic)`: each partition's leader, replicas and in-sync replicas, from a metadata
  request (leader -1: none, the partition is offline).
- `move_leadership(topic, broker)`: every partition of the topic that `broker` leads gets its replica list
  turned so that another in-sync replica comes first (a reassignment onto the same replicas: nothing is
  copied), then a preferred-leader election (the Admin API's ElectLeaders) makes that replica the leader.
  No broker stops. The reassignment goes through the release's own tool (`ReassignPartitionsCommand`, run
  on the cluster's Java): confluent-kafka's admin client has no AlterPartitionReassignments.

Mixed into `LocalCluster` (and so the docker backend): needs `admin()`, `bootstrap()`, `_java()`, `version`,
`work_dir`, `on_event`.
"""
from __future__ import annotations

import json
import subprocess
import time

from confluent_kafka import ElectionType, TopicPartition

from harness.base.errors import Indeterminate, SetupError

TOOL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def turned(replicas: list[int], isr: list[int], away_from: int) -> list[int] | None:
    """The replicas with the first in-sync one other than `away_from` moved to the front (the preferred
    leader), the rest in their order; None when no other replica is in sync."""
    to = next((r for r in replicas if r != away_from and r in isr), None)
    return None if to is None else [to] + [r for r in replicas if r != to]


class Leadership:
    """Reading and moving partition leaders (mixed into the cluster backends)."""

    def partition_leaders(self, topic: str, *, timeout_s: float = 10.0) -> dict[int, dict]:
        """Partition -> {"leader", "replicas", "isr"} of the topic, as the metadata says now."""
        md = self.admin().list_topics(topic, timeout=timeout_s)
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            raise Indeterminate(f"no metadata for topic {topic}: {t.error if t else 'not listed'}")
        return {p: {"leader": pm.leader, "replicas": list(pm.replicas), "isr": list(pm.isrs)}
                for p, pm in sorted(t.partitions.items())}

    def move_leadership(self, topic: str, broker: int, *, timeout_s: float = 60.0) -> dict[int, list[int]]:
        """Move the leadership of every partition of `topic` that `broker` leads to another in-sync replica,
        the broker staying up. Returns partition -> [leader before, leader after] of the partitions moved."""
        now = self.partition_leaders(topic)
        plan = {p: turned(d["replicas"], d["isr"], broker) for p, d in now.items() if d["leader"] == broker}
        plan = {p: r for p, r in plan.items() if r is not None}
        if not plan:
            return {}
        self._reassign(topic, plan, timeout_s=timeout_s)
        deadline = time.monotonic() + timeout_s
        parts = [TopicPartition(topic, p) for p in plan]
        while True:
            try:  # ELECTION_NOT_NEEDED per partition when the reassignment already elected the new first replica
                self.admin().elect_leaders(ElectionType.PREFERRED, parts).result(timeout=10)
            except Exception as e:  # noqa: BLE001 - judged by the metadata below
                why = e
            else:
                why = None
            after = self.partition_leaders(topic)
            if all(after[p]["leader"] == plan[p][0] for p in plan):
                moved = {p: [broker, after[p]["leader"]] for p in plan}
                self.on_event("broker_event", broker=broker, what="leaders_moved", version=self.broker_version(broker),
                              topic=topic, moved={str(p): v for p, v in moved.items()})
                return moved
            if time.monotonic() >= deadline:
                raise Indeterminate(f"the leaders of {topic} did not move off broker {broker} within {timeout_s}s "
                                    f"(wanted {plan}, see {after}; last election: {why})")
            time.sleep(0.5)

    def _reassign(self, topic: str, plan: dict[int, list[int]], *, timeout_s: float) -> None:
        """Reassign the partitions onto these replica lists (the same replicas, another order) and wait until the
        metadata shows the new order."""
        doc = {"version": 1, "partitions": [{"topic": topic, "partition": p, "replicas": r} for p, r in plan.items()]}
        path = self.work_dir / f"reassign-{topic}-{int(time.time() * 1000)}.json"
        path.write_text(json.dumps(doc))
        log = path.with_suffix(".log")
        with open(log, "w") as out:
            r = subprocess.run(self._java(self.version, TOOL, "--bootstrap-server", self.bootstrap(), "--execute",
                                          "--reassignment-json-file", str(path)),
                               stdout=out, stderr=subprocess.STDOUT, timeout=120)
        if r.returncode != 0:
            raise SetupError(f"reassigning {topic}'s replicas failed (see {log})")
        deadline = time.monotonic() + timeout_s
        while any(self.partition_leaders(topic)[p]["replicas"] != reps for p, reps in plan.items()):
            if time.monotonic() >= deadline:
                raise Indeterminate(f"the reassignment of {topic} ({plan}) did not show within {timeout_s}s")
            time.sleep(0.5)
