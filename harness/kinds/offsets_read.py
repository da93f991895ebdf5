"""The group's committed offsets as its coordinator returns them, read by the harness (`offsets_read` events), for
`commit_durability` (harness/invariants/durability.py; docs/invariants.md).

A consumer-group, Kafka Streams or Connect run on real brokers (`GroupsReader`: the run's group; a Streams run's
is its application id; a Connect run's are its sink connectors' groups, `connect-<name>`, the groups through which
its sink tasks commit, never the workers' own, which commits nothing) reads them after each step of its schedule that
acts on brokers (the checker's
`reads_after`: a coordinator killed, restarted or cut off, a broker bounced, a rack down, leaders moved, the offsets
partition compacted), once the step ended, and once after the members' final stop. A read is the Admin client's
DescribeConsumerGroups (which broker coordinates the group now) then ListConsumerGroupOffsets (OffsetFetch of every
partition the group committed), in the group watch's admin process (harness/kinds/group_watch_proc.py: librdkafka can
abort the process that calls it), asked again every RETRY_S until an answer comes or READ_WITHIN_S passed (a
coordinator just moved may answer COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR for a while). The event says:

- `group_id`, `after` (the step's action id, `a1`, ..., or `end`), `step_kind` (the step's action, null at the end);
- `asked_mono`: when the request that was answered was sent (a commit acknowledged before it must show);
- `coordinator`: the broker DescribeConsumerGroups named just before (null when it could not say; a Streams group
  of the streams protocol is named too: librdkafka finds its coordinator before it asks);
- `offsets`: `[topic, partition, offset]` per partition the group has committed (null when no answer came);
  `partition_errors`: `[topic, partition, error]` per partition the answer refused;
- `tries`, `error` (null, or the last refusal when no answer came within READ_WITHIN_S).
"""
from __future__ import annotations

import time

from harness.invariants.durability import EVENT, reads_after

__all__ = ["GroupsReader", "OffsetsReader", "committed_offsets", "read", "reads_after"]

#: how long a read keeps asking before it records the error; how long between two asks
READ_WITHIN_S, RETRY_S = 30.0, 1.0


def committed_offsets(admin, group_id: str, *, timeout_s: float) -> dict:
    """`coordinator`, `offsets` and `partition_errors` of the group as its coordinator answers now (the client's
    exception when ListConsumerGroupOffsets fails)."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    try:
        g = admin.describe_consumer_groups([group_id], request_timeout=timeout_s)[group_id]
        coordinator = getattr(g.result(timeout=timeout_s * 2).coordinator, "id", None)
    except Exception:  # noqa: BLE001 - the offsets are still asked for; the event then names no coordinator
        coordinator = None
    got = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group_id)],
                                            request_timeout=timeout_s)[group_id].result(timeout=timeout_s * 2)
    offsets, errors = [], []
    for tp in got.topic_partitions or ():
        if tp.error is not None:
            errors.append([tp.topic, int(tp.partition), str(tp.error)])
        elif tp.offset >= 0:
            offsets.append([tp.topic, int(tp.partition), int(tp.offset)])
    return {"coordinator": coordinator, "offsets": sorted(offsets), "partition_errors": sorted(errors)}


def read(ask, event, group_id: str, *, after: str, step_kind: str | None = None, sleep=time.sleep,
         clock=time.monotonic, within_s: float = READ_WITHIN_S) -> dict:
    """Ask (`ask()`: `committed_offsets`' answer, or an exception) until an answer or `within_s`; write the
    `offsets_read` event through `event(type, **fields)` and return its fields."""
    start, tries, error = clock(), 0, None
    while True:
        asked, tries = clock(), tries + 1
        try:
            got = ask()
            fields = {"asked_mono": asked, "coordinator": got.get("coordinator"), "offsets": got.get("offsets"),
                      "partition_errors": got.get("partition_errors") or [], "error": None}
            break
        except Exception as e:  # noqa: BLE001 - the client's words, asked again until the time is up
            error = str(e)[:500] or type(e).__name__
        if clock() - start + RETRY_S > within_s:
            fields = {"asked_mono": asked, "coordinator": None, "offsets": None, "partition_errors": [],
                      "error": error}
            break
        sleep(RETRY_S)
    fields = {"group_id": group_id, "after": after, "step_kind": step_kind, **fields, "tries": tries}
    event(EVENT, **fields)
    return fields


class OffsetsReader:
    """The reads of one run's group: `read(after=..., step_kind=...)`, each on the group watch's admin process, made
    at the first read and ended by `close()`."""

    def __init__(self, bootstrap: str, group_id: str, event) -> None:
        from harness.kinds.group_watch import asker
        self.ask = asker(bootstrap, group_id, request="offsets", api="ListConsumerGroupOffsets")
        self.group_id, self.event = group_id, event

    def read(self, *, after: str, step_kind: str | None = None) -> dict:
        """One read, recorded (module docstring)."""
        return read(self._ask_afresh_after_a_failure, self.event, self.group_id, after=after, step_kind=step_kind)

    def _ask_afresh_after_a_failure(self) -> dict:
        """One ask; after a failure the admin process is ended, so the next try is a new client's: in the matrix
        (coordinator-restart-compacted, Kafka 4.4.0) every try of a read after a restarted or killed coordinator timed
        out for its 30 s, the end's read too, on the one client that had asked before the move."""
        try:
            return self.ask()
        except Exception:
            self.ask.close()
            raise

    def close(self) -> None:
        self.ask.close()


class GroupsReader:
    """The reads of a run's groups (`groups()`: their ids now), one `OffsetsReader` each, made at its first read, on
    real brokers only (the fake backend has no coordinator to ask); `close()` ends them."""

    def __init__(self, ctx, groups) -> None:
        self.ctx, self.groups, self.readers = ctx, groups, {}

    def read(self, *, after: str, step_kind: str | None = None) -> None:
        """One read of each group, recorded (module docstring)."""
        if getattr(self.ctx.cluster, "backend", None) == "fake":
            return
        for g in self.groups():
            if after == "end":
                self.ctx.say(f"reading group {g}'s committed offsets (ListConsumerGroupOffsets)")
            if g not in self.readers:
                self.readers[g] = OffsetsReader(self.ctx.cluster.bootstrap(), g, self.ctx.event)
            self.readers[g].read(after=after, step_kind=step_kind)

    def close(self) -> None:
        readers, self.readers = self.readers, {}
        for r in readers.values():
            r.close()
