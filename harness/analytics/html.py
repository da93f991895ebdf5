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


def render(summary: dict) -> str:
    t = summary["totals"]
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>Rebalance analytics</title>",
           f"<style>{CSS}</style></head><body><h1>Rebalance analytics</h1>",
           f"<p>{t['runs']} runs, {t['rebalances']} rebalances, {t['violating_runs']} runs with a violation "
           f"(rate {_num(t['violation_rate'], '{:.2%}')}), rebalance duration p50 {_num(t['duration_p50_s'])} s, "
           f"p95 {_num(t['duration_p95_s'])} s, p99 {_num(t['duration_p99_s'])} s; "
           f"{len(summary.get('flaky', []))} flaky, {len(summary.get('skipped', []))} run directories skipped.</p>"]
    groups = summary.get("groups", [])
    top_p95 = max((g["duration_p95_s"] or 0 for g in groups), default=0)
    out.append("<h2>Per scenario &times; Kafka version &times; client version &times; protocol</h2><table><tr>"
               "<th class=l>scenario</th><th class=l>kafka</th><th class=l>client</th><th class=l>protocol</th>"
               "<th>runs</th><th>pass</th><th>fail</th><th>unknown</th><th>error</th><th>violation rate</th><th></th>"
               "<th>rebalances</th><th>p50 s</th><th>p95 s</th><th>p99 s</th><th></th><th>moves avg</th>"
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
               "<th>runs</th><th>violation rate</th><th></th><th>rebalances</th><th>p95 s</th><th></th></tr>")
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
