"""Verify: the HTML report of real runs made on a pool tells the truth at a glance: each test shows its run's own
duration and a verdict line per invariant, the Timeline spans the real runs, a violation has its category, and the
timeline chart marks it; the categories Allure itself files tests under cover every kind of group and the known
findings; the analytics page fits a laptop screen.

Setup: the chaos suite in a subprocess (member-kill under classic-eager and consumer, two at a time on the pool, a
member that claims a partition the coordinator never gave it once its assignment has been quiet a while) with
--alluredir; `harness report` generates the HTML report; `python -m http.server` serves it; headless Chromium
renders it.
Then: both tests failed, and each one's status message names every verdict of its run that is invalid or unknown,
coordinator_claims among them (the claim's own violation; exclusive_ownership too when the claimed partition had
another owner then, which a claim made while a killed member's partitions wait for its session to expire has not); every test's duration (in the report's data and as its page shows it) is within
10 % of its run.json `duration_s`; its page has a `<invariant>: <status> — ` line for each verdict of
verdicts.json; the Timeline puts the two runs on the two pool workers, overlapping; Allure files each test under
the category of its first invalid verdict in the harness's order of categories (exclusive_ownership when the claim
overlapped another owner, record_integrity when it re-read the partition from its start, else coordinator_claims),
and its page names a violation of its run; the chart's screenshot has red violation markers in its rows.
Screenshots are kept under reports/screenshots/.

A suite on the fake backend (tests/unit/fakesuite.py: a passing, a failing and an unknown run, two at a time on the
pool, and a test excused as a known finding) reported and rendered the same way: each run's test page, its `log`
attachment opened, shows every line of its run's logs/progress.log and no message only another run's log has; the
unknown run's test is Broken (Undecided: schedule_performed), the failing one Failed, the excused one filed under its
known finding.
"""
import html
import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.report.alluredir import categories
from harness.report.timeline import ROW_H, TOP
from tests.integration.chart_hover import hover_a_red_mark
from tests.integration.browser import chromium, dom, pixels, served
from tests.unit.fakesuite import EXCUSED_BY, SCENARIOS, run_session

pytestmark = pytest.mark.integration
SHOTS = Path("reports/screenshots")
DURATION = re.compile(r"Duration:.*?</svg>\s*([0-9hms ]+?)\s*<", re.S)


def _need_chromium():
    if not shutil.which("chromium"):
        pytest.skip("chromium is not installed (./dev setup installs it)")


def seconds(text: str) -> float:
    """Allure's shown duration (`6m 03s`, `37s 312ms`, `1h 2m`) in seconds."""
    unit = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    parts = re.findall(r"(\d+)(ms|h|m|s)\b", text)
    assert parts, text
    return sum(int(n) * unit[u] for n, u in parts)


def _generate(results: Path, report: Path) -> list[dict]:
    g = subprocess.run([sys.executable, "-m", "harness", "report", "--results", str(results), "--out", str(report)],
                       capture_output=True, text=True, timeout=900)
    assert g.returncode == 0, g.stdout + g.stderr
    return [json.loads(f.read_text()) for f in (report / "data" / "test-cases").glob("*.json")]


def _attachment(report: Path, case: dict, prefix: str) -> dict:
    (a,) = [a for a in case["testStage"]["attachments"] if a["name"].startswith(prefix)]
    return json.loads((report / "data" / "attachments" / a["source"]).read_text())


