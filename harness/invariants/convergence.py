"""Convergence and balance: after **each** disturbance the group is whole and balanced again within the bound
the protocol allows, and no rebalance storm happens.

Disturbances are as in `timeline`, the moments of the one model of causes (`causes.Causes.moments`: a fault's
start or end, a member's start or exit, a broker event). They
cut the run into windows: window i runs from disturbance T_i to the next one (the last window to the workload
end W); the first from `run_start`, since the run's own cluster starting before it disturbs no group yet. A window is judged on the *converged states*: stretches over which the assignment does not change and
is complete and balanced by the kind's one rule, `balance.consumer`, the rule the runner's stable wait
calls too: every partition of every topic a live member subscribes to has exactly one live owner, each held
by a member that subscribes to its topic, and no live member A holds two or more partitions more than a
live member B that subscribes to the topic of one of A's partitions (the sticky assignor's notion; with one
subscription, counts differ by at most one).

- **Bound** of window i (`settings.disturbance_bound`): the longest session timeout of a member that departed
  at T_i without leaving the group (killed, or a static member: the coordinator must notice), plus the
  protocol's rebalance rounds (one under eager, two under the cooperative and consumer protocols) of the
  members' rebalance timeout (their `max.poll.interval.ms`), each as recorded for that member at that moment;
  for partitions added under a classic protocol, the members' metadata refresh interval instead of a session
  timeout (the leader learns of them at its next refresh).
- **Converged** at c: the first converged state in the window that lasts `quiet_period_s` (or to the window's
  end, when the next disturbance comes sooner). Invalid when c - T_i exceeds the bound.
- **Never converged**: invalid when the window lasted longer than its bound (the group had its chance);
  otherwise the window was *interrupted* by the next disturbance and is not judged, unless it is the last one:
  then `unknown` (the history ends too soon to tell), as when the last window's quiet period is too short.
  A window that ends while a fault is still active is not judged for never converging (a fault may keep a
  group apart for its whole length).
- **Storm**: rebalances nothing drives. A rebalance is a burst of `assigned`/`revoked`/`lost` events (bursts
  apart by more than the longest heartbeat interval of the live members). A disturbance explains at most its
  protocol's rounds + `FOLLOW_UP_REBALANCES` (1) rebalances in its window (a join, a leave, a fault: two rounds
  under the cooperative and consumer protocols, one under eager, and one follow-up; a graceful stop's window from
  its `member_stop`, and a `lost` a fault or broker event explains is no rebalance: `_undriven`);
  `STORM_REBALANCES` (3) or more beyond that over the run are a storm (`STORM_RULE`), as are more `lost` events of
  members in good standing in one window (alive after it, with no cause of a `lost` within their own session
  timeout before it: no fault or request fault that reached it, no stall of its own, no fault on a broker nor
  broker event: `EXPLAINS_LOST`, read from `causes`) than members alive in it: invalid, with the count and the span. (Two unexplained rebalances are tolerated: a follow-up round, a coordinator's reload;
  and each member may lose its partitions once in a window: a commit racing the rebalance is answered
  ILLEGAL_GENERATION and the client drops its assignment as lost, as the Java client does too.)
- **The end**: the last window is also judged at W as the run ends: the state then complete and balanced and
  quiet for `quiet_period_s` (else `unknown`; `invalid` when W is past the window's bound); a fault still
  active at W leaves nothing settled to judge (`unknown`).
- **The runner's own wait** is `group_settled`'s (harness/invariants/settled.py): the rule every kind of group is
  judged by, with this module's converged states as the consumer group's settled ones.

Tolerances: `quiet_period_s` (how long a converged state must last to count). Measurements: `convergence_s`
(of the last window), `max_convergence_s`, `windows`, `windows_judged`, `interrupted`, `rebalances_max` (the
most ownership-change bursts in one window), `storms`, the final counts per member, `since_last_disturbance_s`;
when members wrote subscriptions, also `subscriptions` (member -> topics at W) and `unbalanced_pair`.
"""
from __future__ import annotations

from bisect import bisect_left

