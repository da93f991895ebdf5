"""`connect_rebalance_cause`: every new generation of the Connect workers' group had a cause in the history, and no
cause started more generations than the protocol lets it (KIP-415's incremental cooperative protocol, Kafka's
WorkerCoordinator, IncrementalCooperativeAssignor and DistributedHerder; KIP-54's eager one).

The generations are those the workers report (`connect_rebalance`'s `epoch`: the generation of the last rebalance
the worker completed, from its connect-worker-rebalance-metrics): a report of generation N when the highest so far
was N' < N says generations N'+1..N began between the first report of N' (less the clock slack, 1 s: a worker writes
its generation within 0.1 s of its herder taking it; the run's first event for the first report), and not before
this report less one round (the workers' longest `rebalance.timeout.ms`, the join phase's bound, and
`session.timeout.ms`, the sync phase's, and the slack), and this report (`causes.Bumped`). What may start a generation is read from the one view of the run's causes (`causes.build`, and
`causes.configs`: a connector's configuration written):

| cause | generations it may start (cooperative; eager) | why |
|---|---|---|
| join (a worker life began) | 2; 1 | its join; the round after the leader revoked units from others to balance (a worker that had units revoked rejoins at once) |
| leave (a graceful stop), killed | 3; 1 | its departure (or its session's expiry); the delayed round when `scheduled.rebalance.max.delay.ms` ends; a revocation round |
| fenced, stalled, faulted, request | 4; 2 per worker it reached | as a departure, and the worker's return |
| config (a connector's configuration written) | 2 + w; 1 + w | the round that runs the connector; a revocation round (cooperative); one round per write of its tasks' configurations (w, below) |
| setting, assignor | 1; 1 | a setting changed |
| broker (an event, a fault of brokers) | 2; 2 per worker running then (none while none runs) | a worker cut off from the coordinator may be expired and join again |

A connector's tasks' configurations are written at most once per start of the connector (DistributedHerder: each
start reconfigures its tasks; a worker whose snapshot of the config topic lacks the configurations it generated writes
them, the leader, or forwards them to the leader, `POST /connectors/<name>/tasks`, whose `putTaskConfigs` writes them
without comparing), and each write starts a round (`onTaskConfigUpdate` sets `needsReconfigRebalance` on every
worker, whatever the protocol). Under eager every round stops and restarts every connector, so a connector started in
several rounds before its tasks' configurations were read may write them once per start (a follower's forward still
in flight when the next round restarts it). So w = the connector's runs (`connect_connector_started` to its
`connect_connector_stopped` or its worker's exit) that began after the configuration was asked for and ended before
the first start of one of its tasks after that, at least 1: the history does not say which of those runs wrote (one
stopped by the next round before its reconfiguration ran wrote nothing), and the run in force when the tasks first
ran found them written (the round's assignment carried them).

A join reaches from the worker's `started` (its JVM may take a minute to start on a busy host, and the worker joins
the group as its herder starts, before it writes `started`); a connector's configuration from the harness's first
PUT of it (`causes.configs`). Partitions added to the sink's topic rebalance the sink tasks' consumer group, not the workers' group: not a cause
here. A cause may start a generation from its start until its end plus the workers' `session.timeout.ms`,
`scheduled.rebalance.max.delay.ms` and `rebalance.timeout.ms` (the longest any worker's start recorded: a departure
is detected within the session timeout, its units are held for the delay, and a round lasts up to the rebalance
timeout) and the clock slack. Each generation is charged to a cause in reach whose allowance is not spent
(`causes.spend`). A generation with no cause in reach is a violation; generations past the allowance of every cause
in reach are a storm (tasks restarted with no configuration or membership change): a violation naming the
generations, their times and the causes in reach with their allowances.

`skipped` when no worker reported a generation (a run before the workers recorded them:
`applies.FACTS_RECORDED_LATER`); `unknown` when no worker's start recorded one of the three settings. Measurements:
`generations` ([first, last]), `bumps`, `causes` (by kind, of the generations charged), `uncaused`, `storm`,
`reach_s`.
"""
from __future__ import annotations

