"""Static membership (KIP-345, and KIP-848's static members): the coordinator keeps a departed static member's
partitions for exactly its session timeout.

A *departure* is a life X of a member with an `instance_id` that ended with `member_exit` how="graceful" or
"kill" (a static member sends no LeaveGroup either way; under the consumer protocol a graceful close sends a
heartbeat with member epoch -2, "temporarily left"). S is X's own session timeout, the one it left with
(`settings.member_settings` at its exit: its client's `session.timeout.ms` under the classic protocols, the
group's under the consumer protocol, as recorded in the history), and hb its heartbeat interval. X's
partitions are what X held when its shutdown began (its trailing `revoked`/`stopped` events; closing a
consumer revokes locally even when the static member stays in the group), or at its exit for a kill. Y is
the next life with the same `instance_id`.

- **Restart** (Y starts within S of X's exit), unless Y's return changed the assignor in force (its members' own
  recorded settings, `assignors.in_force`, before X's shutdown and at Y's first assignment: a rolled
  `group.remote.assignor` tips the most-named one: an `assignor` cause, `causes`; the new assignor's assignment is a cause of its own, judged by
  `assignor_shape`; counted `assignor_changed`): Y's partitions, the union of its `assigned` events from its
  first one until `static_grace_s` later (or until its first `revoked`/`lost`, if sooner), must equal X's.
  A Y never assigned anything is a violation once the history goes on for more than S after Y started (else
  `unknown`), unless X held nothing. No *other* member may have an `assigned`/`revoked`/`lost` event from X's
  shutdown start to Y's first `assigned` + `static_grace_s` (the shutdown events and returning assignments
  of other restarts, a rolling bounce, are not counted against it). A restart within whose window (X's shutdown
  start to Y's first `assigned` + `static_grace_s`) another cause of a rebalance comes (`causes`, `REBALANCING`: a
  member not restarting joins, leaves, is killed, expires, is fenced or stalls, changes its subscription, or
  partitions are added) is a transition of their union, which may move its partitions: not held to it (counted
  `other_causes`, the cause named).
- **Killed under the consumer protocol**: no restart, whenever Y starts. KIP-848 hands a static member's
  assignment to a new instance only when the old one left with epoch -2; a new instance that comes while the
  old member is still in the group (its session not expired) is refused with UNRELEASED_INSTANCE_ID ("The
  instance ID is still used by another member in the consumer group. That member must leave first.";
  Kafka's GroupMetadataManager, `throwIfInstanceIdIsUnreleased`), which librdkafka and the Java client both
  raise as a fatal error. So X is judged as an expulsion, and Y like any other member: it may be given X's
  partitions after the expiry, not before. The broker's refusal, when its log holds it, is named in the
  message.
- **Expulsion** (Y starts later than S after X's exit, or never; or X killed under the consumer protocol): not
  before S, and not long after it.
  - *Too early*: another member is assigned one of X's partitions before X's shutdown start + S - hb (the
    coordinator's session timer runs from X's last heartbeat, which may have come up to hb before its
    shutdown began: a graceful close sends its leave, if any, at the start of the shutdown, and a kill is its
    own shutdown), while Y has not started (a killed consumer-protocol X: whether or not it has).
  - *Too late*: Y has not started by X's exit + S + `static_grace_s` + 2 hb (the coordinator's expiry, then
    a heartbeat for the others to hear of the rebalance and one for its round), the history goes on past
    that, and one of X's partitions was not assigned to another member by then, while some other member was
    alive then (a group with nobody left is `coverage_liveness`'s to judge).

Departures in the run's final teardown (after the workload end W, see `timeline`) are not judged. Every
topic of the run is judged (partitions named "topic-p" when there are several). `skipped` when no
static member departed. Tolerances: `static_grace_s` (how long the returning assignment may take to arrive
in pieces; also the slack after the expiry); hb (from the settings). Measurements: `restarts`,
`late_restarts` (expulsions), `held_until_expiry` (of those, consumer-protocol kills), `max_return_s` (Y's
first `assigned` - X's exit), `session_timeouts_s` (instance -> the S it was judged with).
"""
from __future__ import annotations

from harness.record.history import History
from harness.invariants import brokers, causes, protocols, timeline
from harness.invariants.core import CheckSettings, Verdict, empty, secs, verdict, witness
from harness.invariants.settings import member_settings