from harness.record.history import History
from harness.invariants import balance, causes, rebalance_time, timeline
from harness.invariants.core import CheckSettings, Verdict, empty, secs, verdict, witness
from harness.invariants.coverage import unowned_stretches
from harness.invariants.protocols import rebalance_rounds
from harness.invariants.rebalance_time import first_settled
from harness.invariants.terms import sweep_owners
from harness.invariants.settings import disturbance_bound, longest_heartbeat_s, member_settings

NAME = "convergence_balance"
OWN = timeline.OWNERSHIP_TYPES
#: follow-up rebalances a disturbance explains beyond its protocol's rounds (a round after a commit raced it)
FOLLOW_UP_REBALANCES = 1
#: rebalances beyond what the disturbances explain (over the run) that make a storm: two are tolerated (a
#: follow-up round, a coordinator's reload), a third is not
STORM_REBALANCES = 3
#: the storm rule in words, as docs/invariants.md states it (a test holds the two together)
STORM_RULE = (f"each disturbance window explains its protocol's rounds + {FOLLOW_UP_REBALANCES} rebalances, that many "
              f"for each member first given an assignment in it; "
              f"{STORM_REBALANCES} or more beyond that over the run are a storm")


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge that the group converged after each disturbance within its bound, with no storm."""
    if (v := empty(NAME, history)) is not None:
        return v
    tl = timeline.build(history, settings)
    if tl.partitions <= 0:
        return verdict(NAME, "unknown", "partition count unknown: set partitions")
    W, before = tl.workload_end, tl.end_before
    if W is None:
        return verdict(NAME, "unknown", "no member alive at the end of the history and no drained event")
    converged = converged_states(tl)
    # the run's own cluster starting before `run_start` disturbs no group yet: windows count from the run's start
    times = sorted({t for t, _ in tl.disturbances(W, before) if tl.start <= t < W} | {tl.start})
    events = {t: e for t, e in tl.disturbances(W, before)}
    problems, wits = [], []
    m: dict = {"windows": len(times), "windows_judged": 0, "interrupted": 0, "storms": 0, "rebalances_max": 0}
    convs = []
    last = None
    for i, T in enumerate(times):
        N = times[i + 1] if i + 1 < len(times) else W
        final = i + 1 == len(times)
        bound, why = disturbance_bound(tl, T)
        c = first_settled(converged, T, N, settings.quiet_period_s, final)
        bursts = _bursts(tl, T, N)
        m["rebalances_max"] = max(m["rebalances_max"], len(bursts))
        at = f"the disturbance at {T - tl.start:.1f}s" if T > tl.start else "the start"
        t_ev = events.get(T)
        if c is not None:
            m["windows_judged"] += 1
            convs.append(c - T)
            if c - T > bound:
                problems.append(f"converged {c - T:.3f}s after {at} (bound {bound:.1f}s: {why})")
                wits += [witness(e, w) for e, w in ((t_ev, "the disturbance"),) if e is not None]
        elif N - T > bound and not _fault_active(tl, N) and not final:  # the last window: judged at W (_final)
            m["windows_judged"] += 1
            what = _state(tl, N, True)[2]
            problems.append(f"the group was not complete and balanced within {bound:.1f}s of {at} ({why}); "
                            f"{len(bursts)} rebalances in the {N - T:.1f}s before the next disturbance, "
                            f"{what or 'changing'} then")
            wits += [witness(e, w) for e, w in ((t_ev, "the disturbance"),) if e is not None]
            if bursts:
                wits.append(witness(bursts[-1][2], "the last ownership change in the window"))
        elif not final:
            m["interrupted"] += 1
        lost = _unexplained_lost(tl, T, N)
        m["lost_in_good_standing"] = m.get("lost_in_good_standing", 0) + len(lost)
        if len(lost) > len(tl.alive_members(T) | tl.alive_members(max(T, N - 1e-6))):
            m["storms"] += 1
            problems.append(f"rebalance storm: {len(lost)} partitions lost by members in good standing in "
                            f"{lost[-1]['mono'] - lost[0]['mono']:.1f}s after {at} "
                            f"({', '.join(sorted({e['member'] for e in lost}))}), no fault, stall or broker "
                            f"event driving it; {len(bursts)} rebalances in the window")
            wits += [witness(e, "lost by a member in good standing") for e in lost[:4]]
        if final:
            last = (T, N, c, bound, why, t_ev)
    undriven = _undriven(tl, settings, W, before)
    excess = sum(n for _, n, _ in undriven)
    m["rebalances_undriven"] = excess
    if excess >= STORM_REBALANCES:
        m["storms"] += 1
        first, last_b = undriven[0][2][0], undriven[-1][2][-1]
        total = sum(len(b) for _, _, b in undriven)
        problems.insert(0, f"rebalance storm: {excess} rebalances nothing drove, {total} rebalances in "
                           f"{last_b[1] - first[0]:.1f}s over {len(undriven)} disturbance windows where each "
                           f"disturbance explains at most {rebalance_rounds(settings.protocol) + FOLLOW_UP_REBALANCES} "
                           f"({STORM_RULE})")
        wits += [witness(first[2], "the first rebalance of the storm"), witness(last_b[2], "the last one")]
    m["rebalance_time"] = rebalance_time.measure(tl, settings, converged, unowned_stretches(tl, W))
    return _final(tl, settings, m, convs, last, problems, wits)


def _final(tl, settings, m, convs, last, problems, wits) -> Verdict:
    """The verdict: the problems found, else the last window's state at W (as the run ends)."""
    W, before = tl.workload_end, tl.end_before
    T, N, c, bound, why, t_ev = last
    st = _state(tl, W, before)
    complete, balanced, what, counts, pair, subs = st
    alive = set(counts)
    m.update({"since_last_disturbance_s": secs(W - T), "final_counts": dict(sorted(counts.items())),
              "complete": complete, "balanced": balanced, "max_convergence_s": secs(max(convs, default=0.0))})
    if tl.subscriptions.declared:
        m["subscriptions"] = {x: tl.subscriptions.show(subs[x]) for x in sorted(alive)}
        if pair is not None:
            m["unbalanced_pair"] = list(pair)
    if c is not None:
        m["convergence_s"] = secs(c - T)
    if not (complete and balanced) and W - T > bound and not any("not complete and balanced" in p for p in problems):
        problems.append(f"assignment still {what} at the end, {W - T:.3f}s after the last disturbance "
                        f"(bound {bound:.1f}s: {why})")
        wits += [witness(t_ev, "the last disturbance")] if t_ev is not None else []
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return verdict(NAME, "invalid", problems[0] + more, wits, m)
    if active := _active_at(tl, W):
        return verdict(NAME, "unknown", f"a fault is still active at the end ({active.show(tl.start)}): no settled "
                                        f"state to judge", [witness(active.event, "the fault still active")], m)
    if not (complete and balanced):
        return verdict(NAME, "unknown", f"assignment {what} at the end, only {W - T:.3f}s after the last "
                                        f"disturbance (bound {bound:.1f}s: {why})",
                       [witness(t_ev, "the last disturbance")] if t_ev is not None else [], m)
    quiet = W - max(T, _last_change(tl, W))
    m["quiet_s"] = secs(quiet)
    if quiet < settings.quiet_period_s:
        return verdict(NAME, "unknown", f"quiet for only {quiet:.3f}s before the end (need "
                                        f"{settings.quiet_period_s:g}s)", (), m)
    return verdict(NAME, "valid", f"complete and balanced after each of {m['windows_judged']} disturbances "
                                  f"within its bound ({m['interrupted']} interrupted by the next); the last "
                                  f"{(c if c is not None else T) - T:.3f}s after it (bound {bound:.1f}s), then "
                                  f"quiet for {quiet:.3f}s", (), m)


