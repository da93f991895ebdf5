"""The causes of a run: what may move a partition, start a rebalance, change a static member's assignment or leave a
partition unowned, derived once per history from the history alone and read by every checker that excuses something.

Each `Cause` has a kind, the members it concerns, the partitions it names when the history says, a window on the
shared clock ([start, end]; an instant has start == end; a window never closed lasts past E) and the history event it
comes from (a checker's witness). The kinds (`KINDS`; docs/invariants.md, "Causes"):

- **join**: a member life began (its `member_start`, else its first own event); a static member's return too.
- **leave**: a graceful stop, from its shutdown's start (`Timeline.shutdown_start`) to its exit; and an unsubscribe
  (a subscription control applied `unsubscribe-subscribe`: its client left the group and joined afresh), from the
  harness's asking to the member's `control` event.
- **killed**: a life that ended killed or crashed (`member_exit` how `kill`, `crash`): by the scenario's own design
  (a kill step, a poison record); `detail` says which.
- **expire**: the coordinator's session timer of a member that departed without leaving (killed, crashed, or a static
  member, which sends no leave): from its exit to the exit plus its session timeout as it ran with
  (`settings.member_settings`). Its session timeout unknown: the window lasts past E and `unknown` says why.
- **fenced**: the member wrote `lost` naming partitions (its session expired or it was fenced; it rejoins
  empty-handed).
- **stalled**: the member stopped polling (a `stall` control true) until it polled again (false), else its life's end.
- **faulted**: a fault of the harness that reached members (a pause, a network fault, a rack outage, ...): every
  member it lists, and, for a fault of the network or of a rack, every member (of that rack) that started inside its
  window too.
- **request**: a request fault (`REQUEST_STEPS`: one request held, delayed, dropped, answered with an error, its
  connection cut), its window and the member whose request it was; `detail` is the API. It is `late` when it only
  made its request (or the broker's answer to it) late: held or delayed at the request proxy, then sent on (its
  `fault_end`'s outcome one of `LATE_OUTCOMES`; a hold the connection's close ended, or one never lifted, is not).
  Such a fault changes when the group hears of a step, not what the protocol makes of it: the coordinator answers the
  request as it would have, and no answer is an error or a lost connection. A checker of timing takes it as a cause
  (a commit held is late by the hold); a checker of what the group settles on (`stable_points`, `strict_stickiness`)
  does not count it as a change of its own: what it leads to (a member's session expiring behind it, a member
  fenced) is in the history as its own cause.
- **subscription**: a member applied a subscription control, from the harness's asking (its `subscription_change`
  fault's start) to the member's `control` event.
- **partitions**: partitions were added to a topic (`add_partitions`: from its start, when they exist, to its end).
- **setting**: a setting changed: group-side (a `group_config` fault's window) or client-side (a member life started
  with `effective` settings that differ from its member's, or its instance's, previous life: `detail` names the keys).
- **assignor**: a client-side setting change that names an assignor key (`partition.assignment.strategy`,
  `group.remote.assignor`); whether it changed the assignor *in force* is `assignor_change`'s question.
- **broker**: a `broker_event` (an instant) or a fault of brokers (its window).
- **topic**: a topic was created or deleted (`create_topic`, `delete_topic`: from the step's start, when the topic
  may already exist or be gone, to its end); `detail` says which and the topic, `partitions` its partitions when the
  run's topics include it.

Any other fault that lists no member (the harness's own steps that bracket a group change) is kept as a cause of
kind `faulted` with no members, so a checker that reads "a fault that lists no member" finds it (`listed` false).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

from harness.base.steps import REQUEST_STEPS, Step, fault_of
from harness.invariants import assignors
from harness.invariants.core import MissingSetting
from harness.invariants.terms import INF

KINDS = ("join", "leave", "killed", "expire", "fenced", "stalled", "faulted", "request", "subscription", "partitions",
         "setting", "assignor", "broker", "topic")
#: the faults whose reach grows with the members that start inside their window: the network to brokers (every
#: member's connections), a rack (every member of the rack)
NETWORK_FAULTS = frozenset({fault_of(Step.NETWORK_LATENCY), fault_of(Step.NETWORK_BLACKHOLE)})
RACK_FAULTS = frozenset({fault_of(Step.RACK_OUTAGE), fault_of(Step.RACK_PARTITION)})
#: the client settings that choose an assignor
ASSIGNOR_KEYS = frozenset({assignors.STRATEGY, assignors.REMOTE_ASSIGNOR})
#: a request fault's `fault_end` outcomes after which its request (or answer) went on as it was: a delay ran out, or
#: a hold was released (docs/history.md, "Request faults"); the others dropped, answered in the broker's stead or
#: closed the connection
LATE_OUTCOMES = frozenset({"forwarded", "seen", "event", "timeout", "lifted"})
#: the request faults that only hold or delay (a request fault's `fault_start` kind is its step's name)
LATE_STEPS = frozenset({Step.HOLD_REQUEST, Step.DELAY_REQUEST})
#: faults that are the bracket of another cause, not causes of their own kind
BRACKETS = {fault_of(Step.CHANGE_SUBSCRIPTION): "subscription", fault_of(Step.ADD_PARTITIONS): "partitions",
            fault_of(Step.GROUP_CONFIG): "setting"}


@dataclass(frozen=True)
class Cause:
    """One cause (module docstring): its kind, the members it concerns, its window, the event it comes from."""

    kind: str
    members: frozenset
    start: float
    end: float
    event: dict = field(hash=False, compare=False)
    partitions: frozenset | None = None
    detail: str = ""
    #: for a cause read from a fault: whether the fault listed members (`members_affected`)
    listed: bool = True
    #: what the history does not say of it (a session timeout unrecorded), "" when nothing is missing
    unknown: str = ""
    #: the event that closed its window, when one did (a fault's `fault_end`, a stall's control false)
    end_event: dict | None = field(default=None, hash=False, compare=False)
    #: a request fault that only made its request or answer late (module docstring, **request**)
    late: bool = False

    def overlaps(self, a: float, b: float) -> bool:
        """Whether the cause's window meets [a, b]."""
        return self.start <= b and self.end >= a

    def concerns(self, member: str | None) -> bool:
        return member in self.members

    def show(self, t0: float = 0.0) -> str:
        """"request (OffsetCommit) on a at 9.5-13.0s"."""
        who = f" on {', '.join(sorted(self.members))}" if self.members else ""
        what = f" ({self.detail})" if self.detail else ""
        when = f"{self.start - t0:.1f}s" if self.end == self.start else \
            f"{self.start - t0:.1f}-{self.end - t0:.1f}s" if self.end < INF else f"{self.start - t0:.1f}s on"
        return f"{self.kind}{what}{who} at {when}"


