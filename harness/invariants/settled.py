"""`group_settled`: every kind of group settles within the protocol's bound, by one rule (design invariant 4).

The rule, the same for consumer groups, Kafka Streams, Kafka Connect and share groups (`judge_settled`); each kind
gives it the stretches of its history in which the group was settled by the kind's own balance rule (the one the
runner's stable wait calls: `balance.consumer`, `.streams`, `.connect`, `.share`), its disturbances (members
starting and leaving, faults starting and ending) and its bound after a disturbance, made of what the members and
the group recorded (`bound_at`, per kind: the consumer group's `settings.disturbance_bound`; Streams', Connect's
and share groups' in their packages' `settled` modules):

A settled stretch counts when it lasted the kind's quiet period (`quiet_period_s` of a consumer group or a Connect
cluster, the runner's wait after draining; a Streams group's `settle_s`, its stable point; share groups settle for
good once every member was delivered records): a group that rebalances every second is balanced between its
rebalances, not settled.

- *The runner's own waits.* The runner waits for a settled group after each action and before it drains, and
  records `wait_timeout` (what it waited for and how long) when it gives up. Such a wait during which the history
  shows no settled stretch is `invalid` when the wait ended past the bound of the last disturbance before it began
  (the group had its chance), `unknown` when it did not (the runner gave up before the protocol's bound: the history
  cannot tell). A wait during which the history does show the group settled is counted (`waits_settled_in_history`):
  the runner's view, read while the run went on, differed from the history, not the group.
- *The end.* At the workload end W (the members' final stop after the drain) the group is settled (the stretch
  covering the moment just before W): when it is not, `invalid` once W is past the bound of the last disturbance,
  `unknown` before it; without a drained event the end is `unknown`.

`valid` says both held: every wait of the runner ended settled (none timed out, or the history showed the group
settled meanwhile) and the group was settled at the end. Measurements: `waits_timed_out`, `waits_settled_in_history`,
`settled_at_end`, `bound_s` (of the last disturbance).
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Callable

from harness.record.history import History
from harness.invariants.core import Verdict, secs, verdict, witness

NAME = "group_settled"


def _settled_during(settled: list[tuple[float, float]], a: float, b: float) -> bool:
    return any(s < b and e > a and min(e, b) - max(s, a) > 0 for s, e in settled)


def _last_before(disturbances: list[float], t: float, start: float) -> float:
    i = bisect_right(disturbances, t)
    return disturbances[i - 1] if i else start


def stretches(times, end: float, settled_at: Callable[[float], bool]) -> list[tuple[float, float]]:
    """(from, to) of the stretches between consecutive change `times` (up to `end`) at whose start the group was
    settled (`settled_at(t)`: the kind's rule at t), adjoining ones merged."""
    cuts = sorted(t for t in set(times) if t <= end) + [end]
    out: list[list[float]] = []
    for a, b in zip(cuts, cuts[1:]):
        if b <= a or not settled_at(a):
            continue
        if out and out[-1][1] == a:
            out[-1][1] = b
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def workload_end(history: History) -> float | None:
    """W for the kinds that keep no consumer timeline: the first `member_stop` at or after the last `drained` (the
    runner's final stop), else the end of the history after a drain; None without a `drained` event."""
    control = [e for _, e in history.control()]
    drained = [e["mono"] for e in control if e.get("type") == "drained"]
    if not drained:
        return None
    stop = next((e["mono"] for e in control if e.get("type") == "member_stop" and e["mono"] >= drained[-1]), None)
    end = next((e["mono"] for e in reversed(control) if e.get("type") == "run_end"), control[-1]["mono"])
    return stop if stop is not None else end


def judge_settled(history: History, *, settled: list[tuple[float, float]], disturbances: list[float], start: float,
                  end: float | None, bound_at: Callable[[float], tuple[float, str]], what: str,
                  quiet_s: float = 0.0, unsettled_at: Callable[[float], dict] | None = None) -> Verdict:
    """The verdict of the rule (module docstring). `settled`: (from, to) stretches in which the group was settled by
    the kind's rule; `disturbances`: their times, sorted; `start`: the run's start; `end`: W (None: no drain);
    `bound_at(T)`: (seconds, why) the group may take to settle after a disturbance at T (it may raise
    MissingSetting: the verdict is then unknown, naming it); `what`: the kind's rule in words, for the messages;
    `quiet_s`: how long a stretch must last to count as settled (the kind's own quiet period: a group that
    rebalances every second is balanced between its rebalances, not settled); `unsettled_at(t)`: the fields a
    timed-out wait's witness gains to name what was not settled at t (`partitions`, and `why` in words), so that it
    names the partitions a known bug's marks may hold rather than a time alone (harness/findings/match.py)."""
    settled = [(a, b) for a, b in settled if b - a >= quiet_s]
    problems, wits, unknown = [], [], []
    m: dict = {"waits_timed_out": 0, "waits_settled_in_history": 0}
    for _, e in history.control():
        if e.get("type") != "wait_timeout" or (end is not None and e["mono"] > end):
            continue
        m["waits_timed_out"] += 1
        t, span = e["mono"], float(e.get("timeout_s") or 0)
        if _settled_during(settled, t - span, t):
            m["waits_settled_in_history"] += 1  # the runner's view differed from the history, not the group
            continue
        T = _last_before(disturbances, t - span, start)
        bound, why = bound_at(T)
        say = (f"the runner waited {span:g}s for a settled group ({e.get('what')}) and the history shows it never "
               f"settled ({what}), {t - T:.1f}s after the disturbance at {T - start:.1f}s")
        if t - T > bound:
            problems.append(f"{say}; the protocol allows {bound:.1f}s ({why})")
            named = unsettled_at(t) if unsettled_at is not None else {}
            wits.append({**witness(e, "the runner gave up waiting for a settled group" + named.get("why", "")),
                         **{k: v for k, v in named.items() if k != "why"}})
        else:
            unknown.append(f"{say}; the protocol allows {bound:.1f}s there ({why}), so the history cannot tell")
    if end is None:
        unknown.append("the run never drained (no drained event): no end to judge")
    else:
        m["settled_at_end"] = _settled_during(settled, end - 1e-6, end)
        if not m["settled_at_end"]:
            T = _last_before(disturbances, end - 1e-9, start)
            bound, why = bound_at(T)
            m["bound_s"] = secs(bound)
            say = f"the group was not settled at the end ({what}), {end - T:.1f}s after the last disturbance"
            if end - T > bound:
                problems.append(f"{say}; the protocol allows {bound:.1f}s ({why})")
            else:
                unknown.append(f"{say}; the protocol allows {bound:.1f}s ({why}), so the history cannot tell")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return verdict(NAME, "invalid", problems[0] + more, wits, m)
    if unknown:
        return verdict(NAME, "unknown", unknown[0], (), m)
    waited = (f"{m['waits_timed_out']} wait(s) of the runner timed out while the history shows the group settled"
              if m["waits_timed_out"] else "no wait of the runner for a settled group timed out")
    return verdict(NAME, "valid", f"{waited}, and the group was settled at the end ({what})", (), m)


def check(history: History, settings) -> Verdict:
    """The rule for a consumer group: settled by `balance.consumer` (convergence_balance's converged states), the
    bound `settings.disturbance_bound`."""
    from harness.invariants import convergence, timeline
    from harness.invariants.core import empty
    from harness.invariants.settings import disturbance_bound
    if (v := empty(NAME, history)) is not None:
        return v
    tl = timeline.build(history, settings)
    if tl.partitions <= 0:
        return verdict(NAME, "unknown", "partition count unknown: set partitions")
    W = tl.workload_end
    times = sorted({t for t, _ in tl.disturbances(tl.end, False) if tl.start <= t} | {tl.start})
    return judge_settled(history, settled=convergence.converged_states(tl), disturbances=times, start=tl.start,
                         end=W, bound_at=lambda T: disturbance_bound(tl, T), quiet_s=settings.quiet_period_s,
                         what="every partition of a subscribed topic owned once by a live member, balanced "
                              "(balance.consumer)", unsettled_at=lambda t: _misowned(tl, t))


def _misowned(tl, t: float) -> dict:
    """The partitions required at t that no live member, or more than one, held then (none: only the balance was
    off), as a witness's `partitions` and words."""
    live, owners = tl.alive_members(t), tl.owners_at(t)
    bad = {p: sorted(x for x in owners.get(p, ()) if x in live) for p in tl.required(t)}
    bad = {p: xs for p, xs in bad.items() if len(xs) != 1}
    if not bad:
        return {"why": ": every partition had one live owner, the balance was off"}
    return {"partitions": [list(tl.layout.tp(p)) for p in sorted(bad)],
            "why": ": " + "; ".join("{}-{} held by {}".format(*tl.layout.tp(p), ", ".join(xs) or "no live member")
                                    for p, xs in sorted(bad.items())[:6])}
