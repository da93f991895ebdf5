"""The `share_records` table of a share-group run (KIP-932): one row per record a share member was delivered,
from the `share_acquired` and `share_acked` events, and `share_dlq_record` (it is on the group's dead-letter
topic) (docs/analytics.md). Spark DataFrame aggregates only."""
from __future__ import annotations

#: the history event types the table reads
SHARE_TYPES = ("share_acquired", "share_acked", "share_dlq_record")
#: the columns it reads of them (besides file, type, mono, member)
SHARE_COLUMNS = ("topic", "partition", "offset", "delivery_count", "ack", "ok", "requested_mono")


def share_records(share_events, fmap):
    """One row per (run, topic, partition, offset): deliveries, the highest delivery count, whether it was
    redelivered, how it ended (`accept`, `reject`, or `none`: no accept or reject the broker took) and the time
    from its first delivery to the first accept or reject the broker took (asked for at requested_mono), and
    whether it is on the group's dead-letter topic (`dead_lettered`)."""
    from pyspark.sql import functions as F

    e = share_events.join(F.broadcast(fmap), "file")
    acq, done = F.col("type") == "share_acquired", (F.col("type") == "share_acked") & F.col("ok") \
        & F.col("ack").isin("accept", "reject")
    return (e.groupBy("run_id", "topic", F.col("partition").cast("int").alias("partition"),
                      F.col("offset").cast("long").alias("offset"))
            .agg(F.sum(acq.cast("int")).alias("deliveries"),
                 F.max(F.when(acq, F.col("delivery_count"))).cast("int").alias("max_delivery_count"),
                 F.min(F.when(acq, F.col("mono"))).alias("first_delivered_mono"),
                 F.min(F.when(done, F.col("requested_mono"))).alias("done_mono"),
                 F.min(F.when(done, F.col("ack"))).alias("done_ack"),
                 F.max((F.col("type") == "share_dlq_record").cast("int")).alias("in_dlq"))
            .select("run_id", "topic", "partition", "offset", "deliveries", "max_delivery_count",
                    (F.col("max_delivery_count") > 1).alias("redelivered"),
                    F.coalesce(F.col("done_ack"), F.lit("none")).alias("outcome"),
                    F.round(F.col("done_mono") - F.col("first_delivered_mono"), 6).alias("time_to_ack_s"),
                    (F.col("in_dlq") > 0).alias("dead_lettered")))