NAME = "static_membership"
OWN = timeline.OWNERSHIP_TYPES
DEPARTURES = ("graceful", "kill")
#: the group coordinator refusing a new instance of a static member whose old one has not left (KIP-848)
UNRELEASED = "cannot join the group because the instance id is"


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge every static departure: restarts within the member's own session timeout, expulsions after it."""
    if (v := empty(NAME, history)) is not None:
        return v
    rules = protocols.rules_for(settings.protocol)
    if not rules.static_membership:
        return verdict(NAME, "skipped", f"{settings.protocol} has no static membership")
    tl = timeline.build(history, settings)
    lives = sorted((lf for ls in tl.lives.values() for lf in ls), key=lambda lf: lf.start)
    pairs, late, timeouts = _departures(tl, lives)
    m = {"restarts": len(pairs), "late_restarts": len(late), "held_until_expiry": sum(1 for *_, h in late if h),
         "session_timeouts_s": timeouts}
    if not pairs and not late:
        return verdict(NAME, "skipped", "no static member departed", (), m)

    problems, wits, unknown, returns = [], [], [], []
    own: set[int] = set()  # ids of the shutdown and returning events of every restart
    rows = [_restart(tl, settings, x, y, ms, own) for x, y, ms in pairs]
    changed = []  # restarts whose return changed the assignor in force: a cause of their moves, not judged
    restarting = {lf.member for x, y, _ in pairs for lf in (x, y)}
    beside = []  # restarts with another cause of a rebalance in their window: what it moved is that cause's
    for row in rows:
        if (why := _assignor_change(tl, row)) is not None:
            changed.append(why)
            continue
        if (other := _other_cause(tl, settings, row, restarting)) is not None:
            beside.append(other)
            continue
        _judge_restart(tl, settings, row, own, problems, wits, unknown, returns)
    m["assignor_changed"], m["other_causes"] = len(changed), len(beside)
    for x, y, ms, held in late:
        _judge_expulsion(tl, settings, x, y, ms, held, problems, wits, unknown)

    m["max_return_s"] = secs(max(returns)) if returns else None
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return verdict(NAME, "invalid", problems[0] + more, wits, m)
    if unknown:
        return verdict(NAME, "unknown", unknown[0], (), m)
    judged = len(rows) - len(changed) - len(beside)
    said = [f"{judged} static restart{'s' if judged != 1 else ''} got their partitions back without a "
            f"rebalance"] if judged else []
    if judged:
        longest = max(rows, key=lambda r: r[1].start - r[0].end)
        said[0] += (f" (longest absence {longest[1].start - longest[0].end:.1f}s of {longest[0].instance_id}, "
                    f"within its {longest[2].session()})")
    if changed:
        said.append(f"{len(changed)} not held to it, their return changing the assignor in force (a cause: the new "
                    f"assignor's assignment, which assignor_shape judges): " + "; ".join(changed[:3]))
    if beside:
        said.append(f"{len(beside)} not held to it, another cause of a rebalance coming within: " + "; ".join(beside[:3]))
    if late:
        said.append(f"{len(late)} static departure{'s' if len(late) != 1 else ''} past the session timeout"
                    f"{_held_said(history, late)}: no partition moved before it, none kept long after it")
    return verdict(NAME, "valid", "; ".join(said), (), m)


def _held_said(history: History, late: list) -> str:
    """How many expulsions were consumer-protocol kills, with the broker's refusal of a new instance if it logged
    one (KIP-848: the instance id stays with the old member until its session expires)."""
    held = [(x, y) for x, y, _, h in late if h]
    if not held:
        return ""
    iids = {x.instance_id for x, _ in held}
    refused = next((e for e in brokers.said(history) if UNRELEASED in e.get("message", "")
                    and any(i in e.get("message", "") for i in iids)), None)
    came = [y.member for _, y in held if y is not None]
    said = (f" ({len(held)} killed under the consumer protocol: its instance id stays with the old member until "
            f"its session expires (KIP-848)")
    if came:
        said += f"; a new instance ({', '.join(came)}) is refused meanwhile"
    if refused is not None:
        said += f"; broker {refused.get('broker')} said: {refused['message'][:300]}"
    return said + ")"


