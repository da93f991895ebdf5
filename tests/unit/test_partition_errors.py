"""An error in one partition's entry of a broker's real answer (harness/kproxy/partition_errors.py): the rewrite of
each of the five APIs' answers at kio's oldest and newest versions, the schema check, and the proxy's hook against a
stand-in broker answering real ListOffsets answers (the request reaches the broker, one entry is changed, the rule
counts only an answer that had the partition, the window is recorded)."""
from __future__ import annotations

import dataclasses
import io
import socket
import socketserver
import struct
import threading
import time
import uuid

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from harness.kproxy import KafkaProxy, answers, delay_request, disconnect, drop_request, drop_response, \
    error_response, hold_request
from harness.kproxy.partition_errors import ERRORS, PartitionRefused, Target, rewrite, schema_has_partition_errors
from harness.kproxy.wire import API_KEYS, parse_request_head
from harness.base.tools import free_ports

FIVE = ("OffsetFetch", "ListOffsets", "OffsetForLeaderEpoch", "Metadata", "Fetch")
TOPICS = ("a", "b")
IDS = {"a": uuid.UUID(int=1), "b": uuid.UUID(int=2)}


def _is_partition(cls) -> bool:
    names = {f.name for f in dataclasses.fields(cls)}
    return "error_code" in names and bool(names & {"partition_index", "partition"})


def _make(cls, *, topic: str | None = None, number: int | None = None):
    """An entity of `cls` as a broker would fill it: every topic list two topics (a, b), every partition list three
    partitions (0, 1, 2) with no error, other lists empty but a group list (one group)."""
    hints = answers._hints(cls)
    given = {}
    for f in dataclasses.fields(cls):
        inner = answers._entity_list(hints[f.name])
        if inner is not None:
            names = {g.name for g in dataclasses.fields(inner)}
            if _is_partition(inner):
                given[f.name] = tuple(_make(inner, number=n) for n in range(3))
            elif "partitions" in names:
                given[f.name] = tuple(_make(inner, topic=t) for t in TOPICS)
            elif f.name == "groups":
                given[f.name] = (_make(inner),)
            else:
                given[f.name] = ()
        elif f.name in ("name", "topic") and topic is not None:
            given[f.name] = topic
        elif f.name == "topic_id" and topic is not None:
            given[f.name] = IDS[topic]
        elif f.name in ("partition_index", "partition") and number is not None:
            given[f.name] = number
        elif f.name == "error_code":
            given[f.name] = ErrorCode.none
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            given[f.name] = answers._zero(f, hints[f.name])
    return cls(**given)


def _answer(api: str, version: int, corr: int = 7) -> bytes:
    _, resp_cls = answers._classes(API_KEYS[api], version)
    out = io.BytesIO()
    entity_writer(resp_cls.__header_schema__)(out, resp_cls.__header_schema__(correlation_id=corr))
    entity_writer(resp_cls)(out, _make(resp_cls))
    return out.getvalue()


def _decode(api: str, version: int, payload: bytes):
    _, resp_cls = answers._classes(API_KEYS[api], version)
    head, n = entity_reader(resp_cls.__header_schema__)(payload, 0)
    return head, entity_reader(resp_cls)(payload, n)[0]


def _errors(entity, out=None, topic="") -> dict:
    """Every (topic, partition) -> error code of an answer, and ("", "top") -> its top-level error code if any."""
    out = {} if out is None else out
    if hasattr(entity, "error_code") and not _is_partition(type(entity)):
        out[(topic, "top" if not topic else "topic")] = entity.error_code
    for f in dataclasses.fields(entity):
        v = getattr(entity, f.name)
        if isinstance(v, tuple) and v and dataclasses.is_dataclass(v[0]):
            for item in v:
                if _is_partition(type(item)):
                    n = getattr(item, "partition_index", getattr(item, "partition", None))
                    out[(topic, n)] = item.error_code
                else:
                    name = getattr(item, "name", None) or getattr(item, "topic", None) or \
                        {i: t for t, i in IDS.items()}.get(getattr(item, "topic_id", None), "")
                    _errors(item, out, name if isinstance(name, str) else topic)
    return out


