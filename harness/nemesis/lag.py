"""A group's lag, and the autoscaler's decision rule on it (the `autoscale` action, harness/nemesis/group.py).

The lag of a group is the sum, over the partitions of its input topics, of the high watermark minus the
group's committed offset; a partition the group never committed counts from 0 (earliest, as members start
with `auto.offset.reset=earliest` on topics the run created). `group_lag` reads both through the Admin API;
`lag_of` and `Autoscaler` are pure, so the arithmetic and the rule are tested on hand-made numbers.

The rule, sampled every interval (docs/scenarios.md, `autoscale`), as a horizontal autoscaler on a lag
metric with a stabilisation window would:

- lag > scale_out_lag, fewer than max_members and no change within cooldown_s: scale out one member;
- lag < scale_in_lag continuously for cooldown_s, more than min_members and no change within cooldown_s:
  scale in one member (the newest);
- otherwise nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.base.errors import Indeterminate


def lag_of(high: dict[tuple[str, int], int], committed: dict[tuple[str, int], int | None]) -> int:
    """The group's lag: over the partitions of `high` (topic, partition) -> high watermark, the watermark minus
    the committed offset (None or below 0: no commit, counted from 0); never negative per partition."""
    total = 0
    for tp, hw in high.items():
        c = committed.get(tp)
        total += max(0, hw - (c if c is not None and c >= 0 else 0))
    return total


def group_lag(admin, group_id: str, topics: list[tuple[str, int]], *, timeout_s: float = 10.0) -> int:
    """The group's lag over these (topic, partitions), read through the Admin API (committed offsets, then the
    latest offsets); Indeterminate when the brokers do not answer."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import OffsetSpec
    tps = [TopicPartition(t, p) for t, n in topics for p in range(n)]
    try:
        fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group_id, tps)],
                                                request_timeout=timeout_s)[group_id]
        committed = {(tp.topic, tp.partition): tp.offset for tp in fut.result(timeout=timeout_s).topic_partitions
                     if tp.error is None}
        latest = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}, request_timeout=timeout_s)
        high = {(tp.topic, tp.partition): f.result(timeout=timeout_s).offset for tp, f in latest.items()}
    except Exception as e:
        raise Indeterminate(f"could not read the lag of {group_id}: {e}") from None
    return lag_of(high, committed)


@dataclass(frozen=True)
class Policy:
    """The autoscaler's thresholds and bounds (the `autoscale` action's parameters)."""

    scale_out_lag: int
    scale_in_lag: int
    min_members: int = 1
    max_members: int = 6
    cooldown_s: float = 10.0


class Autoscaler:
    """The decision rule (the module docstring) as a state machine over samples (t, lag, members)."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.last_change: float | None = None  # when it last scaled
        self.low_since: float | None = None  # since when the lag has been below scale_in_lag, unbroken

    def decide(self, t: float, lag: int, members: int) -> str | None:
        """'out', 'in' or None for this sample; a decision counts as a change from t on."""
        p = self.policy
        self.low_since = (self.low_since if self.low_since is not None else t) if lag < p.scale_in_lag else None
        calm = self.last_change is None or t - self.last_change >= p.cooldown_s
        if lag > p.scale_out_lag and members < p.max_members and calm:
            self.last_change = t
            return "out"
        if (self.low_since is not None and t - self.low_since >= p.cooldown_s and members > p.min_members
                and calm):
            self.last_change = t
            return "in"
        return None
