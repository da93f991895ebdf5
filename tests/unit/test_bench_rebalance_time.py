"""Verify: bench/rebalance_time.py's pure parts: the scenario file it writes carries the members' processing time,
client settings and group size; --metadata-refresh, --members and --client-set are read or refused (exit 2 before a
cluster starts); each row says what its members ran with, from their `started` events; the table and chart show it.

Setup: the bench module loaded from its file; hand-made `started` events and rows.
"""
from pathlib import Path

import benchmod
import pytest

from harness.plan import scenario_file



@pytest.fixture(scope="module")
def bench():
    return benchmod.load("rebalance_time")


def test_the_scenario_file_carries_processing_time_client_settings_and_group_size(bench):
    members, partitions, steps, per = bench.case_shape("partitions-900", 100)
    client = bench.client_settings(5.0, (("debug", "cgrp"),))
    model = scenario_file.parse(bench.scenario_text("partitions-900", members, partitions, steps, per, 20, client),
                                "bench.toml")
    assert (model.members.count, model.members.members_per_process, model.members.processing_ms) == (100, 10, 20)
    assert model.members.client_settings == {"topic.metadata.refresh.interval.ms": 5000, "debug": "cgrp"}
    assert model.workload.partitions == 100 and model.steps[0].model_dump(exclude_none=True)["count"] == 1000


def test_librdkafkas_default_refresh_sets_no_refresh_and_no_processing_sets_none(bench):
    members, partitions, steps, per = bench.case_shape("partitions-900")
    model = scenario_file.parse(bench.scenario_text("partitions-900", members, partitions, steps, per, 0.0,
                                                    bench.client_settings(None)), "bench.toml")
    assert model.members.count == 10 and model.members.client_settings == {}
    assert model.members.processing_ms is None


def test_metadata_refresh_is_default_or_seconds(bench):
    assert bench.refresh_seconds("default") is None and bench.refresh_seconds("DEFAULT") is None
    assert bench.refresh_seconds("5") == 5.0 and bench.refresh_seconds("0.5") == 0.5
    assert bench.client_settings(0.5) == {"topic.metadata.refresh.interval.ms": 500}
    for bad in ("0", "-1", "soon", "7200"):
        with pytest.raises(ValueError, match="--metadata-refresh"):
            bench.refresh_seconds(bad)


def test_members_resizes_partitions_900_only(bench):
    assert bench.case_shape("partitions-900", 5)[::3] == (5, 5)  # fewer than ten: one process of five
    assert bench.case_shape("scale-out-10-100", 10)[0] == 10  # its own size asked for: unchanged
    with pytest.raises(ValueError, match="partitions-900 only"):
        bench.case_shape("scale-out-10-100", 100)
    with pytest.raises(ValueError, match="at least 1"):
        bench.case_shape("partitions-900", 0)


@pytest.mark.parametrize("argv, says", [
    (["--members", "100"], "partitions-900 only"),  # the default cases include scale-out-10-100
    (["--cases", "partitions-900", "--metadata-refresh", "never"], "--metadata-refresh"),
    (["--cases", "partitions-900", "--processing-ms", "-1"], "--processing-ms"),
    (["--cases", "partitions-900", "--client-set", "debug"], "--client-set wants KEY=VALUE"),
    (["--cases", "partitions-901"], "unknown case or protocol partitions-901"),
    (["--cases", "partitions-900", "--append"], "give --out"),
    (["--render-only"], "give --out"),
])
def test_bad_input_is_one_line_and_exit_2_before_a_cluster(bench, capsys, argv, says):
    with pytest.raises(SystemExit) as e:
        bench.main(argv)
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and says in err and "\n" not in err


def started(processing_ms=None, refresh=None, **client):
    cc = {**client, **({"topic.metadata.refresh.interval.ms": refresh} if refresh is not None else {})}
    return {"type": "started", "effective": {"processing_ms": processing_ms} if processing_ms is not None else {},
            "client_config": cc}


