"""harness/record/history.schema.json is the one source of the history format: the docs agree with it, it tells
good lines from bad ones, and the harness's own writers write lines it accepts.

(The members' real output, Java and Streams included, is checked in the integration tests that run them:
test_member_contract.py, test_streams_misbehaving.py, test_replay.py.)
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import jsonschema
import pytest

from harness.plan.kinds.settings import client_settings
from harness.record import schema as hs
from harness.record.history import HistoryWriter, read_file

ROOT = Path(__file__).resolve().parents[2]
DOCS = {"history.md": ROOT / "docs" / "history.md", "streams.md": ROOT / "docs" / "streams.md"}
COMMON = {"type", "mono", "wall", "member"}
# the doc section whose event table lists a source's events
SECTION_SOURCE = {"Member events": "member", "Producer events": "producer", "Harness events": "harness",
                  "Output events": "harness-output", "Its history": "member", "Broker events": "broker-log"}


# ---------------------------------------------------------------- the docs' event tables

def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _names(text: str) -> list[str]:
    """The backquoted names in a cell, leaving out what is in parentheses (values, explanations)."""
    while True:
        stripped = re.sub(r"\([^()]*\)", "", text)
        if stripped == text:
            break
        text = stripped
    return [n for n in re.findall(r"`([^`]+)`", text) if re.fullmatch(r"[a-z_][a-z0-9_]*", n)]


def doc_rows() -> list[dict]:
    """Every row of an event table (first column `type` or `event`, a `fields` column) of both docs."""
    rows = []
    for doc, path in DOCS.items():
        lines = path.read_text().splitlines()
        section = None
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.startswith("## "):
                section = line[3:].strip()
            if line.startswith("|") and i + 1 < len(lines) and re.match(r"\|[-| ]+\|$", lines[i + 1].strip()):
                head = _cells(line)
                i += 2
                body = []
                while i < len(lines) and lines[i].startswith("|"):
                    body.append(_cells(lines[i]))
                    i += 1
                if head[0] in ("type", "event") and "fields" in head:
                    f = head.index("fields")
                    for cells in body:
                        rows.append({"doc": doc, "section": section, "types": _names(cells[0]),
                                     "fields": set(_names(cells[f])), "text": cells[f]})
                continue
            i += 1
    return rows


def _props(type_: str) -> set[str]:
    return set(hs.load_schema()["$defs"]["events"][type_].get("properties", {}))


def test_the_docs_have_event_tables():
    rows = doc_rows()
    assert {r["doc"] for r in rows} == set(DOCS)
    assert all(r["types"] for r in rows), [r for r in rows if not r["types"]]


def test_every_documented_event_type_is_in_the_schema_and_every_schema_type_is_documented():
    documented = {t for r in doc_rows() for t in r["types"]}
    schema = set(hs.event_types())
    assert documented - schema == set(), "documented but not in harness/record/history.schema.json"
    assert schema - documented == set(), "in harness/record/history.schema.json but in no table of docs/history.md or streams.md"


def test_documented_fields_are_in_the_schema():
    """A row's fields belong to (at least one of) its types in the schema."""
    bad = []
    for r in doc_rows():
        for f in r["fields"] - COMMON:
            if not any(f in _props(t) for t in r["types"]):
                bad.append(f"{r['doc']}: {'/'.join(r['types'])}: field {f!r} is not in the schema")
    assert bad == []


def test_every_schema_field_is_documented():
    """Each field the schema lists for a type (required or optional) is named in a doc row of that type."""
    documented: dict[str, set[str]] = {}
    for r in doc_rows():
        for t in r["types"]:
            documented.setdefault(t, set()).update(r["fields"])
    bad = [f"{t}: {sorted(_props(t) - COMMON - documented.get(t, set()))} not documented"
           for t in hs.event_types() if _props(t) - COMMON - documented.get(t, set())]
    assert bad == []


def test_documented_sections_match_the_sources():
    sources = hs.sources()
    bad = []
    for r in doc_rows():
        src = SECTION_SOURCE.get(r["section"])
        assert src, f"{r['doc']}: event table under an unknown section {r['section']!r}"
        bad += [f"{r['doc']} {r['section']}: {t} is not a {src!r} event" for t in r["types"] if t not in sources[src]]
    assert bad == []


