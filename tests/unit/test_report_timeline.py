"""The report's ownership timeline SVG and the Allure results-dir files, on hand-made histories."""
import json
import re
import xml.etree.ElementTree as ET

from histbuild import (TOPIC, assigned, ev, fault_end, fault_start, history, join, member_exit, revoked, run_end,
                       run_start)

from harness.invariants import CHECKERS, check_all
from harness.report import alluredir
from harness.report.allure_run import action_steps, area_of, tail
from harness.report.timeline import render_svg

NS = "{http://www.w3.org/2000/svg}"


def _run():
    """a:[0,1,2], b:[3,4,5]; a is paused 10..14 (a fault); a revokes 2 and b takes it at 16."""
    return [run_start(0.0), *join("a", 1.0, [0, 1, 2]), *join("b", 1.2, [3, 4, 5]),
            ev("action_start", 9.9, "harness", action_id="a1", kind="pause", params={"slot": 0}),
            fault_start(10.0, "f1", members=["a"]), fault_end(14.0, "f1"),
            ev("action_end", 14.0, "harness", action_id="a1", kind="pause", ok=True, error=None, member="a"),
            revoked("a", 15.0, [2]), assigned("b", 16.0, [2]), member_exit("a", 25.0), member_exit("b", 25.0),
            run_end(26.0)]


def _svg(events, verdicts):
    svg = render_svg(history(events), verdicts, topic=TOPIC)
    return svg, ET.fromstring(svg)


def _cls(root, name):
    return [e for e in root.iter() if e.get("class") == name]


def test_rows_per_partition_and_owners_coloured():
    svg, root = _svg(_run(), {})
    labels = [t.text for t in root.iter(NS + "text") if (t.text or "").startswith("partition ")]
    assert labels == [f"partition {p}" for p in range(6)]
    owners = _cls(root, "owner")
    assert len(owners) == 7  # six initial intervals and b's partition 2
    fill = {o.get("data-member"): set() for o in owners}
    for o in owners:
        fill[o.get("data-member")].add(o.get("fill"))
    assert all(len(f) == 1 for f in fill.values()) and fill["a"] != fill["b"]
    legend = [t.text for t in root.iter(NS + "text")]
    assert "a" in legend and "b" in legend


def test_fault_shaded_and_actions_marked():
    svg, root = _svg(_run(), {})
    faults = _cls(root, "fault")
    assert len(faults) == 1 and "pause" in faults[0].find(NS + "title").text
    assert float(faults[0].get("width")) > 10
    assert len(_cls(root, "action")) == 1
    assert re.search(r">\d+s</text>", svg)  # axis in seconds


def test_violation_markers_when_invalid_witnesses():
    bad = [*_run(), assigned("b", 5.0, [0])]  # b claims partition 0 while a holds it
    verdicts = {k: v.to_dict() for k, v in check_all(history(bad), _settings()).items()}
    assert verdicts["exclusive_ownership"]["status"] == "invalid"
    svg, root = _svg(bad, verdicts)
    marks = _cls(root, "violation")
    assert marks, svg
    assert any("exclusive_ownership" in m.find(NS + "title").text for m in marks)
    assert all(m.find(NS + "circle") is not None or m.find(NS + "path") is not None for m in marks)


def test_no_violation_markers_when_valid():
    verdicts = {"exclusive_ownership": {"status": "valid", "message": "ok", "witnesses": []},
                "coverage_liveness": {"status": "unknown", "message": "?",
                                      "witnesses": [{"mono": 3.0, "type": "assigned", "why": "x"}]}}
    svg, root = _svg(_run(), verdicts)
    assert not _cls(root, "violation")
    assert "violation" not in [t.text for t in root.iter(NS + "text")]


def test_categories_classify_violations_apart_from_setup_errors():
    cats = alluredir.categories()
    names = [c["name"] for c in cats]
    for n in CHECKERS:
        assert f"Violation: {n}" in names
    msg = ("run 2026-member-kill-classic-cooperative-1: fail\n  exclusive_ownership: invalid: partition 0 had two "
           "owners\n    witness: {}\n  reproduce: harness replay x")
    matched = [c["name"] for c in cats if "failed" in c["matchedStatuses"]
               and re.fullmatch(c.get("messageRegex", "(?s).*").replace(r"(?s)", "", 1), msg, re.S)]
    assert matched == ["Violation: exclusive_ownership"]
    err = "run 2026-member-kill-consumer-1: error (could not start broker 2)\n  reproduce: harness replay x"
    matched = [c["name"] for c in cats if "failed" in c["matchedStatuses"] and "messageRegex" in c
               and re.fullmatch(c["messageRegex"].replace(r"(?s)", "", 1), err, re.S)]
    assert matched == ["Set-up / infrastructure error"]
    assert any(c["matchedStatuses"] == ["broken"] for c in cats)


