"""`subscribed_only`: at each stable point, every member owns only partitions of topics it subscribes to, and every
partition of a topic some member subscribes to is owned by a member that subscribes to it.

Stable points are `stable_points`' (the assignment the group settled on after each cause). A member's subscription
is the topic names and `^` regexes its `started` event or its last subscription `control` gave, resolved over the
run's topics by the one matcher (`topics.subscribed`); a member that wrote none takes every topic. The partitions
that must be owned are those that exist then (`topics.Growth`: added ones count from their addition).

`invalid` with the first points that break it: a member holding a partition of a topic its subscription does not take
(a member left with a topic it dropped), or a subscribed partition held by nobody or only by members that do not
subscribe to its topic. `unknown` when the history has no stable point (`stable_points`: why each window had none);
`valid` with the points judged. Measurements: `points`, `windows`, `misplaced`, `unowned`.
"""
from __future__ import annotations

from harness.record.history import History
from harness.invariants.core import CheckSettings, Verdict, verdict, witness
from harness.invariants.stable_points import failing, points_to_judge

NAME = "subscribed_only"


def problems(tl, pt) -> tuple[list[str], list[dict], int, int]:
    """(problems, witnesses, misplaced, unowned) of one stable point."""
    out, wits, misplaced, unowned = [], [], 0, 0
    at = f"at {pt.start - tl.start:.1f}s"
    for m, ps in sorted(pt.held.items()):
        for p in sorted(ps):
            i = tl.layout.topic_of(p)
            if i in pt.subs[m]:
                continue
            misplaced += 1
            why = (f"{at} {m} held {tl.name(p)} of topic {tl.topics[i]}, which its subscription "
                   f"{tl.subscriptions.show(pt.subs[m])} does not take")
            out.append(why)
            wits.append(witness(_held_since(tl, m, p, pt.start), why))
    owners = pt.owners()
    for p in pt.required:
        i = tl.layout.topic_of(p)
        holders = owners.get(p, [])
        if any(i in pt.subs[x] for x in holders):
            continue
        unowned += 1
        takers = sorted(m for m, s in pt.subs.items() if i in s)
        why = (f"{at} {tl.name(p)} of topic {tl.topics[i]} was held by {', '.join(holders) or 'no member'} while "
               f"{', '.join(takers)} subscribed to it")
        out.append(why)
        wits.append(witness(_last_end(tl, p, pt.start) or {"type": "stable_point", "mono": pt.start}, why))
    return out, wits, misplaced, unowned


def _held_since(tl, member: str, p: int, t: float) -> dict:
    o = next((o for o in tl.by_member.get((member, p), ()) if o.start <= t < o.end), None)
    return o.start_event if o is not None else {"type": "stable_point", "mono": t, "member": member}


def _last_end(tl, p: int, t: float) -> dict | None:
    ended = [o for o in tl.by_partition.get(p, ()) if o.end <= t and o.end_event is not None]
    return max(ended, key=lambda o: o.end).end_event if ended else None


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge every stable point's assignment against the members' subscriptions then."""
    m = {"misplaced": 0, "unowned": 0}
    got = points_to_judge(NAME, history, settings, m)
    if isinstance(got, Verdict):
        return got
    tl, pts = got
    found, wits = [], []
    for pt in pts.points:
        out, ws, mis, un = problems(tl, pt)
        found += out
        wits += ws
        m["misplaced"] += mis
        m["unowned"] += un
    if (v := failing(NAME, found, wits, [], m)) is not None:
        return v
    return verdict(NAME, "valid", f"{len(pts.points)} stable points: every member owned only partitions of topics it "
                                  f"subscribed to and every subscribed partition had a subscriber owning it",
                   measurements=m)
