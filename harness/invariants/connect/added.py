"""The sink's records in partitions added while the workers ran (`add_partitions`), counted in `record_integrity`.

`record_integrity` already judges every acknowledged record of the sink's topic, whatever its partition: a record
written to an added partition and never delivered to a sink task is lost, and the verdict is invalid. This adds
what a reader needs to see that the added partitions were judged: the partitions each `add_partitions` action
added (its `action_end`: `topic`, `before`, `count`), `added_partition_records` (records the producer had
acknowledged in them), `added_partition_lost` (of those, never processed: from `record_integrity`'s
`lost_by_partition`), and, when some were lost, which added partitions lost them and when they were added. No
bound of its own: it reads the action's result and the verdict.
"""
from __future__ import annotations

from dataclasses import replace

from harness.record.history import History
from harness.invariants.core import Verdict
from harness.base.steps import Step


def added(history: History, topic: str) -> dict[int, float]:
    """Partition -> when it was added (seconds from the run's `run_start`, or its clock without one), for each
    partition of `topic` an `add_partitions` action added."""
    out: dict[int, float] = {}
    t0 = rs["mono"] if (rs := history.run_start()) else 0.0
    for _, e in history.control():
        if e.get("type") == "action_end" and e.get("kind") == Step.ADD_PARTITIONS and e.get("topic") == topic \
                and isinstance(e.get("count"), int):
            for p in range(int(e.get("before") or 0), e["count"]):
                out.setdefault(p, e["mono"] - t0)
    return out


def with_added_partitions(history: History, topic: str, v: Verdict) -> Verdict:
    """`record_integrity`'s verdict `v` with the added partitions' counts (module docstring); `v` itself when no
    partition was added."""
    new = added(history, topic)
    if not new:
        return v
    ack, code = history.bulk("acked"), history.code(topic)
    n = 0
    if code is not None and len(ack.topic):
        parts = ack.partition[ack.topic == code]
        n = int(sum((parts == p).sum() for p in new))
    by_p = {int(k): c for k, c in (v.measurements.get("lost_by_partition") or {}).items() if str(k).isdigit()}
    lost = {p: c for p, c in by_p.items() if p in new and c}
    m = {**v.measurements, "added_partitions": sorted(new), "added_partition_records": n,
         "added_partition_lost": sum(lost.values())}
    msg = v.message
    if lost:
        msg += "; of them " + ", ".join(f"{c} in partition {p} (added {new[p]:.1f}s into the run by add_partitions)"
                                       for p, c in sorted(lost.items()))
    elif v.status == "valid":
        msg += f"; {n} of them in partitions added while the group ran ({', '.join(map(str, sorted(new)))})"
    return replace(v, message=msg, measurements=m)