import math
from collections import Counter

from harness.record.history import History
from harness.invariants import causes, timeline
from harness.invariants.clock import run_s, run_t0
from harness.invariants.connect.view import ConnectCheckSettings, view_of
from harness.invariants.core import CheckSettings, Verdict, verdict, witness
from harness.invariants.settings import recorded_ms

NAME = "connect_rebalance_cause"
#: a worker writes its generation within 0.1 s of its herder taking it (HarnessWorker's metrics watch)
CLOCK_SLACK_S = 1.0
#: how many generations one cause may start, cooperative and eager (the module docstring's table); a connector's
#: configuration also one per write of its tasks' configurations (`task_config_writes`)
BUDGET = {"join": (2, 1), "leave": (3, 1), "killed": (3, 1), "fenced": (4, 2), "stalled": (4, 2), "faulted": (4, 2),
          "request": (4, 2), "config": (2, 1), "setting": (1, 1), "assignor": (1, 1), "broker": (2, 2)}
PER_MEMBER = frozenset({"fenced", "stalled", "faulted", "request", "broker"})
INF = math.inf
KEYS = ("session.timeout.ms", "scheduled.rebalance.max.delay.ms", "rebalance.timeout.ms")


def check(history: History, settings: ConnectCheckSettings) -> Verdict:
    """The verdict on every generation the workers reported (module docstring)."""
    if not generation_bumps(history, INF):
        return verdict(NAME, "skipped", "no worker reported its generation (connect_rebalance with an epoch): the "
                                        "group's generations are not in the history")
    got, missing, read = _settings(history)
    if missing:
        return verdict(NAME, "unknown", f"how long after a cause a generation may begin is unknown: no worker's start "
                                        f"recorded {', '.join(missing)} ({read} worker starts read)")
    reach = sum(ms for ms, _ in got.values()) / 1000 + CLOCK_SLACK_S
    bound = " + ".join(f"{k}={ms} ({m}'s worker config)" for k, (ms, m) in got.items()) + \
        f" + clock slack {CLOCK_SLACK_S:g}s"
    bumps = generation_bumps(history, (got[KEYS[0]][0] + got[KEYS[2]][0]) / 1000)
    tl = timeline.build(history, CheckSettings.from_dict((history.run_start() or {}).get("settings") or {}))
    eager = settings.protocol == "eager"
    offers, notes = _offers(tl, view_of(history).runs, [*causes.build(tl).all, *causes.configs(tl)], reach, eager)
    return _judged(history, causes.spend(bumps, offers), bumps, (offers, notes), reach, bound, settings.protocol)


def _settings(history: History) -> tuple[dict, list, int]:
    """KEYS -> (the longest ms any worker's start recorded, that worker), the keys none recorded, the starts read."""
    starts = [e for _, e in history.control() if e.get("type") == "started" and e.get("member")]
    got, missing = {}, []
    for k in KEYS:
        vals = [(ms, e["member"]) for e in starts if (ms := recorded_ms(e, (k,))) is not None]
        if vals:
            (ms, _), who = max(vals, key=lambda x: x[0][0])
            got[k] = (ms, who)
        else:
            missing.append(k)
    return got, missing, len(starts)


def generation_bumps(history: History, round_s: float) -> list[causes.Bumped]:
    """Each generation the workers' reports show begun (module docstring); `round_s` the longest a round takes from
    its start to a worker taking its generation (the join phase is bounded by the rebalance timeout, the sync phase
    by the session timeout)."""
    control = history.control()
    lo, top, out = (control[0][1]["mono"] if control else 0.0), 0, []
    for _, e in control:
        epoch = e.get("epoch")
        if e.get("type") != "connect_rebalance" or not isinstance(epoch, int) or isinstance(epoch, bool) \
                or epoch <= top:
            continue
        out += [causes.Bumped(n, max(lo, e["mono"] - round_s - CLOCK_SLACK_S), e["mono"], e)
                for n in range(top + 1, epoch + 1)]
        top, lo = epoch, e["mono"] - CLOCK_SLACK_S
    return out


