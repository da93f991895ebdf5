"""The share assignment watch (harness/kinds/share_watch.py) on the wire, against a loopback stand-in for a broker.

The stand-in answers FindCoordinator v4 and ShareGroupDescribe v1 with responses encoded by kio (the same codec
the watch decodes with), from a script of answers, so that the watch's framing, its change-only events, its
error events (blind stretches) and its stop are tested without Kafka. That the coordinator's answers are what
the watch records in a real run is `tests/unit/test_share_assignment_history.py` (a real history) and the share
suite.
"""
from __future__ import annotations

import datetime
import io
import socket
import threading
import time
import uuid

from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4 import response as fc
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.share_group_describe.v1 import response as sgd
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from harness.kinds.share_watch import ShareAssignmentWatch, describe


class StandIn:
    """One listening socket; every connection gets one answer; `answers` is consumed one per ShareGroupDescribe
    (a dict of member -> partitions, or an ErrorCode); the last one repeats."""

    def __init__(self, answers: list) -> None:
        self.answers, self.asked = list(answers), 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                size = int.from_bytes(conn.recv(4), "big")
                payload = b""
                while len(payload) < size:
                    payload += conn.recv(size - len(payload))
                head, _ = entity_reader(RequestHeader)(payload, 0)
                body = self._answer(int(head.request_api_key))
                out = io.BytesIO()
                entity_writer(type(body).__header_schema__)(out, type(body).__header_schema__(
                    correlation_id=head.correlation_id))
                entity_writer(type(body))(out, body)
                conn.sendall(len(out.getvalue()).to_bytes(4, "big") + out.getvalue())

    def _answer(self, api_key: int):
        if api_key == 10:
            return fc.FindCoordinatorResponse(throttle_time=datetime.timedelta(0), coordinators=(fc.Coordinator(
                key="g", node_id=i32(1), host="127.0.0.1", port=i32(self.port), error_code=ErrorCode.none,
                error_message=None),))
        self.asked += 1
        a = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(a, ErrorCode):
            group = sgd.DescribedGroup(error_code=a, group_id="g", group_state="", group_epoch=i32(0),
                                       assignment_epoch=i32(0), assignor_name="", members=())
        else:
            tid = uuid.UUID(int=7)
            members = tuple(sgd.Member(member_id=f"id-{m}", member_epoch=i32(3), client_id=m, client_host="/127.0.0.1",
                                       subscribed_topic_names=("t",),
                                       assignment=sgd.Assignment(topic_partitions=(sgd.TopicPartitions(
                                           topic_id=tid, topic_name="t", partitions=tuple(i32(p) for p in ps)),)))
                            for m, ps in a.items())
            group = sgd.DescribedGroup(error_code=ErrorCode.none, group_id="g", group_state="Stable",
                                       group_epoch=i32(5), assignment_epoch=i32(5), assignor_name="simple",
                                       members=members)
        return sgd.ShareGroupDescribeResponse(throttle_time=datetime.timedelta(0), groups=(group,))

    def close(self) -> None:
        self.sock.close()


def test_describe_reads_each_members_client_id_epoch_and_partitions():
    srv = StandIn([{"m2": [3, 1], "m1": [0]}])
    try:
        got = describe(("127.0.0.1", srv.port), "g")
    finally:
        srv.close()
    assert got == {"members": [{"member": "m1", "consumer_id": "id-m1", "epoch": 3, "partitions": [["t", 0]]},
                               {"member": "m2", "consumer_id": "id-m2", "epoch": 3,
                                "partitions": [["t", 1], ["t", 3]]}],
                   "group_epoch": 5, "assignment_epoch": 5, "state": "Stable"}


def test_the_watch_writes_changes_and_errors_only():
    srv = StandIn([{"m1": [0, 1]}, {"m1": [0, 1]}, ErrorCode.coordinator_load_in_progress, {"m1": [0, 1]},
                   {"m1": [0], "m2": [1]}])
    events = []
    watch = ShareAssignmentWatch(f"127.0.0.1:{srv.port}", "g", lambda t, **f: events.append((t, f)),
                                 interval_s=0.02).start()
    try:
        deadline = time.monotonic() + 10
        while srv.asked < 6 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        watch.stop()
        srv.close()
    assert not watch._thread.is_alive()
    said = [(f["error"], [(m["member"], [p for _, p in m["partitions"]]) for m in f["members"] or ()]) for _, f in events]
    # the unchanged second answer is not written; after the error, the same answer is written again
    assert said[:4] == [(None, [("m1", [0, 1])]), ("ShareGroupDescribe: COORDINATOR_LOAD_IN_PROGRESS", []),
                        (None, [("m1", [0, 1])]), (None, [("m1", [0]), ("m2", [1])])]
    assert all(t == "share_assignment" and f["interval_s"] == 0.02 and f["asked_mono"] <= time.monotonic()
               for t, f in events)


def test_an_unreachable_coordinator_is_an_error_event_not_a_silent_gap():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    events = []
    watch = ShareAssignmentWatch(f"127.0.0.1:{port}", "g", lambda t, **f: events.append(f), interval_s=0.02).start()
    time.sleep(0.2)
    watch.stop()
    assert len(events) == 2 and events[0]["members"] is None and "ConnectionRefusedError" in events[0]["error"]
    assert events[1]["stopped"] and events[1]["members"] is None  # the answers end with the watch
