"""Bounded migrations: a sticky assignor moves no more partitions than reaching balance needs.

Snapshots are the stable assignment snapshots of `timeline` (maximal stretches of positive length over
which every required partition, of every topic of the run, has exactly one owner and nothing
changes); every pair of consecutive snapshots S1, S2 is one transition, whatever happened between
them (one rebalance or several).

- The members of S2: every member owning a partition in S2, and every member alive throughout S2 that
  did not write `stopped` before S2 ended (a member that has joined but got nothing counts; one that
  is leaving does not).
- A member *kept its membership* from S1 to S2 when it owned partitions in S1, is a member of S2, and
  wrote no `lost` between the snapshots (a fenced member rejoins empty-handed: the assignor cannot
  keep its partitions, so they do not count).
- A move: a partition owned in S1 by a member that kept its membership, owned in S2 by another member.
- The fewest moves: over the N members of S2 with the P partitions of S2 (all topics together), a
  balanced assignment gives ceil(P/N) to P mod N members and floor(P/N) to the rest. Giving the larger
  quotas to the members that kept the most partitions, the fewest moves are the sum over members that
  kept their membership of max(0, held in S1 - quota).
- A member killed or crashed between the snapshots stays in the group, for the broker, until its
  session times out: a member that joins meanwhile is balanced against it too, and its partitions are
  handed out in a second rebalance. So when such members (*phantoms*) owned partitions in S1, the fewest
  moves is the larger of the above and the same count over the members of S2 plus the phantoms, each
  phantom holding what it held in S1 (the broker's view), where a phantom holding as many as a kept member
  takes the larger quota (the broker may take from either; only kept members' moves count). The second
  rebalance then only hands out the phantoms' partitions, which are no moves. A member that left
  gracefully between the snapshots is a phantom too when a newcomer of S2 (a member that owned nothing in
  S1) had started before it was gone (a leave during a join): the joiner was balanced against it in a
  first rebalance.
- Violation: moves > fewest + `migration_slack`.

A transition in which a member of either snapshot runs a protocol whose assignor is not sticky (its
`started` event says so: a group migrating to or from classic-eager mid-run) is not judged (counted as
`not_sticky`): the group's assignor changes with its members' protocol.

`skipped` for protocols whose assignor is not sticky (classic-eager: range reassigns freely), when
there is no transition (fewer than two snapshots, yet some), and when the members' subscriptions
differ: when two `started` events of the run's members subscribe to different sets of the run's
topics (a member without a subscription subscribes to all), the whole run is `skipped` (the fewest
moves under differing subscriptions are not computed here); `unknown` when the assignment was never
complete. Tolerance: `migration_slack`, extra moves allowed per transition (0: sticky and cooperative
assignors reach the minimum). Measurements: per transition `at`, `moves`, `min_moves`, `members`; totals.
"""
from __future__ import annotations

from harness.history import History
from harness.invariants import protocols, timeline
from harness.invariants.core import CheckSettings, Verdict, empty, secs, verdict, witness

NAME = "bounded_migrations"


