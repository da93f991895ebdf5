"""Invariants of Kafka Streams runs: task exclusivity, warmups (KIP-441), probing, standbys (KIP-708), balance.

Times are `mono` seconds on the shared clock; E, the end of the history, is the last `run_end` (else the
last event); nothing after E is read. A member's *life* runs from its `member_start` (or first own event)
to the first of its `member_exit` and `stopped`; its events outside it are not read. A *fault* runs from
`fault_start` to the `fault_end` of its fault_id (past E if never lifted) and affects its
`members_affected`. A member's *snapshot* at t is its latest `tasks` event at or before t; the *active
assignment* at t maps each task to the live members whose snapshot lists it active. A task missing from
`lags` is never caught up. A *rebalance* is a cluster of `stream_state` transitions to REBALANCING (any
member, each less than 2 s after the previous). A *stable point* ends a stretch of at least `settle_s`
with no fault active, no member starting or ending, every live member RUNNING and no change of any
member's active or standby task set (lags may change); it is judged at the stretch's end.

1. `task_exclusive_active`: a task's *run* on a member lasts from `task_active` to its `task_active_end`
   or the member's end of life. Runs of one task on two members may not overlap, except that the older
   may outlast the newer one's start by up to `zombie_tolerance_s` when its member was under a fault that
   had started by then (a paused zombie) or its run was ended by a kill/crash. A `processed` event of a
   task outside every run of it on that member is a violation too. Measurements: `tasks_seen`,
   `activations`, `overlaps` (overlapping pairs, tolerated or not), `max_overlap_s`.
2. `warmup_before_active` (KIP-441): `restore_start` events of one task on one member within 1 s of the
   first are one *episode* of the sum of their `end - start` records. An episode of more than
   `acceptable_recovery_lag` records starting at t is a violation when another member, alive, under no
   fault and not shutting down (PENDING_SHUTDOWN, NOT_RUNNING, PENDING_ERROR, ERROR) at t, held the task
   (active or standby) with a lag within `acceptable_recovery_lag` in any snapshot from the start of the
   latest rebalance, or from `handoff_window_s` before t if that is earlier, up to t (the old owner has
   dropped the task by t: cooperatively, and under the streams protocol members learn an assignment at
   their own heartbeats, seconds apart): Streams should have kept that copy active and warmed this member
   up. Without one (a first start, every copy lost) the cold restore is justified. `skipped` when nothing
   was restored and no task was ever active on two members, and under the `streams` protocol, whose
   assignor has no warmups yet: its cold restores are counted in `violations`, not judged. Measurements:
   `activations_with_restore`, `warm`, `cold_justified`, `violations`, `max_restored_records` (by
   `restore_end`, else as planned).
3. `probing_convergence`: a *topology change* is a `member_start`, or a `member_exit` (from the member's
   first shutting-down state if it logged one), after all live members were first RUNNING; its window
   lasts until the next change or E, and converges at the last change of the active assignment in it.
   `moves`: tasks whose active owners then differ from those just before the change (a task without a
   live owner just before, its owner killed or gone, counts when it has one then). With
   w = ceil(moves / max_warmup_replicas), invalid when more
   than w + `probing_slack_rebalances` rebalances (+ 1 for each instance killed from `zombie_tolerance_s`
   before the change on: its session expiry is a rebalance of its own) start from the change to the
   convergence, or when it
   takes longer than (w + 1) * `probing_interval_s` + 60 s. `skipped` without a change, `unknown` when the
   members were never all RUNNING. Measurements: `windows` (`change_s`, `moves`, `rebalances`, `bound`,
   `seconds_to_converge` each).
3b. `bounded_task_moves` (3 carried to tasks): in each window of 3, the active tasks moved are at most
   2 x fewest + `max_warmup_replicas`, where fewest is the fewest moves from the assignment before the
   change to one in which each of the final instances holds floor or ceil of tasks / instances.
   The tolerance is wide on purpose: KIP-441's assignor balances actives and standbys together and
   swaps tasks between instances that stay (seen: 4 moves where 2 would balance). Moves are counted
   per member process, so a static instance's restart moves its tasks to the new process. `skipped`
   and `unknown` as 3. Measurements: `moves`, `fewest_moves`, `max_excess`.
4. `standby_placement` (KIP-708), at every stable point: no task has a standby on the client running it;
   every task has at least min(`standby_replicas`, live clients - 1) standbys; those beyond
   `standby_replicas` (warmups, also when it is 0) number at most `max_warmup_replicas` in all; with
   `rack_aware`, `standby_replicas` >= 1 and live clients on >= 2 racks (`started`.rack, else
   `member_start`.rack), each task's copies span >= 2 racks, so one rack outage never loses every copy
   (under the `streams` protocol, whose broker-side assignor ignores racks, counted in
   `rack_spread_unmet` and not judged).
   `skipped` when `standby_replicas` is 0 and no standby was ever seen; `unknown` without a stable point.
   Measurements: `stable_points`, `tasks_checked`, `rack_spread_ok` (None when racks are not judged).
5. `task_balance`, at the last stable point: each task (0_0 .. 0_{tasks-1}; all seen if `tasks` is 0) has
   exactly one active owner among the live members; active counts per client differ by at most
   `active_balance_slack`, active + standby counts by at most `stateful_balance_slack`. `unknown` without a
   stable point. Measurements: `at_s`, `active_per_client`, `stateful_per_client`.
6. `output_integrity` (6 carried to Streams): after the run the harness reads the output topic back with
   read_committed (`output` events naming the input partition and offset each record came from, then
   `output_read`). Every `acked` input record must be in it; with `exactly_once` (exactly_once_v2) none
   twice. `unknown` when the read did not reach the topic's end or nothing was acknowledged.
   Measurements: `acked`, `output_records`, `missing`, `duplicated`, `exactly_once`.
"""
from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Iterable, NamedTuple

