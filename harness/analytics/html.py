"""A small self-contained HTML page of the summary: tables and inline SVG bars, no scripts, no links out."""
from __future__ import annotations

import html

from harness.analytics.chart import ERROR, FAIL, PASS, UNKNOWN, chart, pct, plural

CSS = """body{font:14px system-ui,sans-serif;margin:1.5em;color:#222;max-width:1360px}
.tw{overflow-x:auto;max-width:100%;margin:.5em 0 1.5em}table{border-collapse:collapse}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}th{background:#f3f3f3;font-weight:600}
td.l,th.l{text-align:left}td.l{max-width:22em;overflow-wrap:break-word}td.w{min-width:14em}
.bad{color:#b00020;font-weight:600}.unk{color:#7a4d00;background:#ffe9b3;font-weight:600}
h2{margin-top:1.5em}svg{vertical-align:middle}small{color:#666}"""



def _e(x) -> str:
    return html.escape("" if x is None else str(x))


def _num(x, fmt="{:.3f}") -> str:
    return "&ndash;" if x is None else fmt.format(x)


def _cls(name: str, value) -> str:
    """A cell's class attribute: `name` when value is above 0 (a failure in red, an unknown in amber)."""
    return f" class={name}" if value else ""


def _table(head: str, rows: list[str]) -> list[str]:
    """A table in a container that scrolls sideways, so that the page itself never gets wider than the window."""
    return [f"<div class=tw><table><tr>{head}</tr>", *rows, "</table></div>"]


def _bar(value, top, width=90, color="#4a78c2") -> str:
    if value is None or not top:
        return ""
    w = max(1, int(width * min(1.0, value / top)))
    return (f'<svg width="{width}" height="12" role="img"><rect width="{width}" height="12" fill="#eee"/>'
            f'<rect width="{w}" height="12" fill="{color}"/></svg>')


def _stack(parts, total, width=90) -> str:
    """One bar of a cell's runs by outcome: (count, colour, label) side by side, each its share of `total`."""
    if not total:
        return ""
    out, x = [f'<svg width="{width}" height="12" role="img"><rect width="{width}" height="12" fill="#eee"/>'], 0.0
    for count, color, label in parts:
        w = width * (count or 0) / total
        if w > 0:
            out.append(f'<rect x="{x:.1f}" width="{w:.1f}" height="12" fill="{color}"><title>{count} {label}'
                       f'</title></rect>')
            x += w
    return "".join(out) + "</svg>"


def _outcomes(r: dict) -> str:
    return _stack(((r.get("fail", r.get("failed", r.get("violating_runs"))), FAIL, "failed"),
                   (r.get("unknown"), UNKNOWN, "unknown"), (r.get("error"), ERROR, "error"),
                   (r.get("pass"), PASS, "passed")), r.get("runs"))


def rebalance_time_section(rows: list[dict]) -> list[str]:
    """The rebalance-time table and chart by protocol x Kafka version (summary["rebalance_time"])."""
    out = ["<h2>Rebalance time by protocol &times; Kafka version</h2><p><small>From each disturbance's trigger (an "
           "action's start, a kill's SIGKILL) until the group is complete and balanced again (the runner's stable "
           "rule), from convergence_balance's measurements; unowned: the stop-the-world time, summed over the "
           "partitions of a disturbance. A disturbance that never settled is counted apart, never as 0.</small></p>",
           chart(rows)]
    out += _table("<th class=l>protocol</th><th class=l>kafka</th><th class=l>assignors</th><th>runs</th>"
                  "<th>failed</th><th>unknown</th><th>failure rate</th><th>unknown rate</th><th>distur&shy;bances</th>"
                  "<th>p50 s</th><th>p95 s</th><th>max s</th><th>never settled</th><th>unowned sum p95 s</th>"
                  "<th>longest unowned s</th>",
                  [f"<tr><td class=l>{_e(r['protocol'])}</td><td class=l>{_e(r['kafka_version'])}</td>"
                   f"<td class=l>{_e(r.get('assignors'))}</td><td>{r['runs']}</td>"
                   f"<td{_cls('bad', r['failed'])}>{r['failed']}</td>"
                   f"<td{_cls('unk', r.get('unknown'))}>{r.get('unknown', 0)}</td>"
                   f"<td{_cls('bad', r['failure_rate'])}>{_num(r['failure_rate'], '{:.1%}')}</td>"
                   f"<td{_cls('unk', r.get('unknown_rate'))}>{_num(r.get('unknown_rate'), '{:.1%}')}</td>"
                   f"<td>{r['disturbances']}</td><td>{_num(r['p50_s'])}</td><td>{_num(r['p95_s'])}</td>"
                   f"<td>{_num(r['max_s'])}</td><td{_cls('bad', r['unsettled'])}>{r['unsettled']}</td>"
                   f"<td>{_num(r['unowned_sum_p95_s'])}</td><td>{_num(r['unowned_max_s'])}</td></tr>" for r in rows])
    return out


