"""Rebalance time: for each disturbance of a run, how long from its trigger until the group is complete and balanced
again, and how long partitions were unowned meanwhile (the stop-the-world part). A measurement, not a verdict:
`convergence_balance` reports it under `rebalance_time` (what it judges stays its own; see its docstring).

- **Triggers**: the initial join (the first member's start; its effect is the last member start before the first
  action, or without actions before the first assignment), then every action of the schedule as the history
  recorded it (`action_start` .. `action_end`), but those that change nothing in the group (`NOT_DISTURBING`) and
  those whose `action_end` says they were `skipped`. A trigger's time is its action's start; for `kill_member`, the
  killed member's `member_exit` (the SIGKILL, when the coordinator's clock starts). A history without action events
  (written by hand, or by an older harness) has one trigger per fault start and member start or exit instead
  (`timeline`'s disturbances, a fault's end excepted).
- **Effect**: the last disturbance (`timeline`: a member start or exit, a fault start or end, a broker event) from
  the trigger to its action's end (the trigger itself when there is none): a pause is over at its SIGCONT, a kill
  with a replacement at the replacement's start.
- **Settled** at S: the first moment from the effect on at which a *converged state* begins or holds, one that
  lasts `quiet_period_s` (or, but for the last trigger, up to the next trigger): an unchanging assignment that is
  complete and balanced by the kind's one rule (`balance.consumer`, which the runner's stable wait calls too;
  `convergence` finds these states). **Rebalance time** = S - trigger. None, with `why`, when the group did not
  settle before the next trigger ("interrupted") or before the workload end ("never settled"): never 0.
- **Unowned** (stop the world): every stretch in which a partition had no live owner (`coverage`'s gaps: from its
  owner's `revoked` / `lost` / exit to its next `assigned`, the same stretch under eager, cooperative and consumer
  protocols) that began in [trigger, next trigger): their sum, the longest, and how many partitions had one. A
  stretch still open at the workload end counts up to it and is counted in `unowned_open` (a lower bound then).

Per run: the protocol (`settings.protocol`) and the assignors the members ran (their `started` events' effective
`partition.assignment.strategy`, `group.remote.assignor`; see `assignor_of`), `max_s` over the settled ones,
`unsettled` (how many have none).
"""
from __future__ import annotations

from harness.base.vocabulary import ASSIGNMENT, CLASSIC, LIBRDKAFKA_DEFAULT_STRATEGY, SERVER_DEFAULT_ASSIGNOR
from harness.invariants.core import CheckSettings, secs
from harness.base.steps import Step

#: actions that do not disturb the group's assignment: no trigger of their own
NOT_DISTURBING = frozenset({Step.SLEEP, Step.WAIT_STABLE, Step.WORKLOAD_RATE, Step.WAIT_OFFSETS_COMPACTED})
#: actions whose trigger is the member's exit (the SIGKILL), not the action's start
EXIT_TRIGGERED = frozenset({Step.KILL_MEMBER})


def first_settled(converged, T: float, N: float, quiet: float, final: bool) -> float | None:
    """The first moment in [T, N) from which a converged state lasts `quiet` (or to N, but for the last window)."""
    for a, b in converged:
        if b <= T or a >= N:
            continue
        c = max(a, T)
        lasts = min(b, N) - c
        if lasts >= quiet or (not final and b >= N):
            return c
    return None


def triggers(tl) -> list[dict]:
    """The run's triggers in time order: {kind, at (trigger time), effect (the last disturbance it caused), event}."""
    W = tl.workload_end if tl.workload_end is not None else tl.end
    starts = [e for _, e in tl.control if e["type"] == "action_start" and e["mono"] <= tl.end]
    ends = {e.get("action_id"): e for _, e in tl.control if e["type"] == "action_end"}
    dist = [t for t, _ in tl.disturbances(tl.end)]
    out: list[dict] = []
    first = min((lf.start for ls in tl.lives.values() for lf in ls), default=None)
    if first is not None:  # the initial join: every member start before the first action, or the first assignment
        upto = min([e["mono"] for e in starts] or [e["mono"] for _, e in tl.control if e["type"] == "assigned"]
                   or [W])
        joined = [lf.start for ls in tl.lives.values() for lf in ls if lf.start < upto or lf.start == first]
        out.append({"kind": "initial", "at": first, "effect": max(joined), "event": None})
    if starts:
        for e in starts:
            end = ends.get(e.get("action_id"))
            if e.get("kind") in NOT_DISTURBING or (end is not None and end.get("skipped")):
                continue
            until = end["mono"] if end is not None else W
            at = e["mono"]
            if e.get("kind") in EXIT_TRIGGERED:
                exits = [lf.end for ls in tl.lives.values() for lf in ls if lf.exit_event is not None
                         and lf.how == "kill" and at <= lf.end <= until]
                at = min(exits, default=at)
            effect = max((t for t in dist if at <= t <= until), default=at)
            out.append({"kind": e.get("kind") or "?", "at": at, "effect": effect, "event": e})
    else:
        for t, e in tl.disturbances(tl.end):
            if e is None or e.get("type") == "fault_end" or (out and t <= out[0]["effect"]) or t >= W:
                continue
            kind = e.get("kind") if e["type"] == "fault_start" else e["type"]
            out.append({"kind": kind or e["type"], "at": t, "effect": t, "event": e})
    return sorted(out, key=lambda x: x["at"])


