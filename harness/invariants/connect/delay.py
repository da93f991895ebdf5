"""9b. `connect_scheduled_delay` (KIP-415): a departed worker's connectors and tasks are not reassigned before
`scheduled.rebalance.max.delay.ms` has passed, and are once it has.

For each departure at t (its `member_exit`) of a worker that held units, before W: a held unit that starts on
another worker that was alive at t, before s + the delay - `CLOCK_SLACK_S`, is reassigned too early. s is the
earliest moment the leader can start the delay: connect-runtime's IncrementalCooperativeAssignor starts it (its
`scheduledRebalance`, the leader's clock then + the delay) when the leader computes an assignment that finds the
units lost, at the rebalance the departure causes, and reassigns them at the first rebalance at or after it. A
graceful worker leaves the group (its LeaveGroup) during its stop, after its `member_stop` and before its exit is
seen (its `member_exit` comes after the JVM's shutdown, possibly after the leader's rebalance), so s is its
`member_stop`; a killed worker is noticed a session timeout after its last heartbeat at the earliest (seconds
after its exit is seen: the session timeout exceeds the heartbeat interval by seconds), so s is its exit.
`CLOCK_SLACK_S` (rebalance_cause's, 0.05 s) covers the leader's millisecond clock against the recorded
monotonic times. A worker that joined after t may take them at once: the
incremental cooperative assignor gives lost work to new workers (a worker that returns in time gets its work
back). A held unit that has not started anywhere by t + detection + `scheduled_delay_s` + `reassign_slack_s`
(detection: after a kill or crash the worker's own session timeout just before it, `bounds.detection`, else the
run's `session_timeout_s`; 0 after a graceful leave) is reassigned too late,
when that deadline is before W (otherwise the run ended first: counted in `unjudged`). With the delay at 0,
the units move at the next rebalance: the same deadline. The departure of the leader (`leader_at`, just
before it left) is judged by the deadline only: the delay lives in the leader's assignor (its memory of the
previous assignment), so a new leader sees the lost units as unassigned and hands them out at once
(connect-runtime's IncrementalCooperativeAssignor keeps `previousAssignment` in the leader's instance). `skipped` under the eager protocol (no delay: every
rebalance reassigns everything) and without a departure holding units. Measurements: `departures` (per
departure: `member`, `how`, `units`, `first_restart_s`, `last_restart_s` after it, `to_new_workers`,
`deadline_s`, `detection_s` and `detection` (its source),
`leader`, `staying_moved`: units that workers staying throughout gave up between the departure
and the last restart), `delay_s`, `unjudged`. A worker that returns in time gets the work back without moves:
when every held unit went to workers that joined after the departure (and it was not the leader's), a unit
that a worker staying throughout gave up (stopped cleanly) between the departure and the last restart is a
violation.
"""
from __future__ import annotations

from harness.record.history import History
from harness.invariants.connect.bounds import detection, scheduled_delay
from harness.invariants.connect.view import INF, ConnectCheckSettings, unit_name, view_of
from harness.invariants.core import Verdict, secs, verdict
from harness.invariants.rebalance_cause import CLOCK_SLACK_S

NAME = "connect_scheduled_delay"