def _assess(tl, t: float, before: bool = False, owners: dict | None = None) -> balance.GroupBalance:
    """The group's assignment at t (just before t when `before`; `owners`: `tl.owners_at` then, when known) among
    the live members, by the one rule of the kind (`balance.consumer`, which the runner's stable wait calls too)."""
    alive = tl.alive_members(t, before)
    held: dict[str, list[tuple[str, int]]] = {x: [] for x in alive}
    for p, xs in (tl.owners_at(t, before) if owners is None else owners).items():
        for x in xs:
            if x in alive:
                held[x].append(tl.layout.tp(p))
    subs = {x: tl.subscriptions.show(tl.subscribed(x, t, before)) for x in alive} \
        if not tl.subscriptions.all_take_all else {}  # every member takes every topic: none to pass (balance.consumer)
    return balance.consumer(held, subs, tl.counts_at(t, before))


def _state(tl, t: float, before: bool):
    """(complete, balanced, what is wrong in words, member -> count, unbalanced pair, member -> subscribed topics)
    of the assignment at t among live members."""
    b = _assess(tl, t, before)
    counts, pair, complete, balanced = b.counts, b.pair, b.complete, b.balanced
    subs = {x: tl.subscribed(x, t, before) for x in counts}
    gone = ([f"{len(b.missing)} unowned"] if b.missing else []) + ([f"{len(b.doubled)} owned twice"] if b.doubled
                                                                   else []) + \
           ([f"{len(b.misplaced)} held by a member not subscribed to its topic"] if b.misplaced else [])
    what = ("incomplete" + (f" ({', '.join(gone)})" if gone and tl.subscriptions.declared else "")
            if not complete else "") + (" and " if not complete and not balanced else "") + \
           ("unbalanced " + str(dict(sorted(counts.items()))) if not balanced else "") + \
           (f" ({pair[0]} holds {counts[pair[0]]}, {pair[1]} holds {counts[pair[1]]} and could take one)"
            if pair is not None and tl.subscriptions.declared else "")
    return complete, balanced, what, counts, pair, subs


