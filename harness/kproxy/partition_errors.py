"""An error in one partition's entry of a broker's real answer: the per-partition `error_response` (issue 47).

An `error_response` rule with a `partition` does not answer in the broker's stead: the request goes on to the
broker, and when the broker's answer comes back the proxy decodes it with kio, puts the rule's error in the entry of
that partition (of the rule's topic, or of every topic the answer has when it names none) and encodes it again. The
answer's top level and every other entry stay as the broker wrote them. That is the answer a client gets when one
partition's leader moved, its epoch is ahead of the client's or its offsets are not there yet, while the rest of the
request went fine: what several client fixes are about.

Where an answer keeps per-partition errors is read from the response schema, not listed by hand: a list of entities
(`topics`, `responses`, OffsetFetch v8+'s `groups[].topics`) whose entities hold a list `partitions` of entities with
an `error_code` and a partition number (`partition_index`, or OffsetForLeaderEpoch's `partition`); a topic entity
names its topic by `name`, `topic` or `topic_id` (Fetch v13+, OffsetFetch v10). `schema_has_partition_errors`
says whether a version's schema has such entries (the plan's check before anything starts).

`ERRORS` is which errors a step may put in a partition's entry, per API: the ones a broker itself answers in that
entry (Kafka's KafkaApis, ReplicaManager and group coordinator; docs/scenarios.md's table is held to it by a test).

A request whose answer holds no entry of the rule's partition (a Fetch to a broker that does not lead it, an
incremental Fetch with nothing new for it, a Metadata request for other topics) is not counted as applied: the rule
waits for an answer that has it. Each rewrite is one `fault_start`/`fault_end` window (`outcome` `answered`) with
the API, member, broker, topic, partition and error; the window is the answer's.
"""
from __future__ import annotations

import dataclasses
import io
import logging
import uuid

from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from harness.kproxy.answers import entity_list, error_code_of, field_types, payload_classes
from harness.kproxy.wire import API_NAMES, response_correlation

_log = logging.getLogger(__name__)

#: per API, the errors a broker puts in one partition's entry of its answer (and so the ones a step may set)
ERRORS: dict[str, tuple[str, ...]] = {
    "OffsetFetch": ("UNKNOWN_TOPIC_OR_PARTITION", "UNSTABLE_OFFSET_COMMIT", "TOPIC_AUTHORIZATION_FAILED",
                    "UNKNOWN_TOPIC_ID"),
    "ListOffsets": ("NOT_LEADER_OR_FOLLOWER", "OFFSET_NOT_AVAILABLE", "LEADER_NOT_AVAILABLE", "FENCED_LEADER_EPOCH",
                    "UNKNOWN_LEADER_EPOCH", "UNKNOWN_TOPIC_OR_PARTITION", "REPLICA_NOT_AVAILABLE",
                    "KAFKA_STORAGE_ERROR", "TOPIC_AUTHORIZATION_FAILED"),
    "OffsetForLeaderEpoch": ("NOT_LEADER_OR_FOLLOWER", "UNKNOWN_LEADER_EPOCH", "FENCED_LEADER_EPOCH",
                             "UNKNOWN_TOPIC_OR_PARTITION", "KAFKA_STORAGE_ERROR", "TOPIC_AUTHORIZATION_FAILED"),
    "Metadata": ("LEADER_NOT_AVAILABLE", "REPLICA_NOT_AVAILABLE", "LISTENER_NOT_FOUND"),
    "Fetch": ("NOT_LEADER_OR_FOLLOWER", "OFFSET_OUT_OF_RANGE", "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH",
              "UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID", "KAFKA_STORAGE_ERROR", "CORRUPT_MESSAGE",
              "REPLICA_NOT_AVAILABLE", "OFFSET_MOVED_TO_TIERED_STORAGE"),
}
#: the APIs a step may put a per-partition error in
APIS = tuple(ERRORS)
_PARTITION = ("partition_index", "partition")
_TOPIC = ("name", "topic", "topic_id")


class PartitionRefused(ValueError):
    """A per-partition error a step cannot set: an API without partition entries, an error no broker puts there."""


def check_rule(api: str, error: str | int, partition: int, topic: str | None) -> None:
    """Refuse (PartitionRefused) a per-partition error that could not be set: the API, the error, the partition."""
    if api not in ERRORS:
        raise PartitionRefused(f"error_response with a partition: {api} is not one of {', '.join(APIS)} (the answers "
                               "a per-partition error is put in)")
    if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
        raise PartitionRefused(f"error_response: partition is a partition number (0 or more), not {partition!r}")
    if topic is not None and (not isinstance(topic, str) or not topic):
        raise PartitionRefused(f"error_response: topic is a topic's name, not {topic!r}")
    name = error_code_of(error).name.upper()
    if name not in ERRORS[api]:
        raise PartitionRefused(f"error_response: {name} is not an error a broker puts in a partition's entry of "
                               f"{api}'s answer; one of {', '.join(ERRORS[api])}")


def schema_has_partition_errors(api_key: int, version: int) -> bool:
    """Whether the response schema of that API and version has per-partition entries with an error code."""
    _, resp = payload_classes(api_key, version)
    return _topic_paths(resp) != []


def _fields(cls) -> dict:
    hints = field_types(cls)
    return {f.name: entity_list(hints[f.name]) for f in dataclasses.fields(cls)}


