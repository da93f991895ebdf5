"""The run's topics on the cluster: what changes them while a run goes on (the plan names them, `harness.plan.topics`).
"""
from __future__ import annotations

from dataclasses import replace

from harness.base.errors import BadInput
from harness.plan.topics import Topic


def add_partitions(ts: list[Topic], cluster, topic: str | None, count: int) -> tuple[str, int]:
    """Partitions up to `count` in all for the run's topic of that name (the first by default) in `ts` (the run's
    topics), through `cluster`'s Admin API; `ts` then says the new count (the stable wait and the lag judge with
    it). Returns (the topic's real name, its count before). BadInput for a topic the run does not have or a count
    that adds nothing. Every kind that reads the run's topics adds partitions through this."""
    i = 0 if topic is None else next((k for k, t in enumerate(ts) if topic in (t.name, t.real)), None)
    if i is None:
        raise BadInput(f"add_partitions: no topic {topic!r} in this run ({', '.join(t.name or t.real for t in ts)})")
    t = ts[i]
    if not isinstance(count, int) or count <= t.partitions:
        raise BadInput(f"add_partitions: count is the new total and must exceed {t.partitions} (topic "
                       f"{t.name or t.real}), not {count!r}")
    from confluent_kafka.admin import NewPartitions
    cluster.admin().create_partitions([NewPartitions(t.real, count)])[t.real].result(timeout=60)
    ts[i] = replace(t, partitions=count)
    return t.real, t.partitions
