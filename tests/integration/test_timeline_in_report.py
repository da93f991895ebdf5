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
import time
from pathlib import Path

import pytest

from tests.integration.browser import served
from tests.integration.cdp import Chromium

pytestmark = pytest.mark.integration
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "first-assignment-given-away"
SHOTS = Path("reports/screenshots")

#: the test's page: the chart's attachment row (by its name), clicked open
OPEN = """(() => {
  const row = [...document.querySelectorAll('.attachment-row')].find(r => r.textContent.includes('ownership timeline'));
  if (!row) return null;
  if (!row.classList.contains('attachment-row_selected')) row.click();
  const f = document.querySelector('iframe[data-html-preview-token]');
  if (!f) return null;
  f.scrollIntoView({block: 'start'});
  const r = f.getBoundingClientRect();
  return [r.x, r.y, r.width, r.height];
})()"""
#: inside the frame, once the chart's script ran: the centre of the first red mark's circle in the frame's viewport
#: and the tooltip of the mark on top there
MARK = """(() => {
  const c = document.querySelector('g.violation circle');
  if (!c || !c.closest('[data-tip]')) return null;
  const r = c.getBoundingClientRect(), x = r.x + r.width / 2, y = r.y + r.height / 2;
  const top = document.elementFromPoint(x, y), mark = top && top.closest('g.violation');
  return mark ? [x, y, mark.getAttribute('data-tip')] : null;
})()"""
TIP = """(() => {
  const t = document.getElementById('tip'), r = t.getBoundingClientRect();
  return {display: getComputedStyle(t).display, text: t.innerText, top: r.top, left: r.left, bottom: r.bottom,
          right: r.right, width: window.innerWidth, height: window.innerHeight};
})()"""


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
        b = Chromium(tmp_path / "profile", width=1400, height=1000)
        try:
            b.send("Page.navigate", session=b.session, url=f"{base}/index.html#testresult/{case['uid']}")
            frame = b.wait_for(OPEN, timeout=60)
            assert frame, "the test's page shows no preview of the chart's attachment"
            where = None
            for _ in range(100):  # the preview's frame (a sandboxed srcdoc: its own origin) once its chart is drawn
                where = next(((s, c, m) for s, c, _ in b.contexts() for m in [_try(b, MARK, s, c)] if m), None)
                if where:
                    break
                time.sleep(0.2)
            assert where, "no red mark inside the preview's frame"
            session, context, (x, y, tip) = where
            assert tip.startswith("exclusive_ownership: "), tip
            assert b.evaluate(TIP, session=session, context=context)["display"] == "none"
            fx, fy = b.evaluate(OPEN)[:2]  # the frame may have moved while it was sized to its chart
            b.mouse_move(fx + x, fy + y)
            shown = b.evaluate(TIP, session=session, context=context)
            SHOTS.mkdir(parents=True, exist_ok=True)
            b.screenshot((SHOTS / "report-timeline-hover.png").resolve())
        finally:
            b.close()
    assert shown["display"] == "block", shown
    assert shown["text"] == tip and "exclusive_ownership: " in shown["text"] and " at +" in shown["text"], shown
    assert 0 <= shown["left"] < shown["right"] <= shown["width"] and 0 <= shown["top"] < shown["bottom"] <= shown["height"]


def _try(b: Chromium, expression: str, session: str, context: int):
    """The expression's value in one frame's context, None when that context is gone (a navigation)."""
    from tests.integration.cdp import DevToolsError
    try:
        return b.evaluate(expression, session=session, context=context)
    except DevToolsError:
        return None