def task_config_writes(runs: list, connector: str, since: float) -> tuple[int, int]:
    """How many times the connector's tasks' configurations may have been written for its configuration asked for at
    `since` (the module docstring's w), and how many of its runs ended before its tasks first ran (`view.Run`s)."""
    first = min((r.start for r in runs if r.key[0] == "task" and r.key[1] == connector and r.start >= since),
                default=INF)
    ended = sum(1 for r in runs if r.key == ("connector", connector, None) and r.start >= since and r.end <= first)
    return max(1, ended), ended


def _offers(tl, runs: list, all_causes: list, reach: float, eager: bool) -> tuple[list[causes.Offer], dict]:
    """The offers of the causes this checker counts, and for a connector's configuration how its allowance was
    derived (by the offer's id)."""
    out, notes = [], {}
    for c in all_causes:
        if c.kind not in BUDGET:
            continue
        end, extra = c.end, 0
        if c.kind == "join":  # from its `started`: a worker joins the group as its herder starts, before it says so
            m = next(iter(c.members))
            end = next((e["mono"] for _, e in tl.member_events(m, ("started",)) if e["mono"] >= c.start), end)
        if c.kind == "config":
            extra, ended = task_config_writes(runs, c.detail, c.start)
        n = (len(c.members) or len(tl.alive_members(c.start))) if c.kind in PER_MEMBER else 1
        if n:  # a broker event while no worker ran starts no generation of the group
            out.append(causes.Offer(c, BUDGET[c.kind][eager] * n + extra, end + reach))
        if c.kind == "config":
            notes[id(out[-1])] = (f"{BUDGET[c.kind][eager]} + {extra} write(s) of its tasks' configurations: "
                                  f"{ended} run(s) of it ended before its tasks first ran")
    return out, notes


def _judged(history: History, charged: list, bumps: list, offered: tuple, reach: float, bound: str,
            protocol: str) -> Verdict:
    t, t0 = (lambda x: run_s(history, x)), run_t0(history)
    offers, notes = offered
    kinds = Counter(o.cause.kind for _, o, _ in charged if o is not None)
    uncaused = [b for b, o, r in charged if o is None and not r]
    storms = causes.storm_runs(charged)
    m = {"bumps": len(bumps), "generations": [bumps[0].number, bumps[-1].number], "causes": dict(kinds),
         "uncaused": len(uncaused), "storm": sum(len(run) for run, _ in storms), "reach_s": round(reach, 3)}
    bad = [(b, f"generation {b.number} began between {t(b.lo)} and {t(b.hi)} ({b.event.get('member')} reported "
               f"it) with no cause in reach: no worker joined, left, was killed, fenced, paused or faulted, no "
               f"connector's configuration was written and no broker event happened within {bound} before it "
               f"({len(offers)} causes in the history)") for b in uncaused]
    for run, within in storms:
        bad.append((run[0], f"a storm: generations {run[0].number}-{run[-1].number} ({len(run)} past the allowance "
                            f"of every cause in reach, {protocol} protocol) began between {t(run[0].lo)} and "
                            f"{t(run[-1].hi)}, while the causes in reach ({bound}) explain at most "
                            f"{sum(o.budget for o in within)}: "
                            + "; ".join(f"{o.cause.show(t0)} ({_allowance(o, notes)})" for o in within[:6])))
    if bad:
        bad.sort(key=lambda x: x[0].hi)
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        return verdict(NAME, "invalid", bad[0][1] + more, [witness(b.event, text) for b, text in bad], m)
    configs = "; ".join(f"{o.cause.detail} {_allowance(o, notes)}" for o in offers if id(o) in notes)
    return verdict(NAME, "valid", f"each of {len(bumps)} generations ({bumps[0].number}-{bumps[-1].number}) had a "
                                  f"cause in the history within its allowance ("
                                  + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + f"; reach {bound}"
                                  + (f"; connectors' configurations ({protocol}): {configs}" if configs else "") + ")",
                   measurements=m)


def _allowance(o: causes.Offer, notes: dict) -> str:
    return f"{o.budget}: {notes[id(o)]}" if id(o) in notes else str(o.budget)
