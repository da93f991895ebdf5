"""`share_rebalance_cause`: every bump of a share group's epoch had a cause in the history, and no cause bumped it
more often than the protocol lets it (KIP-932; Kafka's share-group paths of GroupMetadataManager).

The bumps are the group epochs the coordinator answered the group watch (`share_assignment`'s `group_epoch`,
ShareGroupDescribe): an answer with epoch E after one with E' < E says epochs E'+1..E were bumped between the
asking of the last answer that still said E' (the run's first event for the first answer) and this answer
(`causes.Bumped`). What may bump the epoch is read from the one view of the run's causes (`causes.build`):

| cause | epochs it may bump | why |
|---|---|---|
| initialized (`causes.initialized`: an answer assigns partitions no earlier answer assigned) | 1, from the asking of the last answer before the epoch last rose to that answer | the coordinator bumps the epoch once a topic's share-group state is initialized, however long after the join that brought it (the share coordinator may be creating `__share_group_state`) |
| join (a member life began) | 2 | its own heartbeat joins the group; the coordinator bumps again once it has initialized the share-group state of the topics it brought (KIP-932: partitions are assigned only once their state is initialized) |
| leave (a graceful stop), killed | 1 | the member left, or its session expired |
| fenced, stalled | 2 | its session ended and it joined again |
| faulted, request | 2 per member it reached | as fenced |
| subscription | 2 | the new subscription, and the state of a topic it brought |
| partitions | 2 | the topic's new partitions (metadata), and their state initialized |
| setting, assignor | 1 | a group setting changed |
| broker (an event, a fault of brokers) | 2 per member running then (none while none runs) | a member cut off may be expired and join again |

A cause may bump the epoch from its start until its end plus the group's session timeout and heartbeat interval
(`share.session.timeout.ms`, `share.heartbeat.interval.ms` as the run's `group_settings` recorded them: a member
the coordinator hears from no more is expired within them) and the clock slack (`clock_slack_s`); a join until
then from the member's `started` (its client made), as a Java member's process takes a while to start. Each bump is
charged to a cause in reach whose allowance is not spent (`causes.spend`). A bump with no cause in reach is a
violation; bumps past the allowance of every cause in reach are a storm (a group whose epoch is bumped at every
heartbeat): a violation naming the epochs, their times, the causes in reach and their allowances, and the
heartbeat interval.

`skipped` when no answer of the watch gave a group epoch (a run before the watch: `applies.FACTS_RECORDED_LATER`);
`unknown` when the group's session timeout or heartbeat interval is unknown. Measurements: `bumps`, `epochs`
([first, last]), `causes` (by kind, of the bumps charged), `uncaused`, `storm`, `reach_s`.
"""
from __future__ import annotations

from collections import Counter

from harness.record.history import History
from harness.invariants import causes, timeline
from harness.invariants.clock import run_s, run_t0
from harness.invariants.core import CheckSettings, Verdict, verdict, witness
from harness.invariants.share.view import ShareCheckSettings, group_setting

NAME = "share_rebalance_cause"
#: how many epoch bumps one cause may start (the module docstring's table)
BUDGET = {"initialized": 1, "join": 2, "leave": 1, "killed": 1, "fenced": 2, "stalled": 2, "faulted": 2, "request": 2,
          "subscription": 2, "partitions": 2, "setting": 1, "assignor": 1, "broker": 2}
#: causes whose allowance counts per member they reached (per member running, for one that lists none)
PER_MEMBER = frozenset({"faulted", "request", "broker"})


def check(history: History, settings: ShareCheckSettings) -> Verdict:
    """The verdict on every epoch bump the group watch saw (module docstring)."""
    bumps = epoch_bumps(history)
    if not bumps:
        return verdict(NAME, "skipped", "no answer of the group watch (share_assignment) gave the group's epoch: its "
                                        "bumps are not in the history")
    session, hb = group_setting(history, "session_ms"), group_setting(history, "heartbeat_ms")
    if session.value is None or hb.value is None:
        missing = [s.source for s in (session, hb) if s.value is None]
        return verdict(NAME, "unknown", "how long after a cause the coordinator may bump the epoch is unknown: "
                                        + "; ".join(missing))
    reach = (session.value + hb.value) / 1000 + settings.clock_slack_s
    bound = (f"{session.says('share.session.timeout.ms', ' ms')} + {hb.says('share.heartbeat.interval.ms', ' ms')} "
             f"+ clock slack {settings.clock_slack_s:g}s")
    tl = timeline.build(history, CheckSettings.from_dict((history.run_start() or {}).get("settings") or {}))
    offers = _offers(tl, [*causes.build(tl).all, *causes.initialized(tl)], reach)
    return judged(history, causes.spend(bumps, offers), bumps, offers,
                  {"reach_s": round(reach, 3)}, bound, hb)


