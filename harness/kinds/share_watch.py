"""A share group's assignment as the brokers report it (KIP-932), recorded while the run goes on.

Neither confluent-kafka's ShareConsumer nor the Java KafkaShareConsumer tells its application which partitions it
was given, and confluent-kafka's Admin has no share-group calls; the group coordinator says it in its answer to
ShareGroupDescribe (v1, Kafka 4.1+): each member's id, client id (the harness sets it to the member's own id),
epoch and assigned partitions. `ShareAssignmentWatch` asks for it every `interval_s` from a thread of the runner,
the requests encoded and the answers decoded by kio (harness/kafka/frames.py, as the request proxy's own questions), and
writes a `share_assignment` event (harness.jsonl) whenever the answer changes (the loop is assignment_watch.py's):

- `members`: one entry per member the coordinator lists, `{member, consumer_id, epoch, partitions}`, partitions as
  [topic, partition] pairs, sorted; `group_epoch`, `assignment_epoch` and `state` (the group's);
- `asked_mono`: when the request went out (the answer held at some time in [asked_mono, mono]);
- `interval_s`: how often it asks, so that a checker knows how late a change may be seen; `longest_gap_s`;
- `error`: why the coordinator could not be asked or did not answer (then `members` is null). Written once when
  an answer fails after one succeeded (or before any did), and the next answer that succeeds is written whatever
  it says: the events between say where the history is blind; `stopped` on the last, when the watch stops.

`share_served` (harness/invariants/share/partitions.py) judges from these events that every subscribed partition
has a live member while the group has members. Its requests go through the brokers' advertised addresses (the
Toxiproxy listeners), as the members' do.
"""
from __future__ import annotations

import socket

from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.find_coordinator.v4.response import FindCoordinatorResponse
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.schema.share_group_describe.v1.response import ShareGroupDescribeResponse
from kio.static.primitive import i8

from harness.kafka.frames import request_frame, response_body
from harness.kinds.assignment_watch import INTERVAL_S, AssignmentWatch

CLIENT_ID = "harness-share-watch"
TIMEOUT_S = 2.0


class AskError(Exception):
    """The coordinator could not be asked, or answered with an error (its name)."""


def _read_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise AskError("the broker closed the connection")
        buf += chunk
    return bytes(buf)


def call(address: tuple[str, int], req, resp_cls, *, timeout_s: float = TIMEOUT_S, correlation_id: int = 1):
    """One request, one answer, on a connection of its own (a few a second: no pooling needed)."""
    try:
        with socket.create_connection(address, timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            sock.sendall(request_frame(req, correlation_id=correlation_id, client_id=CLIENT_ID))
            payload = _read_exact(sock, int.from_bytes(_read_exact(sock, 4), "big"))
    except OSError as e:
        raise AskError(f"{address[0]}:{address[1]}: {type(e).__name__}: {e}") from None
    return response_body(payload, resp_cls)


def _addresses(bootstrap: str) -> list[tuple[str, int]]:
    out = []
    for part in bootstrap.split(","):
        host, _, port = part.strip().rpartition(":")
        out.append((host, int(port)))
    return out


def find_coordinator(bootstrap: str, group_id: str) -> tuple[str, int]:
    """The group coordinator's advertised address, asked of each bootstrap broker in turn."""
    errors = []
    for address in _addresses(bootstrap):
        try:
            resp = call(address, FindCoordinatorRequest(key_type=i8(0), coordinator_keys=(group_id,)),
                        FindCoordinatorResponse)
        except AskError as e:
            errors.append(str(e))
            continue
        c = resp.coordinators[0]
        if c.error_code != ErrorCode.none:
            errors.append(f"FindCoordinator: {c.error_code.name.upper()}")
            continue
        return c.host, int(c.port)
    raise AskError("; ".join(errors) or "no bootstrap broker")


def describe(address: tuple[str, int], group_id: str) -> dict:
    """The `share_assignment` fields of the coordinator's answer (AskError on an error answer)."""
    resp = call(address, ShareGroupDescribeRequest(group_ids=(group_id,), include_authorized_operations=False),
                ShareGroupDescribeResponse)
    g = resp.groups[0]
    if g.error_code != ErrorCode.none:
        raise AskError(f"ShareGroupDescribe: {g.error_code.name.upper()}" + (f" ({g.error_message})" if g.error_message else ""))
    members = [{"member": m.client_id, "consumer_id": m.member_id, "epoch": int(m.member_epoch),
                "partitions": sorted([tp.topic_name, int(p)] for tp in m.assignment.topic_partitions
                                     for p in tp.partitions)}
               for m in g.members]
    return {"members": sorted(members, key=lambda m: (m["member"], m["consumer_id"])),
            "group_epoch": int(g.group_epoch), "assignment_epoch": int(g.assignment_epoch), "state": g.group_state}


def asker(bootstrap: str, group_id: str):
    """`ask()` for the watch: the coordinator found once (and again after a failure), then ShareGroupDescribe."""
    coordinator = None

    def ask() -> dict:
        nonlocal coordinator
        try:
            coordinator = coordinator or find_coordinator(bootstrap, group_id)
            return describe(coordinator, group_id)
        except AskError:
            coordinator = None  # moved, down or unreachable: found again next time
            raise
        except Exception as e:  # an answer kio could not read: said in the history, never a silent gap
            coordinator = None
            raise AskError(f"{type(e).__name__}: {e}") from None
    return ask


class ShareAssignmentWatch(AssignmentWatch):
    """Asks the coordinator every `interval_s` and writes `share_assignment` on each change (module docstring)."""

    def __init__(self, bootstrap: str, group_id: str, event, *, interval_s: float = INTERVAL_S) -> None:
        super().__init__("share_assignment", asker(bootstrap, group_id), event, name=f"share-watch-{group_id}",
                         defaults={"group_epoch": None, "assignment_epoch": None, "state": None},
                         interval_s=interval_s)
