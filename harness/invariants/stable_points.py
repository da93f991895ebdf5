"""The stable points of a consumer group: the assignments the group settled on, each judged by the assignment-shape
checkers (`subscribed_only`, `assignor_shape`) and, two by two, `strict_stickiness`.

The rule is made of what the history holds of each moment, never of what is judged at it (a stable point is not one
that is balanced or has its assignor's shape: those are what the checkers ask of it; an answer that leaves a partition
unowned is no settled assignment, and `coverage_liveness` judges that). The history is cut by *causes*, the moments of the one
model of causes (`causes.Causes.moments`, with the changes members make on their own): a member starting, stopping
(its graceful stop's start, `Timeline.shutdown_start`) or exiting, a member applying a control (a subscription change,
a stall and its end), a topic growing, a fault starting or ending, a broker event. A request fault that only made a
request late (`causes.Cause.late`: held or delayed at the request proxy, then sent on, as the explorer's perturbations
are) is no cause here: the coordinator answers the request as it would have, so the group has nothing new to answer;
what it leads to (a member fenced behind it) is in the history as its own change. Its start ends a window's last
stretch only when it was still on at the next cause (`late_cuts`: the group's last stretch before it, as before any
fault); one over before the next cause leaves the stretch it came and went in whole. Between two causes the group
answers the first one with one or more rebalances; the assignment it settles on is the last stretch before the next
cause (or the workload end W): the stretch over which nothing changes (ownership, live members, subscriptions,
partition counts) that the next cause ends. That stretch is a **stable point** when besides:

- the group is known to have settled on it: the runner's own wait found the group stable within it (a `wait_stable`
  step that ended `stable`: its observer saw the group settled by the kind's rule and unchanged for its stable time);
  or it ends the run at W after the drain, lasted `quiet_period_s`, and the runner's final wait before the drain did
  not time out (no `wait_timeout` since the window's cause); or the group answered the cause (the stretch began with
  a change of ownership after it), the answer covers every partition that has to be owned (between the two rounds
  of a cooperative rebalance the revoked partitions are unowned), and it lasted `quiet_period_s` plus the longest
  wait a live member's revoke handler takes before its commit (its `effective.revoke_delay_ms`, as recorded); or it
  lasted `quiet_period_s` and outlasted the protocol's rebalance allowance from the window's cause
  (`settings.rebalance_allowance`: its rounds times the members' rebalance timeout, as recorded). A stretch that is
  merely quiet for a while is not enough: a member may take up to its rebalance timeout to carry out a revocation,
  and the group is not settled meanwhile (the harness's members poll continually unless stalled, which no stable
  point allows, or told to wait in their revoke handler, which the rule adds);
- some member was alive; no fault was active during it (a fault of brokers alone too: members lose their partitions
  while the coordinator is down and get them back once it is up again; a request only made late counts when it was
  still on at the stretch's end, not when it was sent on inside it) and no live member was stalled (its last
  `stall` control true): the group may be kept apart, or a member may hold what the coordinator already gave away;
- no member was stopping (between its graceful stop's start and its exit: it revokes what it holds);
- it began after the session timeout (as that member ran with: `settings.member_settings`) of every member that
  departed before it without leaving the group (killed, crashed, or static): until then the coordinator still counts
  that member, and its partitions wait for it. The coordinator's session timer runs from the member's last
  heartbeat, at most one heartbeat interval (as recorded) before its exit, so its expiry is looked for from the exit
  plus the session timeout less that interval. A static member whose `group.instance.id` a later life took up again
  before the stretch is no longer waited for: the coordinator gave its place to the new life;
- no partition was held by two live members (the coordinator's assignment gives each to one; a double is
  `exclusive_ownership`'s to judge, and the group is then between two assignments).

A window whose last stretch fails one of these has no stable point; why is counted (`Points.unestablished`). A
member's session timeout the history cannot tell (`MissingSetting`) leaves the window without a point, naming it.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from harness.record.history import History
from harness.invariants import causes, timeline
from harness.invariants.core import CheckSettings, MissingSetting, Verdict, empty, verdict
from harness.invariants.settings import life_at, member_settings, rebalance_allowance, revoke_wait_s
from harness.invariants.terms import sweep_owners
from harness.base.steps import Step

@dataclass(frozen=True)
class Point:
    """One stable point: from `start` to `end`, every live member -> the (global) partitions it held, its
    subscription (topic indices), and the partitions that had to be owned (those existing of the topics some live
    member subscribed to)."""

    start: float
    end: float
    held: dict
    subs: dict
    required: tuple

    def owners(self) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for m, ps in sorted(self.held.items()):
            for p in ps:
                out.setdefault(p, []).append(m)
        return out


@dataclass
class Points:
    """The stable points of a history, the windows cut by causes, and why the windows without a point had none."""

    points: list[Point] = field(default_factory=list)
    windows: int = 0
    unestablished: dict = field(default_factory=dict)  # reason -> windows

    def why_none(self) -> str:
        if not self.windows:
            return "no window between causes before the workload end"
        reasons = "; ".join(f"{n} {why}" for why, n in sorted(self.unestablished.items(), key=lambda x: -x[1]))
        return f"none of the {self.windows} windows between causes ended on a stable point ({reasons})"


def stable_points(tl) -> Points:
    """The stable points of the timeline's history (module docstring); built once per timeline."""
    return tl.history.derived(("stable_points", tl.settings), lambda: _build(tl))


