"""Coverage and liveness: once settled, every partition has exactly one live owner; gaps are bounded.

Final coverage. At the workload end W (see `timeline`: the end of the history, or the moment the
runner's final teardown began), every partition of every topic of the run that some member alive then
subscribes to (see `topics`; without subscriptions: every topic) has exactly one owner among live members,
and no partition more than one. When it does not, the last disturbance (fault active, member start or
exit, broker event) may still be being repaired: that is judged by the protocol's own bound for it
(`settings.disturbance_bound`: a departed member's session timeout, as it ran with it, plus the rebalance
rounds of the members' rebalance timeout), not by a constant. Past the bound it is `invalid`; within it
`unknown` (the history ends too soon to tell), unless a gap below already makes it `invalid`. No W (no
member alive at the end, no `drained` event): `unknown`.

Unowned time. For every partition, the longest stretch during which no live member held it, counted
from the group's first assignment (of any partition of the topic; the start of the run before it is
ignored) up to W; a stretch still open at W counts up to W. It is a violation when it exceeds
`max_unowned_s`. Faults do not pause this clock: a partition held by a paused member is owned, one
whose owner was killed is not. Partitions of a topic no member of the run ever subscribes to are not
measured, and a partition is measured only while some live member subscribes to its topic (a topic a member takes
up midway through the run is owned from then).

Tolerances: none of its own. The end state and the gaps are held to the protocol's bounds as each member
ran with them (`settings`); the bound is needed only when the end state is not whole, so a run whose end is
whole needs no setting to pass it.
Measurements: `max_unowned_s`, `max_unowned_partition`, `unowned_s_by_partition`, `unowned_partitions`,
`multi_owned_partitions`, `settled_for_s`. With several topics partitions are named "topic-p".
"""
from __future__ import annotations

from harness.record.history import History
from harness.invariants import causes, timeline
from harness.invariants.core import CheckSettings, Verdict, empty, secs, verdict, witness
from harness.invariants.settings import (disturbance_bound, growth_refresh_s, life_at, member_settings,
                                         rebalance_allowance)
from harness.invariants.terms import INF

NAME = "coverage_liveness"


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge final coverage and the longest time any partition had no owner."""
    if (v := empty(NAME, history)) is not None:
        return v
    tl = timeline.build(history, settings)
    P = tl.partitions
    if P <= 0:
        return verdict(NAME, "unknown", "partition count unknown: set partitions")
    W, before = tl.workload_end, tl.end_before
    horizon = W if W is not None else tl.end
    problems: list[str] = []
    wits: list[dict] = []
    m: dict = {"partitions": P, "partitions_inferred": tl.partitions_inferred}
    static_away = _judge_gaps(tl, horizon, problems, wits, m)
    if W is None:
        status_unknown = "no member alive at the end of the history and no drained event: no end state to judge"
    else:
        status_unknown = _judge_end(tl, W, before, problems, wits, m)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return verdict(NAME, "invalid", problems[0] + more, wits, m)
    if status_unknown:
        return verdict(NAME, "unknown", status_unknown, (), m)
    n = len(tl.required(W, before)) if W is not None else P
    away = f"; {len(static_away)} partition absence(s) of static members within their session timeouts" \
        if static_away else ""
    return verdict(NAME, "valid", f"all {n} partitions have one live owner at the end; longest gap "
                                  f"{m['max_unowned_s'] or 0:.3f}s{away}", (), m)


def _judge_gaps(tl: timeline.Timeline, horizon: float, problems: list[str], wits: list[dict], m: dict) -> list[dict]:
    """Judge every partition's unowned stretches up to the horizon, alone and summed per disturbance, against their
    bounds (problems, witnesses and measurements added); returns the static members' expected absences."""
    gaps = unowned_stretches(tl, horizon)
    static_away: list[dict] = []
    by_p: dict[int, float] = {}
    per_dist: dict[tuple[int, float], float] = {}  # (partition, disturbance time) -> unowned seconds in all
    for g in sorted(gaps):
        p = tl.name(g)
        for s, e, se, ee in gaps[g]:
            bound, why, away = gap_bound(tl, g, s, e, se, ee)
            if away is not None:  # a static member's expected absence: reported as such, not as a gap
                static_away.append({"partition": p, "member": away, "s": secs(e - s)})
                continue
            by_p[g] = max(by_p.get(g, 0.0), e - s)
            d = _gap_moment(tl, s)
            key = (g, d if d is not None else tl.start)
            per_dist[key] = per_dist.get(key, 0.0) + (e - s)
            if e - s > bound:
                problems.append(f"partition {p} had no live owner for {e - s:.3f}s from {s - tl.start:.1f}s "
                                f"(bound {bound:.1f}s: {why})")
                if se is not None:
                    wits.append(witness(se, f"partition {p} left without an owner here"))
                if ee is not None:
                    wits.append(witness(ee, f"partition {p} got an owner again {e - s:.3f}s later"))
    for (g, t), total in sorted(per_dist.items()):
        bound, why = disturbance_bound(tl, t)
        if total > bound and not any(f"partition {tl.name(g)} had" in x for x in problems):
            problems.append(f"partition {tl.name(g)} was unowned {total:.3f}s in all after the disturbance at "
                            f"{t - tl.start:.1f}s (bound {bound:.1f}s: {why})")
    for g in {g for g in gaps} - set(by_p):
        by_p[g] = 0.0
    m["unowned_s_by_partition"] = {tl.name(p): secs(v) for p, v in sorted(by_p.items())}
    m["static_absences"] = static_away
    m["max_unowned_per_disturbance_s"] = secs(max(per_dist.values(), default=0.0))
    if by_p:
        worst = max(by_p, key=lambda p: (by_p[p], -p))
        m["max_unowned_s"], m["max_unowned_partition"] = secs(by_p[worst]), tl.name(worst)
    else:
        m["max_unowned_s"], m["max_unowned_partition"] = None, None
    return static_away


