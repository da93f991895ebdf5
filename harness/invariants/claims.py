"""Claims match the coordinator (design invariant 14), for consumer groups of every protocol.

What a member says it holds (its ownership intervals, `assigned` .. `revoked`/`lost`/exit, the timeline's
`ownerships`) is compared with what the group coordinator said it gave that member: the `group_assignment` events,
its answers to DescribeConsumerGroups asked every `interval_s` while the run went on (harness/kinds/group_watch.py;
the coordinator names each member by its client id, which the harness's members set to their member id).

An answer lists for a member what the coordinator says it holds and, under the consumer protocol, its target
assignment too (what the coordinator decided to give it: it sends a partition once its previous owner revoked it,
and a new target may take it back within one sampling gap; a static member with a regex rejoining held a
partition of its target 110 ms before the resolved regex moved it, and the holding fell between two answers).
An answer holds at some time in [asked_mono, mono]; unchanged answers are not written, so an event's answer held at
every sample until the next event, samples at most the next event's `longest_gap_s` apart, but only while the
coordinator stays: from another broker's load of the group's partition of __consumer_offsets at a newer epoch to
the next written answer the stretch is blind (a broker cut off from the others goes on answering its stale record). An answer is *blind*
when it says nothing of the assignment: an error (the coordinator could not be asked) and the watch's end (`stopped`);
so is the time before the watch's first answer. A classic group's answer while it rebalances lists no assignment
(DescribeGroups leaves them out until the group is stable again), but the coordinator's record changes only when the
rebalance completes (SyncGroup): such an answer is read as the union, per member, of the stable answers before and
after it (blind when an error, the watch's start or end lies between). For a member M and a partition p, a *grant* is a run of consecutive
answers that list p for M or are blind: M may have been given p from the sample before its first answer (its
`asked_mono` less its own `longest_gap_s`, the spacing of the samples up to it, or less the spacing after it when
that is longer) until the first answer after it that is not blind and does not list p for
M, whose `mono` bounds the revocation.

For each ownership interval [s, e] of M and p (e: its end, or the history's end when still held):

(a) Given. s must fall in a grant (within the clock slack): the coordinator gives a partition before its member
    can hold it, and the member learns of it in the answer (its heartbeat or SyncGroup) that changes the
    coordinator's record. When s falls in no grant and an answer that does not list p for M was given inside
    [s, e] (a written one: asked at or after s, answered by e; or a stretch of unchanged answers overlapping the
    holding by twice their spacing), M claimed a partition the coordinator never gave it: invalid. When no answer
    fell inside (a holding between two samples) the holding is `unknown`, never valid: a grant and its revocation
    within one sampling gap are not seen, which is the tolerance of a sampled record.
(b) Released. From the end of the grant that gave it, M may keep p for its allowance A: its heartbeat interval
    (it learns of the revocation at its next heartbeat) plus its rebalance timeout (its max.poll.interval.ms, the
    time the protocol gives a member to revoke and rejoin, classic or consumer), as M ran with them then
    (`settings.member_settings`: its own `started` settings; under the consumer protocol the heartbeat is the
    group's, from `group_settings`), plus the time a fault affected M meanwhile (it could not hear). A later grant
    within that allowance extends it. Holding p past it is invalid, naming the answer that no longer listed p and A
    with its source.

The members' final stop (after the workload drained, the harness stops them one after another, each leave a
rebalance that hands the leavers' partitions to those still up) churns the group faster than the watch samples it:
a holding taken up from that stop's start on that falls between two answers is counted (`between_samples_at_stop`)
and named in the verdict, not judged; it is the harness's teardown, no step of the scenario. So is one taken up by a
member after its own graceful stop began (a step stopping it: in `harness matrix`, protocol-migration-offline on
Kafka 4.4.0, a member stopping was given four partitions and handed them back in the same instant, 10.66 s, between
two answers). Anywhere else it is `unknown`.

`unknown` when the history has no `group_assignment` event (the coordinator's assignment was not recorded), or a
holding could not be judged ((a) between samples, a setting the allowance needs not recorded): never a pass.
`skipped` on the fake backend (no coordinator to ask) and when the coordinator names a member the history does not
know (a team's program whose client.id is not its member id: whose claims are whose cannot be told). A killed
member's holdings end at its exit; a member restarted under its own name (a bounce) is judged against what the
coordinator lists under that name, its old and new instance alike. A static member is known by its instance id: the
entry is the member running with it (the latest started by the asking), since the classic coordinator keeps the
first instance's client id across a static rejoin. Measurements: `answers`, `blind_s`, `holdings`,
`judged`, `between_samples`, `between_samples_at_stop`, `never_given`, `kept_past_allowance`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from harness.invariants import brokers, causes, timeline
from harness.invariants.coordinator_log import deposed_at, offsets_loads
from harness.invariants.core import CheckSettings, MissingSetting, Verdict, secs, verdict, witness
from harness.invariants.rebalance_cause import CLOCK_SLACK_S
from harness.invariants.settings import member_settings
from harness.invariants.terms import INF
from harness.record.history import History

NAME = "coordinator_claims"
EVENT = "group_assignment"
#: a classic group's states whose answers list its members' assignments (an empty group has none to list)
CLASSIC_SAYS = ("stable", "empty")


@dataclass(frozen=True)
class Answer:
    """One written answer: it held at some time in [asked, mono] and at every sample until `until` (the next
    answer's asking), the samples at most `gap` apart; `held` member -> global partitions, None when blind;
    `before`: at most how long before `asked` the previous sample was (its own event's `longest_gap_s`)."""

    asked: float
    mono: float
    until: float
    gap: float
    held: dict | None
    event: dict
    before: float = 0.0


@dataclass(frozen=True)
class Grant:
    """A stretch in which the coordinator may have given p to M: [lo, hi]; `lacks` is the answer that ended it."""

    lo: float
    hi: float
    lacks: Answer | None


def answers(tl) -> list[Answer]:
    """The `group_assignment` events up to the history's end, as answers (module docstring)."""
    evs = [e for _, e in tl.control if e["type"] == EVENT and e["mono"] <= tl.end]
    out = []
    for e, nxt in zip(evs, [*evs[1:], None]):
        gap = nxt.get("longest_gap_s") if nxt else None
        gap = float(gap) if isinstance(gap, (int, float)) and gap > 0 else float(e.get("interval_s") or 0)
        held = None
        if e.get("members") is not None:
            held = {}
            for m in e["members"]:
                mine = held.setdefault(_whose(tl, m, float(e["asked_mono"])), set())
                mine.update(tl.layout.of_event(m))
                if m.get("target"):  # the consumer protocol's decision, given once the previous owner revoked
                    mine.update(tl.layout.of_event({"partitions": m["target"]}))
        own = e.get("longest_gap_s")
        before = float(own) if isinstance(own, (int, float)) and own > 0 else float(e.get("interval_s") or 0)
        out.append(Answer(float(e["asked_mono"]), e["mono"], nxt["asked_mono"] if nxt else e["mono"], gap, held, e,
                          before))
    return _between_rebalances(_blind_after_moves(tl, out), _given_to(tl))


def _blind_after_moves(tl, ans: list[Answer]) -> list[Answer]:
    """Unchanged answers are not written, so a stretch of them stands for the coordinator's record only while the
    coordinator stays: once another broker loads the group's partition of __consumer_offsets at a newer epoch, the
    broker the watch asked may be a deposed one answering its stale record (a broker cut off from the others goes on
    answering), so the stretch is blind from that load to the next written answer."""
    loads = offsets_loads(tl.history)
    if not loads:
        return ans
    moves = [t for t, _, epoch in loads if epoch > 0]
    ans = [replace(a, held=None) if a.held is not None and deposed_at(loads, a.event.get("coordinator"), a.asked) else a
           for a in ans]
    out = []
    for a in ans:
        cut = next((t for t in moves if a.mono < t < a.until), None)
        if cut is None:
            out.append(a)
            continue
        out += [replace(a, until=cut), replace(a, asked=cut, mono=cut, held=None, before=0.0)]
    return out


def _whose(tl, m: dict, t: float) -> str:
    """The member an answer's entry is: a static member by its instance id (the one of the lives with it that started
    last by `t`: the classic coordinator keeps the first instance's client id across a static rejoin, `ClassicGroup.
    replaceStaticMember` changing only the member id), any other by its client id."""
    return tl.with_instance(m.get("instance_id"), t) or m["member"]


def _rebalancing(a: Answer) -> bool:
    """A classic group's answer while it rebalances: its members listed, their assignments left out."""
    return a.held is not None and a.event.get("group_type") != "consumer" \
        and str(a.event.get("state") or "").lower() not in CLASSIC_SAYS


def _given_to(tl) -> dict[str, list[float]]:
    """When each member recorded an assignment of some partition (its non-empty `assigned` events), in time order."""
    out: dict[str, list[float]] = {}
    for e in tl.history.of_type("assigned"):
        if e.get("partitions") and e.get("member"):
            out.setdefault(e["member"], []).append(e["mono"])
    return out


def _between_rebalances(ans: list[Answer], given_to: dict[str, list[float]] | None = None) -> list[Answer]:
    """A classic group's answers while it rebalances, read as what the coordinator's record was then: its assignment
    changes only when the rebalance completes (SyncGroup), so each member holds by it what the stable answer before
    or the one after lists for it, or what the answer itself lists (the record of the previous generation, or empty
    when a rebalance began while members awaited their SyncGroup); blind when an error, the watch's start or its end
    lies between, or when it lists a member the stable answer before did not that recorded an assignment since that
    answer: its join completed a generation no sample saw (a rolling bounce's returns 0.5 s apart) before this
    rebalance began."""
    out = list(ans)
    for i, a in enumerate(ans):
        if not _rebalancing(a):
            continue
        before = next((b for b in reversed(ans[:i]) if not _rebalancing(b)), None)
        after = next((b for b in ans[i + 1:] if not _rebalancing(b)), None)
        if before is None or after is None or before.held is None or after.held is None:
            out[i] = replace(a, held=None)
            continue
        newcomers = set(a.held) - set(before.held)
        if any(before.asked < t <= a.mono for m in newcomers for t in (given_to or {}).get(m, ())):
            out[i] = replace(a, held=None)  # a newcomer given partitions since the stable answer before: a whole
            continue  # generation (its SyncGroup done) came and went between the samples
        own = a.held or {}
        out[i] = replace(a, held={m: before.held.get(m, set()) | after.held.get(m, set()) | own.get(m, set())
                                  for m in set(before.held) | set(after.held) | set(own)})
    return out


def grants(ans: list[Answer], member: str, p: int) -> list[Grant]:
    """The stretches in which the coordinator may have given p to `member` (module docstring), in time order; the
    time before the first answer is blind."""
    out, lo = [], -INF
    for a in ans:
        has = a.held is None or p in a.held.get(member, ())
        if has and lo is None:  # from the sample before it: its own event says how far back that was at most
            lo = a.asked - max(a.before, a.gap)
        elif not has and lo is not None:
            out.append(Grant(lo, a.mono, a))
            lo = None
    if lo is not None:
        out.append(Grant(lo, INF, None))
    return out


def _inside(ans: list[Answer], member: str, p: int, s: float, e: float) -> Answer | None:
    """An answer not blind, not listing p for member, surely given inside [s, e] (module docstring, (a))."""
    for a in ans:
        if a.held is None or p in a.held.get(member, ()):
            continue
        if a.asked >= s and a.mono <= e:
            return a
        if min(a.until, e) - max(a.asked, s) >= 2 * a.gap > 0:
            return a
    return None


def _faulted(tl, member: str, a: float, b: float) -> float:
    """Seconds of [a, b] during which a fault affected the member (it could not hear the coordinator)."""
    total, reach = 0.0, a
    for s, e in sorted((max(a, f.start), min(b, f.end)) for f in causes.build(tl).touching(member, a, b)):
        s = max(s, reach)
        if e > s:
            total, reach = total + e - s, e
    return total


def allowance(tl, member: str, t: float) -> tuple[float, str]:
    """How long `member` may keep a partition after the coordinator took it at t: its heartbeat interval plus its
    rebalance timeout, as it ran with them then. (seconds, source)."""
    ms = member_settings(tl, member, t)
    hb = ms.heartbeat_s  # MissingSetting when the history cannot tell it
    return hb + ms.max_poll_s, (f"{member}'s heartbeat {hb:g}s + rebalance timeout (max.poll.interval.ms) "
                                f"{ms.max_poll_s:g}s ({ms.source})")


def _owners(tl, a: Answer, p: int) -> str:
    who = sorted(m for m, ps in (a.held or {}).items() if p in ps)
    return ", ".join(who) if who else "no member"


def judge_holding(tl, ans: list[Answer], o) -> tuple[str, dict | None]:
    """(`valid` | `never_given` | `kept` | `between` | `unread`, a witness or None) of one ownership interval."""
    s, e, m, p = o.start, min(o.end, tl.end), o.member, o.partition
    gs = grants(ans, m, p)
    mine = [g for g in gs if g.lo - CLOCK_SLACK_S <= s <= g.hi + CLOCK_SLACK_S]
    name = f"partition {tl.name(p)}"
    if not mine:
        a = _inside(ans, m, p, s, e)
        if a is None:
            return "between", witness(o.start_event, (
                f"{m} held {name} from {s - tl.start:.1f}s to {e - tl.start:.1f}s, between two answers of the "
                f"coordinator that do not list it for {m}: not judged"))
        return "never_given", witness(o.start_event, (
            f"{m} held {name} from {s - tl.start:.1f}s to {e - tl.start:.1f}s but the coordinator never gave it to {m}: its answer "
            f"asked at {a.asked - tl.start:.1f}s lists {name} for {_owners(tl, a, p)}"))
    g = max(mine, key=lambda x: x.hi)
    try:
        upto, src = _released_by(tl, gs, g, m, e)
    except MissingSetting as err:
        return "unread", {"why": str(err)}
    if e <= upto + CLOCK_SLACK_S:
        return "valid", None
    return "kept", witness(o.end_event or o.start_event, (
        f"{m} held {name} until {e - tl.start:.1f}s, {e - g.hi:.1f}s after the coordinator's answer asked at "
        f"{g.lacks.asked - tl.start:.1f}s "
        f"no longer listed it for {m} (it lists {_owners(tl, g.lacks, p)}): past the allowance, {src}"))


def _released_by(tl, gs: list[Grant], g: Grant, member: str, e: float) -> tuple[float, str]:
    """The latest time `member` may hold the partition, from grant g on (later grants within the allowance extend it),
    and the allowance's source."""
    upto, src = g.hi, ""
    for x in [g, *[x for x in gs if x.lo > g.lo]]:
        if x.lo - CLOCK_SLACK_S > upto:
            break
        if x.hi == INF:
            return INF, ""
        a, src = allowance(tl, member, x.hi)
        late = _faulted(tl, member, x.hi, e)
        upto = max(upto, x.hi + a + late)
        src += f" + {late:.1f}s under faults" if late else ""
    return upto, src


def _in_own_stop(tl, o) -> bool:
    """Whether a holding was taken up after its member's graceful stop began (a step's stop of it: its client hands
    back what a rebalance gave it as it closes)."""
    life = next((x for x in tl.lives.get(o.member, ()) if x.start <= o.start <= x.end), None)
    return life is not None and life.how == "graceful" and tl.shutdown_start(life) <= o.start + CLOCK_SLACK_S


def _unjudgeable(history: History, tl, ans: list[Answer]) -> Verdict | None:
    if (history.run_start() or {}).get("backend") == "fake":
        return verdict(NAME, "skipped", "the fake backend's cluster has no group coordinator to ask")
    if not ans:
        return verdict(NAME, "unknown", f"the coordinator's assignment was not recorded (no {EVENT} event): the "
                                        f"members' claims cannot be held against it")
    strangers = sorted({m for a in ans for m in (a.held or ())} - set(tl.lives))
    if strangers:
        return verdict(NAME, "skipped", f"the coordinator named members the history does not know "
                                        f"({', '.join(strangers[:4])}): a program whose client.id is not its member "
                                        f"id; whose claims are whose cannot be told")
    return None


def check(history: History, settings: CheckSettings) -> Verdict:
    tl = timeline.build(history, settings)
    ans = answers(tl)
    bad = _unjudgeable(history, tl, ans)
    if bad:
        return bad
    counts = {"valid": 0, "never_given": 0, "kept": 0, "between": 0, "unread": 0, "between_at_stop": 0}
    ws, unread, between = [], [], []
    stop = tl.workload_end if tl.workload_end is not None and tl.end_before else INF
    for o in tl.ownerships:
        if o.start > tl.end:
            continue
        got, w = judge_holding(tl, ans, o)
        if got == "between" and (o.start >= stop - CLOCK_SLACK_S or _in_own_stop(tl, o)):
            got = "between_at_stop"  # the harness's own final stop, or the member's own stop (module docstring)
        counts[got] += 1
        if got in ("never_given", "kept"):
            ws.append(w)
        elif got == "between":
            between.append(w)
        elif got == "unread":
            unread.append(w["why"])
    blind = sum(a.until - a.asked for a in ans if a.held is None and a.until > a.asked)
    meas = {"answers": len(ans), "blind_s": secs(blind), "holdings": sum(counts.values()),
            "judged": counts["valid"] + counts["never_given"] + counts["kept"], "between_samples": counts["between"],
            "between_samples_at_stop": counts["between_at_stop"], "never_given": counts["never_given"],
            "kept_past_allowance": counts["kept"]}
    if ws:
        what = [f"{counts['never_given']} holding(s) of a partition the coordinator never gave the member"] \
            * bool(counts["never_given"]) + [f"{counts['kept']} holding(s) kept past the coordinator's revocation "
                                              f"and the member's allowance"] * bool(counts["kept"])
        return verdict(NAME, "invalid", "; ".join(what) + f" ({len(ans)} answers of the coordinator); first: "
                       + ws[0]["why"], ws, meas)
    if unread:
        return verdict(NAME, "unknown", f"an allowance's input is missing: {unread[0]}", measurements=meas)
    if counts["between"]:
        return verdict(NAME, "unknown", f"{counts['between']} holding(s) the coordinator never listed fell between "
                                        f"its answers (shorter than its sampling): not judged; first: "
                                        f"{between[0]['why']}", between, meas)
    if not counts["valid"]:
        return verdict(NAME, "unknown", "no holding to judge", measurements=meas)
    final = f"the members' final stop (from {stop - tl.start:.1f}s) or " if stop < INF else ""
    at_stop = (f"; {counts['between_at_stop']} taken up in {final}a member's own stop fell between its answers, not "
               f"judged" if counts["between_at_stop"] else "")
    return verdict(NAME, "valid", f"every one of {counts['valid']} holdings was given by the coordinator and released "
                                  f"within the member's allowance ({len(ans)} answers of the coordinator, blind "
                                  f"{blind:.1f}s){at_stop}", measurements=meas)