def _versions(api):
    vs = answers.kio_versions(API_KEYS[api])
    return [vs.start, vs.stop - 1]


@pytest.mark.parametrize("api,version", [(a, v) for a in FIVE for v in _versions(a)])
def test_one_partition_of_one_topic_gets_the_error_and_nothing_else_changes(api, version):
    before = _answer(api, version)
    target = Target(1, ErrorCode[ERRORS[api][0].lower()], "b", IDS["b"])
    new, topics = rewrite(API_KEYS[api], version, before, target)
    (h0, b0), (h1, b1) = _decode(api, version, before), _decode(api, version, new)
    assert h1 == h0
    e0, e1 = _errors(b0), _errors(b1)
    changed = {k for k in e0 if e0[k] != e1[k]}
    assert changed == {("b", 1)} and e1[("b", 1)] == target.error, (e0, e1)
    assert topics in (["b"], [str(IDS["b"])])


@pytest.mark.parametrize("api,version", [(a, v) for a in FIVE for v in _versions(a)])
def test_without_a_topic_the_partition_of_every_topic_gets_it(api, version):
    new, _ = rewrite(API_KEYS[api], version, _answer(api, version), Target(2, ErrorCode.unknown_topic_or_partition))
    e = _errors(_decode(api, version, new)[1])
    assert {k for k, v in e.items() if v != ErrorCode.none} == {("a", 2), ("b", 2)}


def test_an_answer_without_the_partition_is_left_alone():
    assert rewrite(API_KEYS["ListOffsets"], 5, _answer("ListOffsets", 5), Target(3, ErrorCode.offset_not_available)) \
        is None
    assert rewrite(API_KEYS["ListOffsets"], 5, _answer("ListOffsets", 5),
                   Target(1, ErrorCode.offset_not_available, "zzz")) is None


def test_the_schema_says_which_apis_have_per_partition_errors():
    for api in FIVE:
        assert all(schema_has_partition_errors(API_KEYS[api], v) for v in answers.kio_versions(API_KEYS[api])), api
    assert not schema_has_partition_errors(API_KEYS["JoinGroup"], 5)
    assert not schema_has_partition_errors(API_KEYS["FindCoordinator"], 4)


@pytest.mark.parametrize("kw,why", [
    ({"api": "JoinGroup", "error": "NOT_COORDINATOR", "partition": 0}, "JoinGroup is not one of OffsetFetch"),
    ({"api": "ListOffsets", "error": "NOT_COORDINATOR", "partition": 0},
     "NOT_COORDINATOR is not an error a broker puts in a partition's entry of ListOffsets's answer"),
    ({"api": "ListOffsets", "error": "OFFSET_NOT_AVAILABLE", "partition": -1}, "partition is a partition number"),
    ({"api": "Fetch", "error": "NOT_LEADER_OR_FOLLOWER", "topic": "t"}, "topic with a partition"),
])
def test_a_per_partition_rule_that_cannot_be_is_refused(kw, why):
    with pytest.raises((PartitionRefused, ValueError), match=why):
        error_response(**kw)
    with pytest.raises(ValueError, match="for error_response only"):
        from harness.kproxy.rules import Rule
        Rule("drop_request", "Fetch", partition=0)


# -- through the proxy, in front of a stand-in broker answering real answers