def test_the_doc_states_the_schema_is_the_source():
    assert "harness/record/history.schema.json" in DOCS["history.md"].read_text()


# ---------------------------------------------------------------- the schema itself

def test_schema_is_valid_draft_2020_12():
    s = hs.load_schema()
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(s)


def test_schema_parts_are_in_step():
    """The type enum, the per-type dispatch of $defs/event, $defs/events and $defs/sources name the same types,
    each dispatched to its own definition (history_schema validates per type, the same as the dispatch)."""
    d = hs.load_schema()["$defs"]
    types = list(d["events"])
    assert d["event_common"]["properties"]["type"]["enum"] == types
    dispatch = {b["if"]["properties"]["type"]["const"]: b["then"]["$ref"] for b in d["event"]["allOf"]}
    assert dispatch == {t: f"#/$defs/events/{t}" for t in types}
    by_source = [t for src in hs.sources().values() for t in src]
    assert sorted(by_source) == sorted(types), "each event type belongs to exactly one source"
    assert set(hs.sources()) == set(d["header"]["properties"]["source"]["enum"])
    for t in types:  # required fields are declared with their types
        assert set(d["events"][t].get("required", [])) <= set(d["events"][t]["properties"]), t


# ---------------------------------------------------------------- good and bad lines

HEADER = {"type": "header", "schema": "rebalance-history", "version": 1, "source": "member", "member": "m1"}
HARNESS = {"type": "header", "schema": "rebalance-history", "version": 1, "source": "harness", "member": None}
PRODUCER = {"type": "header", "schema": "rebalance-history", "version": 1, "source": "producer", "member": "producer"}
OUTPUT = {"type": "header", "schema": "rebalance-history", "version": 1, "source": "harness-output", "member": None}
T = {"mono": 12.5, "wall": 1_760_000_000.25}

GOOD = [
    (HEADER, {"type": "started", **T, "member": "m1", "pid": 42, "protocol": "classic-cooperative", "group_id": "g",
              "topic": "t", "instance_id": None, "rack": "r0", "client": "confluent-kafka 2.6.0 librdkafka 2.6.0"}),
    (HEADER, {"type": "assigned", **T, "member": "m1", "partitions": [["t", 0], ["t", 5]]}),
    (HEADER, {"type": "revoked", **T, "member": "m1", "partitions": []}),
    (HEADER, {"type": "processed", **T, "member": "m1", "topic": "t", "partition": 3, "first_offset": 0,
              "last_offset": 9, "count": 10}),
    (HEADER, {"type": "committed", **T, "member": "m1", "offsets": [["t", 3, 10]], "ok": False, "error": "REBALANCE",
              "requested_mono": 12.4}),
    (HEADER, {"type": "error", **T, "member": "m1", "fatal": True, "error": "fenced"}),
    (HEADER, {"type": "error", **T, "member": "m1", "error": "java.lang.IllegalStateException"}),  # Streams: no fatal
    (HEADER, {"type": "started", **T, "member": "m1", "pid": 7, "protocol": "streams", "group_id": "g", "topic": "t",
              "instance_id": None, "rack": None, "client": "kafka-streams", "client_version": "4.3.1", "threads": 1,
              "settings": {"num.standby.replicas": "1"}, "restore_records_per_second": 1000.0}),
    (HEADER, {"type": "tasks", **T, "member": "m1", "active": {"0_1": "StreamThread-1"}, "standby": {},
              "lags": {"0_1": 0, "0_4": 1200}, "state": "RUNNING"}),
    (HEADER, {"type": "task_active_end", **T, "member": "m1", "task": "0_4", "thread": "StreamThread-1",
              "partitions": [["t", 4]]}),
    (PRODUCER, {"type": "acked", **T, "topic": "t", "partition": 1, "offset": 7, "key": "k12", "seq": 3}),
    (HARNESS, {"type": "run_start", **T, "run_id": "r", "scenario": "streams-scale-out", "seed": 1, "kind": "streams",
               "settings": {"topic": "t"}, "streams_settings": {"tasks": 6}}),
    (HARNESS, {"type": "run_start", **T, "run_id": "r", "scenario": "member-kill", "seed": 1, "settings": {}}),
    (HARNESS, {"type": "fault_start", **T, "fault_id": "f1", "kind": "rack_outage", "targets": ["r0"],
               "members_affected": ["m1"], "brokers_affected": [1]}),
    (HARNESS, {"type": "member_exit", **T, "member": "m1", "how": "kill", "code": -9}),
    (HARNESS, {"type": "action_end", **T, "action_id": "a1", "kind": "scale_out", "ok": True, "error": None,
               "member": "m4"}),
    (OUTPUT, {"type": "output_read", **T, "topic": "t", "output_topic": "t-out", "records": 3, "complete": True,
              "end_offsets": {"0": 2, "1": 1}}),
]


