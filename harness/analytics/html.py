"""A small self-contained HTML page of the summary: tables and inline SVG bars, no scripts, no links out."""
from __future__ import annotations

import html

CSS = """body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}td.l,th.l{text-align:left}
.bad{color:#b00020;font-weight:600}h2{margin-top:1.5em}svg{vertical-align:middle}small{color:#666}"""


def _e(x) -> str:
    return html.escape("" if x is None else str(x))


def _num(x, fmt="{:.3f}") -> str:
    return "&ndash;" if x is None else fmt.format(x)


def _bar(value, top, width=160, color="#4a78c2") -> str:
    if value is None or not top:
        return ""
    w = max(1, int(width * min(1.0, value / top)))
    return (f'<svg width="{width}" height="12" role="img"><rect width="{width}" height="12" fill="#eee"/>'
            f'<rect width="{w}" height="12" fill="{color}"/></svg>')


def chart(rows: list[dict], width: int = 560) -> str:
    """An inline SVG: per protocol x Kafka version, the failure rate (red, 0 to 100 %) beside the trigger-to-stable
    time (blue: p50 solid, p95 light, to the largest p95 of the chart; a cross when some disturbance never
    settled)."""
    if not rows:
        return ""
    top = max((r.get("p95_s") or r.get("p50_s") or 0 for r in rows), default=0) or 1.0
    lh, left, half = 22, 220, (width - 220 - 20) // 2
    h = lh * len(rows) + 30
    out = [f'<svg width="{width}" height="{h}" role="img" font-size="11"><text x="{left}" y="12">failure rate</text>'
           f'<text x="{left + half + 10}" y="12">rebalance time s (p50, p95; max {top:.2f})</text>']
    for i, r in enumerate(rows):
        y = 20 + i * lh
        fr = r.get("failure_rate") or 0.0
        out.append(f'<text x="0" y="{y + 12}">{_e(r["protocol"])} kafka={_e(r["kafka_version"])}</text>'
                   f'<rect x="{left}" y="{y}" width="{half}" height="14" fill="#eee"/>'
                   f'<rect x="{left}" y="{y}" width="{max(0, int(half * fr))}" height="14" fill="#c24a4a"/>'
                   f'<rect x="{left + half + 10}" y="{y}" width="{half}" height="14" fill="#eee"/>')
        for key, color in (("p95_s", "#a9c1e8"), ("p50_s", "#4a78c2")):
            if r.get(key) is not None:
                out.append(f'<rect x="{left + half + 10}" y="{y}" width="{max(1, int(half * min(1, r[key] / top)))}" '
                           f'height="14" fill="{color}"><title>{key} {r[key]:.3f}s</title></rect>')
        if r.get("unsettled"):
            out.append(f'<text x="{width - 14}" y="{y + 12}" fill="#b00020">&#x2717;<title>{r["unsettled"]} never '
                       f'settled</title></text>')
    out.append("</svg>")
    return "".join(out)


def rebalance_time_section(rows: list[dict]) -> list[str]:
    """The rebalance-time table and chart by protocol x Kafka version (summary["rebalance_time"])."""
    out = ["<h2>Rebalance time by protocol &times; Kafka version</h2><p><small>From each disturbance's trigger (an "
           "action's start, a kill's SIGKILL) until the group is complete and balanced again (the runner's stable "
           "rule), from convergence_balance's measurements; unowned: the stop-the-world time, summed over the "
           "partitions of a disturbance. A disturbance that never settled is counted apart, never as 0.</small></p>",
           chart(rows), "<table><tr><th class=l>protocol</th><th class=l>kafka</th><th class=l>assignors</th>"
           "<th>runs</th><th>failed</th><th>failure rate</th><th>disturbances</th><th>p50 s</th><th>p95 s</th>"
           "<th>max s</th><th>never settled</th><th>unowned sum p95 s</th><th>longest unowned s</th></tr>"]
    for r in rows:
        out.append(f"<tr><td class=l>{_e(r['protocol'])}</td><td class=l>{_e(r['kafka_version'])}</td>"
                   f"<td class=l>{_e(r.get('assignors'))}</td><td>{r['runs']}</td><td>{r['failed']}</td>"
                   f"<td>{_num(r['failure_rate'], '{:.1%}')}</td><td>{r['disturbances']}</td>"
                   f"<td>{_num(r['p50_s'])}</td><td>{_num(r['p95_s'])}</td><td>{_num(r['max_s'])}</td>"
                   f"<td class={'bad' if r['unsettled'] else ''}>{r['unsettled']}</td>"
                   f"<td>{_num(r['unowned_sum_p95_s'])}</td><td>{_num(r['unowned_max_s'])}</td></tr>")
    out.append("</table>")
    return out