def _gap_moment(tl: timeline.Timeline, s: float) -> float | None:
    """The disturbance a gap from s follows, whose bound its sum is held to: a graceful stop whose shutdown had begun
    by s (a `leave` of the causes view, from its start to its exit: its revokes come before it exits) counts at its
    exit, where its departure is read (a static member's session timeout: it sent no leave); else the last
    disturbance by s (`Timeline.last_disturbance_time`)."""
    stops = [c.end for c in causes.build(tl).within(s, s, ("leave",)) if c.event.get("type") == "member_exit"]
    return max(stops) if stops else tl.last_disturbance_time(s)


def _judge_end(tl: timeline.Timeline, W: float, before, problems: list[str], wits: list[dict], m: dict) -> str | None:
    """Judge the end state at W (problems, witnesses and measurements added); returns why it cannot be judged yet,
    or None."""
    last = tl.last_disturbance(W, before)
    since = last[0] if last else tl.start
    m["settled_for_s"] = secs(W - since)
    owners = tl.owners_at(W, before)
    alive = tl.alive_members(W, before)
    required = tl.required(W, before)
    none = [p for p in required if not [x for x in owners.get(p, ()) if x in alive]]
    many = [p for p in tl.all_partitions if len([x for x in owners.get(p, ()) if x in alive]) > 1]
    m["unowned_partitions"], m["multi_owned_partitions"] = tl.names(none), tl.names(many)
    if not (none or many):
        return _uncertain_end(tl, W, {x for xs in owners.values() for x in xs if x in alive})
    # judged only once the protocol's own time to repair the last disturbance has passed
    bound, why = disturbance_bound(tl, since)
    what = "; ".join(([f"partitions {tl.names(none)} have no live owner"] if none else [])
                     + ([f"partitions {tl.names(many)} have more than one live owner"] if many else []))
    if W - since <= bound:
        return (f"at the end, {W - since:.3f}s after the last disturbance, {what}; the protocol "
                f"allows {bound:.1f}s to repair it ({why}): the history ends too soon to tell")
    problems.append(f"at the end, {W - since:.1f}s after the last disturbance (bound {bound:.1f}s: {why}), "
                    f"{what}")
    for p in none[:4]:
        gone = [o for o in tl.by_partition.get(p, ()) if o.end <= W]
        if gone and gone[-1].end_event is not None:
            wits.append(witness(gone[-1].end_event, f"partition {tl.name(p)}'s last owner gave it up "
                                                    f"here; no owner at the end"))
    for p in many[:4]:
        for o in tl.by_partition[p]:
            if timeline.covers(o.start, o.end, W, before):
                wits.append(witness(o.start_event, f"{o.member} holds partition {tl.name(p)} at the end"))
    return None