@pytest.mark.parametrize("header, event", GOOD, ids=[f"{h['source']}-{e['type']}" for h, e in GOOD])
def test_valid_lines_pass(header, event):
    assert hs.validate_header(header) == []
    assert hs.validate_line(header, event) == []
    assert list(jsonschema.Draft202012Validator(hs.load_schema()).iter_errors(event)) == []  # the whole schema too


ASSIGNED = {"type": "assigned", **T, "member": "m1", "partitions": [["t", 0]]}
BAD = [
    ("missing mono", HEADER, {k: v for k, v in ASSIGNED.items() if k != "mono"}, "'mono' is a required property"),
    ("mono not a number", HEADER, {**ASSIGNED, "mono": "12.5"}, "mono: '12.5' is not of type 'number'"),
    ("partitions not a list", HEADER, {**ASSIGNED, "partitions": "t-0"}, "partitions: 't-0' is not of type 'array'"),
    ("partition a string", HEADER, {**ASSIGNED, "partitions": [["t", "0"]]},
     "partitions[0][1]: '0' is not of type 'integer'"),
    ("pair of three", HEADER, {**ASSIGNED, "partitions": [["t", 0, 1]]}, "partitions[0]: Expected at most 2 items"),
    ("partitions as objects", HEADER, {**ASSIGNED, "partitions": [{"topic": "t", "partition": 0}]},
     "partitions[0]: {'topic': 't', 'partition': 0} is not of type 'array'"),
    ("unknown type", HEADER, {**T, "type": "partitions_assigned", "member": "m1"},
     "type: unknown event type 'partitions_assigned'"),
    ("missing type", HEADER, {**T, "member": "m1"}, "'type' is a required property"),
    ("a header as an event", HEADER, dict(HEADER), "type: unknown event type 'header'"),
    ("wrong source", HEADER, {"type": "acked", **T, "member": "m1", "topic": "t", "partition": 0, "offset": 0,
                              "key": "k1", "seq": 0}, "type: 'acked' is not an event of a 'member' file"),
    ("member event without member", HEADER, {k: v for k, v in ASSIGNED.items() if k != "member"},
     "'member' is a required property"),
    ("another member", HEADER, {**ASSIGNED, "member": "m2"}, "member: 'm2' is not the file's member 'm1'"),
    ("bad how", HARNESS, {"type": "member_exit", **T, "member": "m1", "how": "vanished", "code": 1},
     "how: 'vanished' is not one of"),
    ("streams run without streams_settings", HARNESS,
     {"type": "run_start", **T, "run_id": "r", "scenario": "s", "seed": 1, "kind": "streams", "settings": {}},
     "'streams_settings' is a required property"),
    ("bad kind", HARNESS, {"type": "run_start", **T, "run_id": "r", "scenario": "s", "seed": 1, "kind": "batch",
                           "settings": {}}, "kind: 'batch' is not one of"),
    ("streams started without its version", HEADER,
     {"type": "started", **T, "member": "m1", "pid": 7, "protocol": "streams", "group_id": "g", "topic": "t",
      "instance_id": None, "rack": None, "client": "kafka-streams", "threads": 1, "settings": {}},
     "'client_version' is a required property"),
    ("committed offsets as pairs", HEADER, {"type": "committed", **T, "member": "m1", "offsets": [["t", 0]], "ok": True,
                                            "error": None}, "offsets[0]: ['t', 0] is too short"),
    ("task not a task id", HEADER, {"type": "task_active", **T, "member": "m1", "task": "task-1", "thread": "x",
                                    "partitions": [["t", 1]]}, "task: 'task-1' does not match"),
]