class Broker(socketserver.ThreadingTCPServer):
    """Answers every request with a real answer of its API and version (two topics a, b, partitions 0-2, no
    error), or, for ListOffsets while `short` is set, with topic a's partition 0 only."""

    daemon_threads = allow_reuse_address = True

    def __init__(self, port):
        self.seen, self.short = [], False
        super().__init__(("127.0.0.1", port), _Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()


def _read(sock):
    size = b""
    while len(size) < 4:
        chunk = sock.recv(4 - len(size))
        if not chunk:
            return None
        size += chunk
    n, buf = struct.unpack(">i", size)[0], b""
    while len(buf) < n:
        buf += sock.recv(n - len(buf))
    return buf


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        while (payload := _read(self.request)) is not None:
            head = parse_request_head(payload)
            if head.api_key == 18:
                from test_kproxy_proxy import _api_versions_answer
                answer = _api_versions_answer(head.correlation_id)
            else:
                self.server.seen.append(head.api)
                answer = _answer(head.api, head.api_version, head.correlation_id)
                if self.server.short and head.api == "ListOffsets":
                    _, body = _decode(head.api, head.api_version, answer)
                    t = dataclasses.replace(body.topics[0], partitions=body.topics[0].partitions[:1])
                    _, resp_cls = answers._classes(head.api_key, head.api_version)
                    out = io.BytesIO()
                    entity_writer(resp_cls.__header_schema__)(
                        out, resp_cls.__header_schema__(correlation_id=head.correlation_id))
                    entity_writer(resp_cls)(out, dataclasses.replace(body, topics=(t,)))
                    answer = out.getvalue()
            self.request.sendall(struct.pack(">i", len(answer)) + answer)


@pytest.fixture
def setup():
    bport, pport = free_ports(2)
    broker = Broker(bport)
    events = []
    proxy = KafkaProxy(upstreams={1: ("127.0.0.1", bport)}, ports={1: pport},
                       record=lambda t, **f: events.append({"type": t, **f}))
    proxy.start()
    sock = socket.create_connection(("127.0.0.1", pport))
    sock.settimeout(3)
    yield proxy, broker, events, sock
    sock.close()
    proxy.stop()
    broker.shutdown()
    broker.server_close()


def _list_offsets(sock, corr, version=5):
    from kio.schema.list_offsets.v5.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
    from test_kproxy_proxy import _request_frame
    body = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(ListOffsetsTopic(
        name="b", partitions=(ListOffsetsPartition(partition_index=1, current_leader_epoch=0, timestamp=-1),)),))
    sock.sendall(_request_frame(API_KEYS["ListOffsets"], version, body, corr))
    return _errors(_decode("ListOffsets", version, _read(sock))[1])


def test_the_broker_answers_and_the_client_gets_the_error_in_that_partition_only(setup):
    from harness.record import schema as hs
    proxy, broker, events, sock = setup
    rid = proxy.install(error_response("ListOffsets", error="OFFSET_NOT_AVAILABLE", partition=1, topic="b"))
    broker.short = True
    assert set(_list_offsets(sock, 1).values()) == {ErrorCode.none}   # no entry of b-1: delivered as it was,
    assert proxy.applied(rid) == 0 and events == []                    # and not counted
    broker.short = False
    e = _list_offsets(sock, 2)
    assert {k for k, v in e.items() if v != ErrorCode.none} == {("b", 1)}
    assert e[("b", 1)] == ErrorCode.offset_not_available
    assert broker.seen == ["ListOffsets", "ListOffsets"] and proxy.applied(rid) == 1
    assert set(_list_offsets(sock, 3).values()) == {ErrorCode.none}   # count 1: spent
    start, end = events
    assert (start["kind"], start["api"], start["partition"], start["topics"], start["error"], start["error_code"]) \
        == ("error_response", "ListOffsets", 1, ["b"], "OFFSET_NOT_AVAILABLE", 78)
    assert end == {"type": "fault_end", "fault_id": start["fault_id"], "outcome": "answered"}
    header = {"type": "header", "schema": "rebalance-history", "version": 1, "source": "harness", "member": None}
    for ev in events:
        assert hs.validate_line(header, {**ev, "wall": time.time(), "mono": 1.0}) == [], ev


def test_a_connection_closed_before_the_answer_releases_the_rules_count(setup):
    proxy, broker, events, sock = setup
    live_rule = error_response("ListOffsets", error="NOT_LEADER_OR_FOLLOWER", partition=1)
    rid = proxy.install(live_rule)
    live = proxy._rules[rid]
    live.take()                                   # a request in flight on a connection that then closes
    proxy.partition_faults._pending[(999, 1)] = (live, None, None)
    proxy.partition_faults.forget(type("C", (), {"conn_id": 999})())
    assert live.inflight == 0 and live.live(time.monotonic())