def test_a_row_says_what_the_members_ran_with_from_their_started_events(bench):
    assert bench.members_ran_with([started(20, 5000), started(20, 5000)]) == {
        "processing_ms": 20.0, "metadata_refresh_s": 5.0, "members_started": 2}
    assert bench.members_ran_with([started(debug="cgrp")]) == {
        "processing_ms": 0.0, "metadata_refresh_s": None, "members_started": 1}  # None: librdkafka's default
    assert bench.members_ran_with([started(20, 5000), started(0, 5000)])["processing_ms"] == "mixed"
    assert bench.members_ran_with([]) == {"processing_ms": None, "metadata_refresh_s": None, "members_started": 0}
    # a member that does not record its work per record: the runner's (run.json's)
    assert bench.members_ran_with([{"type": "started", "effective": {}}], 20.0)["processing_ms"] == 20.0


def row(**kw):
    r = {"case": "partitions-900", "protocol": "consumer", "members": 10, "partitions": 100, "processing_ms": 0.0,
         "metadata_refresh_s": 5.0, "settled_s": 12.5, "why": None, "action_s": 0.2, "unowned_sum_s": 1.0,
         "unowned_max_s": 1.0, "partitions_unowned": 900, "status": "pass", "invalid": []}
    return {**r, **kw}


def test_the_table_and_chart_say_each_rows_processing_time_and_refresh(bench):
    rows = [row(), row(members=100, processing_ms=20.0, metadata_refresh_s=None, protocol="classic-eager",
                       broker_settings={"group.consumer.heartbeat.interval.ms": "5000"})]
    lines = bench.markdown(rows).splitlines()
    assert "| processing ms per record | metadata refresh s | consumer heartbeat / session s (brokers) |" in lines[0]
    assert lines[2].startswith("| partitions-900 | consumer | 10 | 100 | 0 | 5 | 0.5 / 6 | 12.50 |")
    assert lines[3].startswith("| partitions-900 | classic-eager | 100 | 100 | 20 | default (300) | 5 / 6 | 12.50 |")
    assert all(ln.count("|") == lines[0].count("|") for ln in lines)
    chart = bench.svg(rows)
    assert ">partitions-900 consumer<" in chart
    assert ">partitions-900 classic-eager 100m 20ms refresh default (300)<" in chart


def test_render_only_writes_the_table_and_chart_of_the_saved_rows_without_a_cluster(bench, tmp_path):
    import json
    out, md, chart = tmp_path / "rows.json", tmp_path / "rows.md", tmp_path / "chart.svg"
    out.write_text(json.dumps([row(), row(protocol="classic-eager", settled_s=None, why="never settled")]))
    assert bench.main(["--out", str(out), "--render-only", "--markdown", str(md), "--svg", str(chart)]) == 0
    assert "| partitions-900 | classic-eager | 10 | 100 | 0 | 5 | 0.5 / 6 | not settled (never settled) |" in md.read_text()
    assert "never settled</text>" in chart.read_text()


def test_scale_300_runs_with_kafkas_heartbeat_and_session_unless_told(bench):
    a = bench.parse_args(["--cases", "scale-300"])
    assert a.brokers == {"group.consumer.heartbeat.interval.ms": "5000", "group.consumer.session.timeout.ms": "45000"}
    a = bench.parse_args(["--cases", "scale-300", "--broker-set", "group.consumer.heartbeat.interval.ms=500"])
    assert a.brokers["group.consumer.heartbeat.interval.ms"] == "500"
    assert bench.parse_args(["--cases", "partitions-900"]).brokers == {}


def test_each_row_says_the_consumer_heartbeat_and_session_its_brokers_ran_with(bench):
    assert bench.group_timing_label(None) == "0.5 / 6"  # the harness's cluster's own
    assert bench.group_timing_label(bench.KAFKA_GROUP_DEFAULTS) == "5 / 45"
