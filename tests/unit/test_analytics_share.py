"""The share_records table (harness/analytics/share.py) on hand-made share events whose answers are known.

Marked integration: it starts a local Spark session (a JVM)."""
import pytest

pytest.importorskip("pyspark")

pytestmark = pytest.mark.integration


def test_one_row_per_record_with_its_deliveries_outcome_and_time_to_ack():
    from harness.analytics.job import session
    from harness.analytics.share import share_records
    spark = session("local[1]")
    try:
        cols = "file string, type string, mono double, member string, topic string, partition long, offset long, " \
               "delivery_count long, ack string, ok boolean, requested_mono double"
        rows = [("f1", "share_acquired", 1.0, "m1", "t", 0, 5, 1, None, None, None),
                ("f1", "share_acked", 1.6, "m1", "t", 0, 5, None, "accept", False, 7.0),  # refused: not done
                ("f2", "share_acquired", 8.0, "m2", "t", 0, 5, 2, None, None, None),
                ("f2", "share_acked", 8.6, "m2", "t", 0, 5, None, "accept", True, 8.5),
                ("f2", "share_acquired", 9.0, "m2", "t", 1, 0, 1, None, None, None),
                ("f2", "share_acked", 9.2, "m2", "t", 1, 0, None, "release", True, 9.1),
                ("f2", "share_acquired", 9.5, "m2", "t", 1, 1, 1, None, None, None),
                ("f2", "share_acked", 9.6, "m2", "t", 1, 1, None, "reject", True, 9.55),
                ("f3", "share_dlq_record", 20.0, None, "t", 1, 1, 1, None, None, None)]  # output.jsonl
        fmap = spark.createDataFrame([("f1", "r1"), ("f2", "r1"), ("f3", "r1")], "file string, run_id string")
        got = {(r["partition"], r["offset"]): r.asDict() for r in
               share_records(spark.createDataFrame(rows, cols), fmap).collect()}
    finally:
        spark.stop()
    assert got[(0, 5)]["deliveries"] == 2 and got[(0, 5)]["max_delivery_count"] == 2 and got[(0, 5)]["redelivered"]
    assert got[(0, 5)]["outcome"] == "accept" and got[(0, 5)]["time_to_ack_s"] == pytest.approx(7.5)
    assert got[(1, 0)]["outcome"] == "none" and got[(1, 0)]["time_to_ack_s"] is None
    assert not got[(1, 0)]["redelivered"]
    assert got[(1, 1)]["outcome"] == "reject" and got[(1, 1)]["dead_lettered"] and got[(1, 1)]["deliveries"] == 1
    assert not got[(0, 5)]["dead_lettered"] and not got[(1, 0)]["dead_lettered"]