def test_results_dir_files(tmp_path):
    meta = {"kafka_version": "4.1.0", "client_library": "confluent-kafka", "client_version": "2.16.1",
            "protocol": "consumer", "backend": "local", "brokers": 3,
            "broker_settings": {"group.consumer.session.timeout.ms": "6000", "num.partitions": "6"},
            "client_settings": {"session.timeout.ms": 6000}}
    alluredir.write(tmp_path, [meta, {**meta, "protocol": "classic-eager"}])
    env = (tmp_path / "environment.properties").read_text()
    assert "kafka.version=4.1.0" in env and "protocols=consumer, classic-eager" in env
    assert "group.consumer.session.timeout.ms=6000" in env and "num.partitions" not in env
    assert json.loads((tmp_path / "categories.json").read_text()) == alluredir.categories()


def test_action_steps_and_helpers(tmp_path):
    from harness.record.history import HistoryWriter
    f = tmp_path / "harness.jsonl"
    with HistoryWriter(f, source="harness", member=None) as w:
        w.event("run_start", run_id="r", scenario="s", seed=1, settings={})
        w.event("action_start", action_id="a1", kind="sleep", params={"s": 0})
        w.event("action_end", action_id="a1", kind="sleep", ok=True, error=None)
        w.event("action_start", action_id="a2", kind="bounce", params={"slot": 1})
    steps = action_steps(f)
    assert [s[0] for s in steps] == ["sleep", "bounce"] and steps[0][3] >= 0 and steps[1][3] is None
    assert area_of("suites/test_chaos.py") == "chaos" and area_of("suites/test_assignors.py") == "conformance"
    big = tmp_path / "big.log"
    big.write_bytes(b"x" * 5000 + b"END")
    assert tail(big, 100).endswith(b"END") and len(tail(big, 100)) < 200


def _settings():
    from histbuild import settings
    return settings(partitions=6)


def test_a_run_of_two_topics_draws_a_row_per_partition_of_each_and_marks_a_witness_on_the_second():
    o, p = "t-r1-orders", "t-r1-payments"
    evs = [run_start(0.0), *join("a", 1.0, [(o, 0), (o, 1)], subscription=[o]),
           *join("b", 1.2, [(p, 0)], subscription=[p]), run_end(20.0)]
    wit = {"type": "assigned", "mono": 5.0, "member": "b", "partitions": [[p, 0]], "why": "two owners"}
    verdicts = {"exclusive_ownership": {"status": "invalid", "message": "x", "witnesses": [wit]}}
    svg = render_svg(history(evs), verdicts, topic=o, topics=[[o, 2], [p, 1]])
    root = ET.fromstring(svg)
    labels = [t.text for t in root.iter(f"{NS}text") if (t.text or "").startswith("partition ")]
    assert labels == ["partition orders-0", "partition orders-1", "partition payments-0"]
    (mark,) = _cls(root, "violation")  # on payments-0's row (the third), not across every row
    circle = mark.find(NS + "circle")
    rows = [float(t.get("y")) for t in root.iter(f"{NS}text") if (t.text or "").startswith("partition ")]
    assert circle is not None and abs(float(circle.get("cy")) - rows[2]) < 10, (circle.get("cy"), rows)


