"""Streams invariants 3 (`probing_convergence`) and 3b (`bounded_task_moves`); see the package docstring."""
from __future__ import annotations

import math

from harness.record.history import History
from harness.invariants.core import Verdict, secs, verdict, witness
from harness.invariants.streams.assignor import assignors_at
from harness.invariants.streams.bounds import zombie_tolerance
from harness.invariants.streams.view import DOWN_STATES, StreamsCheckSettings, _empty, _outcome, _View, view
from harness.invariants.clock import run_s


#: what `probing_convergence` allows beyond the probing intervals (docs/invariants.md, "Constants"): not derived
PROBING_SLACK_S = 60.0


def _all_running_at(vw: _View) -> float | None:
    """The first moment every live member was RUNNING, if any."""
    for t in sorted(t for ss in vw.states.values() for t, to in ss if to == "RUNNING"):
        live = vw.live(t)
        if live and all(vw.state(x, t) == "RUNNING" for x in live):
            return t
    return None


def _change_at(vw: _View, e: dict) -> float:
    """When a topology change began: a member's exit from its first shutting-down state, if it logged one."""
    if e["type"] == "member_exit":
        return min([e["mono"]] + [t for t, to in vw.states.get(e["member"], ()) if to in DOWN_STATES])
    return e["mono"]


def _fewest_moves(before: dict[str, tuple], after: dict[str, tuple]) -> int:
    """The fewest active moves from `before` to a balanced assignment (each of `after`'s clients holding
    floor or ceil of its tasks' share): the tasks `after` owns minus the most that can stay where they were."""
    clients = {m for ms in after.values() for m in ms}
    if not clients:
        return 0
    held = dict.fromkeys(clients, 0)
    for task in after:
        owners = [m for m in before.get(task, ()) if m in clients]
        if owners:
            held[owners[0]] += 1
    lo, extra = divmod(len(after), len(clients))
    stay = sum(min(h, lo + 1 if i < extra else lo) for i, h in enumerate(sorted(held.values(), reverse=True)))
    return len(after) - stay


def _windows(vw: _View, settings: StreamsCheckSettings) -> list[dict] | None:
    """One window per topology change after all members first ran (None: they never all ran); see 3."""
    t0 = _all_running_at(vw)
    if t0 is None:
        return None
    changes = sorted(((_change_at(vw, e), e) for e in vw.events if e["type"] in ("member_start", "member_exit")
                      and _change_at(vw, e) > t0), key=lambda x: x[0])
    out = []
    for i, (tc, c) in enumerate(changes):
        until = changes[i + 1][0] if i + 1 < len(changes) else vw.end
        before = vw.actives(tc, before=True)
        times = sorted({t for t in vw.moved if tc < t < until} | {t for t, _ in vw.stop.values() if tc < t < until})
        conv, cur = tc, vw.actives(tc)
        for t in times:
            if (a := vw.actives(t)) != cur:
                conv, cur = t, a
        # a task unowned just before (its owner gone: killed, or left) moves too when it ends up owned
        moves = sum(1 for task in set(before) | set(cur) if cur.get(task, before.get(task)) != before.get(task))
        # the assignor settings then (`assignor`): the bound is the loosest of the candidates, the leader's unknown
        cands = assignors_at(vw, settings, tc)
        lead = min(cands, key=lambda a: (a.max_warmup_replicas, -a.probing_interval_s))
        w = math.ceil(moves / max(1, lead.max_warmup_replicas))
        # an instance killed just before or in the window adds the rebalance of its session's expiry
        killed = [(m, t, zombie_tolerance(vw, settings, m, t - 1e-6)) for m, (t, e) in sorted(vw.stop.items())
                  if e["type"] == "member_exit" and e.get("how") in ("kill", "crash") and t < until]
        expired = [m for m, t, (tol, _) in killed if tc - tol <= t]
        # the kills whose count the source of their tolerance decided (those within the run's or their own)
        kills = [f"{m} killed at {run_s(vw.history, t)}, {'within' if m in expired else 'beyond'} its tolerance {tol:g}s before "
                 f"the change ({src})"
                 for m, t, (tol, src) in killed if tc - max(tol, settings.zombie_tolerance_s) <= t]
        who = f"{c['type']} of {c.get('member')} at {run_s(vw.history, c['mono'])}" + \
            (f" (shutting down from {run_s(vw.history, tc)})" if tc < c["mono"] else "")
        out.append({"event": c, "tc": tc, "conv": conv, "who": who, "moves": moves,
                    "fewest": _fewest_moves(before, cur), "rebalances": sum(1 for t in vw.rebalances if tc <= t <= conv),
                    # two rebalances per round, the change's own and each probing round: an assignment that takes an
                    # active task from an instance makes it rejoin at once (cooperative rebalancing, KIP-429), and
                    # the task reaches its new owner in that second rebalance
                    "bound": 2 * (w + 1) + len(expired), "kills": kills,
                    "bound_s": (w + 1) * max(a.probing_interval_s for a in cands) + PROBING_SLACK_S,
                    "warmups": max(a.max_warmup_replicas for a in cands),
                    "assignor": "; ".join(dict.fromkeys(f"{a.value('max_warmup_replicas')}, "
                                                       f"probing.rebalance.interval.ms={a.probing_interval_s * 1000:g}"
                                                       for a in cands))})
    return out