class Causes:
    """Every cause of one timeline's history, by start; build with `build(tl)`."""

    def __init__(self, tl) -> None:
        self.tl = tl
        got: list[Cause] = []
        got += _lives(tl)
        got += _faults(tl)
        got += _controls(tl)
        got += _growth(tl)
        got += _topic_steps(tl)
        got += [Cause("broker", frozenset(), e["mono"], e["mono"], e, detail=str(e.get("what") or ""))
                for _, e in tl.control if e["type"] == "broker_event" and e["mono"] <= tl.end]
        got += [Cause("fenced", frozenset({e["member"]}), e["mono"], e["mono"], e,
                      frozenset(tl.event_partitions(e)))
                for _, e in tl.control if e["type"] == "lost" and e.get("member") and tl.event_partitions(e)]
        self.all = sorted(got, key=lambda c: (c.start, c.end, KINDS.index(c.kind)))
        self._starts = [c.start for c in self.all]

    def of(self, *kinds: str) -> list[Cause]:
        """The causes of these kinds, by start."""
        return [c for c in self.all if c.kind in kinds]

    def within(self, a: float, b: float, kinds=None, member: str | None = None) -> list[Cause]:
        """The causes whose window meets [a, b] (of `kinds`, concerning `member`, when given)."""
        hi = bisect_right(self._starts, b)
        return [c for c in self.all[:hi] if c.end >= a and (kinds is None or c.kind in kinds)
                and (member is None or c.concerns(member))]

    def started_within(self, a: float, b: float, kinds=None) -> list[Cause]:
        """The causes that began in (a, b) (strictly: a cause at a stable point's start is before it)."""
        lo, hi = bisect_right(self._starts, a), bisect_left(self._starts, b)
        return [c for c in self.all[lo:hi] if kinds is None or c.kind in kinds]

    def touching(self, member: str, a: float, b: float, kinds=("faulted", "request")) -> list[Cause]:
        """The faults (of these kinds) that reached `member` and were active within (a, b): window start < b and
        end > a."""
        return [c for c in self.within(a, b, kinds, member) if c.start < b and c.end > a]

    def reached(self, fault) -> frozenset:
        """The members a fault of the timeline (`Timeline.faults`) reached: those it lists, and, for a network or rack
        fault, those started inside its window (of the rack)."""
        return fault.members | _reached_later(self.tl, fault) if fault.members else frozenset()

    def moments(self, until: float, before: bool = False, changes: bool = False,
                late: bool = True) -> list[tuple[float, dict]]:
        """(time, event) of every disturbance up to `until` (before it, when `before`), by time: the moments at which a
        cause began or ended that the group answers: a life's start and its exit, a fault's start and its lift (a
        fault still active then counts at `until`, with its start event), a broker event. With `changes`, also the
        changes the members make on their own (each also bracketed by the harness's fault of its step, when the
        harness asked for it): a graceful stop's start, a stall's start and end, a subscription applied, partitions
        added. The other kinds come at no moment of their own: an expiry or a fence follows a departure or a fault,
        a setting or assignor change its life's start. Without `late`, a request fault that only made a request late
        (`Cause.late`) has no moment: the group has nothing new to answer."""
        out: list[tuple[float, dict]] = []
        for c in self.all:
            if not _upto(c.start, until, before):
                break  # by start
            if c.late and not late:
                continue
            for t, ev in _moments_of(c, changes):
                if _upto(t, until, before):
                    out.append((t, ev))
                elif t == c.end and c.event.get("type") == "fault_start":
                    out.append((until, c.event))  # a fault still active at `until` counts then
        out.sort(key=lambda x: x[0])
        return out

    def unlisted_faults(self, a: float, b: float) -> list[Cause]:
        """Causes read from a fault that listed no member (brokers', the harness's own brackets), active in (a, b),
        and broker events in [a, b]."""
        return [c for c in self.within(a, b) if (not c.listed and c.start < b and c.end > a)
                or (c.kind == "broker" and c.start == c.end)]

    def assignor_change(self, before, t1: float, after, t2: float) -> Cause | None:
        """The change of the assignor in force between the `before` members at t1 and the `after` members at t2 (the
        members' own recorded settings, `assignors.change`), as a cause: kind `assignor`, its event the last
        client-side assignor setting change in between (else the first life start), None when it did not change or
        cannot be told."""
        how = assignors.change(self.tl, before, t1, after, t2)
        if how is None:
            return None
        rolled = [c for c in self.within(t1, t2, ("assignor",))] or [c for c in self.within(t1, t2, ("join",))]
        ev = rolled[-1].event if rolled else {"mono": t2}
        return Cause("assignor", frozenset(set(before) | set(after)), t1, t2, ev, detail=how)


