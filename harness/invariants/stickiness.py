"""`strict_stickiness`: between two consecutive stable points, a sticky assignor keeps each surviving member's partitions
up to its new quota: no member gives up a partition it held while it takes one it did not.

Stable points are `stable_points`'. A transition S1 -> S2 is judged when:

- the assignor in force at both points (`assignors.in_force`, from what was recorded at each) is strictly sticky
  (`STRICTLY_STICKY_ASSIGNORS`: sticky, cooperative-sticky, uniform); else it is counted `not_sticky`;
- every member of both points subscribes to the same topics (it may be another set at S2 than at S1): under
  differing subscriptions the sticky assignors run their general algorithm, which puts balance first and does not
  promise this (`differing_subscriptions`);
- no member of either point recorded a rack (`client.rack`: the sticky assignors match racks too, KIP-881) (`racks`);
- no topic that a member's subscription matches was created or deleted so that the members may have noticed it
  between the points (`topics_noticed`: from the step's start to its end plus the matching members' longest metadata
  refresh, as recorded): each member notices it at its own refresh, so for a while the members' JoinGroup
  subscriptions name different topic sets and the assignor runs its general algorithm, which promises no
  stickiness; the history records what each member asked for, not the set its client sent at each join, so it
  cannot show them the same (`topic_changed`, the step named);
- the causes between them (`causes`: the one model every checker reads), together, promise it (`several_causes`
  when not). A change of membership is a rebalance the sticky assignor answers keeping each survivor's partitions up
  to its quota; several that all go one way compose (members only join: each round a survivor keeps a part of what
  it kept; members only go, or partitions only grow: a survivor only gains). A join beside a departure does not: the
  group may answer each with its own rebalance, and the second may give a survivor what the first took from it (a
  member killed and its replacement started). Faults, request faults and broker events beside them that reached
  members which kept their membership (none wrote `lost` meanwhile) change no membership and count for nothing; a
  request only held or delayed on an API no membership rides on (an OffsetCommit, say: `NO_MEMBERSHIP_APIS`) is not
  even a rebalance. A request only made late on a membership API (`causes.Cause.late`: an explored run's held
  SyncGroup, say) is such a fault: it changes when the coordinator hears of a step, not what the assignor must
  produce, so it counts for nothing unless a member was fenced meanwhile, and the stable points are not cut at it
  (`stable_points`): the transition across it is judged, and a survivor that swapped partitions across it fails. A stall, or a fault or broker event beside a member fenced (its `lost`), is a member away and
  back, a departure and a join: nothing is promised. A subscription change or a change of assignor, beside any other
  change, promises nothing (the group passes through differing subscriptions). A member fenced alone is no survivor
  and no cause here of its own (a consumer-protocol member fenced by its client is given its partitions back).

A *surviving* member is alive from S1's start to S2's end in one life (no restart) and wrote no `lost` between them
(a fenced member rejoins empty-handed). Its eligible partitions are those it held at S1 that exist at S2 and are of
topics it subscribes to at S2. It breaks the rule when it kept fewer of them than both how many it had and how many
it holds at S2: it then gave up one of them while holding another it did not have (its new quota, the count it holds
at S2, is one `assignor_shape` judges).

`invalid` with the first such member; `skipped` when no transition is judged and none was left out for want of facts
(every one not sticky, or across a topic change, or there was one stable point), or a member recorded no settings at all (a team's program: the
plan decides, `applies`); `unknown` when the history has no stable point, or a transition's assignor cannot be told
(`unread`, naming it). Measurements: `transitions`, `judged`, `not_sticky`, `differing_subscriptions`, `racks`,
`several_causes`, `topic_changed`, `unread`, `unrecorded`.
"""
from __future__ import annotations

from harness.base.vocabulary import STRICTLY_STICKY_ASSIGNORS
from harness.record.history import History
from harness.invariants.assignor_shape import racks_at
from harness.invariants.assignors import Unrecorded, in_force
from harness.invariants.core import CheckSettings, MissingSetting, Verdict, verdict, witness
from harness.invariants import causes, topics_noticed
from harness.invariants.stable_points import failing, points_to_judge

NAME = "strict_stickiness"