def _windows_or_verdict(name: str, history: History, settings: StreamsCheckSettings) -> list[dict] | Verdict:
    """The topology-change windows, or the verdict when there are none to judge."""
    if (v := _empty(name, history)) is not None:
        return v
    windows = _windows(view(history), settings)
    if windows is None:
        return verdict(name, "unknown", "the members were never all RUNNING at once")
    if not windows:
        return verdict(name, "skipped", "no member started or left after all were RUNNING")
    return windows


def check_probing_convergence(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge that after each scale event the assignment converges within the probing-rebalance bound."""
    name = "probing_convergence"
    windows = _windows_or_verdict(name, history, settings)
    if isinstance(windows, Verdict):
        return windows
    problems, wits = [], []
    for w in windows:
        who, conv, tc, n, moves = w["who"], w["conv"], w["tc"], w["rebalances"], w["moves"]
        if n > w["bound"]:
            plus = f" (+1 for each kill within its zombie tolerance: {'; '.join(w['kills'])})" if w["kills"] else ""
            problems.append(f"after the {who}, {n} rebalances until the assignment settled at {run_s(history, conv)}, "
                            f"bound {w['bound']} for {moves} moves (2 per round: the change's own and "
                            f"ceil(moves / max.warmup.replicas) probing rounds){plus} (assignor: {w['assignor']})")
            wits.append(witness(w["event"], f"topology change: {moves} moves, {n} rebalances"))
        if conv - tc > w["bound_s"]:
            problems.append(f"after the {who}, the assignment settled only at {run_s(history, conv)} ({conv - tc:.1f}s), "
                            f"bound {w['bound_s']:g}s for {moves} moves (assignor: {w['assignor']})")
            wits.append(witness(w["event"], f"topology change: settled {conv - tc:.1f}s later"))
    m = {"windows": [{"change_s": secs(w["tc"]), "change": w["who"], "moves": w["moves"], "fewest_moves": w["fewest"],
                      "rebalances": w["rebalances"], "bound": w["bound"], "seconds_to_converge": secs(w["conv"] - w["tc"])}
                     for w in windows]}
    return _outcome(name, problems, wits, m, f"{len(windows)} topology changes converged within the probing bounds")


def check_bounded_task_moves(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge that each topology change moved at most twice the fewest active tasks plus one warmup round."""
    name = "bounded_task_moves"
    windows = _windows_or_verdict(name, history, settings)
    if isinstance(windows, Verdict):
        return windows
    problems, wits = [], []
    for w in windows:
        bound = 2 * w["fewest"] + w["warmups"]
        if w["moves"] > bound:
            problems.append(f"after the {w['who']}, {w['moves']} active tasks moved where {w['fewest']} would "
                            f"balance the instances (bound {bound}: 2 x {w['fewest']} + max.warmup.replicas; "
                            f"assignor: {w['assignor']})")
            wits.append(witness(w["event"], f"topology change: {w['moves']} moves, fewest {w['fewest']}"))
    m = {"moves": sum(w["moves"] for w in windows), "fewest_moves": sum(w["fewest"] for w in windows),
         "max_excess": max(w["moves"] - w["fewest"] for w in windows)}
    return _outcome(name, problems, wits, m, f"{m['moves']} active task moves over {len(windows)} topology "
                                             f"changes, {m['fewest_moves']} at the fewest")
