"""The ownership timeline as the report's HTML attachment, on hand-made histories and a kept run: the brokers' lines
on a lane of their own, the group member ids in them named as the history names the members, a red mark's tooltip
naming its invariant, and the page self-contained (the chart inline, the hover box's script and style, nothing
loaded from elsewhere). That the tooltip shows on hover inside the Allure report:
tests/integration/test_timeline_in_report.py."""
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from histbuild import TOPIC, assigned, broker_said, ev, fault_end, fault_start, history, join, member_exit, run_end, \
    run_start

from harness.invariants.core import CheckSettings
from harness.invariants.timeline import build
from harness.report.timeline import ROW_H, TOP, member_names, named, render_svg
from harness.report.timeline_html import page

NS = "{http://www.w3.org/2000/svg}"
KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories"
UUID = "0e3da45f-f2a2-4909-a048-cdb57965fedd"


def _run(*extra):
    """m1:[0,1,2], m2:[3,4,5] from 1 s to 25 s; the brokers' lines and other events as given."""
    return [run_start(0.0), *join("m1", 1.0, [0, 1, 2]), *join("m2", 1.2, [3, 4, 5]), *extra,
            member_exit("m1", 25.0), member_exit("m2", 25.0), run_end(26.0)]


def _root(events, verdicts=None):
    svg = render_svg(history(events), verdicts or {}, topic=TOPIC)
    return svg, ET.fromstring(svg)


def _rows(root) -> dict[str, float]:
    """Each row's label (the texts set right of the rows' start) -> the y of its label."""
    return {t.text: float(t.get("y")) for t in root.iter(NS + "text") if t.get("text-anchor") == "end"}


def test_the_brokers_lines_are_on_a_lane_of_their_own_below_the_partitions_and_members():
    evs = _run(broker_said(5.0, "Stabilized group g generation 2 with 2 members."),
               broker_said(6.0, "Cannot upgrade classic group g to consumer group", level="WARN"),
               fault_start(10.0, "f1", members=["m1"]), fault_end(12.0, "f1"))
    _, root = _root(evs)
    rows = _rows(root)
    assert list(rows) == [*(f"partition {p}" for p in range(6)), "member m1", "brokers"], rows
    lane_top = rows["brokers"] - ROW_H / 2 - 4  # the lane's label sits in its middle
    assert lane_top >= rows["member m1"] + ROW_H / 2 - 4, rows  # below the last member's row
    axis = [float(x.get("y1")) for x in root.iter(NS + "line") if x.get("stroke") == "#333333"][0]
    assert abs(axis - (lane_top + ROW_H)) < 1e-6, (axis, lane_top)
    marks = [e for e in root.iter(NS + "path") if (e.get("class") or "").startswith("broker")]
    assert len(marks) == 2
    for m in marks:  # every point of each mark inside the lane: none on a partition's or a member's row
        ys = [float(v) for v in re.findall(r"M[\d.]+,([\d.]+)", m.get("d"))]
        assert ys and all(lane_top < y < lane_top + ROW_H for y in ys), (m.get("d"), lane_top)


def test_no_brokers_lane_without_broker_lines():
    _, root = _root(_run())
    assert "brokers" not in _rows(root)
    axis = [float(x.get("y1")) for x in root.iter(NS + "line") if x.get("stroke") == "#333333"][0]
    assert axis == TOP + 6 * ROW_H  # the six partitions' rows and nothing else


def test_member_ids_in_the_brokers_lines_are_named_as_the_history_names_the_members():
    watch = ev("group_assignment", 3.0, "harness", group_type="consumer", state="Stable", members=[
        {"member": "m2", "consumer_id": "Q8WlpHZtSDW+BwI7U277EA", "partitions": [[TOPIC, 3]]}])
    evs = _run(watch,
               broker_said(4.0, f"Member m1-{UUID} in group g has failed, removing it from the group"),
               broker_said(5.0, "Member Q8WlpHZtSDW+BwI7U277EA left the consumer group."),
               broker_said(6.0, f"Member x9-{UUID} left: x9 is no member of this run"),
               *join("m3", 7.0), broker_said(7.5, "Member kqCmV3LSS9GZpelM2MpWwg joins the consumer group using the "
                                                  "consumer protocol."))
    svg, root = _root(evs)
    tips = [m.find(NS + "title").text for m in root.iter(NS + "path") if m.get("class").startswith("broker")]
    assert tips[0].endswith("Member m1 in group g has failed, removing it from the group"), tips
    assert tips[1].endswith("Member m2 left the consumer group."), tips
    assert tips[2].endswith(f"Member x9-{UUID} left: x9 is no member of this run"), tips  # not a member: kept
    # m1 and m2 hold ids; m3 alone started without one when the id first joined
    assert tips[3].endswith("Member m3 joins the consumer group using the consumer protocol."), tips
    assert UUID not in svg.replace(f"x9-{UUID}", "") and "Q8WlpHZtSDW" not in svg