def render(summary: dict) -> str:
    t = summary["totals"]
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>Rebalance analytics</title>",
           f"<style>{CSS}</style></head><body><h1>Rebalance analytics</h1>",
           f"<p>{t['runs']} runs, {t['rebalances']} rebalances, {t['violating_runs']} runs with a violation "
           f"(rate {_num(t['violation_rate'], '{:.2%}')}); rebalance time (trigger to complete and balanced) p50 "
           f"{_num(t.get('rebalance_time_p50_s'))} s, p95 {_num(t.get('rebalance_time_p95_s'))} s over "
           f"{t.get('disturbances', 0)} disturbances, {t.get('unsettled', 0)} never settled; "
           f"{len(summary.get('flaky', []))} flaky, {len(summary.get('skipped', []))} run directories skipped.</p>"]
    out += rebalance_time_section(summary.get("rebalance_time", []))
    groups = summary.get("groups", [])
    top_p95 = max((g["duration_p95_s"] or 0 for g in groups), default=0)
    out.append("<h2>Per scenario &times; Kafka version &times; client version &times; protocol</h2><table><tr>"
               "<th class=l>scenario</th><th class=l>kafka</th><th class=l>client</th><th class=l>protocol</th>"
               "<th>runs</th><th>pass</th><th>fail</th><th>unknown</th><th>error</th><th>violation rate</th><th></th>"
               "<th>bursts</th><th>burst p50 s</th><th>p95 s</th><th>p99 s</th><th></th><th>moves avg</th>"
               "<th>longest unowned s</th></tr>")
    for g in groups:
        out.append(f"<tr><td class=l>{_e(g['scenario'])}</td><td class=l>{_e(g['kafka_version'])}</td>"
                   f"<td class=l>{_e(g['client_version'])}</td><td class=l>{_e(g['protocol'])}</td>"
                   f"<td>{g['runs']}</td><td>{g['pass']}</td><td class={'bad' if g['fail'] else ''}>{g['fail']}</td>"
                   f"<td>{g['unknown']}</td><td>{g['error']}</td><td>{_num(g['violation_rate'], '{:.1%}')}</td>"
                   f"<td>{_bar(g['violation_rate'], 1.0, color='#c24a4a')}</td><td>{g['rebalances']}</td>"
                   f"<td>{_num(g['duration_p50_s'])}</td><td>{_num(g['duration_p95_s'])}</td>"
                   f"<td>{_num(g['duration_p99_s'])}</td><td>{_bar(g['duration_p95_s'], top_p95)}</td>"
                   f"<td>{_num(g['moves_avg'], '{:.2f}')}</td><td>{_num(g['longest_unowned_max_s'])}</td></tr>")
    out.append("</table>")
    trend = summary.get("trend", [])
    top_t = max((r["duration_p95_s"] or 0 for r in trend), default=0)
    out.append("<h2>Trend by day (UTC) and scenario</h2><table><tr><th class=l>day</th><th class=l>scenario</th>"
               "<th>runs</th><th>violation rate</th><th></th><th>bursts</th><th>burst p95 s</th><th></th></tr>")
    for r in trend:
        out.append(f"<tr><td class=l>{_e(r['day'])}</td><td class=l>{_e(r['scenario'])}</td><td>{r['runs']}</td>"
                   f"<td>{_num(r['violation_rate'], '{:.1%}')}</td><td>{_bar(r['violation_rate'], 1.0, color='#c24a4a')}</td>"
                   f"<td>{r['rebalances']}</td><td>{_num(r['duration_p95_s'])}</td><td>{_bar(r['duration_p95_s'], top_t)}</td></tr>")
    out.append("</table><h2>Flaky: the same scenario, seed and schedule with different verdicts</h2>")
    flaky = summary.get("flaky", [])
    if not flaky:
        out.append("<p>none</p>")
    else:
        out.append("<table><tr><th class=l>scenario</th><th class=l>protocol</th><th class=l>kafka</th>"
                   "<th class=l>client</th><th>seed</th><th class=l>schedule</th><th>runs</th>"
                   "<th class=l>differing invariants</th><th class=l>outcomes</th></tr>")
        for f in flaky:
            oc = ", ".join(f"{_e(o['run_id'])}: {_e(o['status'])}" for o in f["outcomes"])
            out.append(f"<tr><td class=l>{_e(f['scenario'])}</td><td class=l>{_e(f['protocol'])}</td>"
                       f"<td class=l>{_e(f['kafka_version'])}</td><td class=l>{_e(f['client_version'])}</td>"
                       f"<td>{_e(f['seed'])}</td><td class=l><small>{_e(f['schedule_hash'])}</small></td>"
                       f"<td>{f['runs']}</td><td class=l>{_e(', '.join(f['differing_invariants']))}</td>"
                       f"<td class=l><small>{oc}</small></td></tr>")
        out.append("</table>")
    sk = summary.get("skipped", [])
    out.append(f"<h2>Skipped run directories ({len(sk)})</h2>")
    if sk:
        out.append("<table><tr><th class=l>directory</th><th class=l>why</th></tr>")
        out.extend(f"<tr><td class=l>{_e(s['name'])}</td><td class=l>{_e(s['reason'])}</td></tr>" for s in sk)
        out.append("</table>")
    out.append("</body></html>\n")
    return "\n".join(out)
