"""A consumer group's assignment as its coordinator reports it, recorded while the run goes on (every protocol).

confluent-kafka's Admin `describe_consumer_groups` asks the group coordinator (librdkafka finds it) with
ConsumerGroupDescribe for a group of the consumer protocol and DescribeGroups for a classic one, and returns each
member's member id, client id (the harness sets `client.id` to the member's own id), group instance id and assigned
partitions, with the group's type and state. `GroupAssignmentWatch` asks every `interval_s` from a thread of the
runner (the loop is assignment_watch.py's, as the share watch's) and writes a `group_assignment` event whenever the
answer changes:

- `members`: `{member, consumer_id, instance_id, partitions}` per member, partitions as [topic, partition] pairs,
  sorted; null with an `error` (the coordinator could not be asked or refused: the history is blind until the next
  event) and on the last event (`stopped`);
- `group_type` (`classic` or `consumer`, `unknown` when the client could not tell) and `state` (lower case:
  `stable`, `preparing_rebalancing`, `completing_rebalancing`, `empty`, `dead`; `unknown` for the consumer
  protocol's own states, which librdkafka does not name). A classic group's coordinator lists, while it
  rebalances, the previous generation's assignments (or none, after a rebalance began while members awaited their
  SyncGroup): `coordinator_claims` reads such an answer with the stable answers around it;
- `asked_mono`, `interval_s`, `longest_gap_s`: when it asked, how often, and how far apart unchanged answers were.

Started for consumer-group runs on real brokers with the first members, stopped after their final stop. Its admin
client is its own, bootstrapped from the brokers' advertised addresses (the Toxiproxy listeners, as the members'),
each request bounded by TIMEOUT_S so that a broker down delays the next answer, never the run.
"""
from __future__ import annotations

from harness.kinds.assignment_watch import INTERVAL_S, AssignmentWatch

TIMEOUT_S = 2.0


def _name(x) -> str:
    return str(getattr(x, "name", x) or "unknown").lower()


def describe(admin, group_id: str, *, timeout_s: float = TIMEOUT_S) -> dict:
    """The `group_assignment` fields of the coordinator's answer (the client's exception on an error)."""
    g = admin.describe_consumer_groups([group_id], request_timeout=timeout_s)[group_id].result(timeout=timeout_s * 2)
    members = [{"member": m.client_id, "consumer_id": m.member_id, "instance_id": m.group_instance_id or None,
                "partitions": sorted([tp.topic, int(tp.partition)]
                                     for tp in ((m.assignment.topic_partitions if m.assignment else None) or ()))}
               for m in g.members or ()]
    return {"members": sorted(members, key=lambda m: (m["member"], m["consumer_id"])),
            "group_type": _name(getattr(g, "type", None)), "state": _name(getattr(g, "state", None))}


def asker(bootstrap: str, group_id: str):
    """`ask()` for the watch, on an admin client of its own (made at the first request)."""
    admin = None

    def ask() -> dict:
        nonlocal admin
        if admin is None:
            from confluent_kafka.admin import AdminClient
            admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": int(TIMEOUT_S * 1000),
                                 "reconnect.backoff.max.ms": 500, "log_level": 2,
                                 "client.id": "harness-group-watch"})
        try:
            return describe(admin, group_id)
        except Exception as e:  # the client's own words (KafkaException's KafkaError), or a timeout
            err = e.args[0] if e.args else None
            said = err.str() if hasattr(err, "str") else f"{type(e).__name__}: {e}"
            raise RuntimeError(f"DescribeConsumerGroups: {said}") from None
    return ask


class GroupAssignmentWatch(AssignmentWatch):
    """Asks the coordinator every `interval_s` and writes `group_assignment` on each change (module docstring)."""

    def __init__(self, bootstrap: str, group_id: str, event, *, interval_s: float = INTERVAL_S, ask=None) -> None:
        super().__init__("group_assignment", ask or asker(bootstrap, group_id), event,
                         name=f"group-watch-{group_id}", defaults={"group_type": None, "state": None},
                         interval_s=interval_s)
