"""The PySpark aggregation job on synthetic run directories whose answers are known (harness.analytics.synth).

One local Spark session and one aggregation for the module (marked integration: it starts a JVM).
"""
import json
import os
from collections import defaultdict

import pytest

pytest.importorskip("pyspark")

from harness.analytics import synth  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def agg(tmp_path_factory):
    from harness.analytics.job import aggregate, session
    root = tmp_path_factory.mktemp("analytics")
    runs = root / "runs"
    exp = synth.generate(str(runs), 12, 1500, seed=3)
    out = root / "out"
    spark = session("local[2]")
    try:
        summary = aggregate([str(runs)], str(out), spark=spark, log=lambda *_: None)
        tables = {t: spark.read.parquet(str(out / t)).collect() for t in ("runs", "rebalances", "violations",
                                                                          "partition_downtime", "rebalance_times")}
    finally:
        spark.stop()
    return exp, summary, tables, out


def test_runs_counted_and_corrupt_ones_skipped_by_name(agg):
    exp, summary, tables, out = agg
    assert summary["totals"]["runs"] == exp.runs == 12
    assert {r["run_id"] for r in tables["runs"]} == set(exp.status)
    skipped = json.loads((out / "skipped.json").read_text())
    assert {s["name"] for s in skipped} == set(exp.skipped)
    assert len(exp.skipped) == len(synth.CORRUPT_KINDS)
    assert not any(r["run_dir"].endswith(n) for r in tables["runs"] for n in exp.skipped)
    assert summary["totals"]["runs"] + len(skipped) == 12 + len(synth.CORRUPT_KINDS)


def test_torn_last_line_is_not_corruption(agg):
    exp, summary, tables, out = agg
    torn = [r for r in tables["runs"] if r["run_id"].startswith("20261101T001000")]
    assert len(torn) == 1 and torn[0]["status"] == exp.status[torn[0]["run_id"]]


def test_statuses_and_violations(agg):
    exp, summary, tables, out = agg
    assert {r["run_id"]: r["status"] for r in tables["runs"]} == exp.status
    assert summary["totals"]["violating_runs"] == len(exp.violating)
    assert summary["totals"]["violation_rate"] == pytest.approx(len(exp.violating) / exp.runs, abs=1e-4)
    assert len(tables["violations"]) == exp.violation_rows
    got = defaultdict(dict)
    for v in tables["violations"]:
        got[v["run_id"]][v["invariant"]] = v["witness_count"]
    assert dict(got) == exp.witnesses


def test_violation_rate_per_group(agg):
    exp, summary, tables, out = agg
    want = defaultdict(lambda: [0, 0])
    for rid, g in exp.group.items():
        want[g][0] += 1
        want[g][1] += rid in exp.violating
    got = {(g["scenario"], g["kafka_version"], g["client_version"], g["protocol"]): g for g in summary["groups"]}
    assert set(got) == set(want)
    for k, (n, bad) in want.items():
        assert got[k]["runs"] == n and got[k]["violating_runs"] == bad
        assert got[k]["violation_rate"] == pytest.approx(bad / n, abs=1e-4)


def test_rebalances_moves_durations_and_unowned(agg):
    exp, summary, tables, out = agg
    got = defaultdict(list)
    for r in sorted(tables["rebalances"], key=lambda r: (r["run_id"], r["index"])):
        got[r["run_id"]].append((r["duration_s"], r["moves"], r["longest_unowned_s"]))
    assert set(got) == set(exp.rebalances)
    for rid, want in exp.rebalances.items():
        assert len(got[rid]) == len(want), rid
        for (d, m, lu), (wd, wm, wlu) in zip(got[rid], want):
            assert m == wm and d == pytest.approx(wd, abs=1e-5) and lu == pytest.approx(wlu, abs=1e-5), rid
    assert summary["totals"]["rebalances"] == sum(len(v) for v in exp.rebalances.values())
    durations = sorted(d for v in exp.rebalances.values() for d, _, _ in v)
    assert summary["totals"]["duration_p50_s"] == pytest.approx(_pct(durations, 0.5), abs=1e-6)
    assert summary["totals"]["duration_p99_s"] == pytest.approx(_pct(durations, 0.99), abs=1e-6)


def _pct(xs, q):
    """Spark's exact percentile: linear interpolation between closest ranks."""
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def test_rebalance_times_per_disturbance_and_by_protocol_and_version(agg):
    exp, summary, tables, out = agg
    got = defaultdict(list)
    for r in sorted(tables["rebalance_times"], key=lambda r: (r["run_id"], r["index"])):
        got[r["run_id"]].append(r["settled_s"])
        assert r["settled"] == (r["settled_s"] is not None) and (r["why"] is None) == r["settled"]
    assert dict(got) == exp.rebalance_times
    settled = sorted(x for v in exp.rebalance_times.values() for x in v if x is not None)
    assert summary["totals"]["rebalance_time_p50_s"] == pytest.approx(_pct(settled, 0.5), abs=1e-6)
    assert summary["totals"]["unsettled"] == sum(v.count(None) for v in exp.rebalance_times.values())
    by = summary["rebalance_time"]
    assert sum(r["runs"] for r in by) == exp.runs and sum(r["disturbances"] for r in by) == len(tables["rebalance_times"])
    for r in by:
        runs = [rid for rid, g in exp.group.items() if (g[3], g[1]) == (r["protocol"], r["kafka_version"])]
        want = sorted(x for rid in runs for x in exp.rebalance_times[rid] if x is not None)
        assert r["runs"] == len(runs) and r["max_s"] == max(want)
        assert r["failure_rate"] == round(len([x for x in runs if x in exp.violating]) / len(runs), 4)
    page = (out / "summary.html").read_text()
    assert "Rebalance time by protocol" in page and "failure rate" in page


def test_partition_downtime(agg):
    exp, summary, tables, out = agg
    got = defaultdict(dict)
    for r in tables["partition_downtime"]:
        got[r["run_id"]][r["partition"]] = r["unowned_s"]
    assert set(got) == set(exp.downtime)
    for rid, want in exp.downtime.items():
        assert got[rid] == pytest.approx(want, abs=1e-5), rid


def test_flaky_detection(agg):
    exp, summary, tables, out = agg
    got = {(f["scenario"], f["protocol"], f["kafka_version"], f["client_version"], f["seed"]) for f in summary["flaky"]}
    assert got == exp.flaky and len(got) == 1
    assert all(len({o["status"] for o in f["outcomes"]}) == 2 for f in summary["flaky"])


def test_summary_files(agg):
    exp, summary, tables, out = agg
    page = (out / "summary.html").read_text()
    assert page.startswith("<!doctype html>") and "<svg" in page and "<script" not in page
    for name in exp.skipped:
        assert name in page
    assert json.loads((out / "summary.json").read_text())["totals"]["runs"] == exp.runs
    for t in ("runs", "rebalances", "rebalance_times", "violations", "partition_downtime"):
        assert any(f.endswith(".parquet") for f in os.listdir(out / t))


def test_cli_has_aggregate():
    from harness.cli import _parser
    a = _parser().parse_args(["aggregate", "a", "b", "--out", "o", "--master", "local[2]"])
    assert a.cmd == "aggregate" and a.run_dirs == ["a", "b"] and a.out == "o" and a.master == "local[2]"
