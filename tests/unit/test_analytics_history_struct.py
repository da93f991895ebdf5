"""Spark's history schema is generated from harness/record/history.schema.json (harness/analytics/history_struct.py):
it covers every field the schema names, typed so that no line the schema allows is unparsable."""
from __future__ import annotations

import pytest

from harness.analytics.history_struct import column_type, columns, _allowed
from harness.record.schema import load_schema


def _schema_fields(schema: dict) -> set[str]:
    """Every field name the history schema gives a definition, read here without history_struct."""
    defs = schema["$defs"]
    names = set(defs["header"]["properties"]) | set(defs["event_common"]["properties"])
    for ev in defs["events"].values():
        names |= set(ev.get("properties", {})) | set((ev.get("then") or {}).get("properties", {}))
    return names


def test_the_spark_schema_covers_every_field_of_the_history_schema():
    pytest.importorskip("pyspark")
    from pyspark.sql.types import ArrayType, DoubleType, LongType, StringType

    from harness.analytics import schemas
    spark = {f.name: f.dataType for f in schemas.HISTORY.fields}
    missing = _schema_fields(load_schema()) - set(spark)
    assert not missing, f"history fields the Spark schema lacks: {sorted(missing)}"
    assert schemas.CORRUPT in spark
    # what the job reads, typed as it needs them
    assert spark["type"] == StringType() and spark["mono"] == DoubleType() and spark["member"] == StringType()
    assert spark["partitions"] == ArrayType(ArrayType(StringType()))
    assert spark["schema"] == StringType() and spark["version"] == StringType()  # header: 1; broker_event: "4.1.0"
    assert spark["partition"] == LongType()


def test_a_field_added_to_the_history_schema_is_a_column():
    schema = load_schema()
    schema["$defs"]["events"]["assigned"]["properties"]["new_field"] = {"type": "integer"}
    assert columns(schema)["new_field"] == "long"


@pytest.mark.parametrize("node, want", [
    ({"type": "integer"}, "long"),
    ({"type": ["integer", "null"]}, "long"),
    ({"type": "number"}, "double"),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, "double"),
    ({"type": "boolean"}, "boolean"),
    ({"enum": ["a", "b"]}, "string"),
    ({"const": 1}, "long"),
    ({"type": "object"}, "string"),
    ({}, "string"),
    ({"type": ["string", "integer"]}, "string"),
    ({"type": "array", "items": {"type": "string"}}, ("array", "string")),
    ({"$ref": "#/$defs/partitions"}, ("array", ("array", "string"))),
])
def test_column_types(node, want):
    assert column_type(_allowed(node, load_schema()["$defs"])) == want


def test_a_field_typed_differently_by_two_events_is_a_string():
    schema = load_schema()
    schema["$defs"]["events"]["assigned"]["properties"]["x"] = {"type": "integer"}
    schema["$defs"]["events"]["revoked"]["properties"]["x"] = {"type": "boolean"}
    assert columns(schema)["x"] == "string"
    assert columns()["version"] == "string"  # the header's const 1, broker_event's text