def test_connect_runs_are_drawn_a_row_per_task():
    """A Connect run: each connector is drawn as a topic whose partition n is its task n; a task's run on a worker
    (connect_task_started .. connect_task_stopped) is drawn in that worker's colour."""
    from harness.report.timeline import connect_tasks_as_ownership

    def task(type_, m, t, c, n):
        return ev(type_, t, "member", member=m, connector=c, task=n, worker=m, kind="source")
    events = [run_start(0.0), ev("member_start", 1.0, "harness", member="m1", pid=1, instance_id=None, rack=None),
              ev("member_start", 1.0, "harness", member="m2", pid=2, instance_id=None, rack=None),
              task("connect_task_started", "m1", 2.0, "harness-source", 0),
              task("connect_task_started", "m2", 2.0, "harness-source", 1),
              task("connect_task_stopped", "m2", 8.0, "harness-source", 1),
              task("connect_task_started", "m1", 9.0, "harness-source", 1),
              task("connect_task_started", "m2", 2.0, "harness-sink", 0), run_end(12.0)]
    h = connect_tasks_as_ownership(history(events))
    assert [e["partitions"] for e in h.events if e["type"] == "assigned"] == [
        [["harness-source", 0]], [["harness-source", 1]], [["harness-sink", 0]], [["harness-source", 1]]]
    svg = render_svg(h, {}, topic="t", topics=[["harness-source", 2], ["harness-sink", 1]])
    labels = [t.text for t in ET.fromstring(svg).iter(NS + "text")]
    assert {"partition source-0", "partition source-1", "partition sink-0"} <= set(labels), labels


def test_broker_lines_about_the_group_are_ticks_and_a_refusal_a_diamond():
    from histbuild import broker_said
    evs = _run() + [broker_said(5.0, "Stabilized group g generation 2 with 2 members."),
                    broker_said(6.0, "Cannot upgrade classic group g to consumer group", level="WARN")]
    svg, root = _svg(evs, {})
    assert len(_cls(root, "broker")) == 1 and len(_cls(root, "broker notable")) == 1
    assert "Cannot upgrade classic group" in svg and "broker said" in svg
    svg, root = _svg(_run(), {})
    assert not _cls(root, "broker") and "broker said" not in svg


def test_a_request_fault_is_a_window_on_its_members_row_only():
    """A held SyncGroup of b (the proxy's fault_start names the API) is drawn on b's row, not across the
    partitions; a's pause is shaded across every row and drawn on a's row too."""
    held = ev("fault_start", 17.0, "harness", fault_id="kp1", kind="hold_request", targets=["b"],
              members_affected=["b"], brokers_affected=[2], member="b", api="SyncGroup", api_version=5,
              correlation_id=9, client_id="b", broker=2, rule="r1")
    events = _run()
    events[-3:-3] = [held, {**fault_end(20.0, "kp1"), "outcome": "timeout"}]
    svg, root = _svg(events, {})
    rows = [t.text for t in root.iter(NS + "text") if t.get("class") == "member-row"]
    assert rows == ["member a", "member b"]
    windows = {(r.get("data-member"), r.get("data-kind")) for r in _cls(root, "member-fault")}
    assert windows == {("a", "pause"), ("b", "hold_request")}
    tip = next(r for r in _cls(root, "member-fault") if r.get("data-member") == "b").find(NS + "title").text
    assert "hold_request SyncGroup v5 to broker 2 (timeout)" in tip and "+17.0s .. +20.0s" in tip
    assert len(_cls(root, "fault")) == 1  # only the pause is shaded across the partitions


def test_no_member_rows_without_member_faults():
    events = [e for e in _run() if e["type"] not in ("fault_start", "fault_end")]
    _, root = _svg(events, {})
    assert not _cls(root, "member-fault") and not [t for t in root.iter(NS + "text") if t.get("class") == "member-row"]


def test_rebalance_time_attachment_and_step_words():
    from harness.report.allure_run import rebalance_table, rebalance_time, settled_words
    rt = {"protocol": "consumer", "assignors": ["uniform"], "disturbances": [
        {"index": 0, "kind": "initial", "trigger": "member_start", "at_s": 0.0, "settled_s": 1.5, "unowned_sum_s": 0.0,
         "unowned_max_s": 0.0, "partitions_unowned": 0},
        {"index": 1, "kind": "kill_member", "trigger": "member_exit", "at_s": 5.0, "settled_s": None,
         "why": "never settled before the end", "unowned_sum_s": 9.0, "unowned_max_s": 4.5, "partitions_unowned": 2,
         "action_id": "a1"}]}
    assert rebalance_time({"convergence_balance": {"measurements": {"rebalance_time": rt}}}) is rt
    assert rebalance_time({}) is None
    table = rebalance_table(rt).splitlines()
    assert table[0].startswith("protocol consumer, assignors uniform") and len(table) == 4
    assert table[3].split()[:5] == ["1", "kill_member", "member_exit", "5.00", "-"]
    assert table[3].endswith("never settled before the end")
    assert settled_words(rt["disturbances"][0]) == "rebalance 1.50s, unowned 0.00s"
    assert settled_words(rt["disturbances"][1]) == "not settled (never settled before the end)"
