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
  keep its partitions, so they do not count). Except under the consumer protocol when it holds in S2 all it held
  in S1: a member its client found fenced (a heartbeat whose answer was lost, then FENCED_MEMBER_EPOCH) rejoins
  with its own member id and the coordinator gives it back its target, which it computed with the member holding
  its partitions (KIP-848); it kept them.
- A move: a partition owned in S1 by a member that kept its membership, owned in S2 by another member.
- The fewest moves: over the N members of S2 with the P partitions of S2 (all topics together), a
  balanced assignment gives ceil(P/N) to P mod N members and floor(P/N) to the rest. Giving the larger
  quotas to members that kept more than floor(P/N) (each saves a move), the fewest moves are the sum over
  members that kept their membership of max(0, held in S1 - quota).
- Under differing subscriptions (members of S2, or phantoms, whose subscriptions at S2, or when they went,
  name different sets of the run's topics) a balanced assignment is the sticky assignors' one, the notion
  `convergence` judges with: no member holds two or more partitions more than a member that subscribes to
  the topic of one of them, and each partition goes to a member that subscribes to its topic. The fewest
  moves to such an assignment are computed exactly by `fewest_moves` (min-cost flows over the members'
  subscription classes). A member that dropped a topic it held must give those partitions up: moves too.
- A member killed or crashed between the snapshots stays in the group, for the broker, until its
  session times out: a member that joins meanwhile is balanced against it too, and its partitions are
  handed out in a second rebalance. So when such members (*phantoms*) owned partitions in S1, the fewest
  moves is the larger of the above and the same count over the members of S2 plus the phantoms, each
  phantom holding what it held in S1 (the broker's view): the broker moves as few partitions as it can in
  all, and where a larger quota would save a move of a phantom or of a kept member alike it may give it to
  the phantom (only kept members' moves count: the most of them among the broker's cheapest choices). The
  second rebalance then only hands out the phantoms' partitions, which are no moves. A member that left
  gracefully between the snapshots is a phantom too when a newcomer of S2 (a member that owned nothing in
  S1) had started before it was gone (a leave during a join): the joiner was balanced against it in a
  first rebalance. A static member is gone for the broker only once its own session timeout has run out after
  its exit (it sends no LeaveGroup under the classic protocols, and "temporarily leaves" with epoch -2 under
  the consumer protocol, keeping its assignment: KIP-345, KIP-848), so a newcomer that started before then
  was balanced against it.
- Under the consumer protocol the coordinator's assignor is sticky to its previous *target* assignment, not to what
  the members hold (KIP-848): a member that joined gets its target only once the others have revoked what it
  names. A snapshot taken while a member of that protocol that started before it had been given nothing yet may
  not be the target (the coordinator may already have given that member partitions the snapshot shows on
  another; seen: m2's target [2, 3] computed while m1 held all four, then m3's join computed from that target): it
  is no starting point of a transition (the transition runs from the snapshot before it).
- Members joining one after another under the consumer protocol: each join's epoch gets a target computed from the
  previous target, so the bound is the larger of the net fewest and the fewest summed over the coordinator's targets
  read from its lines (`epoch_steps`; only for joins alone, moves to joiners alone, one subscription, no phantom).
- Violation: moves > fewest + `migration_slack`.

A transition across which the assignor in force changed (`assignors.in_force` of the owners of each snapshot, from
their own recorded settings: a rolled `group.remote.assignor` or `partition.assignment.strategy` tipping the group's
choice; an `assignor` cause of `causes.Causes.assignor_change`) is not judged either (counted `assignor_changed`): the new assignor's assignment is a cause of its moves,
and `assignor_shape` judges that it has the new assignor's shape. Nor is a transition that members may have seen a
topic created or deleted across (`topics_noticed.not_judged`, counted `topic_changed`): their subscriptions differed
at a join, and the sticky assignors' general algorithm promises no fewest moves.

A transition in which an owner of either snapshot runs an assignor that is not sticky is not judged
(counted as `not_sticky`): range (classic-eager) reassigns freely, and the group's assignor changes with
its members' settings (a migration to or from classic-eager, a settings roll). What each member life runs
is read from its own `started` event: `effective` (`group.protocol`; under classic the first of
`partition.assignment.strategy`, librdkafka's `range,roundrobin` when none is named), else its `protocol`,
else the run's `protocol` (`_Assignors`).

`skipped` when no transition is left to judge (every one had a member on a non-sticky assignor, or there
are fewer than two snapshots, yet some); `unknown` when the assignment was never complete. A transition
with a partition that no member of S2 may take has no balanced assignment to count from: not judged
(`unjudged`). Tolerance: `migration_slack`, extra moves allowed per transition (0: sticky and cooperative
assignors reach the minimum). Measurements: per transition `at`, `moves`, `min_moves`, `members`,
`phantoms` (and `subscriptions`, the number of distinct ones, when they differ); totals.
"""
from __future__ import annotations

from harness.base.vocabulary import CLASSIC, LIBRDKAFKA_DEFAULT_STRATEGY, STICKY_ASSIGNORS
from harness.record.history import History
from harness.invariants import causes, epoch_steps, protocols, timeline
from harness.invariants.core import CheckSettings, MissingSetting, Verdict, empty, secs, verdict, witness
from harness.invariants.fewest_moves import fewest_moves
from harness.invariants.settings import member_settings
from harness.invariants import topics_noticed

NAME = "bounded_migrations"


def min_moves(partitions: int, members: set[str] | list[str], kept: dict[str, int], *,
              phantoms: dict[str, int] | None = None) -> int:
    """The fewest moves to a balanced assignment over `members` from `kept` (member -> partitions it kept).
    With `phantoms` (member -> partitions it held, for the broker still a member): the balance is over them
    too, as the broker saw it, and where a phantom and a kept member both hold more than the smaller quota the
    broker may give the larger one to either: the phantom gets it, and only the kept members' moves count."""
    phantoms = phantoms or {}
    members = sorted(set(members) | set(phantoms))
    if not members:
        return 0
    held = {**kept, **phantoms}
    q, r = divmod(partitions, len(members))
    # the larger quotas go to members holding more than q, each of which saves one move; any of them will do
    # for the fewest moves in all, and the broker may give them to phantoms first (the most moves of kept ones)
    order = sorted(members, key=lambda x: (held.get(x, 0) <= q, x not in phantoms, -held.get(x, 0), x))
    quota = {x: q + (1 if i < r else 0) for i, x in enumerate(order)}
    return sum(max(0, n - quota.get(x, 0)) for x, n in kept.items())


def _none_judged(skip: dict, loose: dict, unjudged: int) -> Verdict:
    """`skipped`, naming why each transition was not judged."""
    not_sticky, changed = skip["not_sticky"], skip["assignor_changed"]
    why = []
    if not_sticky:
        why.append(f"{not_sticky} with a member on a non-sticky one ({'; '.join(list(loose)[:3])})")
    if unjudged:
        why.append(f"{unjudged} with a partition no member subscribes to")
    if changed:
        why.append(f"{changed} across a change of the assignor in force")
    if skip["topic_changed"]:
        why.append(f"{skip['topic_changed']} across a topic change ({next(iter(loose), '')})")
    return verdict(NAME, "skipped", f"no transition to judge among sticky assignors: {', '.join(why)}",
                   measurements={"transitions": 0, "not_sticky": not_sticky, "unjudged": unjudged,
                                 "assignor_changed": changed, "topic_changed": skip["topic_changed"]})


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge the moves of every transition between stable assignments against the fewest possible."""
    if (v := empty(NAME, history)) is not None:
        return v
    protocols.rules_for(settings.protocol)  # an unknown protocol is a bad setting (ValueError)
    tl = timeline.build(history, settings)
    if tl.partitions <= 0:
        return verdict(NAME, "unknown", "partition count unknown: set partitions")
    assignors = _Assignors(tl, settings.protocol)
    snaps = _starting_points(tl, assignors)
    if isinstance(snaps, Verdict):
        return snaps
    stopped = [e for _, e in tl.control if e["type"] == "stopped"]
    lost = [e for _, e in tl.control if e["type"] == "lost" and tl.event_partitions(e)]
    rows, problems, wits, unjudged, loose = [], [], [], 0, {}
    skip = {"not_sticky": 0, "assignor_changed": 0, "topic_changed": 0}
    for s1, s2 in zip(snaps, snaps[1:]):
        if (why := _not_judged(tl, assignors, s1, s2)) is not None:
            skip[why[0]] += 1
            loose.update({what: None for what in why[1]})
            continue
        members2 = set(s2.owners.values()) | {
            x for x, ls in tl.lives.items()
            if any(lf.start <= s2.start and lf.end >= s2.end for lf in ls)
            and not any(e.get("member") == x and e["mono"] < s2.end for e in stopped)}
        fenced = {e.get("member") for e in lost if s1.end <= e["mono"] <= s2.start}
        held1 = s1.held()
        held1 = {x: {p for p in ps if p in s2.owners} for x, ps in held1.items()}  # what S2 still needs
        fenced -= _given_back(tl, s2, fenced & members2, held1)
        kept = {x: len(ps) for x, ps in held1.items() if x in members2 and x not in fenced}
        moved = sorted(p for p, x in s1.owners.items() if x in kept and p in s2.owners and s2.owners[p] != x)
        # newcomers of S2 (no partition in S1): when each began to join (its life's start, maybe within S1)
        joined = [lf.start for y in members2 - set(held1) for lf in tl.lives.get(y, ()) if lf.start <= s2.start]
        phantoms = {x for x in held1 if x not in members2 and _phantom(tl, x, s1.end, s2.start, joined)}
        subs = {x: tl.subscribed(x, s2.start) for x in members2}
        subs.update({x: _last_subscription(tl, x, s1.end, s2.start) for x in phantoms})
        least = _fewest(tl, s2, members2, {x: held1[x] for x in kept}, subs, {})
        if phantoms and least is not None:
            least = max(least, _fewest(tl, s2, members2, {x: held1[x] for x in kept}, subs,
                                       {x: held1[x] for x in phantoms}))
        if least is None:  # a partition that no member of S2 subscribes to: no balanced assignment to count from
            unjudged += 1
            continue
        row = {"at": secs(s2.start), "moves": len(moved), "min_moves": least, "members": len(members2),
               "phantoms": len(phantoms)}
        if len(set(subs.values())) > 1:
            row["subscriptions"] = len(set(subs.values()))
        rows.append(row)
        c = _chained(history, assignors, (s1, s2), moved, members2, kept, row) if len(moved) > least else None
        if len(moved) > max(least, c.bound if c else 0) + settings.migration_slack:
            problems.append(f"at {s2.start - tl.start:.1f}s {len(moved)} partitions moved where {least} would reach "
                            f"balance{f' and at most {c.show()}' if c else ''} (slack {settings.migration_slack})")
            for p in moved:
                o = next(o for o in tl.by_partition[p] if o.member == s2.owners[p] and o.start <= s2.start < o.end)
                wits.append(witness(o.start_event, f"partition {tl.name(p)} moved from {s1.owners[p]} to "
                                                   f"{s2.owners[p]} "
                                                   f"although {s1.owners[p]} stayed in the group"))
    not_sticky, changed = skip["not_sticky"], skip["assignor_changed"]
    if not rows:
        return _none_judged(skip, loose, unjudged)
    m = {"transitions": len(rows), "total_moves": sum(r["moves"] for r in rows),
         "total_min_moves": sum(r["min_moves"] for r in rows),
         "max_excess": max(r["moves"] - r["min_moves"] for r in rows), "per_transition": rows,
         "not_sticky": not_sticky, "unjudged": unjudged, "assignor_changed": changed,
         "topic_changed": skip["topic_changed"]}
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return verdict(NAME, "invalid", problems[0] + more, wits, m)
    chained = sum(1 for r in rows if "targets" in r)
    return verdict(NAME, "valid", f"{len(rows)} transitions, {m['total_moves']} moves, never more than the fewest plus "
                                  f"{settings.migration_slack}" + (f" ({chained} judged by the fewest summed over the "
                                  "coordinator's targets, its epochs in the brokers' lines)" if chained else ""), (), m)


def _chained(history, assignors, snaps, moved, members2, kept, row) -> epoch_steps.Chain | None:
    """The fewest moves summed over the consumer-protocol coordinator's targets across the transition (joins one after
    another, each target sticky to the one before: `epoch_steps`), noted in `row`; None when it does not apply: a
    member of either snapshot not on the consumer protocol, partitions that changed, phantoms, differing
    subscriptions, or a move to a member that held partitions at the start (joins only take partitions to joiners)."""
    s1, s2 = snaps
    if row["phantoms"] or "subscriptions" in row or set(s1.owners) != set(s2.owners):
        return None
    if not all(assignors.consumer(x, s.start) for s in snaps for x in set(s.owners.values())):
        return None
    if any(s2.owners[p] in set(s1.owners.values()) for p in moved):
        return None
    c = epoch_steps.chain(history, s1.start, s2.start, partitions=len(s2.owners), members=len(members2), kept=kept)
    if c is not None:
        row["targets"], row["targets_min_moves"] = len(c.members) - 1, c.bound
    return c


def _not_judged(tl, assignors, s1, s2) -> tuple[str, list[str]] | None:
    """Why a transition is not judged (`not_sticky`: a member on a non-sticky assignor, eager or a protocol migration
    mid-run; `assignor_changed`: the assignor in force changed, its new assignment assignor_shape's to judge), with
    what was read; None: it is judged."""
    runs = [assignors.at(x, s.start) for s in (s1, s2) for x in sorted(set(s.owners.values()))]
    if any(not sticky for sticky, _ in runs):
        return "not_sticky", [what for sticky, what in runs if not sticky]
    if (c := causes.build(tl).assignor_change(set(s1.owners.values()), s1.start, set(s2.owners.values()), s2.start)):
        return "assignor_changed", [f"the assignor in force changed ({c.detail})"]
    return topics_noticed.not_judged(tl, s1.start, s2.start)


def _starting_points(tl, assignors) -> list | Verdict:
    """The snapshots transitions run between (those not taken while a consumer-protocol target may have been ahead
    of them), or the verdict when fewer than two are left."""
    snaps = tl.snapshots()
    if not snaps:
        return verdict(NAME, "unknown", "the assignment was never complete: no stable snapshot")
    kept = [s for s in snaps if not _target_ahead(tl, s, assignors)]
    if len(kept) > 1:
        return kept
    ahead = len(snaps) - len(kept)
    aside = f" ({ahead} more taken while a consumer-protocol member awaited its first assignment)" if ahead else ""
    return verdict(NAME, "skipped", f"{len(kept)} stable assignment{aside} and no transition to judge",
                   measurements={"transitions": 0})


def _target_ahead(tl, s, assignors) -> bool:
    """Whether the snapshot may not be the consumer-protocol coordinator's target: a member of that protocol had
    started before it and had been given nothing yet (module docstring)."""
    return any(any(lf.start < s.start < lf.end for lf in ls) and assignors.consumer(x, s.start)
               and not tl.given_by(x, s.start) for x, ls in tl.lives.items())


def _given_back(tl, s2, fenced: set[str], held1: dict[str, set[int]]) -> set[str]:
    """The fenced members of a consumer-protocol group that hold in S2 all they held in S1: a member fenced by its
    client (a heartbeat whose answer was lost, then FENCED_MEMBER_EPOCH) rejoins with its own member id, and the
    coordinator gives it back its target (KIP-848), which it computed with the member holding its partitions."""
    back = set()
    for x in fenced:
        try:
            consumer = member_settings(tl, x, s2.start).group_protocol != CLASSIC
        except MissingSetting:
            consumer = False
        if consumer and held1.get(x) and held1[x] <= {p for p, y in s2.owners.items() if y == x}:
            back.add(x)
    return back


def _fewest(tl, s2, members2: set[str], kept: dict[str, set[int]], subs: dict[str, frozenset],
            phantoms: dict[str, set[int]]) -> int | None:
    """The fewest moves of the transition into S2 (with these phantoms): the closed form `min_moves` when every
    member and phantom subscribes to the same topics, else `fewest_moves.fewest_moves` (exact, by flows)."""
    if len({subs[x] for x in members2 | set(phantoms)}) <= 1:
        return min_moves(len(s2.owners), members2, {x: len(ps) for x, ps in kept.items()},
                         phantoms={x: len(ps) for x, ps in phantoms.items()} or None)
    key = ("fewest_moves", tuple(sorted(s2.owners)), tuple(sorted((x, subs[x]) for x in members2)),
           tuple(sorted((x, tuple(sorted(ps))) for x, ps in kept.items())),
           tuple(sorted((x, subs[x], tuple(sorted(ps))) for x, ps in phantoms.items())))
    return tl.history.derived(key, lambda: fewest_moves(
        {p: tl.layout.topic_of(p) for p in s2.owners}, {x: subs[x] for x in members2}, kept,
        phantoms={x: (subs[x], ps) for x, ps in phantoms.items()} or None))


def _phantom(tl, x: str, lo: float, hi: float, joined: list[float]) -> bool:
    """Whether x, gone in [lo, hi], stayed a member for the broker while the group answered (module docstring), read
    from the causes view: killed or crashed (its session runs out later), or stopped gracefully while a newcomer had
    begun to join before it was gone (a static member is gone once its session runs out after its exit: its
    `expire` cause; KIP-345, KIP-848's epoch -2)."""
    cs = causes.build(tl)
    for c in cs.within(lo, hi, ("killed", "leave"), x):
        if not lo <= c.end <= hi or (c.kind == "leave" and c.event.get("type") != "member_exit"):
            continue
        if c.kind == "killed":
            return True
        expiry = [e for e in cs.within(c.end, c.end, ("expire",), x) if e.start == c.end]
        if expiry and expiry[0].unknown:
            raise MissingSetting(expiry[0].unknown)
        gone = expiry[0].end if expiry else c.end
        if any(j < gone for j in joined):
            return True
    return False


def _last_subscription(tl, member: str, lo: float, hi: float) -> frozenset:
    """What a member gone between the snapshots subscribed to when it went (its last life ending in [lo, hi])."""
    ends = [lf.end for lf in tl.lives.get(member, ()) if lf.exit_event is not None and lo <= lf.end <= hi]
    return tl.subscribed(member, max(ends), before=True) if ends else tl.subscribed(member, lo)


class _Assignors:
    """Whether each member life runs a sticky assignor, and what it runs, with where that was read: its `started`
    event's `effective` settings (`group.protocol`; under classic the first of `partition.assignment.strategy`,
    librdkafka's default `range,roundrobin` when it names none), else the event's `protocol`, else the run's."""

    def __init__(self, tl, run_protocol: str) -> None:
        self.tl, self.run_protocol, self.cache = tl, run_protocol, {}
        self.started: dict[str, list[dict]] = {}
        for _, e in tl.control:
            if e["type"] == "started" and e.get("member"):
                self.started.setdefault(e["member"], []).append(e)

    def at(self, member: str, t: float) -> tuple[bool, str]:
        """(sticky, "m3 runs classic-eager (range), its started event") for the member's life at t."""
        key, st = self._started(member, t)
        if key not in self.cache:
            self.cache[key] = self._read(member, st)
        return self.cache[key]

    def consumer(self, member: str, t: float) -> bool:
        """Whether the member's life at t runs the consumer protocol (read from where `at` reads its assignor)."""
        st = self._started(member, t)[1]
        eff = st.get("effective") if isinstance(st.get("effective"), dict) else None
        if eff is not None and eff.get("group.protocol") in (CLASSIC, "consumer"):
            return eff["group.protocol"] == "consumer"
        return (st["protocol"] if st.get("protocol") in protocols.PROTOCOLS else self.run_protocol) == "consumer"

    def _started(self, member: str, t: float) -> tuple[tuple, dict]:
        """((member, its life's start), the life's `started` event or {}) for the member's life at t."""
        ls = self.tl.lives.get(member, ())
        life = next((lf for lf in ls if lf.start <= t < lf.end), None) or \
            next((lf for lf in reversed(ls) if lf.start <= t), None) or (ls[0] if ls else None)
        lo, hi = (life.start, life.end) if life else (float("-inf"), float("inf"))
        return (member, lo), next((e for e in self.started.get(member, ()) if lo <= e["mono"] < hi), None) or {}

    def _read(self, member: str, st: dict) -> tuple[bool, str]:
        eff = st.get("effective") if isinstance(st.get("effective"), dict) else None
        if eff is not None and eff.get("group.protocol") in (CLASSIC, "consumer"):
            if eff["group.protocol"] == "consumer":
                return True, f"{member} runs the consumer protocol (server-side assignor), its started event"
            strategy = str(eff.get("partition.assignment.strategy") or LIBRDKAFKA_DEFAULT_STRATEGY)
            first = strategy.split(",")[0].strip().rsplit(".", 1)[-1]
            return first in STICKY_ASSIGNORS, f"{member} runs classic with {strategy}, its started event"
        if st.get("protocol") in protocols.PROTOCOLS:
            rules = protocols.rules_for(st["protocol"])
            return rules.sticky, f"{member} runs {st['protocol']} ({rules.assignor}), its started event"
        rules = protocols.rules_for(self.run_protocol)
        return rules.sticky, f"{member} runs {self.run_protocol} ({rules.assignor}), the run's protocol"
