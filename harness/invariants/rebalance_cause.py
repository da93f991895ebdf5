"""`rebalance_cause`: every rebalance the coordinator started had a cause in what the members did or underwent.

Each new generation (classic) or group epoch (consumer protocol) and the reason the coordinator gave for it come from
its own log lines (`coordinator_log.bumps`). Each reason names a member by its group member id, which is told as the
lines go: a classic id starts with the member's client.id (the harness's member name) or, for a static member, its
instance id; a consumer-protocol id (drawn by the client) that the group watch's answers list (`group_assignment`:
`consumer_id` beside the member's client id) is that member; any other id (a team's program's, or one the watch
never saw) is, from its first join, one of the members running then that held no id in the group (when several
started together it may be any of them, and a cause of any of them counts). Each reason is matched with a cause in
the history, searched from that member's life start (or, for what a generation answers, from the previous generation
or epoch) up to the line. What the history holds is read from the one view of the run's causes (`causes`: the
faults and request faults that reached a member, its stalls and subscription changes, broker events, and the faults
that list no member). Which events cause a rebalance, per protocol, is docs/invariants.md's table ("Rebalance
causes"):

- **join**: a member that held no id in the group (its first join in its life, or its old id left, expired or was
  removed); a classic member known by its client.id that joins with a new id while its old one is still in the group
  needs to have lost its membership since (its `lost` event, an `error`, a stall or fault, the coordinator expiring,
  removing or fencing it). A new id that is no member's client id, while every running member holds one, is one
  of those that lost their membership since their id was first named (a `lost`, an error, a leave, an expiry, a
  stall or a fault: such a client joins again with no id, its old one lingering until it expires); with none
  such it is a rebalance without a cause.
- **leave**: the member was stopping or had stopped (`member_stop`, its exit), was stalled (a poll past
  max.poll.interval.ms makes a client leave) or applied a subscription control (an unsubscribe: `subscribe_by`
  `unsubscribe-subscribe`, or a client that leaves on any new subscription). A subscription control counts from
  the harness's asking (its `subscription_change` fault's start) to the member's `control` event: the member
  writes the event once the change is made, after its client left and, maybe, joined again. The join that
  follows such a leave is a member that held no id in the group (its old id left).
- **expire** (its session expired, or it was fenced for it): the member had died (an exit without a leave), a fault
  touched it, it was stalled, or a broker event or broker fault happened within its session timeout before the line
  (its heartbeats may have had nowhere to go). A live, unfaulted, polling member whose session the coordinator
  expires is named with its session timeout as recorded.
- **rejoin** (classic, a member rejoining a Stable group): the cooperative protocol's second round (client reason
  `need to revoke partitions and re-join`, or the member revoked partitions since the previous generation), a
  Streams follow-up (`triggered followup rebalance`), the member's subscription changed, a topic grew, or the member
  is static and restarted since the previous generation; or, within the member's own metadata refresh before the
  line, a topic grew or a topic its subscription matches (by name or regex) was created or deleted (`topics_noticed`:
  librdkafka's "Updating metadata" rejoin when its subscribed topic set changed, each member at its own refresh); for the Java client's `cached metadata has changed`, also
  any member's subscription change or a topic's growth since the last assignment the member led in its life (the
  client keeps the metadata it assigned with, through an unsubscribe and subscribe too, and rejoins once its
  metadata no longer matches it).
- **downgrade** (classic: a consumer group converted to a classic one when its last consumer-protocol member
  departed; the line names no member): some member left, stopped, was killed, expired or was fenced since the
  previous generation.
- **fence** (consumer protocol: it did not revoke within its rebalance timeout): the member had died, was stalled or
  faulted, or told to wait in its revoke handler as long as its max.poll.interval.ms, or a broker event or fault
  happened within that timeout before the line; a request fault on the member only when it ended within the group's
  session timeout plus one heartbeat interval before the line (after a lost or refused answer a client sends a full
  heartbeat and is given its assignment again, KIP-848: a fault that ended earlier left it time to learn it).
- **subscription** (consumer protocol): the member applied a subscription control, or started, since the previous
  epoch.
- **unstated** (consumer protocol: an epoch bumped with no reason logged at INFO; a subscription change is logged
  only at DEBUG): some member changed its subscription, a topic grew, or a broker event or fault happened since the
  previous epoch, or an earlier epoch took the line of a regex refresh that no epoch since applied (the coordinator
  scans off its own thread and writes the result as an epoch of its own after the requests queued before it; an epoch
  such a request bumped takes the scan line, and more than one can come between), or
  the previous epoch's metadata hash was 0 and this one's is not (the subscribed topics reached the coordinator's
  metadata image after members had joined: its broker applies a new topic to the image after creating the
  partitions' local logs).
- **metadata** (consumer protocol: the subscribed topics' partitions or racks changed, or a regex was refreshed): a
  topic grew, or a broker event or fault happened, since the previous epoch; for a regex refresh (`Scanned N topics`)
  also a member that brought a new regex since the last refresh, a scan of more topics than the previous scan saw
  (the coordinator rescans when its image gains a topic), or, since a scan that changes nothing logs no epoch of its
  own and its line goes to the next epoch, that epoch's other line or an unstated cause.

A generation or epoch logged by a coordinator already deposed (another broker loaded the group's partition of
`__consumer_offsets` at a newer leader epoch: `coordinator_log`) is not the group's and is not judged; the verdict
counts them (`deposed`).

A static member coming back within its session timeout is not a rebalance under either protocol and is not looked
for here (`static_membership` judges that it did not move partitions).

`invalid` with each uncaused rebalance (its witness the coordinator's line, with the window searched); `unknown` when
the brokers' logs were not collected or could not be read, when the lines hold no rebalance at all, or when the
coordinator gave no reason these patterns read; `skipped` on the fake backend (no coordinator); `valid` otherwise.
Consumer groups only (Streams, Connect and share groups have their own checkers).
Measurements: `rebalances` (by protocol), `causes` (by kind), `uncaused`, `unread`, `deposed`.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter

from harness.record.history import History
from harness.invariants import brokers, causes, timeline, topics_noticed
from harness.invariants.coordinator_log import REMOVED, Bump, Cause, bumps, client_of, metadata_hash
from harness.invariants.core import CheckSettings, MissingSetting, Verdict, empty, verdict, witness
from harness.invariants.settings import growth_times, member_refresh_s, member_settings, revoke_wait_s

NAME = "rebalance_cause"
#: how far a broker line's time may fall before the harness event that caused it: the brokers' log timestamps are
#: milliseconds of the wall clock, mapped onto the run's monotonic clock (harness/cluster/broker_log.py)
CLOCK_SLACK_S = 0.05
COOPERATIVE_ROUND = "need to revoke partitions"
STREAMS_FOLLOWUP = "triggered followup rebalance"
#: the Java client's rejoin when the metadata it took at the last assignment it performed has changed since
CACHED_METADATA = "cached metadata has changed"
#: the classic coordinator's line for the assignment a leader sent
LEADER_ASSIGNED = re.compile(r"Assignment received from leader (?P<m>\S+) for group (?P<g>\S+) for generation")
#: the consumer protocol's coordinator resolving the group's regexes anew (KIP-848 regex subscriptions)
REGEX_REFRESH = "to refresh regular expressions"
SCANNED = re.compile(r"\] Scanned (\d+) topics to refresh regular expressions")
#: the causes by which a member departs the group (a downgrade's: the last consumer-protocol member's)
DEPARTURES = ("leave", "killed", "expire", "fenced")


def check(history: History, settings: CheckSettings) -> Verdict:
    if (v := empty(NAME, history)) is not None:
        return v
    if not brokers.collected(history):
        return verdict(NAME, "unknown", "the brokers' logs were not collected: the coordinator's rebalances are unseen")
    if gone := brokers.unread(history):
        return verdict(NAME, "unknown", "a broker's log could not be read, so a rebalance it coordinated may be "
                       "unseen: " + "; ".join(f"broker {e.get('broker')} ({e.get('error')})" for e in gone))
    if (history.run_start() or {}).get("backend") == "fake":
        return verdict(NAME, "skipped", "the fake backend's cluster has no group coordinator whose lines could be read")
    group = brokers.group_of(history) or next((e.get("group_id") for _, e in history.control()
                                                if e.get("type") == "started" and e.get("group_id")), None)
    if not group:
        return verdict(NAME, "unknown", "neither the brokers' lines nor the members' starts say which group it is")
    tl = timeline.build(history, settings)
    seen = bumps(brokers.said(history), group)
    return _judged(tl, seen, group, brokers.said(history))


def _judged(tl, logged: list[Bump], group: str, lines: list[dict]) -> Verdict:
    seen = [b for b in logged if b.deposed is None]
    deposed = [b for b in logged if b.deposed is not None]
    judge = _Judge(tl, seen, lines, group)
    bad, wits, unread, kinds = [], [], [], Counter()
    for i, b in enumerate(seen):
        prev = seen[i - 1].mono if i else tl.start
        if not b.causes:
            unread.append(f"{_at(tl, b.mono)} {b.protocol} {_what(b)}: the coordinator gave no reason read here "
                          f"({_quote(b.event)})")
            continue
        for c in b.causes:
            kinds[c.kind] += 1
            why = judge.uncaused(b, c, prev)
            if why is None:
                continue
            if why.startswith("?"):
                unread.append(f"{_at(tl, b.mono)} {_what(b)} ({c.kind}): {why[1:]}")
                continue
            text = f"{_at(tl, b.mono)} the coordinator started {_what(b)} ({c.kind}: {_quote(c.event)}): {why}"
            bad.append(text)
            wits.append(witness(c.event, text))
    m = {"rebalances": dict(Counter(b.protocol for b in seen)), "causes": dict(kinds), "uncaused": len(bad),
         "unread": len(unread), "deposed": len(deposed)}
    for status, lines in (("invalid", bad), ("unknown", unread)):
        if lines:
            more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
            return verdict(NAME, status, lines[0] + more, wits if status == "invalid" else (), m)
    if not seen:
        return verdict(NAME, "unknown", f"the coordinator's lines hold no rebalance of group {group}", measurements=m)
    aside = (f"; {len(deposed)} bumps logged by a deposed coordinator not judged (the first {_at(tl, deposed[0].mono)}"
             f": {deposed[0].deposed})") if deposed else ""
    return verdict(NAME, "valid", f"each of {len(seen)} rebalances had a cause in the history "
                   f"({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}){aside}", measurements=m)


class _Ids:
    """Who each group member id the coordinator names is, as its lines go (module docstring): a classic id by the
    client.id it starts with, a static member's by its instance id; any other id by its first join, among the members
    running then that hold no id in the group (several when they started together: the id is any one of them)."""

    def __init__(self, tl) -> None:
        self.tl = tl
        self.live: dict[str, frozenset] = {}  # member id -> who it may be
        self.first: dict[str, float] = {}  # member id -> when the coordinator first named it
        self.named = _watched_ids(tl)  # consumer-protocol member id -> the member the group watch listed with it

    def direct(self, c: Cause) -> str | None:
        client = client_of(c.member_id)
        if client in self.tl.lives:
            return client
        if (named := self.named.get(c.member_id or "")) is not None:
            return named
        for instance in (c.instance_id, client):  # a classic static member's id starts with its instance id
            if instance and (m := self.tl.with_instance(instance, c.event["mono"] + CLOCK_SLACK_S)):
                return m
        return None

    def who(self, c: Cause) -> frozenset:
        """The members the cause's id may be (empty: none can); records a new id's first join."""
        t = c.event["mono"] + CLOCK_SLACK_S
        if c.member_id in self.live:  # whom it was when it joined (a static member's instance may have moved on since)
            got = self.live[c.member_id]
        elif (x := self.direct(c)) is not None:
            got = frozenset({x})
        elif c.kind == "join":
            taken = {m for s in self.live.values() if len(s) == 1 for m in s}
            got = frozenset(self.tl.alive_members(t) - taken)
        else:  # an id the lines never showed joining: any member running then
            got = frozenset(self.tl.alive_members(t))
        if c.replaces:
            self.forget(c.replaces)
        if c.member_id and c.kind == "join" and got:
            self.live.setdefault(c.member_id, got)
            self.first.setdefault(c.member_id, c.event["mono"])
        return got

    def held(self, x: str, but: str | None) -> str | None:
        """Another id the member holds alone in the group, if any."""
        return next((i for i, s in self.live.items() if s == {x} and i != but), None)

    def forget(self, member_id: str | None) -> None:
        self.live.pop(member_id or "", None)


def _watched_ids(tl) -> dict[str, str]:
    """Each member id the group watch's answers list (`consumer_id`) with the client id of one of the run's members,
    as that member (a client keeps its consumer-protocol id for its life, through a rejoin; docs/history.md)."""
    out: dict[str, str] = {}
    for _, e in tl.control:
        if e["type"] == "group_assignment" and e.get("group_type") == "consumer":  # a classic id tells its client
            for m in e.get("members") or ():
                if m.get("consumer_id") and m.get("member") in tl.lives:
                    out.setdefault(m["consumer_id"], m["member"])
    return out


class _Judge:
    """Matches one cause the coordinator gave with what the history holds."""

    def __init__(self, tl, seen: list[Bump], lines: list[dict], group: str) -> None:
        self.tl, self.seen, self.lines, self.ids, self.group = tl, seen, lines, _Ids(tl), group
        # what may cause a rebalance, from the one view of the run's causes (`causes`)
        self.causes = causes.build(tl)
        self.broker_events = sorted(c.start for c in self.causes.of("broker") if c.start == c.end)
        # each subscription control: (member, when it was asked for, when the member said it applied it)
        self.resubscriptions = [(next(iter(c.members)), c.start, c.end)
                                for c in self.causes.of("subscription") if c.members]
        self.stalls: dict[str, list[float]] = {}  # member -> when it stopped polling
        for c in self.causes.of("stalled"):
            self.stalls.setdefault(next(iter(c.members)), []).append(c.start)

    def uncaused(self, b: Bump, c: Cause, prev: float) -> str | None:
        """None when the history holds a cause for `c`; else why not."""
        t = b.mono + CLOCK_SLACK_S
        if c.kind == "metadata":
            scan = REGEX_REFRESH in (c.event.get("message") or "")
            since = self._last_regex_refresh(b) if scan else prev
            if self._topic_or_broker(prev, t) or (since < prev and self._regex_brought(since, t)):
                return None
            if scan and (len(b.causes) > 1 or self._scan_saw_new_topics(c) or
                         self._any_subscription_change(prev, t) or self._refresh_pending(b)):
                # a scan whose result changed nothing logs no epoch of its own, so its line goes to the next epoch,
                # whose cause is then its other line or an unstated one; a scan of more topics than the last one
                # saw is the coordinator's image gaining a topic (any topic created in the cluster is rescanned)
                return None
            if scan:
                return (f"no topic grew, no broker event or fault happened and no member changed its subscription "
                        f"since {_at(self.tl, prev)}, no member brought a new regex since the last refresh "
                        f"({_at(self.tl, since)}), and the scan counted no more topics than the previous one")
            return f"no topic grew, no broker event or fault happened since {_at(self.tl, prev)}"
        if c.kind == "unstated":
            if (self._topic_or_broker(prev, t) or self._any_subscription_change(prev, t) or self._refresh_pending(b)
                    or self._topics_appeared(b)):
                return None
            return (f"the coordinator logged no reason, and no member changed its subscription, no topic grew, no "
                    f"regex refresh was pending, the subscribed topics were already in the coordinator's metadata "
                    f"and no broker event or fault happened since {_at(self.tl, prev)}")
        if c.kind == "join":
            return self._join(c, t)
        if c.kind == "downgrade":
            if self.causes.within(prev, t, kinds=DEPARTURES):
                return None
            return (f"the coordinator converted the group to the classic protocol for a member departing "
                    f"({c.client_reason.rstrip('.')}), but no member left, stopped, was killed, expired or was fenced "
                    f"since {_at(self.tl, prev)}")
        xs = self.ids.who(c)
        if c.kind in ("expire", "fence") or (c.kind == "leave" and not c.instance_id):
            self.ids.forget(c.member_id)  # a static member that left temporarily keeps its place (and its id)
        whys = []
        for x in sorted(xs):
            life = _life(self.tl, x, t)
            why = f"{x} was not running then" if life is None else getattr(self, f"_{c.kind}")(x, life, c, prev, t)
            if why is None:
                return None
            whys.append(why)
        if not whys:
            return f"no member was running then (member id {c.member_id})"
        if untold := [w for w in whys if w.startswith("?")]:
            return untold[0]  # a candidate's bound is unknown: not a verdict on it
        return "; ".join(whys) if len(whys) == 1 else f"it may be any of {', '.join(sorted(xs))}: " + "; ".join(whys)

    def _join(self, c: Cause, t: float) -> str | None:
        x = self.ids.direct(c)
        known = c.member_id in self.ids.live
        xs = self.ids.who(c)
        if not xs and x is None and not known and (anew := self._lost_their_ids(t)):
            # a client that lost its membership joins again with no id; the coordinator names a new one (a classic
            # member of a consumer group: not its client's), its old id still in the group until it expires
            self.ids.live[c.member_id] = frozenset(anew)
            self.ids.first.setdefault(c.member_id, c.event["mono"])
            return None
        if not xs:
            return (f"member id {c.member_id} joined while every running member held an id in the group and none had "
                    f"lost it")
        if x is None or known:
            return None  # a new id taken up by a member that held none, or the second half of a join (KIP-394)
        old = self.ids.held(x, c.member_id)
        life = _life(self.tl, x, t)
        if old is None or life is None:
            return None
        if self._lost_membership(x, max(life.start, self.ids.first.get(old, life.start)), t):
            self.ids.forget(old)
            return None
        return (f"{x} joined again (member id {c.member_id}) while its member id {old} was still in the group, and "
                f"nothing since made it lose its membership (no lost, error, leave, expiry, stall or fault)")
    def _lost_their_ids(self, t: float) -> set[str]:
        """The members running at t that hold an id alone in the group and lost their membership since it was first
        named (a `lost`, an error, a leave, an expiry, a stall or a fault)."""
        out = set()
        for i, s in self.ids.live.items():
            life = _life(self.tl, next(iter(s)), t) if len(s) == 1 else None
            if life is not None and self._lost_membership(life.member, max(life.start, self.ids.first.get(
                    i, life.start)), t):
                out.add(life.member)
        return out

    def _leave(self, x, life, c: Cause, prev: float, t: float) -> str | None:
        if life.end <= t or self.tl.shutdown_start(life) <= t or self._stalled(x, life.start, t) or \
                self._resubscribed(x, life.start, t):
            return None
        return f"{x} left the group while it ran on (no stop, stall or subscription change since its start)"

    def _expire(self, x, life, c: Cause, prev: float, t: float) -> str | None:
        try:
            session = member_settings(self.tl, x, min(t, life.end) - 1e-6)
        except MissingSetting as e:
            return f"?{x}'s session timeout is unknown ({e})"
        since = t - session.session_timeout_s - CLOCK_SLACK_S
        if life.exit_event is not None and life.end <= t or self._stalled(x, life.start, t) or \
                self.causes.touching(x, since, t) or self._broker_trouble(since, t):
            return None
        return (f"{x} was alive, untouched by any fault and polling, with no broker event in its "
                f"{session.session()} before it")

    def _fence(self, x, life, c: Cause, prev: float, t: float) -> str | None:
        """Fenced for not revoking within its rebalance timeout (max.poll.interval.ms, as its start recorded it)."""
        try:
            ms = member_settings(self.tl, x, min(t, life.end) - 1e-6)
        except MissingSetting as e:
            return f"?{x}'s rebalance timeout is unknown ({e})"
        # its transition began with the epoch after the one it failed to move from (the line says which)
        asked = [b.mono for b in self.seen if c.client_reason.isdigit() and b.number == int(c.client_reason) + 1
                 and b.protocol == "consumer" and b.mono <= t]
        since = min(asked[-1] if asked else t, t - ms.max_poll_s) - CLOCK_SLACK_S
        faults = self.causes.touching(x, since, t)
        if life.exit_event is not None and life.end <= t or self._stalled(x, life.start, t) or \
                self._broker_trouble(since, t) or revoke_wait_s(self.tl, life) >= ms.max_poll_s:
            return None
        if faults and (why := self._recovered(x, ms, faults, t)) is None:
            return None
        timeout = (f"its transition from epoch {c.client_reason}, and its rebalance timeout {ms.max_poll_s:g}s, "
                   f"{'max.poll.interval.ms of its client as it started' if ms.recorded else ms.source}")
        if faults:
            return f"{x} was alive, polling and not told to wait in its revoke handler ({timeout}); {why}"
        return (f"{x} was alive, untouched by any fault, polling and not told to wait in its revoke handler, with no "
                f"broker event since {_at(self.tl, since)} ({timeout})")

    def _recovered(self, x: str, ms, faults: list, t: float) -> str | None:
        """Why the faults on x did not keep it from revoking before its fence at t, or None when they may have. Only
        request faults are read so: after a lost, refused or late answer a client sends a full heartbeat (KIP-848),
        whose answer gives its assignment again, and a member the coordinator did not expire heartbeated within its
        session timeout; so a request fault that ended more than the session timeout and one heartbeat interval
        (the group's) before the fence left the member time to learn what to revoke. Any other fault on x may."""
        if any(f.kind != "request" for f in faults) or ms.hb_s is None:
            return None
        last = max(f.end for f in faults)
        room = ms.session_timeout_s + ms.hb_s
        if last + room + CLOCK_SLACK_S >= t:
            return None
        return (f"the last request fault on it ended {_at(self.tl, last)}, more than its session timeout "
                f"{ms.session_timeout_s:g}s and heartbeat interval {ms.hb_s:g}s ({ms.source}) before the fence: a "
                f"client sends a full heartbeat after a lost or refused answer and is given its assignment again")

    def _rejoin(self, x, life, c: Cause, prev: float, t: float) -> str | None:
        if COOPERATIVE_ROUND in c.client_reason or STREAMS_FOLLOWUP in c.client_reason:
            return None
        if self._resubscribed(x, prev, t) or self._topic_or_broker(prev, t, brokers_too=False):
            return None
        if CACHED_METADATA in c.client_reason and self._metadata_moved(x, life, t):
            return None
        # each member's client notices added partitions at its own next metadata refresh, which may come after a
        # generation another member's rejoin for them started: growth within one refresh of the member's before t
        if self._topic_or_broker(t - member_refresh_s(self.tl, x, t)[0], t, brokers_too=False) or \
                topics_noticed.rejoin_cause(self.tl, x, t) is not None:
            return None  # a topic its subscription matches created or deleted, noticed at its own refresh too
        if any(prev <= e["mono"] <= t for _, e in self.tl.member_events(x, {"revoked", "lost"})):
            return None  # the cooperative second round, as librdkafka asks for it without a reason
        if life.instance_id and prev <= life.start <= t:
            return None
        return (f"{x} rejoined a stable group ({c.client_reason or 'no client reason'}) with no subscription change, "
                f"topic growth, revocation or restart of its own since {_at(self.tl, prev)}, and no topic growth, "
                f"nor topic it subscribes to created or deleted, within its metadata refresh ({member_refresh_s(self.tl, x, t)[0]:g}s) before")

    def _metadata_moved(self, x: str, life, t: float) -> bool:
        """Whether the metadata the Java client x took when it last performed an assignment (in this life) may have
        changed by t: a member's subscription changed or a topic grew since. The client keeps that snapshot after
        it stops leading, and after an unsubscribe and subscribe too, and rejoins as soon as its metadata no longer
        matches it (`ConsumerCoordinator.rejoinNeededOrPending`), so the change may precede the previous
        generation."""
        led = [e["mono"] for e in self.lines if life.start <= e["mono"] <= t
               and (m := LEADER_ASSIGNED.search(e.get("message") or "")) and m["g"] == self.group
               and client_of(m["m"]) == x]
        return bool(led) and (self._resubscribed(None, led[-1], t) or
                              self._topic_or_broker(led[-1], t, brokers_too=False))

    def _subscription(self, x, life, c: Cause, prev: float, t: float) -> str | None:
        if self._resubscribed(x, prev, t) or prev <= life.start <= t:
            return None
        return f"{x} applied no subscription change since {_at(self.tl, prev)}"

    def _last_regex_refresh(self, b: Bump) -> float:
        """When the coordinator last refreshed the group's regexes before `b` (the run's start if never)."""
        before = [x.mono for x in self.seen if x.mono < b.mono and any(
            REGEX_REFRESH in (c.event.get("message") or "") for c in x.causes)]
        return before[-1] if before else self.tl.start

    def _scan_saw_new_topics(self, c: Cause) -> bool:
        """Whether this scan line counts more topics than the coordinator's previous scan of the group did."""
        counts = [int(m[1]) for e in self.lines if e["mono"] <= c.event["mono"] and e is not c.event
                  and (m := SCANNED.search(e.get("message") or ""))]
        now = SCANNED.search(c.event.get("message") or "")
        return bool(counts and now) and int(now[1]) > counts[-1]

    def _topics_appeared(self, b: Bump) -> bool:
        """Whether the epoch before `b` was bumped with metadata hash 0 and `b` with another: the coordinator's
        metadata image held none of the subscribed topics and now holds them (members that join just after the run
        created its topic can reach the coordinator before its broker has applied the topic: the broker creates the
        new partitions' local logs first, then hands the image to the coordinator), and it bumps the epoch for the
        new hash without a line of its own."""
        before = [x for x in self.seen if x.mono <= b.mono and x is not b and x.protocol == "consumer"]
        return bool(before) and metadata_hash(before[-1]) == 0 and metadata_hash(b) not in (None, 0)

    def _refresh_pending(self, b: Bump) -> bool:
        """Whether a regex refresh was logged that no epoch before `b` applied: the coordinator scans the topics off
        its own thread and logs the scan there, then writes the result as a new epoch after the requests queued
        before it; an epoch such a request bumped takes the scan line as its own cause (more than one can come
        between: two members joining), and the epoch that applies the scan has no line. So a scan line on an epoch
        with other causes is pending until an epoch with no stated cause (the one applying it), or until the next
        scan line (the coordinator schedules no scan while one is unwritten); a scan line alone on its epoch was
        that epoch's own."""
        pending = False
        for x in self.seen:
            if x.mono > b.mono or x is b:
                break
            scans = sum(REGEX_REFRESH in (c.event.get("message") or "") for c in x.causes)
            if scans:
                pending = len(x.causes) > scans
            elif all(c.kind == "unstated" for c in x.causes):
                pending = False
        return pending

    def _regex_brought(self, since: float, t: float) -> bool:
        """Whether a member started or changed its subscription in (since, t] to one that holds a regex (`^...`)."""
        return any(e["type"] in ("started", "control") and since < e["mono"] <= t and any(
            str(x).startswith("^") for x in e.get("subscription") or ()) for _, e in self.tl.control)

    # -- what the history holds
    def _lost_membership(self, x: str, since: float, t: float) -> bool:
        if any(since <= e["mono"] <= t for _, e in self.tl.member_events(x, {"lost", "error"})):
            return True
        if self._stalled(x, since, t) or self.causes.touching(x, since, t):
            return True
        if any(since <= b.mono <= t and c.kind in ("expire", "leave") and self.ids.direct(c) == x
               for b in self.seen for c in b.causes):
            return True
        return any(since <= e["mono"] <= t and (r := REMOVED.search(e.get("message") or "")) and client_of(r["m"]) == x
                   for e in self.lines)

    def _stalled(self, x: str, since: float, t: float) -> bool:
        return any(since <= at <= t for at in self.stalls.get(x, ()))

    def _resubscribed(self, x: str | None, since: float, t: float) -> bool:
        """Whether x (None: any member) applied a subscription control within [since, t]: its `control` event at
        or after `since`, for a change the harness asked for by `t`. A member writes that event once its change is
        made, and its client may have left, rejoined or sent its new subscription before: the change's
        `subscription_change` fault brackets the asking and the answer, so a line within it is the change's."""
        return any((x is None or m == x) and at >= since and began <= t for m, began, at in self.resubscriptions)

    def _any_subscription_change(self, since: float, t: float) -> bool:
        return self._resubscribed(None, since, t)

    def _topic_or_broker(self, since: float, t: float, brokers_too: bool = True) -> bool:
        if any(since <= g <= t for g in growth_times(self.tl)):  # from the action's start: the partitions exist then
            return True
        return brokers_too and self._broker_trouble(since, t)

    def _broker_trouble(self, since: float, t: float) -> bool:
        """A broker event in [since, t], or a fault that lists no member (the brokers', the harness's group steps')
        active within (since, t)."""
        return _any_within(self.broker_events, since, t) or bool(self.causes.unlisted_faults(since, t))


def _any_within(times: list[float], since: float, t: float) -> bool:
    """Whether a time of the sorted `times` lies in [since, t]."""
    i = bisect_left(times, since)
    return i < len(times) and times[i] <= t


def _life(tl, x: str, t: float):
    ls = [lf for lf in tl.lives.get(x, ()) if lf.start <= t]
    return ls[-1] if ls else None


def _what(b: Bump) -> str:
    return f"generation {b.number}" if b.protocol == "classic" else f"group epoch {b.number}"


def _at(tl, t: float) -> str:
    return f"at {t - tl.start:.1f}s"


def _quote(e: dict) -> str:
    msg = e.get("message") or ""
    return f"broker {e.get('broker')}: \"{msg[msg.find(']') + 1:].strip()[:160]}\""