def _request(cls):
    """A request of `cls` naming two topics (a, b) of three partitions each (entities or plain numbers)."""
    hints = answers._hints(cls)
    given = {}
    for f in dataclasses.fields(cls):
        inner = answers._entity_list(hints[f.name])
        if inner is not None:
            names = {g.name for g in dataclasses.fields(inner)}
            if "topics" in names:  # OffsetFetch v8+'s groups: one group of two topics
                given[f.name] = (_request(inner),)
                continue
            n = 2 if "partitions" in names or "partition_indexes" in names or "name" in names else 0
            given[f.name] = tuple(_request_item(inner, t) for t in TOPICS[:n])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            given[f.name] = answers._zero(f, hints[f.name])
    return cls(**given)


def _request_item(cls, topic):
    hints = answers._hints(cls)
    given = {}
    for f in dataclasses.fields(cls):
        inner = answers._entity_list(hints[f.name])
        if inner is not None:
            given[f.name] = tuple(_make(inner, number=n) for n in range(3))
        elif f.name in ("name", "topic"):
            given[f.name] = topic
        elif f.name == "topic_id":
            given[f.name] = IDS[topic]
        elif f.name == "partition_indexes":
            given[f.name] = (0, 1, 2)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            given[f.name] = answers._zero(f, hints[f.name])
    return cls(**given)


@pytest.mark.parametrize("api", FIVE)
def test_every_other_fault_takes_the_five_apis_and_a_whole_answer_error_carries_it(api):
    for rule in (delay_request(api, delay_s=0.1), hold_request(api, timeout_s=1.0), drop_request(api),
                 drop_response(api, then="pass"), disconnect(api), error_response(api, error="NOT_LEADER_OR_FOLLOWER")):
        assert rule.api_key == API_KEYS[api]
    answers.check_answerable(API_KEYS[api], None)  # an error answer of its own builds at every version kio knows
    key, newest = API_KEYS[api], answers.kio_versions(API_KEYS[api]).stop - 1
    req_cls, _ = answers._classes(key, newest)
    payload = answers.error_response(key, newest, _request(req_cls), 5, ErrorCode.not_leader_or_follower)
    head, body = _decode(api, newest, payload)
    errors = _errors(body)
    assert head.correlation_id == 5 and errors and set(errors.values()) == {ErrorCode.not_leader_or_follower}, errors


# -- the plan's checks (harness/plan/request_checks.py) and the performer (harness/nemesis/requests.py)

@pytest.mark.parametrize("params,why", [
    ({"api": "JoinGroup", "error": "NOT_COORDINATOR", "partition": 0},
     "step 0 (error_response): error_response with a partition: JoinGroup is not one of OffsetFetch, ListOffsets, "
     "OffsetForLeaderEpoch, Metadata, Fetch"),
    ({"api": "OffsetForLeaderEpoch", "error": "OFFSET_NOT_AVAILABLE", "partition": 0},
     "OFFSET_NOT_AVAILABLE is not an error a broker puts in a partition's entry of OffsetForLeaderEpoch's answer; "
     "one of NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH"),
    ({"api": "ListOffsets", "error": "NOT_AN_ERROR", "partition": 0}, "unknown Kafka error 'NOT_AN_ERROR'"),
    ({"api": "ListOffsets", "error": "OFFSET_NOT_AVAILABLE", "topic": "t"}, "topic with a partition"),
])
def test_a_per_partition_step_that_cannot_be_is_one_line_of_bad_input(params, why):
    from harness.base.errors import BadInput
    from harness.plan import request_checks
    from harness.plan.scenario_model import Action
    with pytest.raises(BadInput) as e:
        request_checks.check([Action("error_response", params)], brokers=3)
    assert why in str(e.value) and "\n" not in str(e.value)


def test_a_per_partition_step_on_an_api_whose_schema_lacks_the_entries_is_refused(monkeypatch):
    from harness.base.errors import BadInput
    from harness.plan import request_checks
    from harness.plan.scenario_model import Action
    monkeypatch.setattr(request_checks, "schema_has_partition_errors", lambda key, v: v != 4)
    with pytest.raises(BadInput, match="Fetch's answer has no partition entry with an error code at v4$"):
        request_checks.check([Action("error_response", {"api": "Fetch", "error": "NOT_LEADER_OR_FOLLOWER",
                                                        "partition": 0})], brokers=3)