def test_a_joining_id_is_left_as_it_is_when_more_than_one_member_may_be_it():
    evs = _run(broker_said(1.5, "Member kqCmV3LSS9GZpelM2MpWwg joins the consumer group using the consumer protocol."))
    h = history(evs)
    names = member_names(build(h, CheckSettings(topic=TOPIC)))
    assert names == {}  # m1 and m2 were both running without an id: either may be it
    assert named("Member kqCmV3LSS9GZpelM2MpWwg joins", names) == "Member kqCmV3LSS9GZpelM2MpWwg joins"


def _bad():
    """m2 says it was given partition 0 at 5 s while m1 holds it: two witnesses at the same moment."""
    wits = [{"type": "assigned", "mono": 5.0, "member": "m2", "partitions": [[TOPIC, 0]], "why": "two owners"},
            {"type": "assigned", "mono": 5.0, "member": "m2", "partitions": [[TOPIC, 0]], "why": "given twice"}]
    return _run(assigned("m2", 5.0, [0])), {"exclusive_ownership": {"status": "invalid", "message": "x",
                                                                    "witnesses": wits}}


def test_a_red_mark_s_tooltip_names_its_invariant_and_marks_drawn_on_one_another_are_one():
    evs, verdicts = _bad()
    svg, root = _root(evs, verdicts)
    (mark,) = [g for g in root.iter(NS + "g") if g.get("class") == "violation"]
    tip = mark.find(NS + "title").text
    assert tip.splitlines() == ["exclusive_ownership: two owners (assigned by m2) at +5.00s",
                                "exclusive_ownership: given twice (assigned by m2) at +5.00s"], tip


def test_the_page_holds_the_chart_inline_and_its_hover_box_and_loads_nothing():
    evs, verdicts = _bad()
    svg = render_svg(history(evs), verdicts, topic=TOPIC)
    html = page(svg)
    assert html.startswith("<!doctype html>") and svg in html
    assert "<title>ownership timeline of t</title>" in html  # the chart's own title is the page's
    assert '<div id="tip" role="tooltip">' in html and "addEventListener(\"mousemove\"" in html
    assert "data-tip" in html and "exclusive_ownership: two owners" in html
    # nothing loaded: no src, no href, no url(...), no address but the SVG namespace's
    assert not re.search(r"\bsrc=|\bhref=|url\(|@import", html)
    assert re.findall(r"https?://[^\s\"']+", html) == ["http://www.w3.org/2000/svg"]


def test_a_kept_run_s_page_marks_its_violation_and_draws_its_brokers_on_their_lane():
    from harness.record.history import History
    from harness.invariants import judge
    h = History.load(KEPT / "first-assignment-given-away" / "history")
    verdicts = {k: v.to_dict() for k, v in judge(h).items()}
    assert verdicts["exclusive_ownership"]["status"] == "invalid"
    svg = render_svg(h, verdicts, topic="")
    root = ET.fromstring(svg)
    assert list(_rows(root))[-1] == "brokers"
    tips = [g.find(NS + "title").text for g in root.iter(NS + "g") if g.get("class") == "violation"]
    assert tips and all(t.startswith("exclusive_ownership: ") and " at +" in t for t in tips), tips
    assert "exclusive_ownership: " in page(svg)


def test_a_kept_classic_run_s_broker_lines_name_its_members():
    from harness.record.history import History
    h = History.load(KEPT / "kafka-3.9-member-kill" / "history")
    svg = render_svg(h, {}, topic="")
    assert re.search(r"Member m\d in group ", svg) and not re.search(r"m\d-[0-9a-f]{8}-", svg)