def min_moves(partitions: int, members: set[str] | list[str], kept: dict[str, int], *,
              phantoms: dict[str, int] | None = None) -> int:
    """The fewest moves to a balanced assignment over `members` from `kept` (member -> partitions it kept).
    With `phantoms` (member -> partitions it held, for the broker still a member): the balance is over them
    too, as the broker saw it, and where a phantom and a kept member hold as many the broker may take from
    either: the phantom gets the larger quota, and only the kept members' moves are counted."""
    phantoms = phantoms or {}
    members = sorted(set(members) | set(phantoms))
    if not members:
        return 0
    held = {**kept, **phantoms}
    q, r = divmod(partitions, len(members))
    order = sorted(members, key=lambda x: (-held.get(x, 0), x not in phantoms, x))
    quota = {x: q + (1 if i < r else 0) for i, x in enumerate(order)}
    return sum(max(0, n - quota.get(x, 0)) for x, n in kept.items())


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge the moves of every transition between stable assignments against the fewest possible."""
    if (v := empty(NAME, history)) is not None:
        return v
    rules = protocols.rules_for(settings.protocol)
    if not rules.sticky:
        return verdict(NAME, "skipped", f"{settings.protocol} ({rules.assignor}) is not sticky")
    tl = timeline.build(history, settings)
    if tl.partitions <= 0:
        return verdict(NAME, "unknown", "partition count unknown: set partitions")
    subs = tl.subscriptions.distinct(tl.lives)
    if len(subs) > 1:
        said = "; ".join(f"{', '.join(ms)}: {tl.subscriptions.show(t)}" for t, ms in subs.items())
        return verdict(NAME, "skipped", f"members subscribe to different topics ({said}): the fewest moves under "
                                        f"differing subscriptions are not computed")
    snaps = tl.snapshots()
    if not snaps:
        return verdict(NAME, "unknown", "the assignment was never complete: no stable snapshot")
    if len(snaps) == 1:
        return verdict(NAME, "skipped", "one stable assignment and no transition to judge",
                       measurements={"transitions": 0})
    stopped = [e for _, e in tl.control if e["type"] == "stopped"]
    lost = [e for _, e in tl.control if e["type"] == "lost" and tl.event_partitions(e)]
    rows, problems, wits, not_sticky = [], [], [], 0
    proto = {e.get("member"): e.get("protocol") for _, e in tl.control if e["type"] == "started"}
    loose = {x for x, p in proto.items() if p in protocols.PROTOCOLS and not protocols.rules_for(p).sticky}
    for s1, s2 in zip(snaps, snaps[1:]):
        if loose & (set(s1.owners.values()) | set(s2.owners.values())):
            not_sticky += 1  # a member on a non-sticky assignor (a protocol migration mid-run)
            continue
        members2 = set(s2.owners.values()) | {
            x for x, ls in tl.lives.items()
            if any(lf.start <= s2.start and lf.end >= s2.end for lf in ls)
            and not any(e.get("member") == x and e["mono"] < s2.end for e in stopped)}
        fenced = {e.get("member") for e in lost if s1.end <= e["mono"] <= s2.start}
        held1 = s1.held()
        held1 = {x: {p for p in ps if p in s2.owners} for x, ps in held1.items()}  # what S2 still needs
        kept = {x: len(ps) for x, ps in held1.items() if x in members2 and x not in fenced}
        moved = sorted(p for p, x in s1.owners.items() if x in kept and p in s2.owners and s2.owners[p] != x)
        least = min_moves(len(s2.owners), members2, kept)
        # newcomers of S2 (no partition in S1): when each began to join (its life's start, maybe within S1)
        joined = [lf.start for y in members2 - set(held1) for lf in tl.lives.get(y, ()) if lf.start <= s2.start]
        phantoms = {x for x in held1 if x not in members2 and any(
            lf.exit_event is not None and s1.end <= lf.end <= s2.start
            and (lf.how in ("kill", "crash") or any(j < lf.end for j in joined))
            for lf in tl.lives.get(x, ()))}
        if phantoms:
            least = max(least, min_moves(len(s2.owners), members2, kept,
                                         phantoms={x: len(held1[x]) for x in phantoms}))
        rows.append({"at": secs(s2.start), "moves": len(moved), "min_moves": least, "members": len(members2),
                     "phantoms": len(phantoms)})
        if len(moved) > least + settings.migration_slack:
            problems.append(f"at {s2.start:.3f} {len(moved)} partitions moved where {least} would reach balance "
                            f"(slack {settings.migration_slack})")
            for p in moved:
                o = next(o for o in tl.by_partition[p] if o.member == s2.owners[p] and o.start <= s2.start < o.end)
                wits.append(witness(o.start_event, f"partition {tl.name(p)} moved from {s1.owners[p]} to "
                                                   f"{s2.owners[p]} "
                                                   f"although {s1.owners[p]} stayed in the group"))
    if not rows:
        return verdict(NAME, "skipped", f"no transition among sticky assignors ({not_sticky} with a member on a "
                                        f"non-sticky one)", measurements={"transitions": 0, "not_sticky": not_sticky})
    m = {"transitions": len(rows), "total_moves": sum(r["moves"] for r in rows),
         "total_min_moves": sum(r["min_moves"] for r in rows),
         "max_excess": max(r["moves"] - r["min_moves"] for r in rows), "per_transition": rows,
         "not_sticky": not_sticky}
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return verdict(NAME, "invalid", problems[0] + more, wits, m)
    return verdict(NAME, "valid", f"{len(rows)} transitions, {m['total_moves']} moves, never more than the "
                                  f"fewest plus {settings.migration_slack}", (), m)