def test_per_partition_steps_that_can_work_pass_the_checks_and_a_file_says_them():
    from harness.plan import request_checks
    from harness.plan.scenario_file import loads
    sc = loads('name = "x"\n[[steps]]\naction = "error_response"\napi = "OffsetForLeaderEpoch"\n'
               'error = "UNKNOWN_LEADER_EPOCH"\npartition = 1\ntopic = "orders"\nslot = 0\n', "x.toml")
    import random
    from harness.plan.scenario_model import Action, ScenarioContext
    steps = sc.build(random.Random(1), ScenarioContext(10, 3, 3))
    assert steps[0].params == {"api": "OffsetForLeaderEpoch", "error": "UNKNOWN_LEADER_EPOCH", "partition": 1,
                               "topic": "orders", "slot": 0}
    request_checks.check(steps, brokers=3)
    request_checks.check([Action("error_response", {"api": api, "error": ERRORS[api][-1], "partition": 2})
                          for api in FIVE], brokers=3)


class _Topics:
    def member_spec(self, slot):
        from test_nemesis import StubKind
        return StubKind().member_spec(slot)

    def input_topics(self):
        return [("t-run-a", 3), ("t-run-orders", 2)]


def test_the_performer_resolves_the_topic_and_refuses_what_the_run_has_not():
    from types import SimpleNamespace
    from harness.base.errors import BadInput
    from harness.nemesis.core import Nemesis
    from harness.plan.scenario_model import Action
    from runctx import context
    from test_nemesis import StubPool, StubWaits
    from test_request_faults import StubProxy
    nem = Nemesis(context(cluster=SimpleNamespace(kproxy=StubProxy()), pool=StubPool(), waits=StubWaits()),
                  kind=_Topics())
    nem.add_member()
    out = nem.perform(Action("error_response", {"api": "ListOffsets", "error": "OFFSET_NOT_AVAILABLE", "slot": 0,
                                                "partition": 1, "topic": "orders"}))
    assert out == {"rule": "r1", "member": "m1", "count": 1, "partition": 1, "topic": "t-run-orders"}
    r = nem.cluster.kproxy.rules["r1"]
    assert (r.partition, r.topic, r.topic_id, r.error) == (1, "t-run-orders", None, "OFFSET_NOT_AVAILABLE")
    out = nem.perform(Action("error_response", {"api": "Fetch", "error": "NOT_LEADER_OR_FOLLOWER", "partition": 2}))
    assert out["topic"] == "t-run-a"                                 # the run's first topic by default
    out = nem.perform(Action("error_response", {"api": "Fetch", "error": "NOT_LEADER_OR_FOLLOWER", "partition": 2,
                                                "topic": "orders"}))
    assert out["partition"] == 2      # a partition the topic has not yet: an add_partitions step may come after
    with pytest.raises(BadInput, match="no topic 'nope' in this run"):
        nem.perform(Action("error_response", {"api": "Fetch", "error": "NOT_LEADER_OR_FOLLOWER", "partition": 0,
                                              "topic": "nope"}))


def test_the_docs_table_of_per_partition_errors_is_the_codes():
    from pathlib import Path
    from harness.base.steps import REQUEST_STEPS
    docs = (Path(__file__).resolve().parents[2] / "docs" / "scenarios.md").read_text()
    rows = ["| API | faults | errors in one partition's entry (`partition = N`) |", "|---|---|---|"] + [
        f"| `{api}` | every request fault | {', '.join(f'`{e}`' for e in errs)} |" for api, errs in ERRORS.items()]
    table = "\n".join(rows) + "\n"
    assert table in docs, "docs/scenarios.md's table of per-partition errors differs from the code; it should read:\n" \
        + table
    every = docs.split("\"Every request fault\" is ", 1)[1].split(" (the whole answer", 1)[0]
    assert sorted(" ".join(every.split()).replace(" and ", ", ").replace("`", "").split(", ")) == sorted(REQUEST_STEPS)
    for api in ERRORS:  # every request fault takes the API (test_every_other_fault_takes_the_five_apis)
        assert answers.kio_versions(API_KEYS[api])