def measure(tl, settings: CheckSettings, converged: list[tuple[float, float]], gaps: dict) -> dict:
    """The run's rebalance times (module docstring). `converged`: the converged states (`convergence`); `gaps`:
    partition -> [(start, end, ...)] unowned stretches up to the workload end (`coverage.gaps`)."""
    W = tl.workload_end if tl.workload_end is not None else tl.end
    trs = [x for x in triggers(tl) if x["at"] < W]
    rows = []
    for i, x in enumerate(trs):
        final = i + 1 == len(trs)
        N = trs[i + 1]["at"] if not final else W
        T = x["at"]
        S = first_settled(converged, max(x["effect"], T), N, settings.quiet_period_s, final) \
            if x["effect"] < N else None
        stretches = [(p, s, e) for p, gs in gaps.items() for s, e, *_ in gs if T <= s < N]
        row = {"index": i, "kind": x["kind"], "trigger": "member_exit" if x["kind"] in EXIT_TRIGGERED else
               ("member_start" if x["kind"] == "initial" else (x["event"] or {}).get("type", "action_start")),
               "at_s": secs(T - tl.start), "settled_s": secs(S - T) if S is not None else None,
               "unowned_sum_s": secs(sum(e - s for _, s, e in stretches)),
               "unowned_max_s": secs(max((e - s for _, s, e in stretches), default=0.0)),
               "partitions_unowned": len({p for p, _, _ in stretches}),
               "unowned_open": sum(1 for _, _, e in stretches if e >= W)}
        if x["event"] is not None and x["event"].get("action_id"):
            row["action_id"] = x["event"]["action_id"]
        if S is None:
            row["why"] = ("never settled before the end" if final else
                          f"interrupted: not settled before the next trigger {N - T:.3f}s later")
        rows.append(row)
    settled = [r["settled_s"] for r in rows if r["settled_s"] is not None]
    return {"protocol": settings.protocol, "assignors": assignors(tl, settings.protocol), "disturbances": rows,
            "max_s": max(settled) if settled else None, "unsettled": len(rows) - len(settled)}


def assignor_of(started: dict | None, protocol: str) -> str:
    """The assignor a member's `started` event says it ran: under classic the first of its effective
    `partition.assignment.strategy` (librdkafka's default `range` when it names none), under the consumer
    protocol its `group.remote.assignor` (the broker's default, `uniform`, when none); the protocol's when the
    event says nothing."""
    st = started or {}
    eff = st.get("effective") if isinstance(st.get("effective"), dict) else {}
    gp = eff.get("group.protocol")
    if gp == "consumer":
        return str(eff.get("group.remote.assignor") or SERVER_DEFAULT_ASSIGNOR)
    if gp == CLASSIC:
        return str(eff.get("partition.assignment.strategy") or LIBRDKAFKA_DEFAULT_STRATEGY).split(",")[0].strip()
    p = st.get("protocol") if st.get("protocol") in ASSIGNMENT else protocol
    return ASSIGNMENT[p].assignor if p in ASSIGNMENT else "?"


def assignors(tl, protocol: str) -> list[str]:
    """The distinct assignors the run's members ran (`assignor_of` each `started` event), sorted."""
    got = {assignor_of(e, protocol) for _, e in tl.control if e["type"] == "started" and e["mono"] <= tl.end}
    return sorted(got) or [assignor_of(None, protocol)]

