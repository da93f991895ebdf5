"""Verify: the analytics page reads at a glance (harness/analytics/chart.py, harness/analytics/html.py), with no Spark.

Setup: summaries made by hand: a row of 1 run that failed beside a row of 100 runs that all failed, rows with
unknown runs and with a disturbance that never settled, a flaky group with a run judged otherwise than recorded.
Then: the chart has an axis under each panel (0 % to 100 % of the row's runs; 0 s to a round number of seconds) and
each row's counts and percentages written under its bars, so 1 failed run of 1 reads otherwise than 100 of 100; the
headline names each count by what it counts (runs, failed, unknown, disturbances, ownership bursts; never a bare
"rebalances" count beside the disturbances); a run judged otherwise than recorded shows both statuses where a
reader sees runs (the headline, the per-cell table, the flaky group's outcomes).
"""
from __future__ import annotations

import re

import pytest

from harness.analytics.chart import chart, nice_top, rate_words, time_words
from harness.analytics.html import headline, render


def _row(protocol="consumer", runs=1, failed=1, unknown=0, disturbances=2, p50=1.2, p95=3.0, unsettled=0):
    return {"protocol": protocol, "kafka_version": "4.1.0", "runs": runs, "failed": failed, "unknown": unknown,
            "failure_rate": round(failed / runs, 4) if runs else None,
            "unknown_rate": round(unknown / runs, 4) if runs else None, "disturbances": disturbances,
            "p50_s": p50, "p95_s": p95, "max_s": p95, "unsettled": unsettled, "unowned_sum_p95_s": 0.5,
            "unowned_max_s": 0.5, "assignors": "uniform"}


def _texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)<", svg)


def test_one_failed_run_of_one_reads_otherwise_than_a_hundred_of_a_hundred():
    svg = chart([_row(runs=1, failed=1), _row("classic-eager", runs=100, failed=100)])
    texts = _texts(svg)
    assert "1 of 1 run failed (100.0%), 0 unknown (0.0%)" in texts
    assert "100 of 100 runs failed (100.0%), 0 unknown (0.0%)" in texts
    assert "kafka 4.1.0, 1 run" in texts and "kafka 4.1.0, 100 runs" in texts
    # both bars are full: only the counts tell them apart, and they are written, not left to a tooltip
    assert re.findall(r'class="failed" x="\d+" y="\d+" width="(\d+)"', svg) == ["300", "300"]


def test_each_panel_has_an_axis_with_ticks_and_units():
    svg = chart([_row(p50=1.2, p95=3.0), _row("classic-eager", p50=0.5, p95=2.2)])
    axes = re.findall(r'<g class="axis">(.*?)</g>', svg)
    assert len(axes) == 2
    assert _texts(axes[0]) == ["0%", "25%", "50%", "75%", "100%"]
    assert _texts(axes[1]) == ["0 s", "1.25 s", "2.5 s", "3.75 s", "5 s"]  # to 5 s, the round number above 3.0 s


def test_unknown_runs_and_unsettled_disturbances_are_counted_in_words():
    r = _row(runs=4, failed=1, unknown=2, disturbances=9, unsettled=3)
    assert rate_words(r) == "1 of 4 runs failed (25.0%), 2 unknown (50.0%)"
    assert time_words(r) == "p50 1.20 s, p95 3.00 s of 9 disturbances, 3 never settled"
    assert time_words(_row(disturbances=1, p50=None, p95=None)) == "no settled disturbance of 1"
    svg = chart([r])
    assert re.search(r'class="unknown" x="(\d+)" y="\d+" width="150"', svg)  # 50 % of the 300 px panel
    assert 'fill="#b00020">p50 1.20 s, p95 3.00 s of 9 disturbances, 3 never settled<' in svg


def test_a_row_without_runs_has_no_rate_but_a_dash():
    assert rate_words(_row(runs=0, failed=0)) == "0 of 0 runs failed (-), 0 unknown (-)"
    assert chart([]) == ""


@pytest.mark.parametrize("x,top", [(0, 1.0), (None, 1.0), (0.3, 0.5), (1.0, 1.0), (3.0, 5.0), (7.28, 10.0),
                                   (12.0, 20.0), (22.0, 25.0)])