from harness.history import History
from harness.invariants.core import SettingsDict, Verdict, run_checkers, secs, verdict, witness

INF = math.inf
#: event types only a Kafka Streams member writes
STREAMS_EVENT_TYPES = frozenset({"stream_state", "tasks", "restore_start", "restore_end", "standby_start",
                                 "standby_suspended", "task_active", "task_active_end"})
DOWN_STATES = frozenset({"PENDING_SHUTDOWN", "NOT_RUNNING", "PENDING_ERROR", "ERROR"})
EPISODE_S = 1.0  # restore_start events of one task on one member this close are one restore
REBALANCE_GAP_S = 2.0  # REBALANCING transitions closer than this are one rebalance


@dataclass(frozen=True, kw_only=True)
class StreamsCheckSettings(SettingsDict):
    """What the Streams checkers need to know about a run, and the tolerances they judge it with."""

    tasks: int = 0
    standby_replicas: int = 0
    max_warmup_replicas: int = 2
    acceptable_recovery_lag: int = 10000
    probing_interval_s: float = 60.0
    handoff_window_s: float = 10.0
    rack_aware: bool = False
    exactly_once: bool = False
    protocol: str = "classic"
    zombie_tolerance_s: float = 2.0
    settle_s: float = 5.0
    active_balance_slack: int = 1
    stateful_balance_slack: int = 2
    probing_slack_rebalances: int = 2


def has_streams_events(history: History) -> bool:
    """Whether the history holds anything a Kafka Streams member wrote."""
    return any(e.get("type") in STREAMS_EVENT_TYPES or
               (e.get("type") == "started" and e.get("client") == "kafka-streams") for e in history.events)


class _Snap(NamedTuple):
    t: float
    active: frozenset
    standby: frozenset
    lags: dict
    event: dict