def converged_states(tl) -> list[tuple[float, float]]:
    """(start, end) of every stretch over which the assignment does not change and is complete and balanced
    (`balance.consumer`), in time order."""
    times = sorted({o.start for o in tl.ownerships} | {o.end for o in tl.ownerships if o.end <= tl.end}
                   | {t for ls in tl.lives.values() for lf in ls for t in (lf.start, lf.end) if t <= tl.end}
                   | {m for ms in tl.subscriptions.by_member.values() for m, _ in ms if m <= tl.end}
                   | {t for t in tl.growth.times if t <= tl.end})
    out: list[tuple[float, float, tuple]] = []
    every = tl.subscriptions.all_take_all  # then every partition of every topic is required of the live members
    for i, (t, owners) in enumerate(sweep_owners(tl.ownerships, times, tl.end)):  # tl.owners_at(t), one sweep
        nxt = times[i + 1] if i + 1 < len(times) else tl.end
        if nxt <= t:
            continue
        if every and sum(1 for xs in owners.values() if xs) < sum(tl.counts_at(t).values()):
            continue  # fewer partitions held by anyone than are required: one is unowned, incomplete (mid-rebalance)
        if not _assess(tl, t, owners=owners).ok:
            continue
        key = tuple(sorted((p, tuple(sorted(xs))) for p, xs in owners.items() if xs))
        if out and out[-1][2] == key and out[-1][1] == t:
            out[-1] = (out[-1][0], nxt, key)
        else:
            out.append((t, nxt, key))
    return [(a, b) for a, b, _ in out]


def _undriven(tl, settings, W: float, before: bool) -> list[tuple[float, int, list]]:
    """(window start, rebalances beyond what its disturbance explains, its bursts) of each storm window with more
    than its protocol's rounds + FOLLOW_UP_REBALANCES rebalances, that many for each member first given an
    assignment in the window (each joins on its own: the first members' joins, seconds apart under load). The storm
    windows are the disturbance windows, except that a graceful stop's begins when the stop began
    (`Timeline.shutdown_start`: its member_stop), as the member revokes and leaves the group then, before it exits;
    and a `lost` a fault or a broker event explains
    (`_lost_explained`) is no rebalance here: a member that cannot reach its coordinator drops its assignment on
    its own session timer, one member at a time, while the group itself has not rebalanced."""
    allowed = rebalance_rounds(settings.protocol) + FOLLOW_UP_REBALANCES
    times: set[float] = {tl.start}
    cs = causes.build(tl)
    stops = {id(c.event): c.start for c in cs.of("leave") if c.event.get("type") == "member_exit"}
    for t, e in cs.moments(W, before):
        t = stops.get(id(e), t)  # a graceful stop: from its start (the causes view's leave)
        if tl.start <= t < W:
            times.add(t)
    times_ = sorted(times)
    joined = _first_assignments(tl)
    out = []
    for i, T in enumerate(times_):
        N = times_[i + 1] if i + 1 < len(times_) else W
        bursts = _bursts(tl, T, N, skip=lambda e: e["type"] == "lost" and _lost_explained(tl, e))
        # each member whose first assignment came in the window joined in it, on its own: under load the first
        # members' joins land seconds apart (and after the next member's start), each with its protocol's rounds
        joins = bisect_left(joined, N) - bisect_left(joined, T)
        if len(bursts) > allowed * max(1, joins):
            out.append((T, len(bursts) - allowed * max(1, joins), bursts))
    return out


