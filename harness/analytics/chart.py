"""The summary's chart: per protocol x Kafka version, how many runs failed and were unknown, and the rebalance time.

An inline SVG, no scripts. Each bar has an axis under it (0 to 100 % of the row's runs; 0 to a round number of
seconds) and its counts and percentages written under it, so that 1 failed run of 1 reads "1 of 1 run failed
(100.0%)" beside a row reading "100 of 100 runs failed (100.0%)", never two equal full bars alone.
"""
from __future__ import annotations

import html
import math

#: the colours of the outcomes wherever they are shown: failed (an invalid verdict), unknown (undecided), error
FAIL, UNKNOWN, ERROR, PASS = "#c24a4a", "#e8a317", "#888888", "#cfe3cf"
P50, P95, GRID = "#4a78c2", "#a9c1e8", "#d0d0d0"
LABEL_W, PANEL_W, GAP, ROW_H, TOP = 210, 300, 40, 36, 22
RATE_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)


def plural(n: int, one: str, many: str | None = None) -> str:
    """`1 run`, `2 runs`: a count with its word."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def pct(x) -> str:
    """A rate as the tables write it (`12.5%`), `-` when there is none (no runs)."""
    return "-" if x is None else f"{x:.1%}"


def _e(x) -> str:
    return html.escape("" if x is None else str(x))


def nice_top(x: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least x (the time axis's end)."""
    if not x or x <= 0:
        return 1.0
    p = 10 ** math.floor(math.log10(x))
    return next(m * p for m in (1, 2, 2.5, 5, 10) if m * p >= x - 1e-12)


def rate_words(r: dict) -> str:
    """`1 of 1 run failed (100.0%), 0 unknown (0.0%)`: a row's counts and percentages."""
    runs = r.get("runs") or 0
    return (f"{r.get('failed') or 0} of {plural(runs, 'run')} failed ({pct(r.get('failure_rate'))}), "
            f"{r.get('unknown') or 0} unknown ({pct(r.get('unknown_rate'))})")


def time_words(r: dict) -> str:
    """`p50 1.20 s, p95 3.40 s of 23 disturbances, 2 never settled`: a row's rebalance time and its count."""
    n = r.get("disturbances") or 0
    if r.get("p50_s") is None:
        words = f"no settled disturbance of {n}"
    else:
        words = f"p50 {r['p50_s']:.2f} s, p95 {r['p95_s']:.2f} s of {plural(n, 'disturbance')}"
    return words + (f", {r['unsettled']} never settled" if r.get("unsettled") else "")


def _axis(x0: int, y: int, ticks, labels, top_y: int) -> str:
    """A horizontal axis at y from x0: a tick, its label and a grid line up to top_y at each fraction in ticks."""
    out = [f'<g class="axis"><line x1="{x0}" y1="{y}" x2="{x0 + PANEL_W}" y2="{y}" stroke="#888"/>']
    for t, label in zip(ticks, labels):
        x = x0 + round(PANEL_W * t)
        out.append(f'<line x1="{x}" y1="{top_y}" x2="{x}" y2="{y}" stroke="{GRID}" stroke-dasharray="2,2"/>'
                   f'<line x1="{x}" y1="{y}" x2="{x}" y2="{y + 4}" stroke="#888"/>'
                   f'<text x="{x}" y="{y + 15}" text-anchor="middle">{_e(label)}</text>')
    return "".join(out) + "</g>"


def _row(r: dict, y: int, rate_x: int, time_x: int, top: float) -> str:
    """One protocol x Kafka version: its label, the failed and unknown bars, the p95 and p50 bars, their words."""
    fw = round(PANEL_W * min(1.0, r.get("failure_rate") or 0.0))
    uw = round(PANEL_W * min(1.0, r.get("unknown_rate") or 0.0))
    out = [f'<text x="0" y="{y + 11}" font-weight="600">{_e(r["protocol"])}</text>'
           f'<text x="0" y="{y + 25}">kafka {_e(r["kafka_version"])}, {plural(r.get("runs") or 0, "run")}</text>'
           f'<rect x="{rate_x}" y="{y}" width="{PANEL_W}" height="14" fill="#f3f3f3"/>'
           f'<rect class="failed" x="{rate_x}" y="{y}" width="{fw}" height="14" fill="{FAIL}"><title>'
           f'{_e(rate_words(r))}</title></rect>'
           f'<rect class="unknown" x="{rate_x + fw}" y="{y}" width="{uw}" height="14" fill="{UNKNOWN}"><title>'
           f'{_e(rate_words(r))}</title></rect>'
           f'<text class="counts" x="{rate_x}" y="{y + 26}">{_e(rate_words(r))}</text>'
           f'<rect x="{time_x}" y="{y}" width="{PANEL_W}" height="14" fill="#f3f3f3"/>']
    for key, color in (("p95_s", P95), ("p50_s", P50)):
        if r.get(key) is not None:
            out.append(f'<rect x="{time_x}" y="{y}" width="{max(1, round(PANEL_W * min(1.0, r[key] / top)))}" '
                       f'height="14" fill="{color}"><title>{key[:3]} {r[key]:.3f} s</title></rect>')
    warn = ' fill="#b00020"' if r.get("unsettled") else ""  # some disturbance never settled
    out.append(f'<text class="counts" x="{time_x}" y="{y + 26}"{warn}>{_e(time_words(r))}</text>')
    return "".join(out)


def chart(rows: list[dict]) -> str:
    """An inline SVG of summary["rebalance_time"]: per protocol x Kafka version, the runs that failed (red) and
    were unknown (amber) on an axis from 0 to 100 % of the row's runs, beside the rebalance time (trigger to
    stable: p50 dark, p95 light) on an axis of seconds; each row's counts and percentages written under its bars."""
    if not rows:
        return ""
    top = nice_top(max((r.get("p95_s") or r.get("p50_s") or 0 for r in rows), default=0))
    rate_x, time_x = LABEL_W, LABEL_W + PANEL_W + GAP
    width, axis_y = time_x + PANEL_W + 30, TOP + ROW_H * len(rows) + 2
    out = [f'<svg class="chart" width="{width}" height="{axis_y + 34}" role="img" font-size="11">'
           f'<text x="{rate_x}" y="12">runs failed <tspan fill="{FAIL}">&#x25A0;</tspan> and unknown '
           f'<tspan fill="{UNKNOWN}">&#x25A0;</tspan>, % of the row&#x2019;s runs</text>'
           f'<text x="{time_x}" y="12">rebalance time, s: p50 <tspan fill="{P50}">&#x25A0;</tspan> p95 '
           f'<tspan fill="{P95}">&#x25A0;</tspan></text>']
    out += [_row(r, TOP + i * ROW_H, rate_x, time_x, top) for i, r in enumerate(rows)]
    out.append(_axis(rate_x, axis_y, RATE_TICKS, [f"{t:.0%}" for t in RATE_TICKS], TOP - 4))
    out.append(_axis(time_x, axis_y, RATE_TICKS, [f"{top * t:g} s" for t in RATE_TICKS], TOP - 4))
    out.append("</svg>")
    return "".join(out)
