"""The explicit Spark schemas: what the job reads (history lines) and the tables it writes."""
from __future__ import annotations

from pyspark.sql.types import (ArrayType, BooleanType, DoubleType, IntegerType, LongType, StringType, StructField,
                               StructType, TimestampType)

from harness.analytics.history_struct import columns

CORRUPT = "_corrupt_record"
_SPARK = {"long": LongType(), "double": DoubleType(), "boolean": BooleanType(), "string": StringType()}


def spark_type(column_type):
    """The Spark type of a history_struct column type."""
    if isinstance(column_type, tuple):
        return ArrayType(spark_type(column_type[1]))
    return _SPARK[column_type]


def history_schema() -> StructType:
    """A history line: one column per field of harness/record/history.schema.json (history_struct.py says how each is
    typed; ``partitions``, [topic, partition] pairs, reads as strings and the partition is cast later), and the
    corrupt-record column. The job selects the columns it needs, so Spark parses only those."""
    return StructType([StructField(name, spark_type(t)) for name, t in columns().items()]
                      + [StructField(CORRUPT, StringType())])


HISTORY = history_schema()

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
    StructField("shrink_of", StringType()),  # a shrink attempt: the run it shrinks (counted apart); else null
    StructField("recorded_status", StringType()),  # STATUS as the run wrote it; `status` is the run judged now
    StructField("judged_note", StringType()),  # "recorded: pass, judged now: unknown (...)" where they differ; else null
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

#: one row per disturbance: trigger to complete and balanced again (convergence_balance's `rebalance_time`)
REBALANCE_TIMES = StructType([
    StructField("run_id", StringType(), False),
    StructField("index", IntegerType()),
    StructField("kind", StringType()),  # the action (scale_out, kill_member, ...), or initial
    StructField("trigger", StringType()),  # member_start, action_start, member_exit
    StructField("at_s", DoubleType()),
    StructField("settled_s", DoubleType()),  # null: did not settle (see why)
    StructField("settled", BooleanType()),
    StructField("why", StringType()),
    StructField("unowned_sum_s", DoubleType()),
    StructField("unowned_max_s", DoubleType()),
    StructField("partitions_unowned", IntegerType()),
    StructField("unowned_open", IntegerType()),
    StructField("protocol", StringType()),
    StructField("assignors", StringType()),
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

SHARE_RECORDS = StructType([  # harness/analytics/share.py builds it; this is its shape when there is nothing
    StructField("run_id", StringType(), False),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("deliveries", LongType()),
    StructField("max_delivery_count", IntegerType()),
    StructField("redelivered", BooleanType()),
    StructField("outcome", StringType()),
    StructField("time_to_ack_s", DoubleType()),
    StructField("dead_lettered", BooleanType()),
])
