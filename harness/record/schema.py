"""Check history files against harness/record/history.schema.json, the one machine-readable source of the format.

    validate_dir(run_dir / "history")  -> ["member-m1.jsonl:7: (assigned) partitions[0][1]: 'x' is not of type 'integer'", ...]

The schema says what one line may be (a header, or an event of a known type with its fields) and, per
header `source`, which event types a file may hold. Everything is checked by `jsonschema`; this module
only picks the schema for a line and words the problems as "file:line: message". As the readers do
(harness/record/history.py), a torn last line (no newline: a writer killed mid-write) and blank lines are skipped.

Standard library and jsonschema only. `python -m harness.record.schema HISTORY_DIR...` prints the
problems and exits 1 if there are any.
"""
from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path

import jsonschema

from harness.record.format import GLOB

SCHEMA_PATH = Path(__file__).with_name("history.schema.json")
MAX_PROBLEMS_PER_FILE = 100


@lru_cache(maxsize=1)
def _schema_text() -> str:
    return SCHEMA_PATH.read_text()


def load_schema() -> dict:
    """The schema (a fresh copy: callers may change it)."""
    return json.loads(_schema_text())


def event_types() -> list[str]:
    """Every event type the schema knows, in its order."""
    return list(load_schema()["$defs"]["events"])


def sources() -> dict[str, list[str]]:
    """Per header source, the event types its file may hold."""
    return {s: d["properties"]["type"]["enum"] for s, d in load_schema()["$defs"]["sources"].items()}


def _check(schema: dict) -> jsonschema.Draft202012Validator:
    """A validator of `schema`, whose $refs point into the history schema's $defs."""
    root = load_schema()
    schema = {"$schema": root["$schema"], "$defs": root["$defs"], **schema}
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@lru_cache(maxsize=None)
def _validator(ref: str) -> jsonschema.Draft202012Validator:
    """A validator of one part of the schema, e.g. "#/$defs/header"."""
    return _check({"$ref": ref})


@lru_cache(maxsize=None)
def _event_validator(type_: str, source: str | None, member: str | None) -> jsonschema.Draft202012Validator:
    """A validator of one known event type, in a file of this source (and member).

    The same as "#/$defs/event" (which picks "#/$defs/events/<type>" by the event's type; a unit test
    holds the two in step) with the source's rules added, but without trying every type's `if`: a
    history has many thousands of events and jsonschema takes ~0.6 ms for the whole chain."""
    parts = [{"$ref": "#/$defs/event_common"}, {"$ref": f"#/$defs/events/{type_}"}]
    if source is not None:
        parts.append({"$ref": f"#/$defs/sources/{source}"})
    if source == "member" and member is not None:
        parts.append({"properties": {"member": {"const": member}}})  # the file's member, if it names one
    return _check({"allOf": parts})


def _where(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _problems(validator: jsonschema.Draft202012Validator, obj, *, source: str | None = None) -> list[str]:
    out = []
    for err in sorted(validator.iter_errors(obj), key=lambda e: (list(map(str, e.absolute_path)), e.message)):
        path = list(err.absolute_path)
        if path == ["type"] and err.validator == "enum" and isinstance(obj, dict):
            if obj.get("type") in _known_types():
                out.append(f"type: {obj['type']!r} is not an event of a {source!r} file")
            else:
                out.append(f"type: unknown event type {err.instance!r}")
        elif path == ["member"] and err.validator == "const":
            out.append(f"member: {err.instance!r} is not the file's member {err.validator_value!r}")
        else:
            out.append((_where(path) + ": " if path else "") + err.message)
    return out


@lru_cache(maxsize=1)
def _known_types() -> frozenset:
    return frozenset(event_types())


@lru_cache(maxsize=1)
def _known_sources() -> frozenset:
    return frozenset(sources())


def _event_problems(event, source: str | None, member: str | None) -> list[str]:
    """The problems of one event in a file of this source and member (None: not known, the header is bad)."""
    ty = event.get("type") if isinstance(event, dict) else None
    if not isinstance(ty, str) or ty not in _known_types():
        return _problems(_validator("#/$defs/event"), event)
    src = source if source in _known_sources() else None
    probs = _problems(_event_validator(ty, src, member if isinstance(member, str) else None), event, source=src)
    return [f"({ty}) {p}" for p in probs]


def validate_header(header) -> list[str]:
    """The problems of a header line (an empty list: it is a valid header)."""
    return _problems(_validator("#/$defs/header"), header)


def validate_line(header, event) -> list[str]:
    """The problems of one event line of a file with this header: the header's own problems first
    ("header: ..."), then the event's, checked against its type and the header's source."""
    probs = ["header: " + p for p in validate_header(header)]
    ok_header = not probs
    source = header.get("source") if ok_header else None
    member = header.get("member") if ok_header else None
    return probs + _event_problems(event, source, member)


def validate_file(path) -> list[str]:
    """The problems of one history file, each as "file:line: message"."""
    path = Path(path)
    name = path.name
    try:
        data = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return [f"{name}:0: cannot read: {e}"]
    lines = data.split("\n")[:-1]  # the text after the last newline: empty, or a torn line
    if not lines:
        return [f"{name}:1: empty history file (no header line)"]
    out: list[str] = []

    def parse(n: int, line: str):
        try:
            return json.loads(line)
        except json.JSONDecodeError as e:
            out.append(f"{name}:{n}: not JSON: {e}")
            return None

    header = parse(1, lines[0])
    source = member = None
    if header is not None:
        hp = validate_header(header)
        out += [f"{name}:1: header: {p}" for p in hp]
        if not hp:
            source, member = header["source"], header["member"]
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        ev = parse(n, line)
        if ev is not None:
            out += [f"{name}:{n}: {p}" for p in _event_problems(ev, source, member)]
        if len(out) > MAX_PROBLEMS_PER_FILE:
            rest = sum(1 for x in lines[n:] if x.strip())
            out = out[:MAX_PROBLEMS_PER_FILE] + [f"{name}:{n}: ... stopped after {MAX_PROBLEMS_PER_FILE} problems "
                                                 f"({rest} more lines not checked)"]
            break
    return out


def validate_dir(history_dir) -> list[str]:
    """The problems of every `*.jsonl` file of a run's history directory (what History.load reads)."""
    d = Path(history_dir)
    files = sorted(d.glob(GLOB))
    if not files:
        return [f"{d}: no history files ({GLOB})"]
    return [p for f in files for p in validate_file(f)]


def main(argv: list[str] | None = None) -> int:
    dirs = sys.argv[1:] if argv is None else argv
    if not dirs:
        print("usage: python -m harness.record.schema HISTORY_DIR_OR_FILE...", file=sys.stderr)
        return 2
    bad = 0
    for d in dirs:
        probs = validate_file(d) if Path(d).is_file() else validate_dir(d)
        for p in probs:
            print(Path(d).parent / p if Path(d).is_file() else Path(d) / p)
        bad += len(probs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