class _View:
    """The derived views every Streams checker reads (see the module docstring)."""

    def __init__(self, history: History) -> None:
        evs = history.events
        runs = [e["mono"] for e in evs if e["type"] == "run_end"]
        self.end = runs[-1] if runs else (evs[-1]["mono"] if evs else 0.0)
        self.events = [e for e in evs if e["mono"] <= self.end]
        self.start: dict[str, float] = {}
        self.stop: dict[str, tuple[float, dict]] = {}  # member -> (end of its life, the event that ended it)
        self.racks: dict[str, str] = {}
        self.faults: list[tuple[float, float, frozenset, dict]] = []  # (start, end, members, fault_start)
        opened: dict[str, dict] = {}
        for e in self.events:
            m, ty = e.get("member"), e["type"]
            if ty == "fault_start":
                opened[e.get("fault_id")] = e
            elif ty == "fault_end" and e.get("fault_id") in opened:
                s = opened.pop(e["fault_id"])
                self.faults.append((s["mono"], e["mono"], frozenset(s.get("members_affected") or ()), s))
            if not m:
                continue
            self.start.setdefault(m, e["mono"])
            if ty in ("member_exit", "stopped") and m not in self.stop:
                self.stop[m] = (e["mono"], e)
            if ty in ("started", "member_start") and e.get("rack") and (ty == "started" or m not in self.racks):
                self.racks[m] = e["rack"]
        self.faults += [(s["mono"], INF, frozenset(s.get("members_affected") or ()), s) for s in opened.values()]
        self.snaps: dict[str, list[_Snap]] = defaultdict(list)
        self.states: dict[str, list[tuple[float, str]]] = defaultdict(list)
        for e in self.own(("tasks", "stream_state")):
            if e["type"] == "tasks":
                self.snaps[e["member"]].append(_Snap(e["mono"], frozenset(e.get("active") or {}),
                                                     frozenset(e.get("standby") or {}), e.get("lags") or {}, e))
            else:
                self.states[e["member"]].append((e["mono"], e.get("to")))
        self.snap_t = {m: [s.t for s in ss] for m, ss in self.snaps.items()}
        self.state_t = {m: [t for t, _ in ss] for m, ss in self.states.items()}
        pairs = [(a, b) for ss in self.snaps.values() for a, b in zip([None, *ss], ss)]
        #: when some member's active tasks changed; when its active or standby tasks did
        self.moved = sorted({b.t for a, b in pairs if a is None or a.active != b.active})
        self.reassigned = {b.t for a, b in pairs if a is None or (a.active, a.standby) != (b.active, b.standby)}
        self.rebalances: list[float] = []  # the first REBALANCING transition of each rebalance
        prev = -INF
        for t in sorted(t for ss in self.states.values() for t, to in ss if to == "REBALANCING"):
            if t - prev >= REBALANCE_GAP_S:
                self.rebalances.append(t)
            prev = t

    def end_of(self, m: str) -> float:
        return self.stop[m][0] if m in self.stop else INF

    def alive(self, m: str, t: float, before: bool = False) -> bool:
        s, e = self.start.get(m, INF), self.end_of(m)
        return s < t <= e if before else s <= t < e

    def own(self, types: Iterable[str]) -> list[dict]:
        """Member events of these types written within the member's life (its `stopped` included)."""
        return [e for e in self.events if e["type"] in types and e.get("member") in self.start
                and self.start[e["member"]] <= e["mono"] <= self.end_of(e["member"])]

    def live(self, t: float, before: bool = False) -> list[str]:
        return sorted(m for m in self.start if self.alive(m, t, before))

    def snap(self, m: str, t: float, before: bool = False) -> _Snap | None:
        i = (bisect_left if before else bisect_right)(self.snap_t.get(m, ()), t)
        return self.snaps[m][i - 1] if i else None

    def state(self, m: str, t: float) -> str | None:
        i = bisect_right(self.state_t.get(m, ()), t)
        return self.states[m][i - 1][1] if i else None

    def faulted(self, m: str, t: float) -> bool:
        return any(s <= t < e and m in ms for s, e, ms, _ in self.faults)

    def actives(self, t: float, before: bool = False) -> dict[str, tuple]:
        """The active assignment at t (just before t when `before`): task -> its owners, sorted."""
        out: dict[str, list] = defaultdict(list)
        for m in self.live(t, before):
            for task in getattr(self.snap(m, t, before), "active", ()):
                out[task].append(m)
        return {task: tuple(ms) for task, ms in out.items()}

    def stable_points(self, settle_s: float) -> list[tuple[float, dict[str, _Snap | None]]]:
        """(time, each live member's snapshot) at the end of every stable stretch, in time order."""
        cuts = {self.end, *self.start.values(), *(t for t, _ in self.stop.values()), *self.reassigned}
        cuts |= {t for s, e, _, _ in self.faults for t in (s, e) if t < INF}
        cuts = sorted(t for t in cuts | set(t for ts in self.state_t.values() for t in ts) if t <= self.end)
        out = []
        for a, b in zip(cuts, cuts[1:]):
            live = self.live(a)
            if b - a >= settle_s and live and not any(s <= a < e for s, e, _, _ in self.faults) \
                    and all(self.state(m, a) == "RUNNING" for m in live):
                out.append((b, {m: self.snap(m, a) for m in live}))
        return out