def groups_section(groups: list[dict]) -> list[str]:
    """Per kind x scenario x Kafka version x client version x protocol: the runs by outcome, the shrink attempts
    counted apart, and the ownership bursts."""
    top_p95 = max((g["duration_p95_s"] or 0 for g in groups), default=0)
    out = ["<h2>Per scenario &times; Kafka version &times; client version &times; protocol</h2><p><small>runs: the "
           "cell's own runs; a shrink attempt (a run made while shrinking a failing schedule) is counted apart and "
           "is in none of the cell's figures. Bursts: stretches of ownership events (not the rebalance time)."
           "</small></p>"]
    out += _table("<th class=l>kind</th><th class=l>scenario</th><th class=l>kafka</th><th class=l>client</th>"
                  "<th class=l>protocol</th><th>runs</th><th>pass</th><th>fail</th><th>unknown</th><th>error</th>"
                  "<th>failure rate</th><th>unknown rate</th><th>outcomes</th><th>shrink attempts</th>"
                  "<th>bursts</th><th>burst p50 s</th><th>p95 s</th><th>p99 s</th><th></th><th>moves avg</th>"
                  "<th>longest unowned s</th>",
                  [f"<tr><td class=l>{_e(g.get('kind'))}</td><td class='l w'>{_e(g['scenario'])}</td>"
                   f"<td class=l>{_e(g['kafka_version'])}</td><td class=l>{_e(g['client_version'])}</td>"
                   f"<td class=l>{_e(g['protocol'])}</td><td>{g['runs']}</td><td>{g['pass']}</td>"
                   f"<td{_cls('bad', g['fail'])}>{g['fail']}</td><td{_cls('unk', g['unknown'])}>{g['unknown']}</td>"
                   f"<td>{g['error']}</td><td{_cls('bad', g['violation_rate'])}>"
                   f"{_num(g['violation_rate'], '{:.1%}')}</td><td{_cls('unk', g.get('unknown_rate'))}>"
                   f"{_num(g.get('unknown_rate'), '{:.1%}')}</td><td>{_outcomes(g)}{_judged_otherwise(g)}</td>"
                   f"<td>{g.get('shrink_attempts', 0)}</td><td>{bursts(g)}</td>"
                   f"<td>{_num(g['duration_p50_s'])}</td><td>{_num(g['duration_p95_s'])}</td>"
                   f"<td>{_num(g['duration_p99_s'])}</td><td>{_bar(g['duration_p95_s'], top_p95)}</td>"
                   f"<td>{_num(g['moves_avg'], '{:.2f}')}</td><td>{_num(g['longest_unowned_max_s'])}</td></tr>"
                   for g in groups])
    return out


def trend_section(trend: list[dict]) -> list[str]:
    """Per UTC day and scenario: runs, failure and unknown rates, bursts."""
    top_t = max((r["duration_p95_s"] or 0 for r in trend), default=0)
    return ["<h2>Trend by day (UTC) and scenario</h2>"] + _table(
        "<th class=l>day</th><th class=l>scenario</th><th>runs</th><th>failure rate</th><th>unknown rate</th>"
        "<th>outcomes</th><th>bursts</th><th>burst p95 s</th><th></th>",
        [f"<tr><td class=l>{_e(r['day'])}</td><td class='l w'>{_e(r['scenario'])}</td><td>{r['runs']}</td>"
         f"<td{_cls('bad', r['violation_rate'])}>{_num(r['violation_rate'], '{:.1%}')}</td>"
         f"<td{_cls('unk', r.get('unknown_rate'))}>{_num(r.get('unknown_rate'), '{:.1%}')}</td>"
         f"<td>{_outcomes(r)}</td><td>{bursts(r)}</td><td>{_num(r['duration_p95_s'])}</td>"
         f"<td>{_bar(r['duration_p95_s'], top_t)}</td></tr>" for r in trend])


def _oc(outcomes) -> str:
    """Each run's status as judged now, and the status it recorded where that differs."""
    return ", ".join(f"{_e(o['run_id'])}: {_e(o['status'])}"
                     + (f" (recorded: {_e(o['recorded'])})" if o.get("recorded") not in (None, o["status"]) else "")
                     for o in outcomes)


def bursts(r: dict) -> int:
    """A row's ownership bursts (`rebalances` in a summary.json written before they were called bursts)."""
    return r.get("bursts", r.get("rebalances", 0))


def _judged_otherwise(g: dict) -> str:
    n = g.get("judged_differently")
    return f"<br><small class=unk>{n} judged otherwise than recorded</small>" if n else ""


