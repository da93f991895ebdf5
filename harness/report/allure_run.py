"""What one run adds to its Allure test: labels, parameters, a step per harness action and per verdict, and
attachments."""
from __future__ import annotations

import json
import time
from pathlib import Path

from harness.record.history import History, read_file
from harness.report.allure_times import run_span, timed_step, verdict_steps
from harness.record.rundir import (HARNESS_HISTORY, HISTORY, RUN_JSON, STATUS, TOXIPROXY_LOG, VERDICTS_JSON, RunDir,
                            broker_logs)

#: how much of the end of each log file is attached to a failing test
LOG_TAIL_BYTES = 200 * 1024


def area_of(path: str) -> str:
    """The suite area of a test file: `chaos` for suites/test_chaos.py (any *chaos* module), else `conformance`."""
    return "chaos" if "chaos" in Path(path).name else "conformance"


#: the Behaviors view's epic of each kind of group
EPICS = {"consumer": "consumer groups", "streams": "Kafka Streams", "connect": "Kafka Connect", "share": "share groups"}


def label_test(*, area: str, kind: str | None = None, scenario: str | None = None, protocol: str | None = None) -> None:
    """Area, kind, scenario and protocol as Allure labels; the kind, scenario and protocol also as epic / feature /
    story, so that the Behaviors view groups kind of group > scenario > protocol."""
    import allure
    allure.dynamic.label("area", area)
    if kind:
        allure.dynamic.label("kind", kind)
        allure.dynamic.epic(EPICS.get(kind, kind))
    if scenario:
        allure.dynamic.label("scenario", scenario)
        allure.dynamic.feature(scenario)
    if protocol:
        allure.dynamic.label("protocol", protocol)
        allure.dynamic.story(protocol)


def action_steps(history_file: Path) -> list[tuple[str, dict, float, float | None, dict | None, dict]]:
    """(kind, params, start s from run_start, duration s or None, end event, start event) of each harness action."""
    _, events = read_file(history_file)
    t0 = start["mono"] if (start := History(events).run_start()) else events[0]["mono"] if events else 0.0
    ends = {e.get("action_id"): e for e in events if e["type"] == "action_end"}
    out = []
    for e in events:
        if e["type"] == "action_start":
            end = ends.get(e.get("action_id"))
            out.append((e.get("kind", "?"), e.get("params") or {}, e["mono"] - t0,
                        end["mono"] - e["mono"] if end else None, end, e))
    return out


def rebalance_time(verdicts: dict) -> dict | None:
    """convergence_balance's `rebalance_time` measurement from a run's verdicts.json (None when it has none)."""
    rt = ((verdicts or {}).get("convergence_balance") or {}).get("measurements", {}).get("rebalance_time")
    return rt if isinstance(rt, dict) else None


def settled_words(row: dict) -> str:
    """A disturbance's rebalance time in words: `rebalance 1.60s` or `never settled (why)`."""
    if row.get("settled_s") is None:
        return f"not settled ({row.get('why') or 'unknown'})"
    return f"rebalance {row['settled_s']:.2f}s, unowned {row.get('unowned_sum_s') or 0:.2f}s"


def rebalance_table(rt: dict) -> str:
    """The rebalance-time attachment: one line per disturbance (trigger to complete and balanced, unowned time)."""
    lines = [f"protocol {rt.get('protocol')}, assignors {', '.join(rt.get('assignors') or ())}; trigger to complete "
             f"and balanced (the runner's stable rule); unowned: summed over partitions (stop the world)",
             f"{'#':>3} {'kind':<22} {'trigger':<13} {'at s':>8} {'settled s':>10} {'unowned sum s':>14} "
             f"{'max s':>8} {'parts':>6}"]
    for d in rt.get("disturbances") or ():
        st = "-" if d.get("settled_s") is None else f"{d['settled_s']:.3f}"
        lines.append(f"{d.get('index', ''):>3} {str(d.get('kind')):<22} {str(d.get('trigger')):<13} "
                     f"{d.get('at_s') or 0:>8.2f} {st:>10} {d.get('unowned_sum_s') or 0:>14.3f} "
                     f"{d.get('unowned_max_s') or 0:>8.3f} {d.get('partitions_unowned') or 0:>6}"
                     + (f"  {d['why']}" if d.get("why") else ""))
    return "\n".join(lines) + "\n"


def _steps(run_dir: Path, *, end: float | None) -> None:
    """A step per harness action, from its start to its end on the wall clock (one that did not finish: to the
    run's end): broken when the action failed or never ended, skipped when the nemesis says it did not happen."""
    import allure
    f = RunDir(run_dir).history_file(HARNESS_HISTORY)
    if not f.exists():
        return
    rt = rebalance_time(RunDir(run_dir).verdicts()) or {}
    by_action = {d.get("action_id"): d for d in rt.get("disturbances") or () if d.get("action_id")}
    for kind, params, t, dur, end_ev, start_ev in action_steps(f):
        ps = " ".join(f"{k}={v}" for k, v in params.items())
        took = f"{dur:.1f}s" if dur is not None else "did not finish"
        row = by_action.get((end_ev or {}).get("action_id"))
        took += f"; {settled_words(row)}" if row else ""
        a = float(start_ev.get("wall") or 0.0)
        b = float((end_ev or {}).get("wall") or max(a, end or a))
        failed = end_ev is None or end_ev.get("ok") is False
        skipped = (end_ev or {}).get("skipped")  # the nemesis could not do it: no fault happened
        with timed_step(f"{kind} {ps} (+{t:.1f}s, {took})".replace("  ", " "), start=a, stop=b,
                        status="broken" if failed else "skipped" if skipped else "passed",
                        message=str((end_ev or {}).get("error") or took) if failed else
                        f"did not happen: {skipped}" if skipped else None):
            extra = {k: v for k, v in (end_ev or {}).items()
                     if k not in ("type", "mono", "wall", "source", "action_id", "kind", "ok", "error")}
            if extra:
                allure.attach(json.dumps(extra, default=str), name="result",
                              attachment_type=allure.attachment_type.JSON)