def epoch_bumps(history: History) -> list[causes.Bumped]:
    """Each group epoch bump the watch's answers show (module docstring); a group made anew (its epoch lower than
    before: deleted once empty) counts from 0 again."""
    control = history.control()
    lo, top, out = (control[0][1]["mono"] if control else 0.0), 0, []
    for _, e in control:
        if e.get("type") != "share_assignment" or e.get("error") or not isinstance(e.get("group_epoch"), int):
            continue
        epoch = e["group_epoch"]
        if epoch < top:
            top = 0
        out += [causes.Bumped(n, lo, e["mono"], e) for n in range(top + 1, epoch + 1)]
        top, lo = epoch, float(e.get("asked_mono") or e["mono"])
    return out


def _offers(tl, all_causes: list, reach: float) -> list[causes.Offer]:
    out = []
    for c in all_causes:
        if c.kind not in BUDGET:
            continue
        end = c.end
        if c.kind == "join":  # from its client's start: the process may take seconds to make it
            m = next(iter(c.members))
            end = next((e["mono"] for _, e in tl.member_events(m, ("started",)) if e["mono"] >= c.start), end)
        n = (len(c.members) or len(tl.alive_members(c.start))) if c.kind in PER_MEMBER else 1
        if n:  # a broker event while no member ran bumps no epoch of the group
            out.append(causes.Offer(c, BUDGET[c.kind] * n, end if c.kind == "initialized" else end + reach))
    return out


def judged(history: History, charged: list, bumps: list, offers: list, m: dict, bound: str, hb) -> Verdict:
    """The verdict from each bump's charge: each uncaused bump, and each run of bumps past every allowance."""
    t, t0 = (lambda x: run_s(history, x)), run_t0(history)
    kinds = Counter(o.cause.kind for _, o, _ in charged if o is not None)
    uncaused = [b for b, o, r in charged if o is None and not r]
    storms = causes.storm_runs(charged)
    m = {**m, "bumps": len(bumps), "epochs": [bumps[0].number, bumps[-1].number], "causes": dict(kinds),
         "uncaused": len(uncaused), "storm": sum(len(run) for run, _ in storms)}
    bad = []
    for b in uncaused:
        bad.append((b, f"group epoch {b.number} was bumped between {t(b.lo)} and {t(b.hi)} with no cause in reach: "
                       f"no member joined, left, was killed, fenced, stalled or faulted, no subscription, topic or "
                       f"setting changed and no broker event happened within {bound} before it ({len(offers)} "
                       f"causes in the history)"))
    for run, within in storms:
        span = run[-1].hi - run[0].lo
        bad.append((run[0], f"a storm: group epochs {run[0].number}-{run[-1].number} ({len(run)} bumps past the "
                            f"allowance of every cause in reach) were bumped between {t(run[0].lo)} and "
                            f"{t(run[-1].hi)}, one per {span / len(run):.2f}s "
                            f"({hb.says('share.heartbeat.interval.ms', ' ms')}), while the causes in reach ({bound}) "
                            f"explain at most {sum(o.budget for o in within)} bumps: "
                            + "; ".join(f"{o.cause.show(t0)} ({o.budget})" for o in within[:6])))
    if bad:
        bad.sort(key=lambda x: x[0].hi)
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        return verdict(NAME, "invalid", bad[0][1] + more, [witness(b.event, text) for b, text in bad], m)
    return verdict(NAME, "valid", f"each of {len(bumps)} group epoch bumps ({bumps[0].number}-{bumps[-1].number}) had "
                                  f"a cause in the history within its allowance ("
                                  + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + f"; reach {bound})",
                   measurements=m)
