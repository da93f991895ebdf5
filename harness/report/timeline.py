"""The ownership timeline chart of a run as a self-contained SVG (plain string building, no plotting library).

One row per partition; bars coloured by owning member (legend below); fault windows shaded; below the partitions
a row per member a fault affected, each such fault a window on it (a request fault, `api` in its `fault_start`,
only there, labelled with its API and outcome); harness actions as grey ticks on the axis; what the brokers said
about the group (`broker` events) as ticks on a lane of their own above the axis, a coordinator's refusal, fencing
or warning as a larger orange diamond, the group member ids in their lines named as the history names the members
(`member_names`); violations (the mono times of invalid verdicts' witnesses) as red markers with a <title>
tooltip, those drawn on one another as one; member kills as dashed lines. The time axis is seconds from
`run_start`. The report's attachment is this SVG in an HTML page that shows the tooltips (timeline_html.py).
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from html import escape

from harness.record.history import History
from harness.invariants.brokers import group_of, notable
from harness.invariants.coordinator_log import client_of
from harness.invariants.core import CheckSettings
from harness.invariants.timeline import Timeline, build

#: the owners' colours: none orange, red or pink, which mean the broker's lines (#ff9900), violations (#ff0000)
#: and faults (#f4a6a6) on the same chart
PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#7f7f7f", "#aec7e8",
           "#98df8a", "#c5b0d5", "#c49c94", "#9edae5", "#393b79", "#637939")
LEFT, RIGHT, TOP, ROW_H, WIDTH = 120, 30, 40, 26, 1100
#: a group member id in a broker's line: a classic one (`<client.id>-<uuid>`), or one the coordinator named
#: joining (`Member <id> joins the consumer group`, the consumer protocol's)
CLASSIC_ID_IN = re.compile(r"[\w.-]+-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
JOINS = re.compile(r"Member (?P<id>\S+) joins the consumer group")
#: the legend's grid: wide enough for its longest label ("broker said (diamond: refusal)") beside the next
LEGEND_COLS, LEGEND_COL_W = 4, 240


def _x(t: float, t0: float, span: float) -> float:
    return LEFT + (WIDTH - LEFT - RIGHT) * max(0.0, min(span, t - t0)) / span


def _ticks(span: float) -> list[float]:
    step = next(s for s in (1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 1800, 3600, math.inf) if span / s <= 12)
    return [i * step for i in range(int(span // step) + 1)] if step != math.inf else [0.0]


def _as_dict(v) -> dict:
    return v if isinstance(v, dict) else v.to_dict()


def _violations(verdicts: dict, tl) -> list[tuple[float, int | None, str]]:
    """(mono, partition or None, tooltip) of every witness with a time of every invalid verdict (partitions as
    the timeline numbers them over every topic of the run)."""
    out = []
    for name, v in (verdicts or {}).items():
        d = _as_dict(v)
        if d.get("status") != "invalid":
            continue
        for w in d.get("witnesses") or ():
            if not isinstance(w, dict) or not isinstance(w.get("mono"), (int, float)):
                continue
            parts = tl.event_partitions(w) if w.get("partitions") else []
            if not parts and w.get("partition") is not None:
                g = tl.layout.of(w.get("topic") or tl.topic, int(w["partition"]))
                parts = [g] if g is not None else []
            tip = f"{name}: {w.get('why') or d.get('message', '')} ({w.get('type', '?')} by {w.get('member', '-')})"
            for p in parts or [None]:
                out.append((float(w["mono"]), p, tip))
    return out


def _lanes(intervals: list) -> dict:
    """Lane index per ownership interval of one partition, so that overlapping owners sit side by side."""
    ends: list[float] = []
    lane = {}
    for o in sorted(intervals, key=lambda o: o.start):
        i = next((k for k, e in enumerate(ends) if e <= o.start), len(ends))
        if i < len(ends):
            ends[i] = o.end
        else:
            ends.append(o.end)
        lane[id(o)] = i
    return lane


def tasks_as_ownership(history: History, topic: str) -> History:
    """A Kafka Streams run's task runs as ownership of the input topic's partitions, to draw them: task 0_p
    reads partition p, so its `task_active` .. `task_active_end` becomes an assignment of p."""
    out = []
    for e in history.events:
        if e["type"] in ("task_active", "task_active_end"):
            p = int(str(e.get("task", "0_0")).rpartition("_")[2])
            e = {**e, "type": "assigned" if e["type"] == "task_active" else "revoked", "partitions": [[topic, p]]}
        out.append(e)
    return History(events=out, headers=history.headers)


def connect_tasks_as_ownership(history: History) -> History:
    """A Kafka Connect run's task runs as ownership, to draw a row per task: each connector is drawn as a topic
    whose partition n is its task n, `connect_task_started` .. `connect_task_stopped` an assignment of it."""
    out = []
    for e in history.events:
        if e["type"] in ("connect_task_started", "connect_task_stopped"):
            e = {**e, "type": "assigned" if e["type"] == "connect_task_started" else "revoked",
                 "partitions": [[e.get("connector"), int(e.get("task") or 0)]]}
        elif e["type"] in ("processed", "committed", "assigned", "revoked", "lost"):
            continue  # the sink's records are not the rows drawn
        out.append(e)
    return History(events=out, headers=history.headers)


def _label(tl, p: int) -> str:
    """A partition's row label: the number alone with one topic; with several, `orders-3` of `t-<run id>-orders`
    (the topics' common prefix left out)."""
    name = tl.name(p)
    if isinstance(name, int) or len(tl.topics) < 2:
        return str(name)
    common = os.path.commonprefix(list(tl.topics))
    return str(name)[common.rfind("-") + 1:]


def member_names(tl: Timeline) -> dict[str, str]:
    """Each group member id the brokers' lines name, as the history names its member (`m3`): a classic id by the
    client.id it starts with, a consumer-protocol id by the group watch's answers (`group_assignment`'s
    `consumer_id`), else by its first join when one running member alone had no id yet; an id none of these tells
    is left out (its lines keep it)."""
    out: dict[str, str] = {}
    for _, e in tl.control:
        if e["type"] == "group_assignment":
            for m in e.get("members") or ():
                if m.get("consumer_id") and m.get("member") in tl.lives:
                    out.setdefault(m["consumer_id"], m["member"])
    for _, e in tl.control:
        if e["type"] != "broker":
            continue
        msg = str(e.get("message", ""))
        for mid in CLASSIC_ID_IN.findall(msg):
            if client_of(mid) in tl.lives:
                out.setdefault(mid, client_of(mid))
        if (j := JOINS.search(msg)) and j["id"] not in out:
            free = tl.alive_members(e["mono"]) - set(out.values())
            if len(free) == 1:
                out[j["id"]] = next(iter(free))
    return out


def named(text: str, names: dict[str, str]) -> str:
    """A broker's line with each member id `member_names` tells replaced by the member's name."""
    for mid in sorted((m for m in names if m in text), key=len, reverse=True):
        text = text.replace(mid, names[mid])
    return text


def _member_rows(tl, fmembers: list[str], y0: float, t0: float, t1: float) -> list[str]:
    """A row per member some fault affected, below the partitions: each fault affecting it as a window on it
    (a request fault labelled with its API, what it did and how it ended)."""
    out, span = [], t1 - t0
    for r, m in enumerate(fmembers):
        y = y0 + r * ROW_H
        out.append(f'<text x="{LEFT - 8}" y="{y + ROW_H / 2 + 4:.1f}" text-anchor="end" class="member-row">member '
                   f'{escape(m)}</text><line x1="{LEFT}" y1="{y + ROW_H}" x2="{WIDTH - RIGHT}" y2="{y + ROW_H}" '
                   f'stroke="#eeeeee"/>')
        for f in (f for f in tl.faults if m in f.members):
            a, b = _x(f.start, t0, span), _x(min(f.end, t1), t0, span)
            e = f.start_event
            what = f"{f.kind} {e['api']} v{e.get('api_version')} to broker {e.get('broker')}" if e.get("api") else f.kind
            how = f" ({(f.end_event or {}).get('outcome')})" if (f.end_event or {}).get("outcome") else ""
            out.append(f'<rect class="member-fault" data-member="{escape(m)}" data-kind="{escape(f.kind)}" '
                       f'x="{a:.1f}" y="{y + 4:.1f}" width="{max(b - a, 2.0):.1f}" height="{ROW_H - 8}" '
                       f'fill="{"#d62728" if e.get("api") else "#f4a6a6"}" fill-opacity="0.7" rx="2">'
                       f'<title>{escape(m)}: fault {escape(str(f.fault_id))} {escape(what)}{escape(how)}: '
                       f'+{f.start - t0:.1f}s .. +{min(f.end, t1) - t0:.1f}s</title></rect>')
    return out


def render_svg(history: History, verdicts: dict, *, topic: str, topics=(), marks=(), dlq_marks=(), assigned=()) -> str:
    """The SVG text of the run's per-partition ownership timeline (a row per partition of every topic of the
    run), faults shaded, violations marked; `marks`: (mono, topic, partition, tooltip) drawn as purple ticks on
    their partition's row (a share group's redeliveries); `assigned`: (from, to, topic, partition, member, gone)
    drawn as thin strips in the member's colour along the bottom of the row, faded from `gone` (a share group's
    assignment in its coordinator's words)."""
    tl = build(history, CheckSettings(topic=topic, topics=tuple(tuple(t) for t in topics)))
    topic = ", ".join(tl.topics)
    t0, t1 = tl.start, max(tl.end, tl.start + 1e-3)
    viol = _violations(verdicts, tl)
    parts = sorted(set(range(tl.partitions)) | set(tl.by_partition) | {p for _, p, _ in viol if p is not None})
    members = sorted({o.member for o in tl.ownerships} | {a[4] for a in assigned}, key=lambda m: (len(m), m))
    colour = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(members)}
    fmembers = sorted({m for f in tl.faults for m in f.members}, key=lambda m: (len(m), m))  # a row each, below
    lane = any(t0 <= e["mono"] <= t1 for e in history.of_type("broker"))  # the brokers' lane, below them
    rows_h = ROW_H * max(1, len(parts) + len(fmembers) + lane)
    c = _Chart(tl, t0, t1, t1 - t0, parts, colour, rows_h, TOP + rows_h)
    legend_y = c.axis_y + 40
    height = legend_y + 20 * math.ceil((len(members) + 7) / LEGEND_COLS) + 10  # at most 7 items beside the members
    s: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<title>ownership timeline of {escape(topic)}</title>',
        f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="16" font-size="14" font-weight="bold">Partition ownership: {escape(topic)}</text>',
    ]
    s.extend(_fault_windows(c))
    s.extend(_partition_rows(c))
    s.extend(_member_rows(tl, fmembers, TOP + len(parts) * ROW_H, t0, t1))
    s.extend(_axis(c, history))
    ticks, said = _broker_ticks(c, history, member_names(tl))
    s.extend(ticks)
    s.extend(_kills(c, history))
    s.extend(_marks(c, marks, dlq_marks))
    s.extend(_assignment_strips(c, assigned))
    s.extend(_violation_marks(c, viol))
    items = [(colour[m], m, "owner") for m in members] + [("#f4a6a6", "fault", "fault"),
                                                         ("#222222", "member killed (dashed)", "kill")]
    if said:
        items.append(("#ff9900", "broker said (diamond: refusal)", "broker"))
    if marks:
        items.append(("#6a0dad", f"redelivered ({len(marks)})", "mark"))
    if dlq_marks:
        items.append(("#008080", f"dead-lettered ({len(dlq_marks)})", "dlq"))
    if assigned:
        items.append(("#555555", "coordinator's assignment (strip)", "assigned"))
    if viol:
        items.append(("#ff0000", f"violation ({len(viol)})", "violation"))
    for i, (col, label, _) in enumerate(items):
        x, y = LEFT + (i % LEGEND_COLS) * LEGEND_COL_W, legend_y + (i // LEGEND_COLS) * 20
        s.append(f'<rect x="{x}" y="{y - 10}" width="14" height="12" fill="{col}"/>'
                 f'<text x="{x + 20}" y="{y}">{escape(label)}</text>')
    s.append("</svg>")
    return "\n".join(s) + "\n"


@dataclass(frozen=True)
class _Chart:
    """What every layer of the chart draws with: the timeline, its time span, the partition rows, the owners'
    colours and where the rows end (the axis)."""

    tl: Timeline
    t0: float
    t1: float
    span: float
    parts: list
    colour: dict
    rows_h: float
    axis_y: float


def _fault_windows(c: _Chart) -> list[str]:
    """Fault windows shaded across every row (a request fault of a member: on its own row, see `_member_rows`)."""
    tl, t0, t1, span, rows_h, s = c.tl, c.t0, c.t1, c.span, c.rows_h, []
    for f in tl.faults:  # shaded fault windows across every row (a request fault of a member: on its row only)
        if f.start_event.get("api") and f.members:
            continue
        a, b = _x(f.start, t0, span), _x(min(f.end, t1), t0, span)
        who = ", ".join(map(str, (f.start_event.get("targets") or []))) or "-"
        s.append(f'<rect class="fault" x="{a:.1f}" y="{TOP - 4}" width="{max(b - a, 1.5):.1f}" height="{rows_h + 8}" '
                 f'fill="#f4a6a6" fill-opacity="0.35" stroke="#d62728" stroke-opacity="0.5" stroke-dasharray="3,2">'
                 f'<title>fault {escape(str(f.fault_id))} {escape(f.kind)} on {escape(who)}: '
                 f'+{f.start - t0:.1f}s .. +{min(f.end, t1) - t0:.1f}s</title></rect>')
    return s


def _partition_rows(c: _Chart) -> list[str]:
    """A row per partition, its owners as bars in their colours (overlapping owners side by side)."""
    tl, t0, t1, span, colour, s = c.tl, c.t0, c.t1, c.span, c.colour, []
    for r, p in enumerate(c.parts):
        y = TOP + r * ROW_H
        s.append(f'<text x="{LEFT - 8}" y="{y + ROW_H / 2 + 4:.1f}" text-anchor="end">partition '
                 f'{escape(_label(tl, p))}</text>')
        s.append(f'<line x1="{LEFT}" y1="{y + ROW_H}" x2="{WIDTH - RIGHT}" y2="{y + ROW_H}" stroke="#eeeeee"/>')
        owns = tl.by_partition.get(p, [])
        lanes = _lanes(owns)
        n = max(lanes.values(), default=0) + 1
        h = (ROW_H - 6) / n
        for o in owns:
            a, b = _x(o.start, t0, span), _x(min(o.end, t1), t0, span)
            yy = y + 3 + lanes[id(o)] * h
            s.append(f'<rect class="owner" data-member="{escape(o.member)}" x="{a:.1f}" y="{yy:.1f}" '
                     f'width="{max(b - a, 1.0):.1f}" height="{h:.1f}" fill="{colour[o.member]}" rx="2">'
                     f'<title>{escape(o.member)} owns partition {escape(str(tl.name(p)))}: +{o.start - t0:.1f}s .. '
                     f'+{min(o.end, t1) - t0:.1f}s ({escape(o.end_reason)})</title></rect>')
    return s


def _axis(c: _Chart, history: History) -> list[str]:
    """The time axis with its ticks, and the harness's actions as ticks under it."""
    t0, span, axis_y = c.t0, c.span, c.axis_y
    s = [f'<line x1="{LEFT}" y1="{axis_y}" x2="{WIDTH - RIGHT}" y2="{axis_y}" stroke="#333333"/>']
    for t in _ticks(span):
        x = _x(t0 + t, t0, span)
        s.append(f'<line x1="{x:.1f}" y1="{axis_y}" x2="{x:.1f}" y2="{axis_y + 5}" stroke="#333333"/>'
                 f'<text x="{x:.1f}" y="{axis_y + 18}" text-anchor="middle">{t:g}s</text>')
    for e in history.of_type("action_start"):  # harness actions as ticks under the axis
        x = _x(e["mono"], t0, span)
        s.append(f'<path class="action" d="M{x:.1f},{axis_y - 1} l-4,-7 h8 z" fill="#555555">'
                 f'<title>action {escape(str(e.get("kind")))} {escape(str(e.get("params") or ""))} '
                 f'at +{e["mono"] - t0:.1f}s</title></path>')
    return s


def _broker_ticks(c: _Chart, history: History, names: dict[str, str]) -> tuple[list[str], int]:
    """The brokers' lines about the group as ticks on their own lane, the last row above the axis (a notable one
    as a diamond; the member ids in it named as the history names the members), and how many."""
    t0, t1, span, s = c.t0, c.t1, c.span, []
    gid, said, top = group_of(history), 0, c.axis_y - ROW_H
    for e in history.of_type("broker"):  # the brokers' lines about the group: ticks on their lane
        if not t0 <= e["mono"] <= t1:
            continue
        if not said:
            s.append(f'<text x="{LEFT - 8}" y="{top + ROW_H / 2 + 4:.1f}" text-anchor="end" class="broker-lane">'
                     f'brokers</text>')
        x, big, said = _x(e["mono"], t0, span), notable(e, gid), said + 1
        mid = top + ROW_H / 2
        shape = f"M{x:.1f},{mid - 6:.1f} l-6,6 l6,6 l6,-6 z" if big else f"M{x:.1f},{mid + 5:.1f} v-10"
        s.append(f'<path class="broker{" notable" if big else ""}" d="{shape}" '
                 f'{"fill" if big else "stroke"}="{"#ff9900" if big else "#1f77b4"}"><title>broker '
                 f'{escape(str(e.get("broker")))} {escape(str(e.get("level")))} at +{e["mono"] - t0:.2f}s: '
                 f'{escape(named(str(e.get("message", "")), names)[:400])}</title></path>')
    return s, said


def _kills(c: _Chart, history: History) -> list[str]:
    """Member kills and crashes as dark dashed lines across every row."""
    t0, t1, span, s = c.t0, c.t1, c.span, []
    for e in history.of_type("member_exit"):  # kills and crashes: dark dashed lines across every row
        if e.get("how") in ("kill", "crash") and t0 <= e["mono"] <= t1:
            x = _x(e["mono"], t0, span)
            s.append(f'<line class="kill" x1="{x:.1f}" y1="{TOP - 4}" x2="{x:.1f}" y2="{c.axis_y}" stroke="#222222" '
                     f'stroke-width="1.5" stroke-dasharray="5,3"><title>{escape(str(e.get("member")))} '
                     f'{"killed" if e.get("how") == "kill" else "crashed"} at +{e["mono"] - t0:.1f}s</title></line>')
    return s


def _marks(c: _Chart, marks, dlq_marks) -> list[str]:
    """Redeliveries as purple ticks at the top of their partition's row, dead-lettered records as teal ticks at
    its bottom."""
    tl, t0, t1, span, parts, s = c.tl, c.t0, c.t1, c.span, c.parts, []
    for t, tp, pn, tip in marks:  # e.g. redeliveries: purple ticks at the top of their partition's row
        g = tl.layout.of(tp, int(pn))
        if g in parts and t0 <= t <= t1:
            x, y = _x(t, t0, span), TOP + parts.index(g) * ROW_H
            s.append(f'<path class="mark" d="M{x:.1f},{y + 1:.1f} l-3,-5 h6 z" fill="#6a0dad">'
                     f'<title>{escape(tip)} at +{t - t0:.2f}s</title></path>')
    for t, tp, pn, tip in dlq_marks:  # records put on a share group's dead-letter topic: teal ticks at the bottom
        g = tl.layout.of(tp, int(pn))
        if g in parts and t0 <= t <= t1:
            x, y = _x(t, t0, span), TOP + (parts.index(g) + 1) * ROW_H
            s.append(f'<path class="dlq" d="M{x:.1f},{y - 1:.1f} l-3,5 h6 z" fill="#008080">'
                     f'<title>{escape(tip)} at +{t - t0:.2f}s</title></path>')
    return s


def _assignment_strips(c: _Chart, assigned) -> list[str]:
    """The coordinator's assignment: a thin strip per member along the bottom of the partition's row, faded from
    when the member was gone."""
    tl, t0, t1, span, parts, colour, s = c.tl, c.t0, c.t1, c.span, c.parts, c.colour, []
    lane: dict = {}
    for a, b, tp, pn, m, gone in assigned:  # the coordinator's assignment: a strip per member along the row's bottom
        g = tl.layout.of(tp, int(pn))
        if g not in parts or b < t0 or a > t1:
            continue
        k = lane.setdefault((g, m), sum(1 for x in lane if x[0] == g) % 3)
        y = TOP + (parts.index(g) + 1) * ROW_H - 3 - 2 * k
        for x0, x1, faded in ((a, min(b, gone if gone is not None else b), False),
                              (max(a, gone if gone is not None else b), b, True)):
            if x1 <= x0:
                continue
            xa, xb = _x(x0, t0, span), _x(min(x1, t1), t0, span)
            fade = ' fill-opacity="0.35"' if faded else ""
            since = f" (gone since +{gone - t0:.1f}s)" if faded else ""
            s.append(f'<rect class="assigned" data-member="{escape(m)}" x="{xa:.1f}" y="{y:.1f}" '
                     f'width="{max(xb - xa, 1.0):.1f}" height="2" fill="{colour[m]}"{fade}><title>the coordinator '
                     f'assigned partition {escape(str(tl.name(g)))} to {escape(m)}{since}: '
                     f'+{x0 - t0:.1f}s .. +{min(x1, t1) - t0:.1f}s</title></rect>')
    return s


def _violation_marks(c: _Chart, viol) -> list[str]:
    """Violations as red markers on their partition's row, else across all rows; witnesses that would be drawn on
    one another (the same row, the same pixel) are one marker whose tooltip says each of them."""
    t0, span, parts, axis_y, s = c.t0, c.span, c.parts, c.axis_y, []
    at: dict = {}  # (row or None, pixel) -> (the first one's time, the tooltips)
    for t, p, tip in viol:
        key = (p if p in parts else None, round(_x(t, t0, span)))
        at.setdefault(key, (t, []))[1].append(f"{tip} at +{t - t0:.2f}s")
    for (p, _), (t, tips) in at.items():  # violations: red markers on their partition's row, else across all rows
        tip, x = "\n".join(dict.fromkeys(tips)), _x(t, t0, span)
        if p is not None:
            cy = TOP + parts.index(p) * ROW_H + ROW_H / 2
            s.append(f'<g class="violation"><title>{escape(tip)}</title>'
                     f'<line x1="{x:.1f}" y1="{cy - ROW_H / 2:.1f}" x2="{x:.1f}" y2="{cy + ROW_H / 2:.1f}" '
                     f'stroke="#ff0000" stroke-width="2"/>'
                     f'<circle cx="{x:.1f}" cy="{cy:.1f}" r="6" fill="#ff0000" stroke="#ffffff" '
                     f'stroke-width="1.5"/></g>')
        else:
            s.append(f'<g class="violation"><title>{escape(tip)}</title>'
                     f'<line x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" y2="{axis_y}" stroke="#ff0000" stroke-width="2"/>'
                     f'<path d="M{x:.1f},{TOP - 6} l-6,-10 h12 z" fill="#ff0000"/></g>')
    return s
