"""The request proxy on loopback in front of a stand-in broker that answers every request in order:
forwarding, each rule's effect on what the broker and the client see, the order of answers, the records."""
import io
import socket
import socketserver
import struct
import threading
import time
from datetime import timedelta

import pytest
from kio.schema.api_versions.v3.response import ApiVersion
from kio.schema.errors import ErrorCode
from kio.schema.join_group.v5.request import JoinGroupRequest
from kio.serial import entity_writer

from harness.kproxy import (KafkaProxy, Seen, Unanswerable, answers, delay_request, disconnect, drop_request,
                            drop_response, error_response, hold_request)
from harness.kproxy.wire import parse_request_head, request_bytes
from harness.base.tools import free_ports

JOIN, SYNC, HEARTBEAT, FETCH = 11, 14, 12, 1
#: what the stand-in broker offers (ApiVersions)
OFFERED = {JOIN: (0, 9), SYNC: (0, 5), HEARTBEAT: (0, 4), FETCH: (4, 17), 88: (0, 1)}


def _api_versions_answer(corr: int) -> bytes:
    _, resp_cls = answers._classes(18, 3)
    out = io.BytesIO()
    entity_writer(resp_cls.__header_schema__)(out, resp_cls.__header_schema__(correlation_id=corr))
    entity_writer(resp_cls)(out, resp_cls(error_code=ErrorCode.none, throttle_time=answers.datetime.timedelta(0),
                                         api_keys=tuple(ApiVersion(api_key=k, min_version=lo, max_version=hi)
                                                        for k, (lo, hi) in OFFERED.items())))
    return out.getvalue()


def _recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _read(sock):
    size = _recv_exact(sock, 4)
    return None if size is None else _recv_exact(sock, struct.unpack(">i", size)[0])