def test_report_shows_each_run_s_duration_and_verdicts_and_the_timeline_spans_the_runs(tmp_path):
    _need_chromium()
    results, report = tmp_path / "results", tmp_path / "report"
    r = subprocess.run([sys.executable, "-m", "pytest", "suites/test_chaos.py", "-p", "no:cacheprovider", "-q",
                        "-k", "test_scenario and member-kill", "--harness-protocol", "classic-eager",
                        "--harness-protocol", "consumer", "--harness-concurrency", "2",
                        "--harness-misbehave", "claim-extra", "--alluredir", str(results),
                        "--harness-runs-root", str(tmp_path / "runs")],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 1, (r.stdout + r.stderr)[-4000:]
    assert (results / "categories.json").exists() and (results / "environment.properties").exists()
    cases = _generate(results, report)
    assert len(cases) == 2 and all(c["status"] == "failed" for c in cases), [c["status"] for c in cases]
    runs = {c["uid"]: (_attachment(report, c, "run metadata"), _attachment(report, c, "witnesses")) for c in cases}
    said = {c["name"]: c.get("statusMessage", "") for c in cases}
    for c in cases:  # the message names each verdict that failed the run, the claim's among them: exclusive_ownership
        # when another member held the claimed partition meanwhile, coordinator_claims when the claim outlasted the
        # member's allowance after the coordinator's answer (clean clones' runs showed either alone: a claim revoked
        # 0.75 s after the answer, within it; a claim of a partition no other member held then)
        failing = [f"{n}: {v['status']}" for n, v in runs[c["uid"]][1].items() if v["status"] in ("invalid", "unknown")]
        assert {"exclusive_ownership: invalid", "coordinator_claims: invalid"} & set(failing), said
        assert all(f in said[c["name"]] for f in failing), said
    # Allure files a test under the first category whose pattern matches, in the harness's order: each run's first
    # invalid verdict by that order (coordinator_claims, or one before it: a claim on a partition another member
    # held fails exclusive_ownership too, and one that reads the claimed partition from its start re-reads
    # committed records, record_integrity, without committing them, commit_progress)
    order = [c["name"] for c in categories() if c["name"].startswith("Violation: ")]
    filed = {k["name"]: _leaves(k) for k in json.loads((report / "data" / "categories.json").read_text())["children"]}
    for c in cases:
        bad = {f"Violation: {n}" for n, v in runs[c["uid"]][1].items() if v["status"] == "invalid"}
        first = next(n for n in order if n in bad)
        assert c["name"] in filed.get(first, []), (first, filed)
    charts = list((report / "data" / "attachments").glob("*.html"))  # the chart: an HTML page Allure previews
    assert len(charts) == 2 and all('class="violation"' in s.read_text() for s in charts)
    for c in cases:
        want = runs[c["uid"]][0]["duration_s"]
        assert abs(c["time"]["duration"] / 1000 - want) <= 0.1 * want, (c["name"], c["time"], want)

    timeline = json.loads((report / "data" / "timeline.json").read_text())
    lanes = {t["name"]: [x["time"] for x in t["children"]] for host in timeline["children"] for t in host["children"]}
    assert sorted(n.rsplit("-", 1)[-1] for n in lanes) == ["1", "2"], lanes  # harness-run-1 and harness-run-2
    (a,), (b,) = lanes.values()
    assert a["start"] < b["stop"] and b["start"] < a["stop"], lanes  # the two runs went on together, as drawn
    span = (max(a["stop"], b["stop"]) - min(a["start"], b["start"])) / 1000
    assert span >= max(m["duration_s"] for m, _ in runs.values())

    SHOTS.mkdir(parents=True, exist_ok=True)
    with served(report) as base:
        for i, c in enumerate(sorted(cases, key=lambda c: c["name"])):
            meta, verdicts = runs[c["uid"]]
            page = f"{base}/index.html#testresult/{c['uid']}"
            text = dom(tmp_path / f"d{i}", page)
            shown = DURATION.search(text)
            assert shown, text[-2000:]
            assert abs(seconds(shown.group(1)) - meta["duration_s"]) <= 0.1 * meta["duration_s"], shown.group(1)
            for name, v in verdicts.items():
                assert f"{name}: {v['status']} — " in text or f"{name}: {v['status']}<" in text, name
            bad = [n for n, x in verdicts.items() if x["status"] == "invalid"]
            # Allure shows the first category that matches the test: a Violation of one of its invalid verdicts
            assert "ownership timeline" in text and any(f"Violation: {n}" in text for n in bad), (bad, text[-2000:])
            chromium(tmp_path / f"s{i}", "--virtual-time-budget=20000", "--window-size=1400,2400",
                     f"--screenshot={(SHOTS / f'report-test-result-{i + 1}.png').resolve()}", page)
        timeline_png, chart_png = SHOTS / "report-timeline-tab.png", SHOTS / "report-timeline.png"
        chromium(tmp_path / "t", "--virtual-time-budget=20000", "--window-size=1400,700",
                 f"--screenshot={timeline_png.resolve()}", f"{base}/index.html#timeline")
        chromium(tmp_path / "c", "--window-size=1100,320", f"--screenshot={chart_png.resolve()}",
                 f"{base}/data/attachments/{charts[0].name}")
    assert (SHOTS / "report-test-result-1.png").stat().st_size > 10_000 and timeline_png.stat().st_size > 5_000
    w, h, rows = pixels(chart_png)
    red = sum(1 for y in range(TOP, min(h, TOP + 6 * ROW_H)) for px in rows[y] if px == (255, 0, 0))
    assert red > 20, f"no red violation markers in the chart rows of {chart_png}"
    coloured = sum(1 for y in range(TOP, min(h, TOP + 6 * ROW_H)) for px in rows[y][120:] if px != (255, 255, 255))
    assert coloured > 5000, "the chart rows are empty: no ownership bars"


def _leaves(node: dict) -> list[str]:
    """The test names under a node of Allure's categories tree (category > message > test)."""
    kids = node.get("children")
    return [node["name"]] if kids is None else [n for k in kids for n in _leaves(k)]


def test_allure_files_every_kind_s_verdicts_and_a_known_finding_under_their_categories(tmp_path):
    """The categories' regexes as Allure's generator (Java) applies them, not as Python reads them."""
    from harness.findings.registry import KNOWN
    finding = KNOWN[0].id
    (tmp_path / "test_kinds.py").write_text(textwrap.dedent(f"""
        import pytest

        def _fail(name, status):
            pytest.fail(f"run r: fail\\n  {{name}}: {{status}}: what it saw\\n  reproduce: harness replay r",
                        pytrace=False)

        def test_streams(): _fail("task_exclusive_active", "invalid")
        def test_connect(): _fail("connect_balance", "unknown")
        def test_share(): _fail("share_served", "invalid")
        def test_consumer(): _fail("coordinator_survival", "invalid")
        def test_known(): pytest.xfail("known finding: {finding}; this run: m1 at +3.0s\\nrun r: fail")
        def test_known_failed():
            pytest.fail("run r: fail\\n  exclusive_ownership: invalid: two owners\\n"
                        "  known finding: {finding}: its title; this run: m2 at 9.5 s", pytrace=False)
    """))
    results, report = tmp_path / "results", tmp_path / "report"
    r = subprocess.run([sys.executable, "-m", "pytest", "test_kinds.py", "-q", "-p", "no:cacheprovider",
                        f"--alluredir={results}"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    _generate(results, report)
    cats = json.loads((report / "data" / "categories.json").read_text())
    filed = {c["name"]: sorted(_leaves(c)) for c in cats["children"]}
    assert filed == {"Violation: task_exclusive_active": ["test_streams"],
                     "Undecided: connect_balance": ["test_connect"],
                     "Violation: share_served": ["test_share"],
                     "Violation: coordinator_survival": ["test_consumer"],
                     f"known finding: {finding}": ["test_known"],
                     f"known finding: {finding} (failed, not excused)": ["test_known_failed"]}, filed


def _shown_attachment(page: str) -> list[str]:
    """The lines of the attachment open in a test's page (Allure's modal preview of a text attachment)."""
    got = re.search(r'<pre class="attachment-preview__text">(.*?)</pre>', page, re.S)
    assert got, page[-2000:]
    return [html.unescape(x) for x in re.split(r"<br\s*/?>", got.group(1))]


def test_each_test_s_page_shows_its_own_run_s_log_and_an_undecided_run_is_broken(tmp_path):
    """The issue's report test: a suite with a passing, a failing, an unknown and an excused test (fake backend),
    its report in headless Chromium: each test's log holds its own run's lines only; the failing test's first line
    names the invariant, a member, a partition and a time in run seconds, and its chart's red mark shows its tooltip
    on hover inside the report; the unknown test is broken; the excused one is filed under its finding."""
    _need_chromium()
    s = run_session(tmp_path / "session", "--harness-known-findings", "xfail", excused=True)
    assert s.proc.returncode == 1 and sorted(s.runs) == sorted(SCENARIOS), (s.proc.stdout + s.proc.stderr)[-4000:]
    report = tmp_path / "report"
    cases = {c["name"]: c for c in _generate(s.allure, report)}
    status = {n: c["status"] for n, c in cases.items()}
    assert status == {s.test_of("fake-scale"): "passed", s.test_of("fake-claim"): "failed",
                      s.test_of("fake-idle"): "broken", "test_known": "skipped"}, status
    filed = {k["name"]: _leaves(k) for k in json.loads((report / "data" / "categories.json").read_text())["children"]}
    assert filed["Undecided: schedule_performed"] == [s.test_of("fake-idle")], filed
    assert filed[f"known finding: {EXCUSED_BY}"] == ["test_known"], filed
    assert [n for n, tests in filed.items() if s.test_of("fake-claim") in tests][0].startswith("Violation: "), filed
    own = {sc: (run / "logs" / "progress.log").read_text().splitlines() for sc, run in s.runs.items()}
    with served(report) as base:
        for i, scenario in enumerate(SCENARIOS):
            case = cases[s.test_of(scenario)]
            (log,) = [a for a in case["testStage"]["attachments"] if a["name"] == "log"]
            page = dom(tmp_path / f"l{i}", f"{base}/index.html#testresult/{case['uid']}?attachment={log['uid']}")
            shown = _shown_attachment(page)
            assert own[scenario] and set(own[scenario]) <= set(shown), (scenario, shown)
            mine = {x.split(": ", 1)[1] for x in own[scenario]}
            for other, lines in own.items():
                foreign = [m for m in {x.split(": ", 1)[1] for x in lines} - mine if any(m in x for x in shown)]
                assert other == scenario or not foreign, (scenario, other, foreign)
            want = {"fake-scale": "passed", "fake-claim": "failed", "fake-idle": "broken"}[scenario]
            shown_status = re.search(r'class="label label_status_(\w+)"', dom(tmp_path / f"p{i}",
                                                                               f"{base}/index.html#testresult/{case['uid']}"))
            assert shown_status and shown_status.group(1) == want, (scenario, shown_status)
        # the failing test: its first line (pytest's message, Allure's status message) says what broke, who, where and
        # when in the run's seconds; its chart's red mark says which invariant on hover, inside the report
        claim = cases[s.test_of("fake-claim")]
        first = claim["statusMessage"].splitlines()[0]
        assert re.match(r"^(?:Failed: )?[a-z_]+: .*\bm\d+\b.*\bpartitions? \d.* at \d+\.\d s\b", first), first
        tip, before, after = hover_a_red_mark(tmp_path / "hover", f"{base}/index.html#testresult/{claim['uid']}")
        assert before["display"] == "none" and after["display"] == "block" and after["text"] == tip, (before, after)
        broke = {n for n, v in json.loads((s.runs["fake-claim"] / "verdicts.json").read_text()).items()
                 if v["status"] == "invalid"}
        assert tip.split(":")[0] in broke, (tip, broke)  # the mark names an invariant the run broke


def test_the_analytics_page_fits_a_1400_px_window(tmp_path):
    """summary.html of a wide summary (long names, every column, a flaky group) measured in Chromium: the page is
    no wider than the window; a table wider than it scrolls inside its own container."""
    _need_chromium()
    from harness.analytics.html import render
    name = "rolling-upgrade-with-static-members-and-a-rack-outage-of-team-payments"
    groups = [{"kind": "consumer", "scenario": f"{name}-{i}", "kafka_version": "4.4.0", "client_version": "2.16.1",
               "protocol": p, "runs": 20, "pass": 15, "fail": 2, "unknown": 3, "error": 0, "violating_runs": 2,
               "violation_rate": 0.1, "unknown_rate": 0.15, "shrink_attempts": 8, "rebalances": 1234,
               "duration_p50_s": 0.123456, "duration_p95_s": 12.345678, "duration_p99_s": 123.456789,
               "moves_avg": 12.34, "longest_unowned_max_s": 123.456}
              for i in range(6) for p in ("classic-cooperative", "consumer")]
    summary = {"totals": {"runs": 240, "shrink_attempts": 16, "rebalances": 14808, "violating_runs": 24,
                          "violation_rate": 0.1, "unknown_runs": 36, "unknown_rate": 0.15, "error_runs": 0},
               "groups": groups,
               "rebalance_time": [{"protocol": "classic-cooperative", "kafka_version": "4.4.0", "assignors": "range,"
                                   "cooperative-sticky,roundrobin,sticky", "runs": 120, "failed": 12, "unknown": 18,
                                   "failure_rate": 0.1, "unknown_rate": 0.15, "disturbances": 999, "p50_s": 1.5,
                                   "p95_s": 9.5, "max_s": 60.0, "unsettled": 3, "unowned_sum_p95_s": 12.0,
                                   "unowned_max_s": 30.0}],
               "trend": [{"day": "2026-11-27", "scenario": g["scenario"], "runs": 20, "violating_runs": 2,
                          "unknown": 3, "violation_rate": 0.1, "unknown_rate": 0.15, "rebalances": 100,
                          "duration_p95_s": 3.0} for g in groups],
               "flaky": [{"scenario": name, "protocol": "consumer", "kafka_version": "4.4.0", "client_version": "2.16.1",
                          "seed": 2133575392, "schedule_hash": "0123456789abcdef", "runs": 6,
                          "differing_invariants": ["exclusive_ownership", "coverage_liveness"],
                          "outcomes": [{"run_id": f"20261127T044708-{name}-consumer-2133575392-{k}",
                                        "status": "fail" if k % 2 else "pass"} for k in range(6)]}],
               "skipped": [{"name": f"20261127T044708-{name}-consumer-1", "reason": "STATUS incomplete: no verdict"}]}
    page = render(summary)
    probe = tmp_path / "summary.html"  # the page as written, with a script that writes what the window shows
    probe.write_text(page.replace("</body>", "<script>document.body.setAttribute('data-widths', JSON.stringify("
                                  "{page: document.documentElement.scrollWidth, tables: [...document.querySelectorAll"
                                  "('.tw')].map(t => [t.scrollWidth, t.clientWidth])}))</script></body>"))
    got = re.search(r'data-widths="([^"]+)"', dom(tmp_path / "p", probe.as_uri(), width=1400))
    assert got, "the page was not measured"
    widths = json.loads(got.group(1).replace("&quot;", '"'))
    assert widths["page"] <= 1400, widths
    assert all(client <= 1400 for _, client in widths["tables"]) and len(widths["tables"]) == 5, widths
    SHOTS.mkdir(parents=True, exist_ok=True)
    chromium(tmp_path / "s", "--window-size=1400,900", f"--screenshot={(SHOTS / 'analytics-summary.png').resolve()}",
             (tmp_path / "summary.html").as_uri())