def _first_assignments(tl) -> list[float]:
    """When each member life was first given an assignment (its first `assigned` event in that life), sorted."""
    given: dict[str, list[float]] = {}
    for _, e in tl.control:
        if e["type"] == "assigned" and e.get("member") is not None:
            given.setdefault(e["member"], []).append(e["mono"])
    out = []
    for m, lives in tl.lives.items():
        times = given.get(m, [])
        for lf in lives:
            if (i := bisect_left(times, lf.start)) < len(times):
                out.append(times[i])
    return sorted(out)


def _bursts(tl, T: float, N: float, skip=None) -> list[tuple[float, float, dict]]:
    """Ownership changes in [T, N) grouped into rebalances: (start, end, first event); events further apart than
    the longest heartbeat interval of the members alive then start a new one. `skip`: events not counted."""
    evs = tl.history.derived(("ownership_events", tl.end), lambda: [
        e for _, e in tl.control if e["type"] in OWN and tl.event_partitions(e) and tl.alive(e.get("member"), e["mono"])])
    monos = tl.history.derived(("ownership_event_monos", tl.end), lambda: [e["mono"] for e in evs])
    out: list[list] = []
    for e in evs[bisect_left(monos, T):bisect_left(monos, N)]:
        if skip is not None and skip(e):
            continue
        gap = longest_heartbeat_s(tl, e["mono"])
        if out and e["mono"] - out[-1][1] <= gap:
            out[-1][1] = e["mono"]
        else:
            out.append([e["mono"], e["mono"], e])
    return [tuple(b) for b in out]


def _unexplained_lost(tl, T: float, N: float) -> list[dict]:
    """`lost` events in [T, N) of members in good standing that stay alive and that no fault or broker event
    explains (`_lost_explained`)."""
    out = []
    for e in tl.history.derived(("lost_events", tl.end), lambda: [e for _, e in tl.control if e["type"] == "lost"]):
        t, x = e["mono"], e.get("member")
        if not T <= t < N or not tl.event_partitions(e) or not tl.alive(x, t + 1e-6):
            continue
        if not _lost_explained(tl, e):
            out.append(e)
    return out


#: the causes that explain a `lost` of a member they reached within its session timeout before it: a fault or a
#: request fault on it, its own stall, and (whoever lost) a broker event or a fault of brokers
EXPLAINS_LOST = ("faulted", "request", "stalled", "broker")


def _lost_explained(tl, e: dict) -> bool:
    """Whether a `lost` event has a cause in the history within the member's own session timeout S before it, read
    from the one model of causes (`causes`, `EXPLAINS_LOST`): a fault that reached the member, its stall, a fault on
    a broker (`brokers_affected`: a broker killed or paused is down until its fault ends, and a member whose
    coordinator it was times its session out on its own clock, and writes `lost` when its next poll serves the
    callback), or a broker event."""
    t, x = e["mono"], e.get("member")
    S = member_settings(tl, x, t).session_timeout_s
    for c in causes.build(tl).within(t - S, t, EXPLAINS_LOST):
        if c.kind == "broker" and c.start == c.end:
            return True  # a broker event in [t - S, t]
        if (c.concerns(x) or c.kind == "broker" or c.event.get("brokers_affected")) and c.start < t and c.end > t - S:
            return True
    return False


def _active_at(tl, t: float):
    """The first cause read from a fault (the causes view) still active at t, or None."""
    return next((c for c in causes.build(tl).within(t, t) if c.event.get("type") == "fault_start"
                 and c.start <= t < c.end), None)


def _fault_active(tl, t: float) -> bool:
    return any(f.start < t < f.end for f in tl.faults)


def _last_change(tl, W: float) -> float:
    ts = [o.start for o in tl.ownerships if o.start < W] + [o.end for o in tl.ownerships if o.end < W]
    return max(ts, default=tl.start)
