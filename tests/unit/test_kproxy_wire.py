"""The request proxy's pure parts, on hand-made bytes: frames, request headers, client ids to members,
rules and their matching, and the error responses kio encodes."""
import asyncio
import io
import struct
import threading

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from harness.kproxy import answers, member_of
from harness.kproxy.rules import (LiveRule, Rule, Seen, delay_request, disconnect, drop_response, error_response,
                                  hold_request)
from harness.kproxy.wire import (API_KEYS, API_NAMES, FrameError, parse_request_head, read_frame, request_bytes,
                                 response_correlation)


def test_api_names_are_the_protocols():
    for name, key in {"JoinGroup": 11, "SyncGroup": 14, "Heartbeat": 12, "LeaveGroup": 13, "OffsetCommit": 8,
                      "OffsetFetch": 9, "ConsumerGroupHeartbeat": 68, "StreamsGroupHeartbeat": 88,
                      "ShareGroupHeartbeat": 76, "Fetch": 1, "FindCoordinator": 10, "Metadata": 3}.items():
        assert API_KEYS[name] == key and API_NAMES[key] == name


def test_request_header_by_hand():
    # SyncGroup v5, correlation id 258, client id "m1", then whatever body
    payload = struct.pack(">hhih", 14, 5, 258, 2) + b"m1" + b"\x00" + b"body"
    head = parse_request_head(payload)
    assert (head.api_key, head.api_version, head.correlation_id, head.client_id, head.api) == \
        (14, 5, 258, "m1", "SyncGroup")
    assert parse_request_head(struct.pack(">hhih", 3, 12, 7, -1)).client_id is None  # a null client id


@pytest.mark.parametrize("payload", [b"\x00\x0e\x00", struct.pack(">hhih", 14, 5, 1, 9) + b"short"])
def test_request_header_cut_short(payload):
    with pytest.raises(FrameError):
        parse_request_head(payload)


def test_request_bytes_round_trip():
    frame = request_bytes(12, 4, 99, "m7", b"xyz", flexible=True)
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    head = parse_request_head(frame[4:])
    assert (head.api, head.api_version, head.correlation_id, head.client_id) == ("Heartbeat", 4, 99, "m7")
    assert response_correlation(struct.pack(">i", 99) + b"rest") == 99


def _read_all(data: bytes):
    async def go():
        r = asyncio.StreamReader()
        r.feed_data(data)
        r.feed_eof()
        out = []
        while (f := await read_frame(r)) is not None:
            out.append(f)
        return out
    return asyncio.run(go())


def test_frames_split_by_size_prefix():
    a, b = request_bytes(3, 12, 1, "m1"), request_bytes(11, 9, 2, "m2", b"\x01" * 300)
    assert [parse_request_head(f).correlation_id for f in _read_all(a + b)] == [1, 2]
    assert _read_all(b"") == []
    with pytest.raises(FrameError):
        _read_all(a + b[:10])  # the stream ends inside a frame
    with pytest.raises(FrameError):
        _read_all(struct.pack(">i", -5))


@pytest.mark.parametrize("client_id,group_id,member", [
    ("m3", None, "m3"),                                              # Python and Java members
    ("g-run-m2-StreamThread-1-consumer", "g-run", "m2"),             # Kafka Streams' clients
    ("g-run-m2-StreamThread-1-restore-consumer", "g-run", "m2"),
    ("g-run-m12-admin", "g-run", "m12"),
    ("g-run-m4-offsets", "g-run", "m4"),                             # a Connect worker's internal clients
    ("connector-consumer-harness-sink-0", "g-run", None),            # a Connect task's: no worker named
    ("rdkafka", "g-run", None), (None, "g-run", None),
    ("g-run-m2-StreamThread-1-consumer", None, "m2"),                # without the group id: the last m<n> part
    ("g-m9-m2-admin", "g-m9", "m2"), ("g-m9-admin", "g-m9", None),   # with it: a group id's own parts never count
])
def test_member_of(client_id, group_id, member):
    assert member_of(client_id, group_id=group_id) == member