def tail(path: Path, limit: int = LOG_TAIL_BYTES) -> bytes:
    """The last `limit` bytes of a file, with a note when it was cut."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        if size > limit:
            f.seek(size - limit)
            return f"[... first {size - limit} bytes cut; last {limit} bytes follow]\n".encode() + f.read()
        return f.read()


def log_files(run_dir: Path, meta: dict) -> list[tuple[str, Path]]:
    """(attachment name, path) of the member logs and the broker logs (own cluster, else the shared one)."""
    d = RunDir(run_dir)
    out = [(p.name, p) for p in sorted(d.logs_dir.glob("*")) if p.is_file()]
    cluster = d.cluster_dir
    if not cluster.is_dir() and meta.get("cluster_dir"):
        cluster = Path(meta["cluster_dir"])
    out += [(f"{p.parent.name}.log", p) for p in broker_logs(cluster)]
    if (cluster / TOXIPROXY_LOG).exists():
        out.append((TOXIPROXY_LOG, cluster / TOXIPROXY_LOG))
    return out


def timeline_svg(run_dir: Path, meta: dict) -> Path | None:
    """Render the run's ownership timeline to RUN_DIR/timeline.svg (None when there is no history)."""
    from harness.report.timeline import connect_tasks_as_ownership, render_svg, tasks_as_ownership
    if not (run_dir / HISTORY).is_dir():
        return None
    d = RunDir(run_dir)
    verdicts = d.verdicts()
    history = d.history()
    if meta.get("kind") == "streams":  # one row per task: task 0_p runs on input partition p
        history = tasks_as_ownership(history, meta.get("topic", ""))
    topics = (meta.get("check_settings") or {}).get("topics") or ()
    if meta.get("kind") == "connect":  # one row per task of each connector
        history = connect_tasks_as_ownership(history)
        tasks = (meta.get("connect_check_settings") or {}).get("tasks") or {}
        topics = [[c, int(n)] for c, n in tasks.items()]
    marks = dlq_marks = assigned = []
    if meta.get("kind") == "share":  # a bar while a member holds records of a partition, a mark per redelivery
        from harness.report.share_timeline import (assignment_strips, dead_letter_marks, redelivery_marks,
                                                   share_holds_as_ownership)
        marks, dlq_marks, assigned = redelivery_marks(history), dead_letter_marks(history), assignment_strips(history)
        history = share_holds_as_ownership(history)
    svg = render_svg(history, verdicts, topic=meta.get("topic", ""), topics=topics, marks=marks, dlq_marks=dlq_marks,
                     assigned=assigned)
    out = d.timeline_path
    out.write_text(svg)
    return out


def attach_run(run_dir: Path, *, failed: bool) -> tuple[float, float] | None:
    """Parameters, a step per action and per verdict, and attachments of one run directory on the current Allure
    test; returns the run's span (allure_times.run_span), which the test's own times are then set to."""
    import allure
    run_dir = Path(run_dir)
    meta = json.loads((run_dir / RUN_JSON).read_text()) if (run_dir / RUN_JSON).exists() else {}
    allure.dynamic.parameter("seed", meta.get("seed", run_dir.name.rsplit("-", 1)[-1]), excluded=True)
    for key in ("kafka_version", "client_version", "protocol"):
        if meta.get(key):
            allure.dynamic.parameter(key, meta[key])
    span = run_span(run_dir)
    _steps(run_dir, end=span[1] if span else None)
    verdict_steps(run_dir, at=span[1] if span else time.time())
    try:
        svg = timeline_svg(run_dir, meta)
    except Exception as e:  # the chart must never hide the run's own outcome
        svg = None
        allure.attach(f"{type(e).__name__}: {e}", name="timeline error", attachment_type=allure.attachment_type.TEXT)
    if svg:  # as an HTML page: Allure previews it in place with its tooltips (an SVG only as an image)
        from harness.report.timeline_html import page
        allure.attach(page(svg.read_text()), name="ownership timeline", attachment_type=allure.attachment_type.HTML)
    if rt := rebalance_time(RunDir(run_dir).verdicts()):
        allure.attach(rebalance_table(rt), name="rebalance time", attachment_type=allure.attachment_type.TEXT)
    for name, label, kind in ((VERDICTS_JSON, f"witnesses ({VERDICTS_JSON})", allure.attachment_type.JSON),
                              (RUN_JSON, f"run metadata ({RUN_JSON})", allure.attachment_type.JSON),
                              (STATUS, STATUS, allure.attachment_type.TEXT)):
        if (run_dir / name).exists():
            allure.attach.file(str(run_dir / name), name=label, attachment_type=kind)
    if failed:
        for name, p in log_files(run_dir, meta):
            allure.attach(tail(p), name=name, attachment_type=allure.attachment_type.TEXT)
    return span