def headline(summary: dict) -> list[tuple[str, str]]:
    """The summary's counts, each named by what it counts, as the page's first line and the job's last say them:
    (the words, the class the page marks them with: `bad`, `unk` or ``)."""
    t, sk = summary["totals"], summary.get("skipped", [])
    jd, unsettled = t.get("judged_differently", 0), t.get("unsettled", 0)
    p50, p95 = t.get("rebalance_time_p50_s"), t.get("rebalance_time_p95_s")
    secs = "no settled one" if p50 is None else f"rebalance time p50 {p50:.2f} s, p95 {p95:.2f} s"
    return [(plural(t["runs"], "run"), ""),
            (f"{t['violating_runs']} failed ({pct(t.get('violation_rate'))})", "bad" if t["violating_runs"] else ""),
            (f"{t.get('unknown_runs', 0)} unknown ({pct(t.get('unknown_rate'))})", "unk" if t.get("unknown_runs") else ""),
            (f"{t.get('error_runs', 0)} ended in error", ""),
            (f"{t.get('passed_runs', 0)} passed", ""),
            (f"{plural(jd, 'run')} judged otherwise than recorded", "unk" if jd else ""),
            (f"{plural(t.get('shrink_attempts', 0), 'shrink attempt')} (counted apart)", ""),
            (f"{plural(t.get('disturbances', 0), 'disturbance')} ({secs}; {unsettled} never settled)",
             "bad" if unsettled else ""),
            (plural(bursts(t), "ownership burst"), ""),
            (plural(len(summary.get("flaky", [])), "flaky group"), ""),
            (f"{plural(len(sk), 'directory', 'directories')} skipped", "")]


WORDS = ("<p><small><b>failed</b>: a run with a violated invariant; <b>unknown</b>: some invariant could not judge "
         "the run (never a pass, never in a failure rate); <b>judged otherwise than recorded</b>: a run whose "
         "run-level checks, judged again from its history, say other than the STATUS it recorded (counted as judged "
         "now; the table below); <b>disturbance</b>: an action, a kill or the first join, timed from its trigger "
         "until the group is complete and balanced again (the rebalance time); <b>ownership burst</b>: a stretch "
         "of assigned, revoked and lost events less than 1 s apart (the <code>rebalances</code> table).</small></p>")


def judged_section(rows: list[dict]) -> list[str]:
    """The runs counted otherwise than their STATUS recorded: each "recorded: pass, judged now: unknown (...)"."""
    out = [f"<h2>Judged now otherwise than recorded ({len(rows)})</h2>",
           "<p><small>Each run is counted by its verdicts as judged now (the run-level checks judged again from its "
           "history), never by STATUS alone.</small></p>"]
    if not rows:
        return out + ["<p>none</p>"]
    return out + _table("<th class=l>run</th><th class=l>recorded</th><th class=l>judged now</th><th class=l>why</th>",
                        [f"<tr><td class='l w'>{_e(r['run_id'])}</td><td class=l>{_e(r['recorded'])}</td>"
                         f"<td class=l><span class={'unk' if r['judged_now'] == 'unknown' else 'bad'}>"
                         f"{_e(r['judged_now'])}</span></td><td class=l><small>{_e(r['note'])}</small></td></tr>"
                         for r in rows])


def render(summary: dict) -> str:
    """The page: the headline's counts and what each counts, the chart and the tables."""
    out = ["<!doctype html><html><head><meta charset='utf-8'>"
           "<meta name='viewport' content='width=device-width'><title>Rebalance analytics</title>",
           f"<style>{CSS}</style></head><body><h1>Rebalance analytics</h1>",
           "<p>" + "; ".join(f"<span class={c}>{_e(w)}</span>" if c else _e(w) for w, c in headline(summary))
           + ".</p>", WORDS]
    out += rebalance_time_section(summary.get("rebalance_time", []))
    out += groups_section(summary.get("groups", []))
    out += trend_section(summary.get("trend", []))
    out.append("<h2>Flaky: the same scenario, seed and schedule with different verdicts</h2>")
    flaky = summary.get("flaky", [])
    if not flaky:
        out.append("<p>none</p>")
    else:
        out += _table("<th class=l>scenario</th><th class=l>protocol</th><th class=l>kafka</th><th class=l>client</th>"
                      "<th>seed</th><th class=l>schedule</th><th>runs</th><th class=l>differing invariants</th>"
                      "<th class=l>outcomes</th>",
                      [f"<tr><td class='l w'>{_e(f['scenario'])}</td><td class=l>{_e(f['protocol'])}</td>"
                       f"<td class=l>{_e(f['kafka_version'])}</td><td class=l>{_e(f['client_version'])}</td>"
                       f"<td>{_e(f['seed'])}</td><td class=l><small>{_e(f['schedule_hash'])}</small></td>"
                       f"<td>{f['runs']}</td><td class=l>{_e(', '.join(f['differing_invariants']))}</td><td class=l>"
                       f"<small>{_oc(f['outcomes'])}</small>"
                       f"</td></tr>" for f in flaky])
    out += judged_section(summary.get("judged_now", []))
    sk = summary.get("skipped", [])
    out.append(f"<h2>Skipped run directories ({len(sk)})</h2>")
    if sk:
        out += _table("<th class=l>directory</th><th class=l>why</th>",
                      [f"<tr><td class='l w'>{_e(s['name'])}</td><td class=l>{_e(s['reason'])}</td></tr>" for s in sk])
    out.append("</body></html>\n")
    return "\n".join(out)