class Broker(socketserver.ThreadingTCPServer):
    """Answers each request in turn with its correlation id and b'ok' (after `slow[api_key]` seconds)."""

    daemon_threads = allow_reuse_address = True

    def __init__(self, port):
        self.seen, self.slow = [], {}
        super().__init__(("127.0.0.1", port), _Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        while (payload := _read(self.request)) is not None:
            head = parse_request_head(payload)
            if head.api_key == 18:
                answer = _api_versions_answer(head.correlation_id)
            else:
                self.server.seen.append((head.api, head.correlation_id, head.client_id))
                time.sleep(self.server.slow.get(head.api_key, 0))
                answer = struct.pack(">i", head.correlation_id) + b"ok"
            self.request.sendall(struct.pack(">i", len(answer)) + answer)


@pytest.fixture
def setup():
    bport, pport = free_ports(2)
    broker = Broker(bport)
    events = []
    proxy = KafkaProxy(upstreams={1: ("127.0.0.1", bport)}, ports={1: pport},
                       record=lambda t, **f: events.append({"type": t, "mono": time.monotonic(), **f}))
    proxy.start()
    clients = []

    def client():
        s = socket.create_connection(("127.0.0.1", pport))
        s.settimeout(3)
        clients.append(s)
        return s
    yield proxy, broker, events, client
    for s in clients:
        s.close()
    proxy.stop()
    broker.shutdown()
    broker.server_close()


def _request_frame(api_key, version, body, corr):
    req_cls, _ = answers._classes(api_key, version)
    out = io.BytesIO()
    h = req_cls.__header_schema__
    entity_writer(h)(out, h(request_api_key=api_key, request_api_version=version, correlation_id=corr, client_id="m1"))
    entity_writer(req_cls)(out, body)
    return struct.pack(">i", len(out.getvalue())) + out.getvalue()


def _ask(sock, api, corr, member="m1"):
    sock.sendall(request_bytes(api, 1, corr, member, b"body"))


def _answers(sock, n, timeout_s=3):
    sock.settimeout(timeout_s)
    out = []
    try:
        for _ in range(n):
            p = _read(sock)
            if p is None:
                break
            out.append(struct.unpack(">i", p[:4])[0])
    except socket.timeout:
        pass
    return out


def test_forwards_in_order_and_records_nothing(setup):
    proxy, broker, events, client = setup
    c = client()
    for corr, api in enumerate((JOIN, SYNC, HEARTBEAT, FETCH), 1):
        _ask(c, api, corr)
    assert _answers(c, 4) == [1, 2, 3, 4]
    assert [s[0] for s in broker.seen] == ["JoinGroup", "SyncGroup", "Heartbeat", "Fetch"]
    assert events == []


def test_delay_one_members_request(setup):
    proxy, broker, events, client = setup
    rid = proxy.install(delay_request("SyncGroup", delay_s=0.4, member="m1", count=1))
    c1, c2 = client(), client()
    t0 = time.monotonic()
    _ask(c2, SYNC, 1, member="m2")
    assert _answers(c2, 1) == [1] and time.monotonic() - t0 < 0.3    # another member's goes straight on
    _ask(c1, SYNC, 2)
    _ask(c1, HEARTBEAT, 3)                                             # behind it on the connection: waits too
    assert _answers(c1, 2) == [2, 3] and time.monotonic() - t0 >= 0.4
    assert proxy.applied(rid) == 1
    start, end = events
    assert start["type"] == "fault_start" and start["kind"] == "delay_request" and start["delay_s"] == 0.4
    assert (start["api"], start["member"], start["broker"], start["correlation_id"], start["client_id"]) == \
        ("SyncGroup", "m1", 1, 2, "m1")
    assert start["members_affected"] == ["m1"] and start["brokers_affected"] == [1] and start["rule"] == rid
    assert end == {"type": "fault_end", "mono": end["mono"], "fault_id": start["fault_id"], "outcome": "forwarded"}
    assert end["mono"] - start["mono"] >= 0.4


def test_hold_until_another_members_request_is_seen(setup):
    proxy, broker, events, client = setup
    proxy.install(hold_request("SyncGroup", member="m1", until=[Seen("JoinGroup")], timeout_s=5))
    c1, c2 = client(), client()
    _ask(c1, SYNC, 1)
    assert _answers(c1, 1, timeout_s=0.3) == []                        # held
    _ask(c1, JOIN, 2)                                                  # its own JoinGroup is not the condition
    assert _answers(c1, 1, timeout_s=0.3) == []
    _ask(c2, JOIN, 1, member="m2")
    assert _answers(c2, 1) == [1]
    assert _answers(c1, 2) == [1, 2]
    assert [s[:2] for s in broker.seen if s[2] == "m1"] == [("SyncGroup", 1), ("JoinGroup", 2)]
    assert events[-1]["outcome"] == "seen"


def test_hold_until_an_event_or_a_timeout(setup):
    proxy, broker, events, client = setup
    gate = threading.Event()
    proxy.install(hold_request("Heartbeat", until=[gate], timeout_s=5))
    proxy.install(hold_request("Heartbeat", timeout_s=0.3))
    c = client()
    _ask(c, HEARTBEAT, 1)
    assert _answers(c, 1, timeout_s=0.3) == []
    gate.set()
    assert _answers(c, 1) == [1]
    _ask(c, HEARTBEAT, 2)                                             # the second rule: its timeout lifts it
    t0 = time.monotonic()
    assert _answers(c, 1) == [2] and time.monotonic() - t0 >= 0.25
    assert [e["outcome"] for e in events if e["type"] == "fault_end"] == ["event", "timeout"]


def test_removing_a_rule_releases_what_it_holds(setup):
    proxy, broker, events, client = setup
    rid = proxy.install(hold_request("JoinGroup", timeout_s=30))
    c = client()
    _ask(c, JOIN, 1)
    assert proxy.wait_for_applied(rid, timeout_s=2)
    proxy.remove(rid)
    assert _answers(c, 1) == [1]
    assert events[-1]["outcome"] == "lifted"


def test_drop_request_pass_and_stall(setup):
    proxy, broker, events, client = setup
    proxy.install(drop_request("Heartbeat", member="m1", then="pass"))
    c = client()
    _ask(c, HEARTBEAT, 1)
    _ask(c, FETCH, 2)
    assert _answers(c, 2, timeout_s=0.5) == [2]                      # the heartbeat never reached the broker
    assert ("Heartbeat", 1, "m1") not in broker.seen
    assert events[-1]["outcome"] == "dropped"
    proxy.install(drop_request("Heartbeat", member="m2"))            # stall: nothing more of that connection goes on
    c2 = client()
    _ask(c2, HEARTBEAT, 1, member="m2")
    _ask(c2, FETCH, 2, member="m2")
    assert _answers(c2, 2, timeout_s=0.5) == []
    assert not [s for s in broker.seen if s[2] == "m2"]
    c2.close()
    deadline = time.monotonic() + 2
    while events[-1]["type"] != "fault_end" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert events[-1]["outcome"] == "closed"                          # the fault lasts until the client closes


def test_drop_response_reaches_the_broker_only(setup):
    proxy, broker, events, client = setup
    proxy.install(drop_response("Heartbeat", then="pass"))
    c = client()
    _ask(c, HEARTBEAT, 1)
    _ask(c, FETCH, 2)
    assert _answers(c, 2, timeout_s=0.5) == [2]
    assert ("Heartbeat", 1, "m1") in broker.seen
    proxy.install(drop_response("Heartbeat"))                        # stall: no later answer either
    c2 = client()
    _ask(c2, HEARTBEAT, 1, member="m2")
    _ask(c2, FETCH, 2, member="m2")
    assert _answers(c2, 2, timeout_s=0.5) == []
    assert [s[0] for s in broker.seen if s[2] == "m2"] == ["Heartbeat", "Fetch"]
    assert [e["kind"] for e in events if e["type"] == "fault_start"] == ["drop_response", "drop_response"]


def _ends(events, n=1, timeout_s=3.0):
    """The fault_end events, once there are `n` of them (the proxy records from its own thread)."""
    deadline = time.monotonic() + timeout_s
    while len(ends := [e for e in events if e["type"] == "fault_end"]) < n and time.monotonic() < deadline:
        time.sleep(0.02)
    return ends


def test_disconnect_applies_the_request_then_closes_the_connection(setup):
    from harness.record import schema as hs
    proxy, broker, events, client = setup
    broker.slow[HEARTBEAT] = 0.3                   # the requests behind it reach the proxy before its answer
    rid = proxy.install(disconnect("Heartbeat", member="m1"))
    c = client()
    for corr, api in enumerate((FETCH, HEARTBEAT, FETCH, JOIN), 1):
        _ask(c, api, corr)
    t0 = time.monotonic()
    c.settimeout(3)
    assert struct.unpack(">i", _read(c)[:4])[0] == 1                 # the answer before it is delivered
    assert _read(c) is None and time.monotonic() - t0 < 1.5          # then the connection closes: no timeout
    assert [s[:2] for s in broker.seen] == [("Fetch", 1), ("Heartbeat", 2)]  # applied; those behind it lost
    (end,) = _ends(events)
    (start,) = [e for e in events if e["type"] == "fault_start"]
    assert (start["kind"], start["api"], start["member"], start["correlation_id"], start["rule"]) == \
        ("disconnect", "Heartbeat", "m1", 2, rid)
    assert end["outcome"] == "disconnected" and end["mono"] - start["mono"] >= 0.3
    assert end["lost"] == [{"api": "Fetch", "correlation_id": 3}, {"api": "JoinGroup", "correlation_id": 4}]
    header = {"type": "header", "schema": "rebalance-history", "version": 1, "source": "harness", "member": None}
    for e in (start, end):
        assert hs.validate_line(header, {**e, "wall": time.time()}) == [], e
    again = client()                                                 # the client's retry on a new connection:
    _ask(again, HEARTBEAT, 1)                                        # the rule took its one request
    assert _answers(again, 1) == [1] and proxy.applied(rid) == 1


def test_disconnect_of_a_request_whose_client_closes_first_ends_closed(setup):
    proxy, broker, events, client = setup
    broker.slow[SYNC] = 0.5
    proxy.install(disconnect("SyncGroup", count=2))
    c = client()
    _ask(c, SYNC, 1)
    time.sleep(0.1)
    c.close()                                                        # before the broker's answer
    assert [e["outcome"] for e in _ends(events)] == ["closed"]
    other = client()                                                 # another member's: disconnected, unlisted
    _ask(other, SYNC, 7, member="m2")
    other.settimeout(3)
    assert _read(other) is None
    assert [(e["outcome"], e.get("lost")) for e in _ends(events, 2)] == [("closed", None), ("disconnected", [])]
    assert [s[:3] for s in broker.seen] == [("SyncGroup", 1, "m1"), ("SyncGroup", 7, "m2")]


def test_error_response_waits_its_turn(setup):
    proxy, broker, events, client = setup
    broker.slow[FETCH] = 0.3
    proxy.install(error_response("JoinGroup", error="NOT_COORDINATOR"))
    c = client()
    c.sendall(request_bytes(FETCH, 4, 1, "m1"))
    join = JoinGroupRequest(group_id="g", session_timeout=timedelta(seconds=6), rebalance_timeout=timedelta(seconds=6),
                            member_id="", group_instance_id=None, protocol_type="consumer", protocols=())
    c.sendall(_request_frame(JOIN, 5, join, 2))
    c.settimeout(3)
    first, second = _read(c), _read(c)
    assert struct.unpack(">i", first[:4])[0] == 1                    # the broker's earlier answer comes first
    _, resp_cls = answers._classes(JOIN, 5)
    head, n = answers.entity_reader(resp_cls.__header_schema__)(second, 0)
    body = answers.entity_reader(resp_cls)(second, n)[0]
    assert head.correlation_id == 2 and body.error_code == ErrorCode.not_coordinator
    assert [s[0] for s in broker.seen] == ["Fetch"]                   # the JoinGroup never reached the broker
    start = next(e for e in events if e["type"] == "fault_start")
    assert (start["kind"], start["error"], start["error_code"], start["api_version"]) == \
        ("error_response", "NOT_COORDINATOR", 16, 5)


def test_error_response_kio_cannot_answer_is_refused_at_install(setup):
    proxy, *_ = setup
    with pytest.raises(Unanswerable, match="StreamsGroupHeartbeat: the brokers offer v0-1"):
        proxy.install(error_response("StreamsGroupHeartbeat", error="NOT_COORDINATOR"))
    proxy.install(error_response("SyncGroup", error="REBALANCE_IN_PROGRESS"))


def test_what_it_records_is_valid_history(setup):
    from harness.record import schema as hs
    proxy, broker, events, client = setup
    proxy.install(delay_request("Heartbeat", delay_s=(0.01, 0.02), count=1))
    proxy.install(error_response("SyncGroup", error=27, count=1))
    proxy.install(drop_response("Fetch", then="pass"))
    c = client()
    _ask(c, HEARTBEAT, 1)
    c.sendall(request_bytes(SYNC, 1, 2, None, b"\x00\x01g\x00\x00\x00\x01\x00\x01x\xff\xff\xff\xff"))  # no client id
    _ask(c, FETCH, 3)
    _answers(c, 2, timeout_s=1)
    header = {"type": "header", "schema": "rebalance-history", "version": 1, "source": "harness", "member": None}
    assert [e["kind"] for e in events if e["type"] == "fault_start"] == ["delay_request", "error_response",
                                                                         "drop_response"]
    sync = next(e for e in events if e.get("api") == "SyncGroup")
    assert sync["member"] is None and sync["targets"] == [] and sync["error"] == "REBALANCE_IN_PROGRESS"
    for e in events:
        assert hs.validate_line(header, {**e, "wall": time.time()}) == [], e
    assert hs.validate_line(header, {**events[0], "wall": 1.0, "rule": None})  # the schema holds the fields


def test_stopping_with_a_connection_open_logs_no_error(setup, caplog):
    """A proxy stopped while a client's connection is open (its request held) ends the connection's task quietly:
    Python 3.11's start_server callback logs a cancelled task as "Exception in callback ... CancelledError"."""
    proxy, _, events, client = setup
    proxy.install(hold_request("SyncGroup", timeout_s=5.0))
    s = client()
    _ask(s, SYNC, 1)
    deadline = time.monotonic() + 3
    while not [e for e in events if e["type"] == "fault_start"] and time.monotonic() < deadline:
        time.sleep(0.02)
    with caplog.at_level("ERROR", logger="asyncio"):
        proxy.stop()
    assert not [r for r in caplog.records if r.name == "asyncio"], [r.getMessage() for r in caplog.records]
    assert [e.get("outcome") for e in events if e["type"] == "fault_end"] == ["closed"]