def _uncertain_end(tl: timeline.Timeline, W: float, owners: set[str]) -> str | None:
    """Why a whole-looking end state cannot be taken as the group's (None when it can): a fault still active at W,
    or an owner under a fault at least as long as its own session timeout (the coordinator may have expelled it)
    that ended less than that session timeout before W (its ownership may then be its own view only, the group
    not yet repaired). A fault shorter than the session timeout cannot have cost it its membership: neither its
    session nor its max.poll.interval.ms (never shorter than the session timeout) can have run out."""
    if active := [c for c in causes.build(tl).within(W, W) if c.event.get("type") == "fault_start"
                  and c.start <= W < c.end]:  # the faults, from the causes view
        return f"a fault is still active at the end ({active[0].show(tl.start)}): no settled state to judge"
    reached = causes.build(tl).reached
    for f in tl.faults:
        for x in sorted(reached(f) & owners):  # the members it reached (`causes`: those started inside a network fault)
            if f.end > W:
                continue
            S = member_settings(tl, x, f.start).session_timeout_s
            if f.end - f.start >= S and W - f.end < S:
                return (f"{x} holds partitions at the end but was under a fault ({f.kind}) of {f.end - f.start:.1f}s "
                        f"until {W - f.end:.3f}s before it, both within its session timeout {S:g}s: the coordinator "
                        f"may have expelled it and not yet repaired the group")
    return None


def gap_bound(tl: timeline.Timeline, p: int, s: float, e: float, se, ee) -> tuple[float, str, str | None]:
    """(how long partition p may stay unowned from s, why, the static member whose expected absence this is or
    None): the departed owner's own session timeout when the coordinator has to notice it is gone (a kill, a
    crash, a static member's stop), nothing when it left or gave the partition up itself, the members' metadata
    refresh for a partition added under a classic protocol (`settings.growth_refresh_s`); then the rebalance it
    takes (see `rebalance_allowance`)."""
    allow, awhy = rebalance_allowance(tl, s)
    if se is None and (refresh := growth_refresh_s(tl, s)) is not None:  # a partition added under a classic protocol
        return refresh[0] + allow, f"{refresh[1]}; then {awhy}", None
    owner = se.get("member") if se is not None else None
    life = life_at(tl, owner, s - 1e-9) if owner else None
    if se is None or life is None or se.get("type") != "member_exit" and not (
            life.exit_event is not None and tl.shutdown_start(life) <= s + 1e-9):
        return allow, awhy, None  # revoked or lost in a rebalance: the owner gave it up, the rebalance was on
    ms = member_settings(tl, owner, s - 1e-6)
    if life.how == "graceful" and not ms.static:
        return allow, f"{owner} left the group; {awhy}", None
    if ms.static and ee is not None and e - s <= ms.session_timeout_s + tl.settings.static_grace_s:
        back = life_at(tl, ee.get("member"), e)
        if back is not None and back.instance_id == life.instance_id:
            return INF, "", f"{owner} ({life.instance_id})"
    what = "was killed" if life.how in ("kill", "crash") else "stopped as a static member"
    return ms.session_timeout_s + allow, f"{owner} {what}, its {ms.session()}; then {awhy}", None


def unowned_stretches(tl: timeline.Timeline, horizon: float) -> dict[int, list[tuple]]:
    """Partition -> [(start, end, event that opened the gap, event that closed it)] up to the horizon."""
    if not tl.ownerships:
        return {}
    first = min(tl.ownerships, key=lambda o: o.start_seq)
    out: dict[int, list[tuple]] = {}
    for p in tl.layout.partitions(tl.subscriptions.ever(tl.lives)):
        owns = sorted(tl.by_partition.get(p, ()), key=lambda o: o.start)
        gs, reach, reach_ev = [], max(first.start, tl.born(p)), None  # an added partition: from its birth
        for o in owns:
            if o.start >= horizon:
                break
            if o.start > reach:
                gs.append((reach, o.start, reach_ev, o.start_event))
            if o.end > reach:
                reach, reach_ev = o.end, o.end_event
        if reach < horizon:
            gs.append((reach, horizon, reach_ev, None))
        out[p] = [piece for g in gs for piece in _while_required(tl, p, *g)]
    return out


def _while_required(tl: timeline.Timeline, p: int, s: float, e: float, se, ee) -> list[tuple]:
    """The parts of the unowned stretch [s, e) during which some live member subscribed to the partition's topic
    (`Timeline.required`): before a member subscribes to a topic, or after the last one dropped it, nobody has to
    own its partitions (a member given a regex midway through the run owns the matching topic only from then). Each
    part keeps the stretch's opening or closing event where it shares its end."""
    subs = tl.subscriptions
    if not subs.declared or subs.all_take_all:
        return [(s, e, se, ee)]
    cuts = {s, e} | {t for ch in subs.by_member.values() for t, _ in ch if s < t < e}
    cuts |= {x for ls in tl.lives.values() for lf in ls for x in (lf.start, lf.end) if s < x < e}
    cuts = sorted(cuts)
    parts: list[list[float]] = []
    for a, b in zip(cuts, cuts[1:]):
        if p not in tl.required(a):
            continue
        if parts and parts[-1][1] == a:
            parts[-1][1] = b
        else:
            parts.append([a, b])
    return [(a, b, se if a == s else None, ee if b == e else None) for a, b in parts]