def test_rules_validate_when_made():
    with pytest.raises(ValueError, match="unknown Kafka API"):
        delay_request("SyncGroupp", delay_s=1)
    with pytest.raises(ValueError, match="timeout_s"):
        hold_request("SyncGroup", timeout_s=0)
    with pytest.raises(ValueError, match="unknown Kafka error"):
        error_response("JoinGroup", error="NOT_A_COORDINATOR")
    with pytest.raises(ValueError, match="then"):
        drop_response("Heartbeat", then="later")
    with pytest.raises(ValueError, match="delay_s"):
        delay_request("Fetch", delay_s=(2, 1))
    with pytest.raises(ValueError, match="unknown Kafka API 'OffsetComit'"):
        disconnect("OffsetComit")
    with pytest.raises(ValueError, match="disconnect: count must be at least 1, not 0"):
        disconnect("OffsetCommit", count=0)
    with pytest.raises(ValueError, match="disconnect: duration_s must be positive"):
        disconnect("OffsetCommit", duration_s=0)
    with pytest.raises(ValueError, match="disconnect: then is for drop_request and drop_response only"):
        Rule("disconnect", "OffsetCommit", then="pass")


def test_a_disconnect_rule_takes_one_request_by_default_and_describes_itself_without_then():
    d = disconnect("ConsumerGroupHeartbeat", member="m1", broker=2)
    assert (d.action, d.api_key, d.count) == ("disconnect", 68, 1)
    assert d.describe() == {"action": "disconnect", "api": "ConsumerGroupHeartbeat", "member": "m1", "broker": 2,
                            "count": 1}
    live = LiveRule(disconnect("OffsetCommit", member="m1", count=2), rule_id="r1", now=0.0)
    assert live.matches(API_KEYS["OffsetCommit"], "m1", 3, 0.1) and not live.matches(API_KEYS["OffsetCommit"], "m2",
                                                                                      3, 0.1)
    live.take(), live.take()
    assert not live.matches(API_KEYS["OffsetCommit"], "m1", 3, 0.2)


def test_rule_matching_counts_and_lifetimes():
    live = LiveRule(delay_request("SyncGroup", delay_s=1, member="m1", broker=2, count=2), rule_id="r1", now=0.0)
    assert not live.matches(API_KEYS["JoinGroup"], "m1", 2, 0.1)      # another API
    assert not live.matches(API_KEYS["SyncGroup"], "m2", 2, 0.1)      # another member
    assert not live.matches(API_KEYS["SyncGroup"], "m1", 1, 0.1)      # another broker
    assert live.matches(API_KEYS["SyncGroup"], "m1", 2, 0.1)
    live.take(), live.take()
    assert not live.matches(API_KEYS["SyncGroup"], "m1", 2, 0.2)      # its two requests taken
    timed = LiveRule(delay_request("Heartbeat", delay_s=(0.1, 0.3), duration_s=5, seed=3), rule_id="r2", now=10.0)
    assert timed.matches(API_KEYS["Heartbeat"], None, 1, 14.9) and not timed.matches(API_KEYS["Heartbeat"], None, 1, 15.0)
    draws = [timed.draw_delay() for _ in range(20)]
    assert all(0.1 <= d <= 0.3 for d in draws) and len(set(draws)) > 1
    again = LiveRule(delay_request("Heartbeat", delay_s=(0.1, 0.3), seed=3), rule_id="r3", now=0.0)
    assert [again.draw_delay() for _ in range(20)] == draws          # the seed makes the draws


def test_seen_means_another_member_unless_named():
    join = API_KEYS["JoinGroup"]
    assert Seen("JoinGroup").met_by(join, "m2", held_member="m1")
    assert not Seen("JoinGroup").met_by(join, "m1", held_member="m1")
    assert not Seen("JoinGroup").met_by(join, None, held_member="m1")
    assert Seen("JoinGroup", member="m1").met_by(join, "m1", held_member="m1")
    assert not Seen("JoinGroup").met_by(API_KEYS["SyncGroup"], "m2", held_member="m1")
    assert hold_request("SyncGroup", until=[Seen("JoinGroup"), threading.Event()], timeout_s=5).until


def _decode_response(api_key, version, payload):
    _, resp_cls = answers._classes(api_key, version)
    head, n = entity_reader(resp_cls.__header_schema__)(payload, 0)
    body, m = entity_reader(resp_cls)(payload, n)
    assert n + m == len(payload)
    return head, body


def _request_payload(api_key, version, body, corr=41):
    req_cls, _ = answers._classes(api_key, version)
    out = io.BytesIO()
    h = req_cls.__header_schema__
    entity_writer(h)(out, h(request_api_key=api_key, request_api_version=version, correlation_id=corr, client_id="m1"))
    entity_writer(req_cls)(out, body)
    return out.getvalue()