def _surviving(tl, m: str, s1, s2) -> bool:
    one_life = any(lf.start <= s1.start and lf.end >= s2.end for lf in tl.lives.get(m, ()))
    fenced = any(s1.start <= e["mono"] <= s2.end and tl.event_partitions(e)
                 for _, e in tl.member_events(m, {"lost"}))
    return one_life and not fenced


def member_breaks(tl, s1, s2) -> list[tuple[str, list, list]]:
    """(member, partitions it gave up, partitions it took) of every surviving member that broke the rule."""
    out = []
    for m in sorted(set(s1.held) & set(s2.held)):
        if not _surviving(tl, m, s1, s2):
            continue
        eligible = {p for p in s1.held[m] if tl.layout.topic_of(p) in s2.subs[m] and tl.exists(p, s2.start)}
        now = s2.held[m]
        kept = eligible & now
        if len(kept) < min(len(eligible), len(now)):
            out.append((m, sorted(eligible - now), sorted(now - eligible)))
    return out


#: request faults that only make a request late (held or delayed at the proxy, then answered by the broker) ...
LATE_ONLY = causes.LATE_STEPS
#: ... on an API no group membership rides on: such a window starts no rebalance of its own. Its effects on the group,
#: if any, are causes themselves: a member whose late commit kept it from rejoining past its rebalance timeout, or
#: whose heartbeats queued behind it on the connection past its session, is fenced (`lost`, no survivor) or leaves
#: (its life ends). Faults on the membership APIs (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the heartbeats of the
#: KIP-848 protocols, FindCoordinator, and Metadata, whose answer can change a classic leader's subscription view)
#: and the faults that answer or cut (an error, a drop, a disconnect) stay causes.
NO_MEMBERSHIP_APIS = frozenset({"OffsetCommit", "OffsetFetch", "Fetch", "ListOffsets", "OffsetForLeaderEpoch"})
#: what each kind of cause does to the group's membership, for a survivor's stickiness (module docstring): `give` (a
#: member more: survivors may give partitions up), `gain` (a member fewer, or partitions more: survivors only gain),
#: `same` (the membership stays: at most a rebalance of the same members), `both` (a member away and back: a stall,
#: a fault beside a fenced member), `any` (a subscription or assignor change: judged alone, not beside another)
DIRECTION = {"join": "give", "leave": "gain", "killed": "gain", "expire": "gain", "partitions": "gain",
             "stalled": "both", "subscription": "any", "faulted": "same", "request": "same", "broker": "same",
             "setting": "same", "assignor": "any", "fenced": None, "topic": "any"}


def _is_late_only(c) -> bool:
    return c.kind == "request" and c.event.get("kind") in LATE_ONLY and c.event.get("api") in NO_MEMBERSHIP_APIS


def _union(tl, cs, s1, s2) -> str | None:
    """Why the causes between the stable points, together, promise no stickiness ("several_causes:..."), None when
    their union does: every change of membership goes one way (members only join, or only go and partitions only
    grow: two rounds each keep what a survivor held up to its quota), faults and broker events beside them reached
    members that kept their membership (none wrote `lost`), no member stalled, and a subscription or assignor change
    is the only change."""
    lost = any(c.kind == "fenced" and s1.start < c.start < s2.start for c in cs.all)
    ways: dict[str, list] = {}
    for c in cs.within(s1.start, s2.start):
        if not (c.start < s2.start and c.end > s1.start) or _is_late_only(c) or \
                (c.kind == "expire" and c.start <= s1.start):  # an expiry belongs with its departure, before S1
            continue
        way = DIRECTION[c.kind]
        if way == "same" and lost:
            way = "both"  # a member fenced meanwhile: the fault may have made it leave and join again
        if way is not None and way != "same":
            ways.setdefault(way, []).append(c)
    anys = {(c.kind, c.start) for c in ways.get("any", ())}
    if len(anys) > 1 or (anys and (ways.get("gain") or ways.get("give"))) or ("gain" in ways and "give" in ways) \
            or "both" in ways:
        shown = [c.show(tl.start) for w in ("both", "give", "gain", "any") for c in ways.get(w, ())]
        return f"several_causes:{'; '.join(shown[:3])}"
    return None


