"""The ownership timeline chart as an HTML page that explains itself: the SVG of harness/report/timeline.py inline,
with a hover box that shows each bar's and mark's tooltip (its `<title>`: which member owned what when, which
invariant a red mark is, what a broker said), and a line under the chart saying what is drawn.

Self-contained (no external resource, no network): the Allure report previews an HTML attachment in place, in a
sandboxed frame that runs inline scripts and loads nothing else, and shows an SVG attachment only as an image,
whose tooltips never show. The script moves each `<title>` into the element's `data-tip` (so a browser's own
tooltip does not show beside the box) and shows the nearest `data-tip` under the pointer.
"""
from __future__ import annotations

import re
from html import escape, unescape

#: the chart's own title, the first <title> of the SVG
_TITLE = re.compile(r"<title>(.*?)</title>", re.S)

_STYLE = """
body { margin: 0; background: #ffffff; font-family: sans-serif; }
svg { display: block; max-width: 100%; height: auto; }
#tip { position: fixed; display: none; z-index: 10; max-width: 520px; padding: 6px 9px; border-radius: 4px;
       background: #222222; color: #ffffff; font: 12px/1.4 sans-serif; white-space: pre-wrap; pointer-events: none;
       box-shadow: 0 2px 6px rgba(0, 0, 0, 0.3); }
p.hint { margin: 6px 10px 10px; color: #555555; font-size: 12px; }
"""

_SCRIPT = """
(function () {
  var svg = document.querySelector("svg"), tip = document.getElementById("tip");
  if (!svg || !tip) { return; }
  Array.prototype.slice.call(svg.querySelectorAll("title")).forEach(function (t) {
    if (t.parentNode !== svg) { t.parentNode.setAttribute("data-tip", t.textContent); t.parentNode.removeChild(t); }
  });
  function hide() { tip.style.display = "none"; }
  function show(e) {
    var el = e.target && e.target.closest ? e.target.closest("[data-tip]") : null;
    if (!el) { hide(); return; }
    tip.textContent = el.getAttribute("data-tip");
    tip.style.display = "block";
    var x = e.clientX + 14, y = e.clientY + 16, w = tip.offsetWidth, h = tip.offsetHeight;
    if (x + w > window.innerWidth) { x = Math.max(0, e.clientX - w - 14); }
    if (y + h > window.innerHeight) { y = Math.max(0, e.clientY - h - 16); }
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }
  svg.addEventListener("mousemove", show);
  svg.addEventListener("mouseover", show);
  svg.addEventListener("mouseleave", hide);
})();
"""

HINT = ("Hover a bar or a mark for what it is: an owner's bar, a fault window (pink), a member killed (dashed), "
        "a harness action (grey, on the axis), a broker's line about the group (brokers' lane; a diamond: a "
        "refusal, fencing or warning), a violation (red: the invariant, why, and when).")


def page(svg: str) -> str:
    """The chart's HTML page: `svg` (render_svg's text) inline, its tooltips shown on hover, a line on reading it."""
    title = _TITLE.search(svg)
    name = unescape(title.group(1)) if title else "ownership timeline"
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(name)}</title><style>{_STYLE}</style></head>\n<body>\n{svg}"
            f"<div id=\"tip\" role=\"tooltip\"></div>\n<p class=\"hint\">{escape(HINT)}</p>\n"
            f"<script>{_SCRIPT}</script>\n</body></html>\n")