def test_error_responses_of_the_group_apis_encode_at_every_version():
    for name in ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch",
                 "FindCoordinator", "ConsumerGroupHeartbeat", "StreamsGroupHeartbeat", "ShareGroupHeartbeat",
                 "Fetch", "Metadata"):
        key = API_KEYS[name]
        for v in answers.kio_versions(key):
            head, body = _decode_response(key, v, answers.error_response(key, v, None, 7, ErrorCode.not_coordinator))
            assert head.correlation_id == 7
            if hasattr(body, "error_code"):
                assert body.error_code == ErrorCode.not_coordinator, (name, v)


def test_error_response_mirrors_the_request():
    from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
    from kio.schema.offset_commit.v9 import request as oc
    fc = FindCoordinatorRequest(key_type=0, coordinator_keys=("g1", "g2"))
    header, decoded = answers.split_request(10, 4, _request_payload(10, 4, fc))
    assert decoded == fc and header.correlation_id == 41
    _, body = _decode_response(10, 4, answers.error_response(10, 4, decoded, 41, ErrorCode.not_coordinator))
    assert [(c.key, c.error_code) for c in body.coordinators] == [("g1", ErrorCode.not_coordinator),
                                                                   ("g2", ErrorCode.not_coordinator)]
    commit = oc.OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=3, member_id="x", group_instance_id=None,
                                    topics=(oc.OffsetCommitRequestTopic(name="t", partitions=(
                                        oc.OffsetCommitRequestPartition(partition_index=2, committed_offset=5,
                                                                        committed_leader_epoch=-1,
                                                                        committed_metadata=None),)),))
    _, body = _decode_response(8, 9, answers.error_response(8, 9, commit, 1, ErrorCode.rebalance_in_progress))
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in body.topics] == \
        [("t", [(2, ErrorCode.rebalance_in_progress)])]


def test_an_error_answer_to_describe_configs_refuses_each_resource_asked_for():
    """The harness's own admin client reads the group settings with DescribeConfigs: an error answer names each
    resource with the error, as a broker refusing it would, so the client reports the refusal per resource."""
    from kio.schema.describe_configs.v4 import request as dc
    ask = dc.DescribeConfigsRequest(resources=(dc.DescribeConfigsResource(resource_type=4, resource_name="1",
                                                                          configuration_keys=None),),
                                    include_synonyms=False, include_documentation=False)
    _, decoded = answers.split_request(32, 4, _request_payload(32, 4, ask))
    _, body = _decode_response(32, 4, answers.error_response(32, 4, decoded, 9,
                                                             ErrorCode.cluster_authorization_failed))
    assert [(r.resource_type, r.resource_name, r.error_code, r.configs) for r in body.results] == \
        [(4, "1", ErrorCode.cluster_authorization_failed, ())]


def test_error_names_and_install_checks():
    assert answers.error_code_of("NOT_COORDINATOR") == ErrorCode.not_coordinator == answers.error_code_of(16)
    assert answers.error_code_of("FENCED_MEMBER_EPOCH") == ErrorCode.fenced_member_epoch
    answers.check_answerable(API_KEYS["JoinGroup"], range(0, 10))
    answers.check_answerable(API_KEYS["JoinGroup"], None)
    with pytest.raises(answers.Unanswerable, match="the brokers offer v0-1 and kio encodes v0-0"):
        answers.check_answerable(API_KEYS["StreamsGroupHeartbeat"], range(0, 2))


def test_api_versions_question_and_answer():
    frame = answers.api_versions_request(5)
    head = parse_request_head(frame[4:])
    assert (head.api, head.api_version, head.correlation_id) == ("ApiVersions", 3, 5)
    _, resp_cls = answers._classes(18, 3)
    from kio.schema.api_versions.v3.response import ApiVersion
    out = io.BytesIO()
    entity_writer(resp_cls.__header_schema__)(out, resp_cls.__header_schema__(correlation_id=5))
    entity_writer(resp_cls)(out, resp_cls(error_code=ErrorCode.none, throttle_time=answers.datetime.timedelta(0),
                                         api_keys=(ApiVersion(api_key=11, min_version=0, max_version=9),)))
    assert answers.offered_versions(out.getvalue()) == {11: range(0, 10)}