def _departures(tl, lives: list) -> tuple[list, list, dict[str, float]]:
    """The static departures judged: restarts (X, Y, X's settings at its exit), expulsions (the same and whether
    X's instance id stayed with it until its session expired: a kill under the consumer protocol), and each
    instance's session timeout."""
    pairs, late = [], []
    timeouts: dict[str, float] = {}
    for x in lives:
        if not x.instance_id or x.how not in DEPARTURES or x.exit_event is None:
            continue
        if tl.workload_end is not None and x.end > tl.workload_end:
            continue  # the run's final teardown: nobody is expected back
        ms = member_settings(tl, x.member, x.end - 1e-6)
        timeouts[x.instance_id] = ms.session_timeout_s
        y = next((y for y in lives if y is not x and y.instance_id == x.instance_id and y.start >= x.end), None)
        held = x.how == "kill" and ms.group_protocol == "consumer"  # left no epoch -2: not released (KIP-848)
        if y is not None and y.start - x.end <= ms.session_timeout_s and not held:
            pairs.append((x, y, ms))
        else:
            late.append((x, y, ms, held))
    return pairs, late, timeouts


def _restart(tl, settings: CheckSettings, x, y, ms, own: set[int]) -> tuple:
    """A restart's facts: (X, Y, settings, X's shutdown start, what X held, Y's first `assigned` or None, what Y
    got back); the shutdown and returning events go into `own`."""
    sd, held = _held(tl, x, own)
    ys = [e for _, e in tl.member_events(y.member, OWN) if e["mono"] >= y.start and tl.event_partitions(e)]
    first = next((e for e in ys if e["type"] == "assigned"), None)
    got = None
    if first is not None:
        stop = next((e["mono"] for e in ys if e["type"] != "assigned" and e["mono"] > first["mono"]), None)
        upto = min(first["mono"] + settings.static_grace_s, stop if stop is not None else timeline.INF)
        back = [e for e in ys if e["type"] == "assigned" and first["mono"] <= e["mono"] <= upto]
        got = {p for e in back for p in tl.event_partitions(e)}
        own.update(id(e) for e in back)
    return x, y, ms, sd, held, first, got


def _judge_restart(tl, settings: CheckSettings, row: tuple, own: set[int], problems: list, wits: list,
                   unknown: list, returns: list) -> None:
    """Judge one restart: Y got back what X held, and no other member rebalanced meanwhile."""
    x, y, ms, sd, held, first, got = row
    who = f"{x.instance_id} ({x.member} -> {y.member}, back after {y.start - x.end:.1f}s, {ms.session()})"
    if first is None:
        if held and tl.end - y.start > ms.session_timeout_s:
            problems.append(f"{who} was not given its partitions {tl.names(held)} back")
            wits += [witness(x.exit_event, f"{x.member} exited holding {tl.names(held)}"),
                     witness(y.start_event, f"{y.member} restarted and was never assigned anything")]
        elif held:
            unknown.append(f"{who}: the history ends before its partitions came back")
    else:
        returns.append(first["mono"] - x.end)
        if got != held:
            problems.append(f"{who} got {tl.names(got)} back, held {tl.names(held)}")
            wits += [witness(x.exit_event, f"{x.member} held {tl.names(held)} before it stopped"),
                     witness(first, f"{y.member} (same instance) was given {tl.names(got)}")]
    w_end = first["mono"] + settings.static_grace_s if first is not None else tl.end
    for _, e in tl.control:
        if e["type"] in OWN and sd <= e["mono"] <= w_end and e.get("member") not in (x.member, y.member) \
                and id(e) not in own and tl.event_partitions(e):
            problems.append(f"{e.get('member')} had a {e['type']} at {e['mono'] - tl.start:.1f}s, "
                            f"{e['mono'] - x.end:.1f}s into the static restart of {who}")
            wits.append(witness(e, f"a rebalance on another member during the static restart of {who}"))


#: the causes (`causes`) that make the group rebalance whatever a static member does: a restart with one of them, of
#: a member not restarting, within its window is a transition of their union, in which its partitions may move
REBALANCING = ("join", "leave", "killed", "expire", "fenced", "stalled", "subscription", "partitions", "assignor",
               "topic")


