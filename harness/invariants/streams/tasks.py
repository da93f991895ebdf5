"""Streams invariants 1 (`task_exclusive_active`) and 2 (`warmup_before_active`, KIP-441); see the package docstring."""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict

from harness.record.history import History
from harness.invariants.core import MAX_WITNESSES, Verdict, secs, verdict, witness
from harness.invariants.streams.assignor import Assignor, assignors_at, broken_under_all
from harness.invariants.streams.bounds import zombie_tolerance
from harness.invariants.streams.view import DOWN_STATES, EPISODE_S, INF, StreamsCheckSettings, _empty, _outcome, view
from harness.invariants.clock import run_s


def check_task_exclusive_active(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge that no task runs on two clients at once, beyond a zombie's tolerance."""
    name = "task_exclusive_active"
    if (v := _empty(name, history)) is not None:
        return v
    vw = view(history)
    runs: dict[str, list[list]] = defaultdict(list)  # task -> [start, end, member, start event, end event]
    opened: dict[tuple, list] = {}
    for e in vw.own(("task_active", "task_active_end")):
        key = (e["member"], e.get("task"))
        if e["type"] == "task_active" and key not in opened:
            opened[key] = [e["mono"], INF, e["member"], e, None]
            runs[key[1]].append(opened[key])
        elif e["type"] == "task_active_end" and key in opened:
            r = opened.pop(key)
            r[1], r[4] = e["mono"], e
    for r in opened.values():
        r[1], r[4] = vw.stop.get(r[2], (INF, None))
    problems, wits = [], []
    m = {"tasks_seen": len(runs), "activations": sum(map(len, runs.values())), "overlaps": 0, "max_overlap_s": 0.0}
    for task, rs in sorted(runs.items()):
        rs.sort(key=lambda r: r[0])
        for j, b in enumerate(rs):
            for a in rs[:j]:
                over = min(a[1], b[1], vw.end) - b[0]
                if a[2] == b[2] or over <= 0:
                    continue
                m["overlaps"] += 1
                m["max_overlap_s"] = max(m["max_overlap_s"], over)
                zombie = any(a[2] in ms and s <= b[0] and e >= a[0] for s, e, ms, _ in vw.faults) or \
                    (a[4] is not None and a[4]["type"] == "member_exit" and a[4].get("how") in ("kill", "crash"))
                tol, src = zombie_tolerance(vw, settings, a[2], b[0]) if zombie else (0.0, "")
                if zombie and over <= tol:
                    continue
                why = f"(tolerance {tol:g}s for a faulted zombie: {src})" if zombie else f"({a[2]} was under no fault)"
                problems.append(f"task {task} ran on {a[2]} and {b[2]} at once for {over:.3f}s from {run_s(history, b[0])} {why}")
                wits += [witness(a[3], f"{a[2]} runs task {task}"),
                         witness(b[3], f"{b[2]} starts task {task} while {a[2]} still runs it")]
    outside = [(row, mem, task, t) for row, mem, task, t in vw.own_processed()
               if not any(r[2] == mem and r[0] <= t <= r[1] for r in runs.get(task, ()))]
    proc = history.bulk("processed")
    evs = history.events_at([proc.seq[row] for row, *_ in outside[:MAX_WITNESSES]])
    for row, mem, task, t in outside:
        problems.append(f"{mem} processed task {task} at {run_s(history, t)} without running it")
        if proc.seq[row] in evs:
            wits.append(witness(evs[proc.seq[row]], f"{mem} is not running task {task} here"))
    m["max_overlap_s"] = secs(m["max_overlap_s"])
    if not runs and not outside:  # as Connect's twin: nothing ran, so nothing was judged
        return verdict(name, "unknown", "no task ever ran active (no task_active event): nothing to judge", (), m)
    return _outcome(name, problems, wits, m, f"{m['activations']} task activations on {m['tasks_seen']} tasks, "
                                             f"no task ran on two clients beyond tolerance")


def check_warmup_before_active(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge that no task restored cold on a client while a caught-up copy existed elsewhere (KIP-441), by the
    assignor settings of that moment (`assignor`)."""
    name = "warmup_before_active"
    if (v := _empty(name, history)) is not None:
        return v
    vw = view(history)
    episodes: list[dict] = []
    last: dict[tuple, dict] = {}
    for e in vw.own(("restore_start", "restore_end")):
        key, t = (e["member"], e.get("task")), e["mono"]
        ep = last.get(key)
        if e["type"] == "restore_end":
            if ep is not None:
                ep["restored"] = (ep["restored"] or 0) + int(e.get("restored") or 0)
        elif ep is not None and t - ep["t"] <= EPISODE_S:
            ep["n"] += int(e.get("end", 0)) - int(e.get("start", 0))
        else:
            last[key] = ep = {"member": key[0], "task": key[1], "t": t, "ev": e, "restored": None,
                              "n": int(e.get("end", 0)) - int(e.get("start", 0))}
            episodes.append(ep)
    ran = [{k for s in ss for k in s.active} for ss in vw.snaps.values()]
    if not episodes and not any(a & b for i, a in enumerate(ran) for b in ran[:i]):
        return verdict(name, "skipped", "no task was restored and no task moved between members")
    m = {"activations_with_restore": len(episodes), "warm": 0, "cold_justified": 0, "violations": 0,
         "max_restored_records": max((ep["n"] if ep["restored"] is None else ep["restored"] for ep in episodes),
                                     default=0)}
    problems, wits, unjudged = [], [], 0
    for ep in episodes:
        cands = assignors_at(vw, settings, ep["t"])
        judged = [a for a in cands if a.warmups]
        if not judged:  # measured, not judged: counted by the first candidate's lag
            unjudged += 1
            if _cold(vw, settings, ep, cands[0]):
                m["violations"] += 1
            continue
        got, a = broken_under_all(judged, lambda a: _cold(vw, settings, ep, a))
        if not got:
            m["warm" if any(ep["n"] <= x.acceptable_recovery_lag for x in judged) else "cold_justified"] += 1
            continue
        m["violations"] += 1
        o, lag, sev = got[0]
        problems.append(f"{ep['member']} restored task {ep['task']} from {ep['n']} records behind at {run_s(history, ep['t'])} "
                        f"while {o} held a caught-up copy (lag {lag} <= {a.value('acceptable_recovery_lag')})")
        wits += [witness(sev, f"{o} holds task {ep['task']} with lag {lag}"),
                 witness(ep["ev"], f"{ep['member']} starts restoring task {ep['task']}: {ep['n']} records")]
    if episodes and unjudged == len(episodes):
        return verdict(name, "skipped", f"the streams protocol's assignor has no warmup tasks (Kafka Streams ignores "
                       f"max.warmup.replicas under it): {m['violations']} of {len(episodes)} restores were cold while "
                       f"a caught-up copy existed, measured and not judged", measurements=m)
    if unjudged:
        m["unjudged_streams_protocol"] = unjudged
    return _outcome(name, problems, wits, m, f"{len(episodes)} restores: {m['warm']} warm, {m['cold_justified']} "
                                             f"cold with no caught-up copy anywhere"
                    + (f", {unjudged} under the streams protocol measured only" if unjudged else ""))


def _cold(vw, settings: StreamsCheckSettings, ep: dict, a: Assignor) -> list[tuple]:
    """The caught-up copies by `a`'s acceptable.recovery.lag that make `ep`'s restore a cold one Streams should
    have avoided: (member, lag, its snapshot event) each; none when the restore was within the lag."""
    mem, task, t, acl = ep["member"], ep["task"], ep["t"], a.acceptable_recovery_lag
    if ep["n"] <= acl:
        return []
    ref = max((r for r in vw.rebalances if r <= t), default=t)
    lo = min(ref, t - settings.handoff_window_s)
    copies = []
    for o in vw.live(t):
        if o == mem or vw.faulted(o, t) or vw.state(o, t) in DOWN_STATES:
            continue
        ts = vw.snap_t.get(o, [])
        for s in vw.snaps[o][max(0, bisect_left(ts, lo) - 1):bisect_right(ts, t)]:
            lag = s.lags.get(task)
            if task in s.active | s.standby and lag is not None and int(lag) <= acl:
                copies.append((o, int(lag), s.event))
    return copies