def build(tl) -> Causes:
    """The causes of the timeline's history: built once per history and settings, shared by every checker."""
    return tl.history.derived(("causes", tl.settings), lambda: Causes(tl))


def _upto(t: float, until: float, before: bool) -> bool:
    return t < until if before else t <= until


def _moments_of(c: Cause, changes: bool) -> list[tuple[float, dict]]:
    """The moments of one cause (`Causes.moments`): (time, the event that says so)."""
    ev = c.event
    if ev.get("type") == "fault_start":
        return [(c.start, ev), (c.end, c.end_event if c.end_event is not None else ev)]
    if c.kind in ("join", "broker"):
        return [(c.start, ev)]
    if c.kind in ("killed", "leave") and ev.get("type") == "member_exit":
        return ([(c.start, ev)] if changes and c.kind == "leave" else []) + [(c.end, ev)]
    if not changes:
        return []
    if c.kind == "stalled":
        return [(c.start, ev)] + ([(c.end, c.end_event)] if c.end_event is not None else [])
    if c.kind in ("subscription", "partitions"):
        return [(c.end, ev)]
    return []


def _lives(tl) -> list[Cause]:
    from harness.invariants.settings import member_settings  # it reads the timeline
    out: list[Cause] = []
    for m, ls in tl.lives.items():
        for lf in ls:
            out.append(Cause("join", frozenset({m}), lf.start, lf.start, lf.start_event))
            if lf.exit_event is None:
                continue
            if lf.how == "graceful":
                out.append(Cause("leave", frozenset({m}), tl.shutdown_start(lf), lf.end, lf.exit_event,
                                 detail="graceful stop"))
            else:
                out.append(Cause("killed", frozenset({m}), lf.end, lf.end, lf.exit_event, detail=str(lf.how)))
            if lf.how != "graceful" or lf.instance_id:
                try:
                    s, missing = member_settings(tl, m, lf.end - 1e-6).session_timeout_s, ""
                except MissingSetting as e:
                    s, missing = INF, f"{m}'s session timeout is unknown ({e})"
                out.append(Cause("expire", frozenset({m}), lf.end, lf.end + s, lf.exit_event, unknown=missing))
    out += _setting_changes(tl)
    return out