def _why_not(tl, cs, s1, s2) -> str | None:
    """Why the transition is not judged ("not_sticky: ..." etc.), None when it is; MissingSetting propagates."""
    for s in (s1, s2):
        force = in_force(tl, s.held, s.start)
        if not set(force.assignors) <= set(STRICTLY_STICKY_ASSIGNORS):
            return f"not_sticky:{force.show()}"
    if len({*s1.subs.values()}) > 1 or len({*s2.subs.values()}) > 1:
        return "differing_subscriptions:"
    if racks_at(tl, s1) or racks_at(tl, s2):
        return "racks:"
    if (n := topics_noticed.unsettled(tl, s1.start, s2.start)) is not None:
        return f"topic_changed:{n.show(tl.start)}"
    return _union(tl, cs, s1, s2)


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge every transition between consecutive stable points under a strictly sticky assignor."""
    m = {"judged": 0, "not_sticky": 0, "differing_subscriptions": 0, "racks": 0, "several_causes": 0,
         "topic_changed": 0, "unread": 0, "unrecorded": 0}
    got = points_to_judge(NAME, history, settings, m)
    if isinstance(got, Verdict):
        return got
    tl, pts = got[0], got[1].points
    m["transitions"] = len(pts) - 1
    cs = causes.build(tl)
    bad, wits, unread, loose = [], [], [], {}
    for s1, s2 in zip(pts, pts[1:]):
        try:
            why = _why_not(tl, cs, s1, s2)
        except Unrecorded as e:
            m["unrecorded"] += 1
            loose.setdefault(f"unrecorded: {e}", None)
            continue
        except MissingSetting as e:
            m["unread"] += 1
            unread.append(f"the transition at {s2.start - tl.start:.1f}s: the assignor cannot be told: {e}")
            continue
        if why:
            kind, what = why.split(":", 1)
            m[kind] += 1
            if what:
                loose[what] = None
            continue
        m["judged"] += 1
        for x, gave, took in member_breaks(tl, s1, s2):
            line = (f"between the stable points at {s1.start - tl.start:.1f}s and {s2.start - tl.start:.1f}s {x} gave "
                    f"up {tl.names(gave)} while it took {tl.names(took)} (it held {len(s1.held[x])}, holds "
                    f"{len(s2.held[x])}) under {in_force(tl, s2.held, s2.start).show()}")
            bad.append(line)
            wits += [witness(e, line) for _, e in tl.member_events(x, {"assigned", "revoked"})
                     if s1.start <= e["mono"] <= s2.start][:4]
    return _verdict(m, bad, wits, unread, loose)


def _verdict(m: dict, bad: list, wits: list, unread: list, loose: dict) -> Verdict:
    if (v := failing(NAME, bad, wits, unread, m)) is not None:
        return v
    if m["unrecorded"]:
        said = next(w for w in loose if w.startswith("unrecorded: "))[len("unrecorded: "):]
        return verdict(NAME, "skipped", f"{m['unrecorded']} transitions not judged: {said} ({m['judged']} judged)",
                       measurements=m)
    if m["judged"]:
        return verdict(NAME, "valid", f"{m['judged']} transitions between stable points: every surviving member kept "
                                      f"its partitions up to its new quota", measurements=m)
    why = [f"{m['not_sticky']} under an assignor that is not strictly sticky ({'; '.join(list(loose)[:3])})"
           if m["not_sticky"] else "", f"{m['differing_subscriptions']} with differing subscriptions"
           if m["differing_subscriptions"] else "", f"{m['racks']} with members on racks" if m["racks"] else "",
           f"{m['several_causes']} after causes whose union promises no stickiness ({'; '.join(list(loose)[:1])})"
           if m["several_causes"] else "", f"{m['topic_changed']} while members may have noticed a topic created or "
           f"deleted at different times (their subscriptions differing at a join): "
           f"{next((w for w in loose if ' matched by ' in w), '')}" if m["topic_changed"] else ""]
    said = ", ".join(w for w in why if w) or "one stable point"
    return verdict(NAME, "skipped", f"no transition to judge under a strictly sticky assignor: {said}",
                   measurements=m)
