"""Static membership: a static member restarted within its session timeout gets its partitions back
and no other member rebalances.

A *restart* is a life X of a member with an `instance_id` that ended with `member_exit` how="graceful",
followed by the next life Y with the same `instance_id` (a new process, so a new member id) starting
within `session_timeout_s` of X's exit. For each restart:

- X's partitions: what X held just before its shutdown began (its trailing `revoked`/`stopped`
  events within a session timeout before the exit and after its last `assigned`: closing a consumer
  revokes its partitions locally even when the static member does not leave the group).
- Y's partitions: the union of Y's `assigned` events from its first one until `static_grace_s` later
  (or until Y's first `revoked`/`lost`, if sooner).
- They must be equal. A Y never assigned anything is a violation once the history goes on for more
  than a session timeout after Y started (else `unknown`), unless X held nothing.
- No *other* member may have an `assigned`/`revoked`/`lost` event from X's shutdown start to Y's first
  `assigned` + `static_grace_s` (to the end of the history when Y never got one). The shutdown events
  and the returning assignments of other restarts (a rolling bounce) are not counted against it.

Every topic of the run is judged (partitions named "topic-p" when there are several).
`skipped` when no restart happened (a restart later than the session timeout is no static restart:
the group rightly rebalances). Tolerance: `static_grace_s`, how long the returning assignment may
take to arrive in pieces. Measurements: `restarts`, `late_restarts`, `max_return_s` (Y's first
`assigned` - X's exit).
"""
from __future__ import annotations

from harness.history import History
from harness.invariants import protocols, timeline
from harness.invariants.core import CheckSettings, Verdict, empty, secs, verdict, witness

NAME = "static_membership"
OWN = timeline.OWNERSHIP_TYPES


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge every static restart within the session timeout."""
    if (v := empty(NAME, history)) is not None:
        return v
    rules = protocols.rules_for(settings.protocol)
    if not rules.static_membership:
        return verdict(NAME, "skipped", f"{settings.protocol} has no static membership")
    tl = timeline.build(history, settings)
    lives = sorted((lf for ls in tl.lives.values() for lf in ls), key=lambda lf: lf.start)
    pairs, late = [], 0
    for x in lives:
        if not x.instance_id or x.how != "graceful" or x.exit_event is None:
            continue
        y = next((y for y in lives if y is not x and y.instance_id == x.instance_id and y.start >= x.end), None)
        if y is None:
            continue
        if y.start - x.end <= settings.session_timeout_s:
            pairs.append((x, y))
        else:
            late += 1
    m = {"restarts": len(pairs), "late_restarts": late}
    if not pairs:
        return verdict(NAME, "skipped", "no static member restarted within the session timeout", (), m)

    own: set[int] = set()  # ids of the shutdown and returning events of every restart
    rows = []
    for x, y in pairs:
        sd = tl.shutdown_start(x)
        for _, e in tl.member_events(x.member, {"revoked", "stopped"}):
            if sd <= e["mono"] <= x.end:
                own.add(id(e))
        held = {o.partition for o in tl.ownerships if o.member == x.member and o.start < sd <= o.end}
        ys = [e for _, e in tl.member_events(y.member, OWN) if e["mono"] >= y.start and tl.event_partitions(e)]
        first = next((e for e in ys if e["type"] == "assigned"), None)
        got = None
        if first is not None:
            stop = next((e["mono"] for e in ys if e["type"] != "assigned" and e["mono"] > first["mono"]), None)
            upto = min(first["mono"] + settings.static_grace_s, stop if stop is not None else timeline.INF)
            back = [e for e in ys if e["type"] == "assigned" and first["mono"] <= e["mono"] <= upto]
            got = {p for e in back for p in tl.event_partitions(e)}
            own.update(id(e) for e in back)
        rows.append((x, y, sd, held, first, got))

    problems, wits, unknown = [], [], []
    returns = []
    for x, y, sd, held, first, got in rows:
        who = f"{x.instance_id} ({x.member} -> {y.member})"
        if first is None:
            if held and tl.end - y.start > settings.session_timeout_s:
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
                problems.append(f"{e.get('member')} had a {e['type']} at {e['mono']:.3f} during the static "
                                f"restart of {who}")
                wits.append(witness(e, f"a rebalance on another member during the static restart of {who}"))
    m["max_return_s"] = secs(max(returns)) if returns else None
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return verdict(NAME, "invalid", problems[0] + more, wits, m)
    if unknown:
        return verdict(NAME, "unknown", unknown[0], (), m)
    return verdict(NAME, "valid", f"{len(rows)} static restarts got their partitions back without a rebalance",
                   (), m)