def _other_cause(tl, settings: CheckSettings, row: tuple, restarting: set[str]) -> str | None:
    """The first cause of a rebalance, of a member not restarting (or of the topics), from X's shutdown start to Y's
    first assignment plus the grace (to the end when it had none), shown; None when there is none."""
    x, y, _, sd, _, first, _ = row
    w_end = first["mono"] + settings.static_grace_s if first is not None else tl.end
    for c in causes.build(tl).within(sd, w_end, REBALANCING):
        if c.kind == "expire" and c.unknown:
            continue  # an expiry whose end the history does not tell excuses nothing
        if (c.members and not c.members & restarting) or (c.kind in ("partitions", "topic") and not c.members):
            return f"{x.instance_id} ({x.member} -> {y.member}): {c.show(tl.start)}"
    return None


def _assignor_change(tl, row: tuple) -> str | None:
    """How the restart changed the assignor in force (its members' own recorded settings before X's shutdown and at
    Y's first assignment), or None (the same, or not to be told: then it is judged)."""
    x, y, _, sd, _, first, _ = row
    back = first["mono"] if first is not None else y.start
    c = causes.build(tl).assignor_change(tl.alive_members(sd, before=True), sd, tl.alive_members(back), back)
    return None if c is None else f"{x.instance_id} ({x.member} -> {y.member}): {c.detail}"


def _held(tl, x, own: set[int]) -> tuple[float, set[int]]:
    """(when X's shutdown began, the partitions X held then); its shutdown events go into `own`."""
    sd = tl.shutdown_start(x)
    for _, e in tl.member_events(x.member, {"revoked", "stopped"}):
        if sd <= e["mono"] <= x.end:
            own.add(id(e))
    held = {o.partition for o in tl.ownerships if o.member == x.member and o.start < sd <= o.end}
    return sd, held


def _judge_expulsion(tl, settings, x, y, ms, kept_id: bool, problems: list, wits: list, unknown: list) -> None:
    """A static member away for longer than its session timeout (or killed under the consumer protocol, its
    instance id kept until then, `kept_id`): its partitions move after S, not before."""
    S, hb = ms.session_timeout_s, ms.heartbeat_s
    sd, held = _held(tl, x, set())
    if not held:
        return
    back = y.start if y is not None and not kept_id else timeline.INF
    who = f"{x.instance_id} ({x.member}, {ms.session()})"
    earliest, latest = sd + S - hb, x.end + S + settings.static_grace_s + 2 * hb
    moved: dict[int, float] = {}
    for o in sorted(tl.ownerships, key=lambda o: o.start):
        if o.member == x.member or o.partition not in held or o.start < x.end or o.start >= back:
            continue
        if o.partition in moved:
            continue
        moved[o.partition] = o.start
        if o.start < earliest:
            problems.append(f"partition {tl.name(o.partition)} of static member {who} was given to {o.member} "
                            f"{o.start - x.end:.1f}s after it left ({o.start - sd:.1f}s after its shutdown began), "
                            f"before its session timeout let the coordinator expel it ({S:g}s less a {hb:g}s "
                            f"heartbeat, from its shutdown's start)")
            wits += [witness(x.exit_event, f"{x.member} left holding {tl.names(held)}"),
                     witness(o.start_event, f"given to {o.member} {o.start - x.end:.1f}s later, within {S:g}s")]
    if back <= latest:
        return  # it came back before the expiry's rebalance had to be over
    horizon = tl.workload_end if tl.workload_end is not None else tl.end
    if horizon <= latest:
        if set(held) - set(moved):
            unknown.append(f"{who}: the history ends {horizon - x.end:.1f}s after it left, before its expiry's "
                           f"rebalance was due ({latest - x.end:.1f}s)")
        return
    kept = sorted(p for p in held if moved.get(p, timeline.INF) > latest)
    if kept and not tl.alive_members(latest) - {x.member}:
        return  # nobody left to give them to (the new instance refused and gone, say): coverage's to judge
    if kept:
        problems.append(f"static member {who} was away {min(back, horizon) - x.end:.1f}s, yet its partitions "
                        f"{tl.names(kept)} were not given to another member within {latest - x.end:.1f}s of its "
                        f"departure (its session timeout {S:g}s + {settings.static_grace_s:g}s + 2 heartbeats of "
                        f"{hb:g}s)")
        wits.append(witness(x.exit_event, f"{x.member} left holding {tl.names(held)}; its {S:g}s session "
                                          f"timeout should have expelled it"))
        if y is not None:
            wits.append(witness(y.start_event, f"{y.member} came back {y.start - x.end:.1f}s later"))
