"""The explicit Spark schemas: what the job reads (history lines) and the tables it writes."""
from __future__ import annotations

from pyspark.sql.types import (ArrayType, DoubleType, IntegerType, LongType, StringType, StructField,
                               StructType, TimestampType)

CORRUPT = "_corrupt_record"

#: the fields of a history line the job needs (docs/history.md); every other field is ignored.
#: ``partitions`` is a list of [topic, partition] pairs: read as strings, the partition cast later.
HISTORY = StructType([
    StructField("type", StringType()),
    StructField("mono", DoubleType()),
    StructField("member", StringType()),
    StructField("partitions", ArrayType(ArrayType(StringType()))),
    StructField("schema", StringType()),
    StructField("version", StringType()),  # a string: broker_event has a version "4.1.0" too
    StructField(CORRUPT, StringType()),
])

RUNS = StructType([
    StructField("run_id", StringType(), False),
    StructField("run_dir", StringType(), False),
    StructField("scenario", StringType()),
    StructField("protocol", StringType()),
    StructField("seed", LongType()),
    StructField("kafka_version", StringType()),
    StructField("client_library", StringType()),
    StructField("client_version", StringType()),
    StructField("backend", StringType()),
    StructField("status", StringType()),
    StructField("duration_s", DoubleType()),
    StructField("started", TimestampType()),
    StructField("finished", TimestampType()),
    StructField("schedule_hash", StringType()),
    StructField("schedule_json", StringType()),
    StructField("verdicts", IntegerType()),
    StructField("invalid", IntegerType()),
    StructField("unknown", IntegerType()),
    StructField("verdict_signature", StringType()),
    StructField("history_files", IntegerType()),
    StructField("kind", StringType()),  # consumer, streams, connect: what kind of members the run drove
])

REBALANCES = StructType([
    StructField("run_id", StringType(), False),
    StructField("index", IntegerType()),
    StructField("start_mono", DoubleType()),
    StructField("start_s", DoubleType()),
    StructField("end_mono", DoubleType()),
    StructField("duration_s", DoubleType()),
    StructField("events", IntegerType()),
    StructField("members", IntegerType()),
    StructField("moves", IntegerType()),
    StructField("assigned", IntegerType()),
    StructField("revoked", IntegerType()),
    StructField("lost", IntegerType()),
    StructField("longest_unowned_s", DoubleType()),
    StructField("longest_unowned_topic", StringType()),
    StructField("longest_unowned_partition", IntegerType()),
])

VIOLATIONS = StructType([
    StructField("run_id", StringType(), False),
    StructField("invariant", StringType()),
    StructField("status", StringType()),
    StructField("message", StringType()),
    StructField("witness_count", IntegerType()),
])

PARTITION_DOWNTIME = StructType([
    StructField("run_id", StringType(), False),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("first_assigned_mono", DoubleType()),
    StructField("unowned_s", DoubleType()),
    StructField("unowned_stretches", IntegerType()),
    StructField("longest_unowned_s", DoubleType()),
])