def points_to_judge(name: str, history: History, settings: CheckSettings, m: dict):
    """(timeline, its stable points) for a checker of the stable points, or the checker's `unknown` verdict when there
    is nothing to judge: no member event, no partition count, no stable point (why each window had none). `m`: the
    checker's measurements so far; `points` and `windows` are added."""
    if (v := empty(name, history)) is not None:
        return v
    tl = timeline.build(history, settings)
    if tl.partitions <= 0:
        return verdict(name, "unknown", "partition count unknown: set partitions")
    pts = stable_points(tl)
    m.update(points=len(pts.points), windows=pts.windows)
    if not pts.points:
        return verdict(name, "unknown", f"no stable point to judge: {pts.why_none()}", measurements=m)
    return tl, pts


def failing(name: str, bad: list[str], wits: list[dict], unread: list[str], m: dict) -> Verdict | None:
    """A stable-point checker's `invalid` (the first problem, how many more) when it found one, else its `unknown`
    (the first point or transition it could not judge) when there is one, else None."""
    for status, lines in (("invalid", bad), ("unknown", unread)):
        if lines:
            more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
            return verdict(name, status, lines[0] + more, wits if status == "invalid" else (), m)
    return None


def cut_times(tl, until: float) -> list[float]:
    """The times of every cause up to `until`, sorted: the moments of the one model of causes, with the changes the
    members make on their own (`causes.Causes.moments`), but for a request fault that only made a request late
    (`causes.Cause.late`): the group has nothing new to answer."""
    return sorted({t for t, _ in causes.build(tl).moments(until, changes=True, late=False)})


def late_cuts(tl, cause: list[float], W: float) -> set[float]:
    """The starts of the request faults that only made a request late (`causes.Cause.late`) and were still on when
    the next cause came (of `cause`, sorted; else W): a window's last stretch ends there, before the fault, as it
    ends at any cause. One over before the next cause cuts nothing: the stretch goes on across it."""
    out = set()
    for c in causes.build(tl).of("request"):
        if c.late and tl.start <= c.start < W:
            i = bisect_right(cause, c.start)
            if c.end >= (cause[i] if i < len(cause) else W):
                out.add(c.start)
    return out


def _build(tl) -> Points:
    W = tl.workload_end if tl.workload_end is not None else tl.end
    cause = [t for t in cut_times(tl, W) if t >= tl.start]
    lates = late_cuts(tl, cause, W)
    cause_set = set(cause) | lates | {W}
    times = sorted({t for t in cause if t < W} | lates | {o.start for o in tl.ownerships if tl.start <= o.start < W}
                   | {o.end for o in tl.ownerships if tl.start <= o.end < W} | {tl.start})
    got = Points(windows=len([t for t in cause if t < W]) or (1 if times else 0))
    seen = _Confirmation(tl, W)
    for i, (a, owners) in enumerate(sweep_owners(tl.ownerships, times, tl.end)):
        b = times[i + 1] if i + 1 < len(times) else W
        if b <= a or b not in cause_set:
            continue  # a stretch within a window: the group may still be answering its cause
        why = seen.missing(a, b, max((t for t in cause if t <= a), default=tl.start), owners) \
            or _unsettled(tl, a, b, owners)
        if why:
            got.unestablished[why] = got.unestablished.get(why, 0) + 1
            continue
        alive = sorted(tl.alive_members(a))
        held = {m: frozenset(p for p, xs in owners.items() if m in xs) for m in alive}
        got.points.append(Point(a, b, held, {m: tl.subscribed(m, a) for m in alive}, tuple(tl.required(a))))
    return got