def _empty(name: str, history: History) -> Verdict | None:
    return None if has_streams_events(history) else verdict(name, "unknown", "no Kafka Streams member events")


def _outcome(name: str, problems: list[str], wits: list[dict], m: dict, ok: str) -> Verdict:
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return verdict(name, "invalid", problems[0] + more, wits, m)
    return verdict(name, "valid", ok, (), m)


def _unstable(name: str, settings: StreamsCheckSettings, m: dict | None = None) -> Verdict:
    return verdict(name, "unknown", f"no stable point: the tasks never stayed put for {settings.settle_s:g}s "
                                    f"with every member RUNNING and no fault", (), m)


def _holders(snaps: dict[str, _Snap | None]) -> tuple[dict, dict]:
    """Task -> the members running it active, and -> those holding it as a standby, at one point."""
    act, stb = defaultdict(list), defaultdict(list)
    for mem, s in snaps.items():
        for task in getattr(s, "active", ()):
            act[task].append(mem)
        for task in getattr(s, "standby", ()):
            stb[task].append(mem)
    return act, stb


def _task_ids(settings: StreamsCheckSettings, seen: Iterable[str]) -> list[str]:
    return [f"0_{i}" for i in range(settings.tasks)] if settings.tasks > 0 else sorted(seen)


def check_task_exclusive_active(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge that no task runs on two clients at once, beyond a zombie's tolerance."""
    name = "task_exclusive_active"
    if (v := _empty(name, history)) is not None:
        return v
    vw = _View(history)
    runs: dict[str, list[list]] = defaultdict(list)  # task -> [start, end, member, start event, end event]
    opened: dict[tuple, list] = {}
    for e in vw.own(("task_active", "task_active_end")):
        key = (e["member"], e.get("task"))
        if e["type"] == "task_active" and key not in opened:
            opened[key] = [e["mono"], INF, e["member"], e, None]
            runs[key[1]].append(opened[key])
        elif e["type"] == "task_active_end" and key in opened:
            r = opened.pop(key)
            r[1], r[4] = e["mono"], e
    for r in opened.values():
        r[1], r[4] = vw.stop.get(r[2], (INF, None))
    problems, wits = [], []
    m = {"tasks_seen": len(runs), "activations": sum(map(len, runs.values())), "overlaps": 0, "max_overlap_s": 0.0}
    tol = settings.zombie_tolerance_s
    for task, rs in sorted(runs.items()):
        rs.sort(key=lambda r: r[0])
        for j, b in enumerate(rs):
            for a in rs[:j]:
                over = min(a[1], b[1], vw.end) - b[0]
                if a[2] == b[2] or over <= 0:
                    continue
                m["overlaps"] += 1
                m["max_overlap_s"] = max(m["max_overlap_s"], over)
                zombie = any(a[2] in ms and s <= b[0] and e >= a[0] for s, e, ms, _ in vw.faults) or \
                    (a[4] is not None and a[4]["type"] == "member_exit" and a[4].get("how") in ("kill", "crash"))
                if zombie and over <= tol:
                    continue
                why = f"(tolerance {tol:g}s for a faulted zombie)" if zombie else f"({a[2]} was under no fault)"
                problems.append(f"task {task} ran on {a[2]} and {b[2]} at once for {over:.3f}s from {b[0]:.3f} {why}")
                wits += [witness(a[3], f"{a[2]} runs task {task}"),
                         witness(b[3], f"{b[2]} starts task {task} while {a[2]} still runs it")]
    for e in vw.own(("processed",)):
        mem, task, t = e["member"], e.get("task"), e["mono"]
        if not any(r[2] == mem and r[0] <= t <= r[1] for r in runs.get(task, ())):
            problems.append(f"{mem} processed task {task} at {t:.3f} without running it")
            wits.append(witness(e, f"{mem} is not running task {task} here"))
    m["max_overlap_s"] = secs(m["max_overlap_s"])
    return _outcome(name, problems, wits, m, f"{m['activations']} task activations on {m['tasks_seen']} tasks, "
                                             f"no task ran on two clients beyond tolerance")


def rules_warmups(settings: StreamsCheckSettings) -> bool:
    """Whether the run's group protocol promises warmups: the classic one (KIP-441's assignor in the
    client); KIP-1071's broker-side `streams` assignor has none yet."""
    return settings.protocol != "streams"


def rules_racks(settings: StreamsCheckSettings) -> bool:
    """Whether the run's group protocol promises rack-aware standbys: the classic one (KIP-708's tags in the
    client's assignor); the broker-side StickyTaskAssignor of the `streams` protocol ignores racks."""
    return settings.protocol != "streams"


def check_warmup_before_active(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge that no task restored cold on a client while a caught-up copy existed elsewhere (KIP-441)."""
    name = "warmup_before_active"
    if (v := _empty(name, history)) is not None:
        return v
    vw, acl = _View(history), settings.acceptable_recovery_lag
    episodes: list[dict] = []
    last: dict[tuple, dict] = {}
    for e in vw.own(("restore_start", "restore_end")):
        key, t = (e["member"], e.get("task")), e["mono"]
        ep = last.get(key)
        if e["type"] == "restore_end":
            if ep is not None:
                ep["restored"] = (ep["restored"] or 0) + int(e.get("restored") or 0)
        elif ep is not None and t - ep["t"] <= EPISODE_S:
            ep["n"] += int(e.get("end", 0)) - int(e.get("start", 0))
        else:
            last[key] = ep = {"member": key[0], "task": key[1], "t": t, "ev": e, "restored": None,
                              "n": int(e.get("end", 0)) - int(e.get("start", 0))}
            episodes.append(ep)
    ran = [{k for s in ss for k in s.active} for ss in vw.snaps.values()]
    if not episodes and not any(a & b for i, a in enumerate(ran) for b in ran[:i]):
        return verdict(name, "skipped", "no task was restored and no task moved between members")
    m = {"activations_with_restore": len(episodes), "warm": 0, "cold_justified": 0, "violations": 0,
         "max_restored_records": max((ep["n"] if ep["restored"] is None else ep["restored"] for ep in episodes),
                                     default=0)}
    problems, wits = [], []
    for ep in episodes:
        mem, task, t = ep["member"], ep["task"], ep["t"]
        if ep["n"] <= acl:
            m["warm"] += 1
            continue
        ref = max((r for r in vw.rebalances if r <= t), default=t)
        lo = min(ref, t - settings.handoff_window_s)
        copies = []
        for o in vw.live(t):
            if o == mem or vw.faulted(o, t) or vw.state(o, t) in DOWN_STATES:
                continue
            ts = vw.snap_t.get(o, [])
            for s in vw.snaps[o][max(0, bisect_left(ts, lo) - 1):bisect_right(ts, t)]:
                lag = s.lags.get(task)
                if task in s.active | s.standby and lag is not None and int(lag) <= acl:
                    copies.append((o, int(lag), s.event))
        if not copies:
            m["cold_justified"] += 1
            continue
        m["violations"] += 1
        o, lag, sev = copies[0]
        if not rules_warmups(settings):
            continue
        problems.append(f"{mem} restored task {task} from {ep['n']} records behind at {t:.3f} while {o} held a "
                        f"caught-up copy (lag {lag} <= {acl})")
        wits += [witness(sev, f"{o} holds task {task} with lag {lag}"),
                 witness(ep["ev"], f"{mem} starts restoring task {task}: {ep['n']} records")]
    if not rules_warmups(settings):
        return verdict(name, "skipped", f"the {settings.protocol} protocol's assignor has no warmup tasks (Kafka "
                       f"Streams ignores max.warmup.replicas under it): {m['violations']} of {len(episodes)} restores "
                       f"were cold while a caught-up copy existed, measured and not judged", measurements=m)
    return _outcome(name, problems, wits, m, f"{len(episodes)} restores: {m['warm']} warm, {m['cold_justified']} "
                                             f"cold with no caught-up copy anywhere")


def _all_running_at(vw: _View) -> float | None:
    """The first moment every live member was RUNNING, if any."""
    for t in sorted(t for ss in vw.states.values() for t, to in ss if to == "RUNNING"):
        live = vw.live(t)
        if live and all(vw.state(x, t) == "RUNNING" for x in live):
            return t
    return None


def _change_at(vw: _View, e: dict) -> float:
    """When a topology change began: a member's exit from its first shutting-down state, if it logged one."""
    if e["type"] == "member_exit":
        return min([e["mono"]] + [t for t, to in vw.states.get(e["member"], ()) if to in DOWN_STATES])
    return e["mono"]


def _fewest_moves(before: dict[str, tuple], after: dict[str, tuple]) -> int:
    """The fewest active moves from `before` to a balanced assignment (each of `after`'s clients holding
    floor or ceil of its tasks' share): the tasks `after` owns minus the most that can stay where they were."""
    clients = {m for ms in after.values() for m in ms}
    if not clients:
        return 0
    held = dict.fromkeys(clients, 0)
    for task in after:
        owners = [m for m in before.get(task, ()) if m in clients]
        if owners:
            held[owners[0]] += 1
    lo, extra = divmod(len(after), len(clients))
    stay = sum(min(h, lo + 1 if i < extra else lo) for i, h in enumerate(sorted(held.values(), reverse=True)))
    return len(after) - stay


def _windows(vw: _View, settings: StreamsCheckSettings) -> list[dict] | None:
    """One window per topology change after all members first ran (None: they never all ran); see 3."""
    t0 = _all_running_at(vw)
    if t0 is None:
        return None
    changes = sorted(((_change_at(vw, e), e) for e in vw.events if e["type"] in ("member_start", "member_exit")
                      and _change_at(vw, e) > t0), key=lambda x: x[0])
    mw = max(1, settings.max_warmup_replicas)
    out = []
    for i, (tc, c) in enumerate(changes):
        until = changes[i + 1][0] if i + 1 < len(changes) else vw.end
        before = vw.actives(tc, before=True)
        times = sorted({t for t in vw.moved if tc < t < until} | {t for t, _ in vw.stop.values() if tc < t < until})
        conv, cur = tc, vw.actives(tc)
        for t in times:
            if (a := vw.actives(t)) != cur:
                conv, cur = t, a
        # a task unowned just before (its owner gone: killed, or left) moves too when it ends up owned
        moves = sum(1 for task in set(before) | set(cur) if cur.get(task, before.get(task)) != before.get(task))
        w = math.ceil(moves / mw)
        # an instance killed just before or in the window adds the rebalance of its session's expiry
        expired = sum(1 for t, e in vw.stop.values() if e["type"] == "member_exit" and e.get("how") in ("kill", "crash")
                      and tc - settings.zombie_tolerance_s <= t < until)
        who = f"{c['type']} of {c.get('member')} at {c['mono']:.3f}" + \
            (f" (shutting down from {tc:.3f})" if tc < c["mono"] else "")
        out.append({"event": c, "tc": tc, "conv": conv, "who": who, "moves": moves,
                    "fewest": _fewest_moves(before, cur), "rebalances": sum(1 for t in vw.rebalances if tc <= t <= conv),
                    "bound": w + settings.probing_slack_rebalances + expired,
                    "bound_s": (w + 1) * settings.probing_interval_s + 60.0})
    return out


def _windows_or_verdict(name: str, history: History, settings: StreamsCheckSettings) -> list[dict] | Verdict:
    """The topology-change windows, or the verdict when there are none to judge."""
    if (v := _empty(name, history)) is not None:
        return v
    windows = _windows(_View(history), settings)
    if windows is None:
        return verdict(name, "unknown", "the members were never all RUNNING at once")
    if not windows:
        return verdict(name, "skipped", "no member started or left after all were RUNNING")
    return windows


def check_probing_convergence(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge that after each scale event the assignment converges within the probing-rebalance bound."""
    name = "probing_convergence"
    windows = _windows_or_verdict(name, history, settings)
    if isinstance(windows, Verdict):
        return windows
    problems, wits = [], []
    for w in windows:
        who, conv, tc, n, moves = w["who"], w["conv"], w["tc"], w["rebalances"], w["moves"]
        if n > w["bound"]:
            problems.append(f"after the {who}, {n} rebalances until the assignment settled at {conv:.3f}, "
                            f"bound {w['bound']} for {moves} moves")
            wits.append(witness(w["event"], f"topology change: {moves} moves, {n} rebalances"))
        if conv - tc > w["bound_s"]:
            problems.append(f"after the {who}, the assignment settled only at {conv:.3f} ({conv - tc:.1f}s), "
                            f"bound {w['bound_s']:g}s for {moves} moves")
            wits.append(witness(w["event"], f"topology change: settled {conv - tc:.1f}s later"))
    m = {"windows": [{"change_s": secs(w["tc"]), "change": w["who"], "moves": w["moves"], "fewest_moves": w["fewest"],
                      "rebalances": w["rebalances"], "bound": w["bound"], "seconds_to_converge": secs(w["conv"] - w["tc"])}
                     for w in windows]}
    return _outcome(name, problems, wits, m, f"{len(windows)} topology changes converged within the probing bounds")


def check_bounded_task_moves(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge that each topology change moved at most twice the fewest active tasks plus one warmup round."""
    name = "bounded_task_moves"
    windows = _windows_or_verdict(name, history, settings)
    if isinstance(windows, Verdict):
        return windows
    problems, wits = [], []
    for w in windows:
        bound = 2 * w["fewest"] + settings.max_warmup_replicas
        if w["moves"] > bound:
            problems.append(f"after the {w['who']}, {w['moves']} active tasks moved where {w['fewest']} would "
                            f"balance the instances (bound {bound})")
            wits.append(witness(w["event"], f"topology change: {w['moves']} moves, fewest {w['fewest']}"))
    m = {"moves": sum(w["moves"] for w in windows), "fewest_moves": sum(w["fewest"] for w in windows),
         "max_excess": max(w["moves"] - w["fewest"] for w in windows)}
    return _outcome(name, problems, wits, m, f"{m['moves']} active task moves over {len(windows)} topology "
                                             f"changes, {m['fewest_moves']} at the fewest")


def check_standby_placement(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge standby placement at every stable point: apart from the active, enough of them, spread over racks."""
    name = "standby_placement"
    if (v := _empty(name, history)) is not None:
        return v
    vw, want = _View(history), settings.standby_replicas
    if want <= 0 and not any(s.standby for ss in vw.snaps.values() for s in ss):
        return verdict(name, "skipped", "no standby replicas configured and none seen")
    points = vw.stable_points(settings.settle_s)
    m = {"stable_points": len(points), "tasks_checked": 0, "rack_spread_ok": None}
    if not points:
        return _unstable(name, settings, m)
    problems, wits = [], []
    for t, snaps in points:
        act, stb = _holders(snaps)
        tasks = _task_ids(settings, set(act) | set(stb))
        need = min(want, len(snaps) - 1)
        racked = settings.rack_aware and want >= 1 and len({vw.racks.get(x) for x in snaps} - {None}) >= 2
        extra = sum(max(0, len(stb[task]) - want) for task in tasks)
        if extra > settings.max_warmup_replicas:
            problems.append(f"{extra} standbys beyond standby_replicas={want} at {t:.3f}, more than "
                            f"max_warmup_replicas={settings.max_warmup_replicas} warmups")
        for task in tasks:
            m["tasks_checked"] += 1
            why = []
            if both := sorted(set(act[task]) & set(stb[task])):
                why.append(f"task {task} has a standby on {', '.join(both)}, which runs it active")
            if len(stb[task]) < need:
                why.append(f"task {task} has {len(stb[task])} standbys ({', '.join(stb[task]) or 'none'}), "
                           f"want {need}")
            copies = sorted(set(act[task] + stb[task]))
            if racked and len(racks := {vw.racks.get(x) for x in copies} - {None}) < 2:
                if not rules_racks(settings):
                    m["rack_spread_unmet"] = m.get("rack_spread_unmet", 0) + 1
                    continue
                why.append(f"every copy of task {task} is on rack {next(iter(racks), None)} ({', '.join(copies)}): "
                           f"one rack outage loses them all")
            elif racked:
                m["rack_spread_ok"] = (m["rack_spread_ok"] or 0) + 1
            for w in why:
                problems.append(f"{w} at {t:.3f}")
                wits += [witness(snaps[x].event, w) for x in act[task] + stb[task] if snaps[x] is not None][:2]
    ok = f"standbys well placed at {len(points)} stable points"
    if m.get("rack_spread_unmet"):
        ok += (f"; rack spread measured, not judged, under the {settings.protocol} protocol (its assignor is not "
               f"rack-aware): {m['rack_spread_unmet']} task checks had every copy on one rack")
    return _outcome(name, problems, wits, m, ok)


def check_task_balance(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge the last stable assignment: every task active exactly once, counts balanced across clients."""
    name = "task_balance"
    if (v := _empty(name, history)) is not None:
        return v
    vw = _View(history)
    points = vw.stable_points(settings.settle_s)
    if not points:
        return _unstable(name, settings)
    t, snaps = points[-1]
    owners, _ = _holders(snaps)
    act = {x: len(getattr(s, "active", ())) for x, s in snaps.items()}
    stateful = {x: len(s.active | s.standby) if s else 0 for x, s in snaps.items()}
    m = {"at_s": secs(t), "active_per_client": act, "stateful_per_client": stateful}
    problems, wits = [], []
    for task in _task_ids(settings, set(owners)):
        if len(owners[task]) != 1:
            problems.append(f"task {task} has {len(owners[task])} active owners "
                            f"({', '.join(owners[task]) or 'none'}) at {t:.3f}")
            wits += [witness(snaps[x].event, f"{x} runs task {task} active") for x in owners[task]]
    for what, counts, slack in (("active", act, settings.active_balance_slack),
                                ("active+standby", stateful, settings.stateful_balance_slack)):
        hi, lo = max(counts, key=counts.get), min(counts, key=counts.get)
        if counts[hi] - counts[lo] > slack:
            problems.append(f"{what} tasks unbalanced at {t:.3f}: {hi} has {counts[hi]}, {lo} has {counts[lo]} "
                            f"(slack {slack})")
            wits += [witness(snaps[x].event, f"{x} holds {counts[x]} {what} tasks") for x in (hi, lo)
                     if snaps[x] is not None]
    return _outcome(name, problems, wits, m, f"at {t:.3f} every task is active once on {len(act)} clients, "
                                             f"balanced within the slack")




def check_output_integrity(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge what the instances committed to the output topic against what the producer had acknowledged."""
    name = "output_integrity"
    reads = [e for e in history.events if e["type"] == "output_read"]
    if not reads:
        return verdict(name, "unknown", "the output topic was not read back (no output_read event)")
    rd = reads[-1]
    if not rd.get("complete"):
        return verdict(name, "unknown", f"the read_committed read of {rd.get('output_topic')} did not reach its end "
                       f"({rd.get('records')} records read): an open transaction, or a broker down", [rd])
    acked = {(e["partition"], e["offset"]): e for e in history.events
             if e["type"] == "acked" and e.get("topic") == rd.get("topic")}
    seen: dict[tuple, list[dict]] = defaultdict(list)
    for e in history.events:
        if e["type"] == "output" and e.get("topic") == rd.get("topic"):
            seen[(e["partition"], e["offset"])].append(e)
    missing = sorted(k for k in acked if k not in seen)
    dups = sorted(k for k, es in seen.items() if len(es) > 1)
    m = {"acked": len(acked), "output_records": sum(map(len, seen.values())), "missing": len(missing),
         "duplicated": len(dups), "exactly_once": settings.exactly_once}
    if not acked:
        return verdict(name, "unknown", "no acknowledged input record to look for", measurements=m)
    problems, wits = [], []
    if missing:
        p, o = missing[0]
        problems.append(f"{len(missing)} acknowledged input records never reached the committed output "
                        f"(first: partition {p} offset {o})")
        wits += [witness(acked[k], "acknowledged, not in the committed output") for k in missing[:4]]
    if dups and settings.exactly_once:
        p, o = dups[0]
        problems.append(f"{len(dups)} input records are in the committed output more than once under "
                        f"exactly_once_v2 (first: partition {p} offset {o}, {len(seen[dups[0]])} times)")
        wits += [witness(e, "committed output of one input record, again") for k in dups[:3] for e in seen[k][:2]]
    ok = (f"all {len(acked)} acknowledged records in the committed output, "
          + ("none twice (exactly_once_v2)" if settings.exactly_once else f"{len(dups)} more than once (at_least_once)"))
    return _outcome(name, problems, wits, m, ok)


STREAMS_CHECKERS: dict[str, Callable[[History, StreamsCheckSettings], Verdict]] = {
    "task_exclusive_active": check_task_exclusive_active,
    "warmup_before_active": check_warmup_before_active,
    "probing_convergence": check_probing_convergence,
    "bounded_task_moves": check_bounded_task_moves,
    "standby_placement": check_standby_placement,
    "task_balance": check_task_balance,
    "output_integrity": check_output_integrity,
}


def check_streams(history: History, settings: StreamsCheckSettings,
                  names: Iterable[str] | None = None) -> dict[str, Verdict]:
    """Run the named Streams checkers (all by default); one that raises is `unknown`, never valid."""
    return run_checkers(STREAMS_CHECKERS, history, settings, names, precheck=lambda n: _empty(n, history))