@pytest.mark.parametrize("what, header, event, message", BAD, ids=[b[0] for b in BAD])
def test_invalid_lines_fail(what, header, event, message):
    probs = hs.validate_line(header, event)
    assert any(message in p for p in probs), probs


@pytest.mark.parametrize("header, message", [
    ({**HEADER, "version": 2}, "version: 1 was expected"),
    ({**HEADER, "schema": "other"}, "schema: 'rebalance-history' was expected"),
    ({**HEADER, "source": "consumer"}, "source: 'consumer' is not one of"),
    ({k: v for k, v in HEADER.items() if k != "member"}, "'member' is a required property"),
    ({**HEADER, "member": None}, "member: None is not of type 'string'"),
])
def test_invalid_headers_fail(header, message):
    probs = hs.validate_header(header)
    assert any(message in p for p in probs), probs
    assert any(p.startswith("header: ") and message in p for p in hs.validate_line(header, ASSIGNED))


def _write(path: Path, *lines: str, torn: str = "") -> Path:
    path.write_text("".join(line + "\n" for line in lines) + torn)
    return path


def test_validate_file_names_file_and_line(tmp_path):
    f = _write(tmp_path / "member-m1.jsonl", json.dumps(HEADER), json.dumps(ASSIGNED),
               json.dumps({**ASSIGNED, "partitions": [["t", "x"]]}), "{not json", "",
               json.dumps({**ASSIGNED, "mono": None}), torn='{"type":"processed","mo')
    probs = hs.validate_file(f)
    assert probs[0] == "member-m1.jsonl:3: (assigned) partitions[0][1]: 'x' is not of type 'integer'"
    assert probs[1].startswith("member-m1.jsonl:4: not JSON:")
    assert probs[2] == "member-m1.jsonl:6: (assigned) mono: None is not of type 'number'"
    assert len(probs) == 3  # the blank line and the torn last line are skipped, as the readers do


def test_validate_file_header_problems(tmp_path):
    f = _write(tmp_path / "harness.jsonl", json.dumps({**HARNESS, "version": 2}),
               json.dumps({"type": "drained", **T, "ok": True, "missing": 0}))
    assert hs.validate_file(f) == ["harness.jsonl:1: header: version: 1 was expected"]
    assert hs.validate_file(_write(tmp_path / "empty.jsonl")) == ["empty.jsonl:1: empty history file (no header line)"]


def test_validate_dir(tmp_path):
    _write(tmp_path / "producer.jsonl", json.dumps(PRODUCER),
           json.dumps({"type": "acked", **T, "topic": "t", "partition": 0, "offset": 0, "key": "k1", "seq": 0}))
    _write(tmp_path / "harness.jsonl", json.dumps(HARNESS), json.dumps({"type": "run_end", **T, "status": "done"}))
    assert hs.validate_dir(tmp_path) == ["harness.jsonl:2: (run_end) status: 'done' is not one of "
                                         "['complete', 'aborted']"]
    assert hs.validate_dir(tmp_path / "nothing") == [f"{tmp_path / 'nothing'}: no history files (*.jsonl)"]


def test_problems_are_capped_per_file(tmp_path):
    bad = json.dumps({**ASSIGNED, "partitions": "x"})
    probs = hs.validate_file(_write(tmp_path / "member-m1.jsonl", json.dumps(HEADER), *[bad] * 300))
    assert len(probs) == hs.MAX_PROBLEMS_PER_FILE + 1 and "stopped after" in probs[-1]


def test_command_line(tmp_path, capsys):
    _write(tmp_path / "harness.jsonl", json.dumps(HARNESS), json.dumps({"type": "nope", **T}))
    assert hs.main([str(tmp_path)]) == 1
    assert f"{tmp_path / 'harness.jsonl'}:2: type: unknown event type 'nope'" in capsys.readouterr().out
    _write(tmp_path / "harness.jsonl", json.dumps(HARNESS), json.dumps({"type": "fault_end", **T, "fault_id": "f1"}))
    assert hs.main([str(tmp_path)]) == 0