def _is_partition(cls) -> bool:
    names = _fields(cls)
    return "error_code" in names and any(p in names for p in _PARTITION)


def _topic_paths(cls, path: tuple = ()) -> list[tuple]:
    """The paths (list field names) from `cls` to its topic entities (those with a list of partitions)."""
    out = []
    for name, inner in _fields(cls).items():
        if inner is None:
            continue
        sub = _fields(inner)
        if sub.get("partitions") is not None and _is_partition(sub["partitions"]):
            out.append(path + (name,))
        else:
            out.extend(_topic_paths(inner, path + (name,)))
    return out


@dataclasses.dataclass(frozen=True)
class Target:
    """Where a rule puts its error: the partition, the topic (a name, and its id for answers keyed by id; no name:
    every topic of the answer) and the error."""

    partition: int
    error: ErrorCode
    topic: str | None = None
    topic_id: uuid.UUID | None = None

    def topic_matches(self, entity) -> bool:
        """Whether a topic entity of the answer is the target's topic: by name where the answer names topics, by id
        where it keys them by id only (any topic when the id is not known)."""
        if self.topic is None:
            return True
        name = getattr(entity, "name", None) or getattr(entity, "topic", None)
        if name:
            return name == self.topic
        return self.topic_id is None or getattr(entity, "topic_id", None) == self.topic_id


def _topic_name(entity) -> str:
    for f in _TOPIC:
        v = getattr(entity, f, None)
        if v not in (None, ""):
            return str(v)
    return ""


def rewrite(api_key: int, version: int, payload: bytes, target: Target) -> tuple[bytes, list[str]] | None:
    """The answer's payload with `target.error` in the entries of `target.partition`, and the topics rewritten;
    None when the answer holds no such entry (nothing changed)."""
    _, resp_cls = payload_classes(api_key, version)
    head_cls = resp_cls.__header_schema__
    header, n = entity_reader(head_cls)(payload, 0)
    body, _ = entity_reader(resp_cls)(payload, n)
    hit: list[str] = []
    for path in _topic_paths(resp_cls):
        body = _rewrite_path(body, path, target, hit)
    if not hit:
        return None
    out = io.BytesIO()
    entity_writer(head_cls)(out, header)
    entity_writer(resp_cls)(out, body)
    return out.getvalue(), hit


def _rewrite_path(entity, path: tuple, target: Target, hit: list):
    name, rest = path[0], path[1:]
    items = getattr(entity, name) or ()
    if rest:
        new = tuple(_rewrite_path(item, rest, target, hit) for item in items)
    else:
        new = tuple(_rewrite_topic(t, target, hit) for t in items)
    return dataclasses.replace(entity, **{name: new}) if getattr(entity, name) is not None else entity


def _rewrite_topic(topic, target: Target, hit: list):
    if not target.topic_matches(topic):
        return topic
    parts = []
    for p in topic.partitions or ():
        number = next(getattr(p, f) for f in _PARTITION if hasattr(p, f))
        if int(number) == target.partition:
            p = dataclasses.replace(p, error_code=target.error)
            hit.append(_topic_name(topic))
        parts.append(p)
    return dataclasses.replace(topic, partitions=tuple(parts))


class PartitionFaults:
    """The proxy's per-partition rules in flight: requests sent on whose answers get an error put in them.
    (`KafkaProxy` holds one; its hooks are `forward`, on the request, and `answer`, on the broker's answer.)"""

    def __init__(self, proxy) -> None:
        self.proxy = proxy
        self._pending: dict[tuple[int, int], tuple] = {}  # (connection, correlation id) -> (live rule, head, member)

    def forward(self, live, conn, head, member, payload: bytes) -> None:
        """Send the request on to the broker, its answer to be rewritten when it comes."""
        self._pending[(conn.conn_id, head.correlation_id)] = (live, head, member)
        conn.send_on(payload, head.correlation_id)

    def answer(self, conn, payload: bytes) -> bytes:
        """The broker's answer as the client gets it: rewritten when its request met a per-partition rule."""
        if not self._pending:
            return payload
        item = self._pending.pop((conn.conn_id, response_correlation(payload)), None)
        if item is None:
            return payload
        live, head, member = item
        rule = live.rule
        target = Target(rule.partition, error_code_of(rule.error), rule.topic, rule.topic_id)
        try:
            done = rewrite(head.api_key, head.api_version, payload, target)
        except Exception as e:  # a version kio does not decode: delivered as it is, said so, not counted
            _log.warning("kproxy: rule %s cannot rewrite %s v%s's answer (%s); delivered unchanged",
                         live.rule_id, API_NAMES.get(head.api_key), head.api_version, e)
            done = None
        live.settle(hit=done is not None)
        if done is None:  # the answer had no entry of that partition: the rule waits for one that has
            return payload
        new, topics = done
        fid = self.proxy._start(live, conn, head, member, error=target.error.name.upper(),
                                error_code=int(target.error), partition=target.partition, topics=topics)
        self.proxy._end(fid, "answered")
        return new

    def forget(self, conn) -> None:
        """A connection closed: its requests' answers will not come."""
        for key in [k for k in self._pending if k[0] == conn.conn_id]:
            self._pending.pop(key)[0].settle(hit=False)
