"""Streams invariants 4 (`standby_placement`, KIP-708) and 5 (`task_balance`); see the package docstring."""
from __future__ import annotations

from harness.record.history import History
from harness.invariants import balance
from harness.invariants.core import Verdict, secs, verdict, witness
from harness.invariants.streams.view import StreamsCheckSettings, _empty, _holders, _outcome, _task_ids, _unstable, view
from harness.invariants.streams.bounds import unsettled_after_kills
from harness.invariants.streams.assignor import Assignor, assignors_at, broken_under_all
from harness.invariants.clock import run_s


def check_standby_placement(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge standby placement at every stable point: apart from the active, enough of them, spread over racks,
    by the assignor settings of that moment (`assignor`)."""
    name = "standby_placement"
    if (v := _empty(name, history)) is not None:
        return v
    vw = view(history)
    points = vw.stable_points(settings.settle_s, unsettled_after_kills(vw, settings))
    if not any(s.standby for ss in vw.snaps.values() for s in ss) and \
            all(a.standby_replicas <= 0 for t, _ in points for a in assignors_at(vw, settings, t)) and \
            (points or settings.standby_replicas <= 0):
        return verdict(name, "skipped", "no standby replicas configured and none seen")
    m = {"stable_points": len(points), "tasks_checked": 0, "rack_spread_ok": None}
    if not points:
        return _unstable(name, settings, m)
    problems, wits = [], []
    for t, snaps in points:
        m["tasks_checked"] += len(_task_ids(settings, {k for s in snaps.values() if s for k in s.active | s.standby}))
        got, _ = broken_under_all(assignors_at(vw, settings, t), lambda a: _placement(vw, settings, t, snaps, a, m))
        for w, evs in got:
            problems.append(f"{w} at {run_s(history, t)}")
            wits += [witness(ev, w) for ev in evs][:2]
    ok = f"standbys well placed at {len(points)} stable points"
    if m.get("rack_spread_unmet"):
        ok += (f"; rack spread measured, not judged, under the streams protocol (its assignor is not "
               f"rack-aware): {m['rack_spread_unmet']} task checks had every copy on one rack")
    return _outcome(name, problems, wits, m, ok)


def _placement(vw, settings: StreamsCheckSettings, t: float, snaps: dict, a: Assignor, m: dict) -> list[tuple]:
    """What is wrong with the standbys of one stable point under assignor settings `a`: (problem, events) each."""
    act, stb = _holders(snaps)
    tasks = _task_ids(settings, set(act) | set(stb))
    want = a.standby_replicas
    need = min(want, len(snaps) - 1)
    racked = a.rack_aware and want >= 1 and len({vw.racks.get(x) for x in snaps} - {None}) >= 2
    out = []
    extra = sum(max(0, len(stb[task]) - want) for task in tasks)
    if extra > a.max_warmup_replicas:
        out.append((f"{extra} standbys beyond {a.value('standby_replicas')}, more than "
                    f"{a.value('max_warmup_replicas')} warmups", []))
    for task in tasks:
        evs = [snaps[x].event for x in act[task] + stb[task] if snaps[x] is not None]
        if both := sorted(set(act[task]) & set(stb[task])):
            out.append((f"task {task} has a standby on {', '.join(both)}, which runs it active", evs))
        if len(stb[task]) < need:
            out.append((f"task {task} has {len(stb[task])} standbys ({', '.join(stb[task]) or 'none'}), want {need} "
                        f"(of {a.value('standby_replicas')})", evs))
        copies = sorted(set(act[task] + stb[task]))
        if racked and len(racks := {vw.racks.get(x) for x in copies} - {None}) < 2:
            if not a.racks:
                m["rack_spread_unmet"] = m.get("rack_spread_unmet", 0) + 1
                continue
            out.append((f"every copy of task {task} is on rack {next(iter(racks), None)} ({', '.join(copies)}): "
                        f"one rack outage loses them all (rack.aware.assignment.tags: {a.source})", evs))
        elif racked:
            m["rack_spread_ok"] = (m["rack_spread_ok"] or 0) + 1
    return out


def check_task_balance(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge the last stable assignment by the kind's one rule (`balance.streams`, the runner's too): every task
    active exactly once, counts balanced across clients; standbys as configured and no warmup left, else the
    assignment had not settled (unknown)."""
    name = "task_balance"
    if (v := _empty(name, history)) is not None:
        return v
    vw = view(history)
    points = vw.stable_points(settings.settle_s, unsettled_after_kills(vw, settings))
    if not points:
        return _unstable(name, settings)
    t, snaps = points[-1]
    # standbys as the assignor then wanted them (`assignor`): settled if settled under one of the candidates
    tried = [balance.streams({x: getattr(s, "active", ()) for x, s in snaps.items()},
                             {x: getattr(s, "standby", ()) for x, s in snaps.items()},
                             _task_ids(settings, {k for s in snaps.values() for k in getattr(s, "active", ())}),
                             a.standby_replicas, settings.active_balance_slack, settings.stateful_balance_slack)
             for a in assignors_at(vw, settings, t)]
    got = next((g for g in tried if g.settled), tried[0])
    act, stateful = got.active, got.stateful
    m = {"at_s": secs(t), "active_per_client": act, "stateful_per_client": stateful}
    problems, wits = [], []
    for task, owners in got.owners.items():
        if len(owners) != 1:
            problems.append(f"task {task} has {len(owners)} active owners ({', '.join(owners) or 'none'}) at {run_s(history, t)}")
            wits += [witness(snaps[x].event, f"{x} runs task {task} active") for x in owners]
    for what, hi, lo in got.unbalanced:
        counts, slack = (act, settings.active_balance_slack) if what == "active" else \
            (stateful, settings.stateful_balance_slack)
        problems.append(f"{what} tasks unbalanced at {run_s(history, t)}: {hi} has {counts[hi]}, {lo} has {counts[lo]} "
                        f"(slack {slack})")
        wits += [witness(snaps[x].event, f"{x} holds {counts[x]} {what} tasks") for x in (hi, lo)
                 if snaps[x] is not None]
    if not problems and not got.settled:
        m["warmups"] = got.warmups
        why = got.standby_problems[0] if got.standby_problems else f"{got.warmups} warmup(s) still in place"
        return verdict(name, "unknown", f"the last stable assignment, at {run_s(history, t)}, had not settled: {why} "
                                        f"(standby_placement judges the standbys; probing_convergence the warmups)",
                       (), m)
    return _outcome(name, problems, wits, m, f"at {run_s(history, t)} every task is active once on {len(act)} clients, "
                                             f"balanced within the slack")
