"""Static membership (KIP-345, and KIP-848's static members): the coordinator keeps a departed static member's
partitions for exactly its session timeout.

A *departure* is a life X of a member with an `instance_id` that ended with `member_exit` how="graceful" or
"kill" (a static member sends no LeaveGroup either way). S is X's own session timeout, the one it left with
(`settings.member_settings` at its exit: its client's `session.timeout.ms` under the classic protocols, the
group's under the consumer protocol, as recorded in the history), and hb its heartbeat interval. X's
partitions are what X held when its shutdown began (its trailing `revoked`/`stopped` events; closing a
consumer revokes locally even when the static member stays in the group), or at its exit for a kill. Y is
the next life with the same `instance_id`.

- **Restart** (Y starts within S of X's exit): Y's partitions, the union of its `assigned` events from its
  first one until `static_grace_s` later (or until its first `revoked`/`lost`, if sooner), must equal X's.
  A Y never assigned anything is a violation once the history goes on for more than S after Y started (else
  `unknown`), unless X held nothing. No *other* member may have an `assigned`/`revoked`/`lost` event from X's
  shutdown start to Y's first `assigned` + `static_grace_s` (the shutdown events and returning assignments
  of other restarts, a rolling bounce, are not counted against it).
- **Expulsion** (Y starts later than S after X's exit, or never): not before S, and not long after it.
  - *Too early*: another member is assigned one of X's partitions before X's exit + S - hb (X's last
    heartbeat may have been up to hb before its exit), while Y has not started.
  - *Too late*: Y has not started by X's exit + S + `static_grace_s` + 2 hb (the coordinator's expiry, then
    a heartbeat for the others to hear of the rebalance and one for its round), the history goes on past
    that, and one of X's partitions was not assigned to another member by then.

Departures in the run's final teardown (after the workload end W, see `timeline`) are not judged. Every
topic of the run is judged (partitions named "topic-p" when there are several). `skipped` when no
static member departed. Tolerances: `static_grace_s` (how long the returning assignment may take to arrive
in pieces; also the slack after the expiry); hb (from the settings). Measurements: `restarts`,
`late_restarts` (expulsions), `max_return_s` (Y's first `assigned` - X's exit), `session_timeouts_s`
(instance -> the S it was judged with).
"""
from __future__ import annotations

from harness.record.history import History
from harness.invariants import protocols, timeline
from harness.invariants.core import CheckSettings, Verdict, empty, secs, verdict, witness
from harness.invariants.settings import member_settings

NAME = "static_membership"
OWN = timeline.OWNERSHIP_TYPES
DEPARTURES = ("graceful", "kill")


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
    m = {"restarts": len(pairs), "late_restarts": len(late), "session_timeouts_s": timeouts}
    if not pairs and not late:
        return verdict(NAME, "skipped", "no static member departed", (), m)

    problems, wits, unknown, returns = [], [], [], []
    own: set[int] = set()  # ids of the shutdown and returning events of every restart
    rows = [_restart(tl, settings, x, y, ms, own) for x, y, ms in pairs]
    for row in rows:
        _judge_restart(tl, settings, row, own, problems, wits, unknown, returns)
    for x, y, ms in late:
        _judge_expulsion(tl, settings, x, y, ms, problems, wits, unknown)

    m["max_return_s"] = secs(max(returns)) if returns else None
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return verdict(NAME, "invalid", problems[0] + more, wits, m)
    if unknown:
        return verdict(NAME, "unknown", unknown[0], (), m)
    said = [f"{len(rows)} static restart{'s' if len(rows) != 1 else ''} got their partitions back without a "
            f"rebalance"] if rows else []
    if rows:
        longest = max(rows, key=lambda r: r[1].start - r[0].end)
        said[0] += (f" (longest absence {longest[1].start - longest[0].end:.1f}s of {longest[0].instance_id}, "
                    f"within its {longest[2].session()})")
    if late:
        said.append(f"{len(late)} static departure{'s' if len(late) != 1 else ''} past the session timeout: "
                    f"no partition moved before it, none kept long after it")
    return verdict(NAME, "valid", "; ".join(said), (), m)


def _departures(tl, lives: list) -> tuple[list, list, dict[str, float]]:
    """The static departures judged: (restarts, expulsions), each (X, Y or None, X's settings at its exit), and
    each instance's session timeout."""
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
        if y is not None and y.start - x.end <= ms.session_timeout_s:
            pairs.append((x, y, ms))
        else:
            late.append((x, y, ms))
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
            problems.append(f"{e.get('member')} had a {e['type']} at {e['mono']:.3f}, "
                            f"{e['mono'] - x.end:.1f}s into the static restart of {who}")
            wits.append(witness(e, f"a rebalance on another member during the static restart of {who}"))


def _held(tl, x, own: set[int]) -> tuple[float, set[int]]:
    """(when X's shutdown began, the partitions X held then); its shutdown events go into `own`."""
    sd = tl.shutdown_start(x)
    for _, e in tl.member_events(x.member, {"revoked", "stopped"}):
        if sd <= e["mono"] <= x.end:
            own.add(id(e))
    held = {o.partition for o in tl.ownerships if o.member == x.member and o.start < sd <= o.end}
    return sd, held


def _judge_expulsion(tl, settings, x, y, ms, problems: list, wits: list, unknown: list) -> None:
    """A static member away for longer than its session timeout: its partitions move after S, not before."""
    S, hb = ms.session_timeout_s, ms.heartbeat_s
    _, held = _held(tl, x, set())
    if not held:
        return
    back = y.start if y is not None else timeline.INF
    who = f"{x.instance_id} ({x.member}, {ms.session()})"
    earliest, latest = x.end + S - hb, x.end + S + settings.static_grace_s + 2 * hb
    moved: dict[int, float] = {}
    for o in sorted(tl.ownerships, key=lambda o: o.start):
        if o.member == x.member or o.partition not in held or o.start < x.end or o.start >= back:
            continue
        if o.partition in moved:
            continue
        moved[o.partition] = o.start
        if o.start < earliest:
            problems.append(f"partition {tl.name(o.partition)} of static member {who} was given to {o.member} "
                            f"{o.start - x.end:.1f}s after it left, before its session timeout let the "
                            f"coordinator expel it ({S:g}s less a {hb:g}s heartbeat)")
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
    if kept:
        problems.append(f"static member {who} was away {min(back, horizon) - x.end:.1f}s, yet its partitions "
                        f"{tl.names(kept)} were not given to another member within {latest - x.end:.1f}s of its "
                        f"departure (its session timeout {S:g}s + {settings.static_grace_s:g}s + 2 heartbeats of "
                        f"{hb:g}s)")
        wits.append(witness(x.exit_event, f"{x.member} left holding {tl.names(held)}; its {S:g}s session "
                                          f"timeout should have expelled it"))
        if y is not None:
            wits.append(witness(y.start_event, f"{y.member} came back {y.start - x.end:.1f}s later"))
