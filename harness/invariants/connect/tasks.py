"""9a. `connect_task_exclusive`: no connector and no task runs on two workers at once, judged from what the tasks did
(their own started, stopped and batch events), not from the REST status.

Two runs of one unit on different workers may not overlap, except that the older may outlast the newer one's start
by up to twice the older worker's own session timeout (`bounds.zombie_tolerance`: its worker config's
`session.timeout.ms` at the newer start, else the run's `zombie_tolerance_s`) when its worker was paused (or in a
rack outage) from before then: a frozen worker cannot stop its tasks until it runs again and learns it lost them. A
source task's `connect_batch` outside every run of that task on that worker (after it said it stopped, or from a
worker whose life ended) is a violation too: a task producing after it was stopped. Measurements: `units_seen`,
`runs`, `overlaps` (overlapping pairs, tolerated or not), `max_overlap_s`, `batches_outside`.
"""
from __future__ import annotations

from collections import defaultdict

from harness.record.history import History
from harness.invariants.connect.bounds import zombie_tolerance
from harness.invariants.connect.view import ConnectCheckSettings, unit_name, view_of
from harness.invariants.core import Verdict, secs, verdict, witness

NAME = "connect_task_exclusive"


def check_task_exclusive(history: History, settings: ConnectCheckSettings) -> Verdict:
    v = view_of(history)
    if not v.runs:
        return verdict(NAME, "unknown", "no connector or task ever started")
    by_key = defaultdict(list)
    for r in v.runs:
        by_key[r.key].append(r)
    bad, overlaps, worst = [], 0, 0.0
    for key, runs in by_key.items():
        for i, a in enumerate(runs):
            for b in runs[i + 1:]:
                if b.member == a.member or b.start >= a.end:
                    continue
                overlaps += 1
                span = min(a.end, b.end) - b.start
                worst = max(worst, span if span != float("inf") else 0.0)
                paused = v.paused(a.member, b.start)
                tol, src = zombie_tolerance(v, settings, a.member, b.start) if paused else (0.0, "")
                if paused and span <= tol:
                    continue
                why = f"{a.member} was paused, tolerance {tol:g}s: {src}" if paused else f"{a.member} was not paused"
                bad.append({"unit": unit_name(key), "older": a.member, "newer": b.member, "older_start": a.start,
                            "newer_start": b.start, "older_end": a.end if a.end != float("inf") else None,
                            "overlap_s": secs(span),
                            "why": f"{unit_name(key)} ran on {a.member} and {b.member} at once ({why})"})
    runs_of = defaultdict(list)
    for r in v.runs:
        if r.key[0] == "task":
            runs_of[(r.member, r.key[1], r.key[2])].append(r)
    outside = []
    for e in v.batches:
        rs = runs_of.get((e.get("member"), e.get("connector"), e.get("task")), [])
        if not any(r.start <= e["mono"] <= r.end for r in rs):
            outside.append(witness(e, f"task {e.get('connector')}-{e.get('task')} produced on {e.get('member')} "
                                      "outside its run there (after it stopped, or its worker was gone)"))
    m = {"units_seen": len(by_key), "runs": len(v.runs), "overlaps": overlaps, "max_overlap_s": secs(worst),
         "batches_outside": len(outside)}
    if bad or outside:
        what = []
        if bad:
            what.append(f"{len(bad)} unit run(s) on two workers at once: {bad[0]['why']}")
        if outside:
            what.append(f"{len(outside)} batch(es) from a task that was not running")
        return verdict(NAME, "invalid", "; ".join(what), bad + outside, m)
    return verdict(NAME, "valid", f"{len(by_key)} connectors and tasks, {len(v.runs)} runs, never on two workers "
                                  "at once", measurements=m)
