"""The PySpark aggregation job on synthetic run directories whose answers are known (harness.analytics.synth).

One local Spark session for the module (marked integration: it starts a JVM) and two aggregations: 12 generated
runs with every answer known, and what two 3-run repeats leave (one failure shrunk in 8 attempts, whose run
directories say so in `shrink_of`; one cell of 3 unknown runs): the attempts are counted apart from their cell's
runs, and an all-unknown cell shows its unknown rate in its own colour, not only a 0.0 % failure rate.
"""
import json
import os
from collections import defaultdict

import pytest

pytest.importorskip("pyspark")

from harness.analytics import synth  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def spark():
    from harness.analytics.job import session
    s = session("local[2]", partitions=2)  # a dozen small runs: a third faster than the job's default of 6
    yield s
    s.stop()


def _aggregate(spark, runs, out):
    from harness.analytics.job import aggregate
    summary = aggregate([str(runs)], str(out), spark=spark, log=lambda *_: None)
    return summary, {t: spark.read.parquet(str(out / t)).collect() for t in ("runs", "rebalances", "violations",
                                                                             "partition_downtime", "rebalance_times")}


@pytest.fixture(scope="module")
def agg(tmp_path_factory, spark):
    root = tmp_path_factory.mktemp("analytics")
    runs = root / "runs"
    exp = synth.generate(str(runs), 12, 1500, seed=3)
    out = root / "out"
    summary, tables = _aggregate(spark, runs, out)
    return exp, summary, tables, out


@pytest.fixture(scope="module")
def cells(tmp_path_factory, spark):
    """A 3-run repeat whose first failure was shrunk in 8 attempts, and a cell of 3 runs all unknown."""
    root = tmp_path_factory.mktemp("cells")
    ids = synth.repeat_cells(str(root / "runs"))
    summary, tables = _aggregate(spark, root / "runs", root / "out")
    return ids, summary, tables, root / "out"


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
    assert summary["totals"]["bursts"] == sum(len(v) for v in exp.rebalances.values())
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


def _cell(summary, scenario):
    (g,) = [g for g in summary["groups"] if g["scenario"] == scenario]
    return g


def test_shrink_attempts_are_counted_apart_from_their_cell_s_runs(cells):
    ids, summary, tables, out = cells
    assert len(tables["runs"]) == 14  # every run directory is in the runs table, its shrink_of said
    assert {r["run_id"] for r in tables["runs"] if r["shrink_of"]} == set(ids["attempts"])
    assert {r["shrink_of"] for r in tables["runs"] if r["shrink_of"]} == {ids["repeat"][0]}
    g = _cell(summary, "member-kill")
    assert (g["runs"], g["pass"], g["fail"], g["unknown"], g["shrink_attempts"]) == (3, 2, 1, 0, 8)
    assert g["violation_rate"] == pytest.approx(1 / 3, abs=1e-4) and g["unknown_rate"] == 0.0
    assert g["violating_runs"] == 1  # the attempts that still failed are not failures of the cell
    mine = {r["run_id"] for r in tables["rebalances"] if r["run_id"] in ids["repeat"]}
    assert g["bursts"] == sum(1 for r in tables["rebalances"] if r["run_id"] in mine)
    t = summary["totals"]
    assert (t["runs"], t["shrink_attempts"], t["violating_runs"], t["unknown_runs"]) == (6, 8, 1, 3)
    assert t["violations"] == 1 + 3  # the violation rows of counted runs: 1 invalid, 3 unknown
    assert t["disturbances"] == sum(1 for r in tables["rebalance_times"] if r["run_id"] not in ids["attempts"])
    (rt,) = summary["rebalance_time"]
    assert (rt["runs"], rt["failed"], rt["unknown"]) == (6, 1, 3)
    assert sum(r["runs"] for r in summary["trend"]) == 6


def test_a_cell_whose_runs_were_all_unknown_shows_unknown_not_a_clean_rate(cells):
    ids, summary, tables, out = cells
    g = _cell(summary, "rolling-bounce")
    assert (g["runs"], g["pass"], g["fail"], g["unknown"]) == (3, 0, 0, 3)
    assert g["unknown_rate"] == 1.0 and g["violation_rate"] == 0.0
    (rt,) = summary["rebalance_time"]
    assert rt["unknown_rate"] == 0.5 and rt["failure_rate"] == pytest.approx(1 / 6, abs=1e-4)
    (tr,) = [r for r in summary["trend"] if r["scenario"] == "rolling-bounce"]
    assert tr["unknown"] == 3 and tr["unknown_rate"] == 1.0
    page = (out / "summary.html").read_text()
    row = next(line for line in page.splitlines() if ">rolling-bounce<" in line and "<td class=unk>3</td>" in line)
    assert "<td class=unk>100.0%</td>" in row and "<td>0.0%</td>" in row  # unknown in its own colour, beside 0.0 %
    assert "8 shrink attempts (counted apart)" in page and "<th>shrink attempts</th>" in page
    assert ">8</td>" in next(line for line in page.splitlines() if ">member-kill<" in line)