def _setting_changes(tl) -> list[Cause]:
    """A life whose `effective` settings differ from its member's (or its instance's) previous life's."""
    out: list[Cause] = []
    previous: dict[str, dict] = {}
    lives = sorted((lf for ls in tl.lives.values() for lf in ls), key=lambda lf: lf.start)
    for lf in lives:
        st = next((e for _, e in tl.member_events(lf.member, ("started",)) if lf.start <= e["mono"] < lf.end), None)
        eff = st.get("effective") if st and isinstance(st.get("effective"), dict) else None
        if eff is None:
            continue
        keys = [k for k in (lf.member, lf.instance_id) if k]
        before = next((previous[k] for k in keys if k in previous), None)
        for k in keys:
            previous[k] = eff
        if before is None:
            continue
        changed = sorted(k for k in set(eff) | set(before) if eff.get(k) != before.get(k))
        if changed:
            kind = "assignor" if ASSIGNOR_KEYS & set(changed) else "setting"
            out.append(Cause(kind, frozenset({lf.member}), st["mono"], st["mono"], st, detail=", ".join(changed)))
    return out


def _faults(tl) -> list[Cause]:
    out: list[Cause] = []
    for f in tl.faults:
        e = f.start_event
        if f.kind in REQUEST_STEPS:
            out.append(Cause("request", f.members, f.start, f.end, e, detail=str(e.get("api") or ""),
                             listed=bool(f.members), end_event=f.end_event, late=_late(f)))
            continue
        if not f.members:
            kind = "broker" if e.get("brokers_affected") else BRACKETS.get(f.kind, "faulted")
            out.append(Cause(kind, frozenset(), f.start, f.end, e, detail=f.kind, listed=False,
                             end_event=f.end_event))
            continue
        out.append(Cause("faulted", f.members | _reached_later(tl, f), f.start, f.end, e, detail=f.kind,
                         end_event=f.end_event))
    return out


def _late(f) -> bool:
    """Whether a request fault only held or delayed its request or answer, which then went on (`LATE_OUTCOMES`)."""
    return f.kind in LATE_STEPS and f.end_event is not None and f.end_event.get("outcome") in LATE_OUTCOMES


def _reached_later(tl, f) -> frozenset:
    """The members a network or rack fault reached that started inside its window (a rack's: of that rack)."""
    if f.kind not in NETWORK_FAULTS | RACK_FAULTS:
        return frozenset()
    racks = set(f.start_event.get("targets") or ())
    return frozenset(m for m, ls in tl.lives.items() for lf in ls if f.start < lf.start < f.end
                     and (f.kind in NETWORK_FAULTS or lf.start_event.get("rack") in racks))