class _Confirmation:
    """Whether a window's last stretch is one the group settled on (module docstring): the runner's wait found it
    stable, or the runner's final wait did before the drain it ends with, or it outlasted the protocol's rebalance
    allowance."""

    def __init__(self, tl, W: float) -> None:
        self.tl, self.W, self.quiet = tl, W, float(tl.settings.quiet_period_s)
        actions = [e for _, e in tl.control if e["type"] == "action_end" and e.get("kind") == Step.WAIT_STABLE]
        self.waits = sorted(e["mono"] for e in actions if e.get("stable") is True)
        self.timeouts = sorted(e["mono"] for _, e in tl.control if e["type"] == "wait_timeout")
        drained = [e["mono"] for _, e in tl.control if e["type"] == "drained" and e["mono"] <= W]
        self.drained = drained[-1] if drained else None

    def missing(self, a: float, b: float, since: float, owners: dict) -> str | None:
        """Why [a, b), the last stretch of the window from the cause at `since` with `owners` (partition -> its
        holders), is not confirmed (None: it is)."""
        if any(a <= w < b for w in self.waits):
            return None
        if b - a < self.quiet:
            return f"ended within the quiet period ({self.quiet:g}s) and no wait of the runner found it stable"
        d = self.drained
        if b == self.W and d is not None and a <= d and not any(since <= x <= d for x in self.timeouts):
            return None  # the runner's final wait found the group settled, then it drained
        if a > since and self._answered(a, owners) and b - a >= self.quiet + self._revoke_wait(a):
            return None  # the group answered the cause with an assignment of everything, and kept it
        try:
            allowance, _ = rebalance_allowance(self.tl, since)
        except MissingSetting as e:
            return f"was not found stable by a wait of the runner, and the rebalance allowance is unknown ({e})"
        if b - since >= allowance:
            return None
        return "was not found stable by a wait of the runner and ended within the protocol's rebalance allowance"

    def _answered(self, a: float, owners: dict) -> bool:
        """Whether every partition that has to be owned at `a` is held by a member alive then, and every member alive
        then was given an assignment in its life by `a` (one that was not has perhaps not joined yet: an answer that
        gives everything to the others may be the group's answer to an earlier join, its own still to come)."""
        if not all(self.tl.given_by(m, a) for m in self.tl.alive_members(a)):
            return False
        return all(any(self.tl.alive(m, a) for m in owners.get(p, ())) for p in self.tl.required(a))

    def _revoke_wait(self, a: float) -> float:
        """The longest wait before its commit a revoke handler of a member alive at `a` takes (`revoke_wait_s`)."""
        lives = [life_at(self.tl, m, a) for m in self.tl.alive_members(a)]
        return max((revoke_wait_s(self.tl, lf) for lf in lives if lf is not None), default=0.0)


def _unsettled(tl, a: float, b: float, owners: dict) -> str | None:
    """Why the stretch [a, b) is no stable point for what was going on in it, or None; what went on is read from the
    one model of causes (`causes`)."""
    if not tl.alive_members(a):
        return "had no live member"
    cs = causes.build(tl)
    during = [c for c in cs.within(a, b) if c.start < b and c.end > a]
    if any(c.event.get("type") == "fault_start" and not (c.late and c.end < b) for c in during):
        return "had a fault active"  # a request only made late and sent on inside it changed nothing
    if any(len(xs) > 1 for xs in owners.values()):
        return "had a partition held twice"
    if any(c.kind == "leave" and c.event.get("type") == "member_exit" for c in during):
        return "had a member stopping"
    if (why := _expiring(tl, cs, a)) is not None:
        return why
    if any(c.start <= a < c.end and tl.alive(m, a) for c in cs.of("stalled") for m in c.members):
        return "had a member stalled"
    return None


def _expiring(tl, cs, a: float) -> str | None:
    """Why a stretch from `a` began while the coordinator still counted a departed member (its `expire` cause, less
    one heartbeat interval: the timer runs from its last heartbeat), None when it did not."""
    for c in cs.of("expire"):
        if c.start > a:
            break
        (m,) = c.members
        lf = next(lf for lf in tl.lives[m] if lf.exit_event is c.event)
        if _taken_up(tl, lf, a):
            continue
        if c.unknown:
            return f"followed a departure whose session timeout is unknown: {c.unknown}"
        try:
            hb = member_settings(tl, m, lf.end - 1e-6).hb_s or 0.0
        except MissingSetting as e:
            return f"followed a departure whose heartbeat interval is unknown: {e}"
        if a < c.end - hb:
            return "began within a departed member's session timeout"
    return None


def _taken_up(tl, departed, a: float) -> bool:
    """Whether a later life alive at `a` runs with the departed static life's group.instance.id (it came back)."""
    return bool(departed.instance_id) and any(
        lf.instance_id == departed.instance_id and departed.end <= lf.start <= a < lf.end
        for ls in tl.lives.values() for lf in ls)
