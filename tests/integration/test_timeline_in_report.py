"""Verify: the ownership timeline explains itself inside the Allure report: the chart is an HTML attachment Allure
shows in place, and a red mark's tooltip (which invariant it is, why, when) shows when the mouse is over it there.

Setup: the kept run directory fixtures/histories/first-assignment-given-away (a real consumer-protocol run whose
member kept a partition it had been given first while another was assigned it: exclusive_ownership invalid) judged
into its verdicts.json, no cluster; a pytest session in a subprocess whose one test attaches it as the suites do
(`attach_run`) with --alluredir; `harness report` generates the HTML report; `python -m http.server` serves it;
headless Chromium over the DevTools protocol opens the test's page and the attachment's preview, and moves the
mouse (a real input event) onto a red mark inside the preview's frame.
Then: the attachment is text/html; its preview is a frame on the test's page holding the chart; before the move
the tooltip box is hidden; after it, it is shown inside the frame's viewport and names exclusive_ownership and the
second of the run. A screenshot is kept under reports/screenshots/.
"""
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.integration.browser import served
from tests.integration.chart_hover import hover_a_red_mark

pytestmark = pytest.mark.integration
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "first-assignment-given-away"
SHOTS = Path("reports/screenshots")


def _run_dir(tmp_path: Path) -> Path:
    """The kept run directory copied, with its verdicts.json as the harness judges its history now."""
    from harness.record.history import History
    from harness.invariants import judge
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    verdicts = judge(History.load(run / "history"))
    assert verdicts["exclusive_ownership"].status == "invalid"
    (run / "verdicts.json").write_text(json.dumps({k: v.to_dict() for k, v in verdicts.items()}, default=str))
    return run


def _report(tmp_path: Path, run: Path) -> tuple[Path, dict]:
    (tmp_path / "test_chart.py").write_text(textwrap.dedent(f"""
        from pathlib import Path
        from harness.report.allure_run import attach_run

        def test_chart():
            attach_run(Path({str(run)!r}), failed=True)
            raise AssertionError("exclusive_ownership: invalid")
    """))
    results, report = tmp_path / "results", tmp_path / "report"
    r = subprocess.run([sys.executable, "-m", "pytest", "test_chart.py", "-q", "-p", "no:cacheprovider",
                        f"--alluredir={results}"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    g = subprocess.run([sys.executable, "-m", "harness", "report", "--results", str(results), "--out", str(report)],
                       capture_output=True, text=True, timeout=600)
    assert g.returncode == 0, g.stdout + g.stderr
    (case,) = [json.loads(f.read_text()) for f in (report / "data" / "test-cases").glob("*.json")]
    return report, case


def test_a_red_mark_s_tooltip_shows_on_hover_inside_the_report(tmp_path):
    if not shutil.which("chromium"):
        pytest.skip("chromium is not installed (./dev setup installs it)")
    report, case = _report(tmp_path, _run_dir(tmp_path))
    (chart,) = [a for a in case["testStage"]["attachments"] if a["name"] == "ownership timeline"]
    assert chart["type"] == "text/html", chart
    with served(report) as base:
        tip, before, shown = hover_a_red_mark(tmp_path / "profile", f"{base}/index.html#testresult/{case['uid']}",
                                              screenshot=SHOTS / "report-timeline-hover.png")
    assert tip.startswith("exclusive_ownership: "), tip
    assert before["display"] == "none", before
    assert shown["display"] == "block", shown
    assert shown["text"] == tip and " at +" in shown["text"], shown
    assert 0 <= shown["left"] < shown["right"] <= shown["width"], shown  # inside the frame's viewport
    assert 0 <= shown["top"] < shown["bottom"] <= shown["height"], shown
