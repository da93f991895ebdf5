"""The columns of a history line, generated from harness/record/history.schema.json (the one source of the format):
the analytics job reads the histories with them (harness/analytics/schemas.py turns them into Spark types).
Pure Python, no Spark.

Every field the schema names, in the header, in every event (`event_common`) or in an event type
(`events/<type>`, with its conditional parts), is one column. A field's column type is the union of what the
schema allows for it wherever it names it:

- only integers: `long`; numbers (integers or not): `double`; only booleans: `boolean`;
- an array: `array` of the union of its items (a `[topic, partition]` pair: an array of `string`, the
  partition read as its text and cast where it is used);
- strings, objects, or anything mixed (the header's `version` is 1, a `broker_event`'s is "4.1.0"): `string`,
  which Spark fills with the value's JSON text.

So no line the schema allows is unparsable under these columns, and a new field in the schema is a new column
without an edit here.
"""
from __future__ import annotations

from harness.record.schema import load_schema

#: JSON types of a value
ANY = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})


def _json_type(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(v)]


def _allowed(node, defs: dict, depth: int = 0) -> tuple[frozenset, object]:
    """(the JSON types a value of `node` may have, the items' (types, items) when it may be an array)."""
    if depth > 20:
        raise ValueError("history schema: $ref nesting too deep")
    if node is True or node == {}:
        return ANY, None
    if node is False:
        return frozenset(), None
    if "$ref" in node:
        name = node["$ref"].removeprefix("#/$defs/")
        base = defs
        for part in name.split("/"):
            base = base[part]
        return _allowed(base, defs, depth + 1)
    kinds: set = set()
    items = None
    if "const" in node:
        kinds.add(_json_type(node["const"]))
    if "enum" in node:
        kinds.update(_json_type(v) for v in node["enum"])
    if "type" in node:
        kinds.update([node["type"]] if isinstance(node["type"], str) else node["type"])
    for sub in [*node.get("oneOf", ()), *node.get("anyOf", ())]:
        k, i = _allowed(sub, defs, depth + 1)
        kinds |= k
        items = _merge(items, i)
    if not kinds and not any(k in node for k in ("const", "enum", "type", "oneOf", "anyOf")):
        return ANY, None
    if "array" in kinds:
        subs = [*node.get("prefixItems", ()), *([node["items"]] if isinstance(node.get("items"), dict) else [])]
        for sub in subs or [True]:
            items = _merge(items, _allowed(sub, defs, depth + 1))
    return frozenset(kinds), items


def _merge(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a[0] | b[0], _merge(a[1], b[1])


def column_type(allowed) -> object:
    """`long`, `double`, `boolean`, `string`, or ("array", element type) for what a field allows."""
    kinds, items = allowed
    kinds = kinds - {"null"}
    if kinds == {"integer"}:
        return "long"
    if kinds and kinds <= {"integer", "number"}:
        return "double"
    if kinds == {"boolean"}:
        return "boolean"
    if kinds == {"array"}:
        return ("array", column_type(items or (ANY, None)))
    return "string"


def _field_schemas(schema: dict):
    """(name, schema) of every field the history schema names, header first, then every event's."""
    defs = schema["$defs"]
    yield from defs["header"]["properties"].items()
    yield from defs["event_common"]["properties"].items()
    for ev in defs["events"].values():
        for part in (ev, ev.get("then") or {}):
            yield from (part.get("properties") or {}).items()


def columns(schema: dict | None = None) -> dict[str, object]:
    """Field name -> column type, for every field of the history schema (harness/record/history.schema.json)."""
    schema = schema or load_schema()
    allowed: dict[str, tuple] = {}
    for name, node in _field_schemas(schema):
        allowed[name] = _merge(allowed.get(name), _allowed(node, schema["$defs"]))
    return {name: column_type(a) for name, a in allowed.items()}
