"""The ownership chart's tooltip on hover inside the Allure report, as a user sees it: the test's page opened in
headless Chromium (tests/integration/cdp.py), the chart's attachment row clicked open, the mouse moved (a real input
event) onto the first red mark inside the preview's frame, and the frame's tooltip box read before and after.
For any test that renders a report whose test has an `ownership timeline` attachment with a red mark."""
from __future__ import annotations

import time
from pathlib import Path

from tests.integration.cdp import Chromium, DevToolsError

#: the test's page: the chart's attachment row (by its name) clicked open; the preview frame's place in the viewport
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
#: inside the frame: the tooltip box as shown (its display, text, place) and the frame's viewport
TIP = """(() => {
  const t = document.getElementById('tip'), r = t.getBoundingClientRect();
  return {display: getComputedStyle(t).display, text: t.innerText, top: r.top, left: r.left, bottom: r.bottom,
          right: r.right, width: window.innerWidth, height: window.innerHeight};
})()"""


def hover_a_red_mark(profile: Path, url: str, *, screenshot: Path | None = None) -> tuple[str, dict, dict]:
    """(the red mark's tooltip as the chart holds it, the tooltip box before the mouse came, the box after) on the
    Allure test page `url`; AssertionError when the page shows no preview of the chart or no red mark in it."""
    b = Chromium(profile, width=1400, height=1000)
    try:
        b.send("Page.navigate", session=b.session, url=url)
        assert b.wait_for(OPEN, timeout=60), f"{url} shows no preview of the chart's attachment"
        where = None
        for _ in range(100):  # the preview's frame (a sandboxed srcdoc: its own origin) once its chart is drawn
            where = next(((s, c, m) for s, c, _ in b.contexts() for m in [_value(b, MARK, s, c)] if m), None)
            if where:
                break
            time.sleep(0.2)
        assert where, f"no red mark inside the chart's preview on {url}"
        session, context, (_, _, tip) = where
        before = b.evaluate(TIP, session=session, context=context)
        after = _hovered(b, session, context)
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            b.screenshot(screenshot.resolve())
        return tip, before, after
    finally:
        b.close()


def _hovered(b: Chromium, session: str, context: int, *, within_s: float = 20.0) -> dict:
    """The tooltip box once the mouse is on the first red mark: the mark and the frame measured again and the mouse
    moved there until the box shows (a loaded machine may still be laying the frame out, or not yet have run the
    chart's handler, when the first move comes), at most `within_s`; the last box read otherwise."""
    deadline, after = time.monotonic() + within_s, {}
    while True:
        mark = _value(b, MARK, session, context)
        frame = b.evaluate(OPEN)  # the frame may have moved while it was sized to its chart
        if mark and frame:
            b.mouse_move(frame[0] + mark[0], frame[1] + mark[1])
            for _ in range(10):
                after = b.evaluate(TIP, session=session, context=context)
                if after.get("display") != "none":
                    return after
                time.sleep(0.1)
        if time.monotonic() > deadline:
            return after
        b.mouse_move(1, 1)  # off the chart, so the next move onto the mark is a new one
        time.sleep(0.3)


def _value(b: Chromium, expression: str, session: str, context: int):
    """The expression's value in one frame's context, None when that context is gone (a navigation)."""
    try:
        return b.evaluate(expression, session=session, context=context)
    except DevToolsError:
        return None