def test_the_time_axis_ends_at_a_round_number_at_or_above_the_largest_p95(x, top):
    assert nice_top(x) == pytest.approx(top)


def _summary(**totals):
    t = {"runs": 22, "violating_runs": 1, "violation_rate": 0.0455, "unknown_runs": 2, "unknown_rate": 0.0909,
         "error_runs": 0, "passed_runs": 19, "shrink_attempts": 4, "judged_differently": 1, "bursts": 121,
         "disturbances": 59, "rebalance_time_p50_s": 1.234, "rebalance_time_p95_s": 6.5, "unsettled": 0}
    t.update(totals)
    group = {"kind": "consumer", "scenario": "member-kill", "kafka_version": "4.1.0", "client_version": "2.16.1",
             "protocol": "consumer", "runs": 22, "pass": 19, "fail": 1, "unknown": 2, "error": 0,
             "violating_runs": 1, "violation_rate": 0.0455, "unknown_rate": 0.0909, "shrink_attempts": 4,
             "judged_differently": 1, "bursts": 121, "duration_p50_s": 0.01, "duration_p95_s": 0.2,
             "duration_p99_s": 0.3, "moves_avg": 2.0, "longest_unowned_max_s": 1.0}
    flaky = {"scenario": "member-kill", "protocol": "consumer", "kafka_version": "4.1.0", "client_version": "2.16.1",
             "seed": 7, "schedule_hash": "0123456789abcdef", "runs": 2, "differing_invariants": ["schedule_performed"],
             "outcomes": [{"run_id": "r1", "status": "pass", "recorded": "pass"},
                          {"run_id": "r2", "status": "unknown", "recorded": "pass"}]}
    return {"totals": t, "groups": [group], "trend": [], "flaky": [flaky], "rebalance_time": [_row()],
            "judged_now": [{"run_id": "r2", "run_dir": "/runs/r2", "recorded": "pass", "judged_now": "unknown",
                            "note": "recorded: pass, judged now: unknown (schedule_performed)"}],
            "skipped": []}


def test_the_headline_names_each_count_by_what_it_counts():
    words = [w for w, _ in headline(_summary())]
    assert words == ["22 runs", "1 failed (4.5%)", "2 unknown (9.1%)", "0 ended in error", "19 passed",
                     "1 run judged otherwise than recorded", "4 shrink attempts (counted apart)",
                     "59 disturbances (rebalance time p50 1.23 s, p95 6.50 s; 0 never settled)",
                     "121 ownership bursts", "1 flaky group", "0 directories skipped"]
    assert not any(re.search(r"\d rebalances\b", w) for w in words)
    page = render(_summary())
    first = page.split("<p>", 1)[1].split("</p>", 1)[0]
    assert "121 ownership bursts" in first and "59 disturbances" in first and "rebalances" not in first
    assert "<span class=unk>1 run judged otherwise than recorded</span>" in first


def test_the_headline_marks_what_needs_a_look():
    marks = dict(headline(_summary(violating_runs=0, unknown_runs=0, judged_differently=0, unsettled=2)))
    assert marks["0 failed (4.5%)"] == "" and marks["0 unknown (9.1%)"] == ""
    assert marks["59 disturbances (rebalance time p50 1.23 s, p95 6.50 s; 2 never settled)"] == "bad"
    marks = dict(headline(_summary()))
    assert marks["1 failed (4.5%)"] == "bad" and marks["2 unknown (9.1%)"] == "unk"


def test_a_run_judged_otherwise_than_recorded_shows_both_statuses_where_runs_are_listed():
    page = render(_summary())
    assert "r1: pass, r2: unknown (recorded: pass)" in page  # the flaky group's outcomes
    cell = next(line for line in page.splitlines() if ">member-kill<" in line and "<td>22</td>" in line)
    assert "1 judged otherwise than recorded" in cell
    assert "recorded: pass, judged now: unknown (schedule_performed)" in page  # the table of such runs


def test_a_summary_written_before_bursts_were_called_bursts_still_renders():
    s = _summary()
    s["totals"]["rebalances"] = s["totals"].pop("bursts")
    s["groups"][0]["rebalances"] = s["groups"][0].pop("bursts")
    page = render(s)
    assert "121 ownership bursts" in page and "<td>121</td>" in page