def _controls(tl) -> list[Cause]:
    """Stalls, subscription changes and unsubscribes, from the members' `control` events."""
    out: list[Cause] = []
    asked = [(f.start, f.end, set(f.start_event.get("targets") or ()))
             for f in tl.faults if f.kind == fault_of(Step.CHANGE_SUBSCRIPTION)]
    stalls: dict[str, dict] = {}
    for _, e in tl.control:
        if e["type"] != "control" or not e.get("member") or e["mono"] > tl.end:
            continue
        m = e["member"]
        if "stall" in e:
            if e["stall"] and m not in stalls:
                stalls[m] = e
            elif not e["stall"] and m in stalls:
                s = stalls.pop(m)
                out.append(Cause("stalled", frozenset({m}), s["mono"], e["mono"], s, end_event=e))
        if "subscription" in e:
            began = min((s for s, end, who in asked if m in who and s <= e["mono"] <= end), default=e["mono"])
            out.append(Cause("subscription", frozenset({m}), began, e["mono"], e,
                             detail=", ".join(map(str, e.get("subscription") or ())) or "nothing"))
            if e.get("subscribe_by") == "unsubscribe-subscribe":
                out.append(Cause("leave", frozenset({m}), began, e["mono"], e, detail="unsubscribe"))
    for m, s in stalls.items():
        life_end = min((lf.end for lf in tl.lives.get(m, ()) if lf.start <= s["mono"] < lf.end), default=INF)
        out.append(Cause("stalled", frozenset({m}), s["mono"], life_end, s))
    return out


def _growth(tl) -> list[Cause]:
    """Partitions added: each `add_partitions` action, from its start (the partitions exist from the controller's
    commit, before CreatePartitions answers) to its end, naming the new partitions."""
    out: list[Cause] = []
    starts = [e for _, e in tl.control if e["type"] == "action_start" and e.get("kind") == Step.ADD_PARTITIONS]
    for i, steps in tl.growth.steps.items():
        base = tl.layout.base[i]
        for when, before, after in steps:
            began = max((e["mono"] for e in starts if e["mono"] <= when), default=when)
            ev = next((e for _, e in tl.control if e["type"] == "action_end" and e["mono"] == when), {"mono": when})
            out.append(Cause("partitions", frozenset(), began, when, ev,
                             frozenset(base + p for p in range(before, after)), detail=tl.topics[i]))
    return out


def _topic_steps(tl) -> list[Cause]:
    """Topics created or deleted: each `create_topic` or `delete_topic` step that ended well, from its start to its
    end; `detail` is "created <topic>" or "deleted <topic>"."""
    out: list[Cause] = []
    starts: dict = {}
    for _, e in tl.control:
        if e.get("kind") not in (Step.CREATE_TOPIC, Step.DELETE_TOPIC) or e["mono"] > tl.end:
            continue
        if e["type"] == "action_start":
            starts[e.get("action_id")] = e["mono"]
        elif e["type"] == "action_end" and e.get("ok") and isinstance(e.get("topic"), str):
            i = tl.layout.index.get(e["topic"])
            parts = None if i is None else frozenset(tl.layout.base[i] + p for p in range(tl.layout.counts[i]))
            verb = "created" if e["kind"] == Step.CREATE_TOPIC else "deleted"
            out.append(Cause("topic", frozenset(), starts.get(e.get("action_id"), e["mono"]), e["mono"], e, parts,
                             detail=f"{verb} {e['topic']}"))
    return out


# -- explaining a kind's own bumps (Connect generations, share-group epochs) with the causes of the run


@dataclass(frozen=True)
class Bumped:
    """One new generation or group epoch seen in [lo, hi] (what recorded it may see it late), with the event that
    recorded it; several bumps seen in one answer share their window."""

    number: int
    lo: float
    hi: float
    event: dict = field(hash=False, compare=False)


@dataclass(frozen=True)
class Offer:
    """A cause offered as the start of up to `budget` bumps in [cause.start, until]."""

    cause: Cause
    budget: int
    until: float