# ---------------------------------------------------------------- the harness's own writers

def test_history_writer_lines_validate(tmp_path):
    with HistoryWriter(tmp_path / "harness.jsonl", source="harness", member=None) as w:
        w.event("run_start", run_id="r1", scenario="member-kill", seed=3, kind="consumer", settings={"topic": "t"})
        w.event("wait_timeout", what="initial assignment", timeout_s=60.0)
        w.event("broker_event", broker=2, what="start", version="4.3.1", pid=1234)
        w.event("run_end", status="aborted", error="interrupted")
    with HistoryWriter(tmp_path / "output.jsonl", source="harness-output", member=None) as w:
        w.event("output", topic="t", partition=1, offset=5, out_partition=1, out_offset=0)
    assert hs.validate_dir(tmp_path) == []
    # and the readers read what the schema accepts
    assert [e["type"] for e in read_file(tmp_path / "harness.jsonl")[1]][0] == "run_start"


class _Msg:
    def __init__(self, key: str, seq: int, offset: int) -> None:
        self._key, self._seq, self._offset = key, seq, offset

    def key(self):
        return self._key.encode()

    def value(self):
        return f"{self._key}:{self._seq}".encode()

    def topic(self):
        return "t"

    def partition(self):
        return 2

    def offset(self):
        return self._offset


def test_workload_lines_validate(tmp_path):
    """The producer's delivery callback, fed what confluent-kafka hands it (no broker needed)."""
    from confluent_kafka import KafkaError

    from harness.members.workload import Workload
    w = Workload(bootstrap="127.0.0.1:9", topics=["t"], history_path=tmp_path / "producer.jsonl")
    try:
        w._on_delivery(None, _Msg("k3", 0, 17))
        w._on_delivery(KafkaError(KafkaError._MSG_TIMED_OUT), _Msg("k4", 1, -1001))
    finally:
        w.hist.close()
    _, events = read_file(tmp_path / "producer.jsonl")
    assert [e["type"] for e in events] == ["acked", "failed"]
    assert hs.validate_dir(tmp_path) == []


def test_member_pool_and_python_member_lines_validate(tmp_path):
    """The real pool (member_start / member_stop / member_exit through a HistoryWriter, as the runner wires it)
    and the real Python member against a bootstrap nobody listens on: it writes `started` on subscribe and
    `stopped` on SIGTERM without a broker; a second member is killed, a third crashes at start."""
    from harness.base.errors import SetupError
    from harness.members.pool import MemberPool, MemberSpec
    hist_dir, logs = tmp_path / "history", tmp_path / "logs"
    logs.mkdir()
    with HistoryWriter(hist_dir / "harness.jsonl", source="harness", member=None) as h:
        pool = MemberPool(merge_settings=client_settings, bootstrap="127.0.0.1:9", group_id="g", topic="t", history_dir=hist_dir, log_dir=logs,
                          on_event=h.event, client_config={"session.timeout.ms": 6000})
        try:
            m1 = pool.start(MemberSpec(protocol="classic-cooperative", rack="r0"), wait_s=60)
            m2 = pool.start(MemberSpec(protocol="consumer", instance_id="g-s1"), wait_s=60)
            pool.stop(m1)
            pool.kill(m2)
            with pytest.raises(SetupError):
                pool.start(MemberSpec(protocol="classic-eager", command=(sys.executable, "-c", "raise SystemExit(3)")),
                           wait_s=30)
        finally:
            pool.kill_all()
    types = [e["type"] for e in read_file(hist_dir / "harness.jsonl")[1]]
    assert types.count("member_start") == 3 and "member_stop" in types and types.count("member_exit") == 3, types
    member_types = [e["type"] for e in read_file(hist_dir / "member-m1.jsonl")[1]]
    assert member_types[0] == "started" and member_types[-1] == "stopped", member_types
    assert hs.validate_dir(hist_dir) == []


def test_a_control_events_ways_to_subscribe_are_the_vocabularys():
    from harness.base.vocabulary import SUBSCRIBE_BY
    props = hs.load_schema()["$defs"]["events"]["control"]["properties"]
    assert tuple(props["subscribe_by"]["enum"]) == SUBSCRIBE_BY