def check_scheduled_delay(history: History, settings: ConnectCheckSettings) -> Verdict:
    if settings.protocol == "eager":
        return verdict(NAME, "skipped", "the eager protocol has no scheduled delay")
    v = view_of(history)
    judged = [d for d in v.departures if d.held and d.at < v.window_end]
    if not judged:
        return verdict(NAME, "skipped", "no worker holding work departed before the end of the run")
    bad, out, unjudged = [], [], 0
    for d in judged:
        detect, dsrc = detection(v, settings, d.member, d.at - 1e-6) if d.how in ("kill", "crash") else \
            (0.0, "a graceful leave is noticed at once")
        early, delay, delay_src = scheduled_delay(v, settings, d.member, d.stop_at)
        deadline = d.at + detect + delay + settings.reassign_slack_s
        restarts, new_only = [], True
        was_leader = v.leader_at(d.stop_at) == d.member
        for key in d.held:
            nxt = next((r for r in v.runs if r.key == key and r.member != d.member and r.start >= d.stop_at), None)
            if nxt is None:
                if deadline <= v.window_end:
                    bad.append({"unit": unit_name(key), "departed": d.member, "how": d.how, "at": d.at,
                                "deadline": deadline, "why": f"{unit_name(key)} of {d.member} ({d.how}) not started "
                                f"elsewhere by {deadline - d.at:.1f}s after it left (delay {delay:g}s: {delay_src}; "
                                f"detection {detect:g}s: {dsrc})"})
                else:
                    unjudged += 1
                continue
            joined_after = v.born.get(nxt.member, -INF) > d.stop_at
            new_only &= joined_after
            after = nxt.start - d.at
            restarts.append(after)
            if not joined_after and not was_leader and nxt.start < d.stop_at + early - CLOCK_SLACK_S:
                since = nxt.start - d.stop_at
                began = "its stop began (member_stop: it leaves the group no earlier)" if d.how == "graceful" \
                    else "it left"
                bad.append({"unit": unit_name(key), "departed": d.member, "how": d.how, "at": d.at, "to": nxt.member,
                            "restart_s": secs(after), "since_stop_s": secs(since),
                            "why": f"{unit_name(key)} of {d.member} ({d.how}) restarted on {nxt.member} {since:.2f}s "
                            f"after {began}, before the {early:g}s delay ({delay_src}) less {CLOCK_SLACK_S:g}s of "
                            "clock slack"})
            elif nxt.start > deadline:
                bad.append({"unit": unit_name(key), "departed": d.member, "how": d.how, "at": d.at, "to": nxt.member,
                            "restart_s": secs(after), "why": f"{unit_name(key)} of {d.member} ({d.how}) restarted on "
                            f"{nxt.member} {after:.2f}s after it left, later than {deadline - d.at:.1f}s "
                            f"(delay {delay:g}s: {delay_src}; detection {detect:g}s: {dsrc})"})
        # the units the workers that stayed gave up meanwhile (a returning worker should take its work back alone)
        until = d.at + (max(restarts) if restarts else 0.0)
        staying = [r for r in v.runs if r.clean and d.stop_at < r.end <= until and r.member != d.member
                   and v.born.get(r.member, INF) < d.stop_at and r.member not in {x.member for x in v.departures
                                                                                  if x.at <= until}]
        if restarts and new_only and not was_leader and staying:
            bad += [{"unit": unit_name(r.key), "departed": d.member, "worker": r.member, "at": r.end,
                     "why": f"{unit_name(r.key)} left {r.member}, which stayed, while {d.member}'s work went back to "
                     "a returning worker"} for r in staying]
        out.append({"member": d.member, "how": d.how, "units": len(d.held), "staying_moved": len(staying),
                    "first_restart_s": secs(min(restarts)) if restarts else None,
                    "last_restart_s": secs(max(restarts)) if restarts else None,
                    "to_new_workers": bool(restarts) and new_only, "deadline_s": secs(deadline - d.at),
                    "detection_s": secs(detect), "detection": dsrc, "delay_s": delay, "delay": delay_src,
                    "leader": was_leader})
    delays = sorted({o["delay_s"] for o in out})
    m = {"departures": out, "delay_s": delays[0] if len(delays) == 1 else delays, "unjudged": unjudged}
    if bad:
        return verdict(NAME, "invalid", f"{len(bad)} unit(s) of departed workers reassigned too early or too late "
                                        f"for their scheduled delay: {bad[0]['why']}", bad, m)
    if unjudged and not any(o["first_restart_s"] is not None for o in out):
        return verdict(NAME, "unknown", "the run ended before any departed worker's work was due elsewhere",
                       measurements=m)
    waits = ", ".join(f"{o['member']} ({o['how']}): {o['first_restart_s']}-{o['last_restart_s']}s"
                      + (" to new workers" if o["to_new_workers"] else "") + (" (the leader)" if o["leader"] else "")
                      + (f" (detected after {o['detection_s']:g}s: {o['detection']})" if o["detection_s"] else "")
                      for o in out)
    return verdict(NAME, "valid", f"departed workers' work moved within the delay rule "
                                  f"({'; '.join(sorted({o['delay'] for o in out}))}): {waits}",
                   measurements=m)