def spend(bumps: list[Bumped], offers: list[Offer]) -> list[tuple[Bumped, Offer | None, list[Offer]]]:
    """For each bump (by its window's end), the offer it is charged to and the offers whose window meets its own: each
    bump takes one unit of the budget of the offer in reach that closes first (the one no later bump can use), so
    that as many bumps as the budgets allow are explained. The offer is None when none in reach has budget left (a
    storm when some was in reach, a bump without a cause when none was)."""
    left = [o.budget for o in offers]
    out = []
    for b in sorted(bumps, key=lambda x: (x.hi, x.lo, x.number)):
        reach = [i for i, o in enumerate(offers) if o.cause.start <= b.hi and o.until >= b.lo]
        able = sorted((i for i in reach if left[i] > 0), key=lambda i: (offers[i].until, offers[i].cause.start))
        if able:
            left[able[0]] -= 1
        out.append((b, offers[able[0]] if able else None, [offers[i] for i in reach]))
    return out


def storm_runs(charged: list) -> list[tuple[list[Bumped], list[Offer]]]:
    """The bumps `spend` charged to nothing though causes were in reach, as runs of consecutive numbers, each with
    the offers in reach of any of its bumps (by start)."""
    out: list[tuple[list[Bumped], list[Offer]]] = []
    for b, o, reach in charged:
        if o is not None or not reach:
            continue
        if out and out[-1][0][-1].number + 1 == b.number:
            out[-1][0].append(b)
            out[-1][1].extend(x for x in reach if all(x is not y for y in out[-1][1]))
        else:
            out.append(([b], list(reach)))
    return [(run, sorted(within, key=lambda x: x.cause.start)) for run, within in out]


#: the events that say a Connect connector's configuration was written (the harness's REST PUT of it)
CONFIG_EVENTS = frozenset({"connect_connector_created"})


def configs(tl) -> list[Cause]:
    """A connector's configuration written (`connect_connector_created`: the harness's PUT of it through the REST
    API), as a cause of kind `config` (concerning no member; `detail` the connector): the workers' group rebalances to
    run it, and again once it has written its tasks' configurations (KIP-415). Its window runs from the harness's
    first asking (`asked_mono`; a run before it recorded that: the first worker's `started`, before which no REST API
    answered) to the event, written once the PUT was answered: the workers may rebalance before it."""
    out = []
    first = min((e["mono"] for _, e in tl.control if e["type"] == "started" and e.get("rest_url")), default=None)
    for _, e in tl.control:
        if e["type"] in CONFIG_EVENTS and e["mono"] <= tl.end:
            asked = e.get("asked_mono")
            start = float(asked) if isinstance(asked, (int, float)) else min(first or e["mono"], e["mono"])
            out.append(Cause("config", frozenset(), start, e["mono"], e, detail=str(e.get("connector") or "")))
    return out


def initialized(tl) -> list[Cause]:
    """A share group's partitions first assigned (KIP-932): each answer of the group watch (`share_assignment`) that
    assigns a partition no earlier answer assigned, as a cause of kind `initialized` (no member; `partitions` the
    new ones): the coordinator assigns a share-partition only once its share-group state is initialized, and bumps
    the group epoch when it is, however long after the member that brought the topic joined. Its window runs from
    the asking of the last answer before the group epoch last rose to this answer."""
    out: list[Cause] = []
    ever: set = set()
    top, since, lo = 0, tl.start, tl.start
    for _, e in tl.control:
        if e["type"] != "share_assignment" or e.get("error") or not isinstance(e.get("group_epoch"), int):
            continue
        if e["group_epoch"] > top:
            top, since = e["group_epoch"], lo
        given = {tuple(p) for m in e.get("members") or () for p in m.get("partitions") or ()}
        if given - ever:
            out.append(Cause("initialized", frozenset(), since, e["mono"], e, frozenset(given - ever),
                             detail=f"{len(given - ever)} partitions first assigned"))
            ever |= given
        lo = float(e.get("asked_mono") or e["mono"])
    return out
