"""`assignor_shape`: at each stable point, the assignment is one the assignor in force could produce.

Stable points are `stable_points`'; the assignor in force at each is `assignors.in_force` of the members alive then,
from what they and the brokers recorded at that moment (a rolling change of assignor is judged by the assignor of
each side of the roll), and its shape is `shapes.problems` (range's contiguous, co-partitioned blocks; the others'
balance). A point whose assignment is not whole (a partition no subscriber holds, a partition of a topic its holder
does not subscribe to: `subscribed_only` judges those) has no shape to judge and is counted `not_whole`. Under a tie
between assignors (the coordinator's choice is then arbitrary) a shape any of them could produce holds.

`invalid` at the first points that break their assignor's shape, naming the assignor and where it was read;
`unknown` when the history has no stable point, or the assignor in force at a point cannot be told (the brokers'
`group.consumer.assignors` not recorded, an assignor whose shape the harness does not know), naming it; `skipped`
when a member recorded no settings at all (a team's program: the plan decides, `applies`); else `valid`.
Measurements: `points`, `judged` (assignor -> points), `not_whole`, `unread`, `unrecorded`.
"""
from __future__ import annotations

from harness.record.history import History
from harness.invariants import shapes, subscribed
from harness.invariants.assignors import Unrecorded, in_force
from harness.invariants.core import CheckSettings, MissingSetting, Verdict, verdict, witness
from harness.invariants.settings import life_at, started_event
from harness.invariants.stable_points import failing, points_to_judge

NAME = "assignor_shape"


def point_view(tl, pt) -> tuple[dict, dict, dict]:
    """(member -> its (topic, partition)s, member -> the names of its topics, topic -> partitions) of a point."""
    held = {m: {(tl.topics[tl.layout.topic_of(p)], p - tl.layout.base[tl.layout.topic_of(p)]) for p in ps}
            for m, ps in pt.held.items()}
    subs = {m: frozenset(tl.topics[i] for i in s) for m, s in pt.subs.items()}
    return held, subs, tl.counts_at(pt.start)


def racks_at(tl, pt) -> bool:
    """Whether a live member recorded a rack (`client.rack`): range then matches racks first (KIP-881)."""
    for m in pt.held:
        life = life_at(tl, m, pt.start)
        st = started_event(tl, life) if life is not None else None
        if (st or {}).get("rack") or (life is not None and (life.start_event or {}).get("rack")):
            return True
    return False


def judge_point(tl, pt) -> tuple[str, str, object]:
    """("ok" | "bad" | "unread" | "unrecorded", a line, the assignor in force or None) of one whole stable point."""
    at = f"at {pt.start - tl.start:.1f}s"
    try:
        force = in_force(tl, pt.held, pt.start)
    except Unrecorded as e:
        return "unrecorded", f"{at} the assignor in force cannot be told: {e}", None
    except MissingSetting as e:
        return "unread", f"{at} the assignor in force cannot be told: {e}", None
    held, subs, counts = point_view(tl, pt)
    racks = racks_at(tl, pt)
    found = {}
    for a in force.assignors:
        try:
            found[a] = shapes.problems(a, force.server, held, subs, counts, racks)
        except ValueError as e:
            return "unread", f"{at} {e} ({force.source})", force
    if any(not p for p in found.values()):
        return "ok", "", force
    a = force.assignors[0]
    return "bad", f"{at} under {force.show()} ({force.source}): {found[a][0]}", force


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge every stable point's assignment against the shape of the assignor in force then."""
    m = {"judged": {}, "not_whole": 0, "unread": 0, "unrecorded": 0}
    got = points_to_judge(NAME, history, settings, m)
    if isinstance(got, Verdict):
        return got
    tl, pts = got
    bad, unread, unrecorded, wits = [], [], [], []
    for pt in pts.points:
        if subscribed.problems(tl, pt)[0]:
            m["not_whole"] += 1
            continue
        status, line, force = judge_point(tl, pt)
        if status in ("unread", "unrecorded"):
            m[status] += 1
            (unread if status == "unread" else unrecorded).append(line)
            continue
        name = force.show()
        m["judged"][name] = m["judged"].get(name, 0) + 1
        if status == "bad":
            bad.append(line)
            wits += [witness(_assigned_before(tl, x, pt.start), line) for x in sorted(pt.held) if pt.held[x]][:4]
    if (v := failing(NAME, bad, wits, unread, m)) is not None:
        return v
    if unrecorded:
        return verdict(NAME, "skipped", f"{unrecorded[0]} ({m['unrecorded']} points so; {sum(m['judged'].values())} "
                                        f"judged)", measurements=m)
    if not m["judged"]:
        return verdict(NAME, "unknown", f"none of the {len(pts.points)} stable points was whole (subscribed_only "
                                        f"says why): no shape to judge", measurements=m)
    shown = ", ".join(f"{a}: {n}" for a, n in sorted(m["judged"].items()))
    return verdict(NAME, "valid", f"{sum(m['judged'].values())} stable points, each with the shape of the assignor "
                                  f"in force ({shown})", measurements=m)


def _assigned_before(tl, member: str, t: float) -> dict:
    """The member's last `assigned` event at or before t (its assignment then), else a marker of the point."""
    got = [e for _, e in tl.member_events(member, {"assigned"}) if e["mono"] <= t]
    return got[-1] if got else {"type": "stable_point", "mono": t, "member": member}
