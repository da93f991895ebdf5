"""The settings of the Streams checkers and the derived views they all read (built once per history).

The Streams view is not the consumer `timeline`: a Streams member's life ends at the first of its
`stopped` and its `member_exit` (an instance that logged `stopped` has closed its tasks; the consumer
timeline keeps a member until its exit, as a consumer's revocations may follow its `stopped`), and it
starts at the member's first event of any kind (harness events about it included). Nor is it one topic's
view: a Streams run names its input, output and changelog topics, so the timeline's topic resolution
does not apply. What is the same is shared: the fault windows are `timeline.faults_of`. The bulk
`processed` events are read from the history's columns.
"""
from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, NamedTuple

import numpy as np

from harness.record.history import History
from harness.invariants.core import SettingsDict, Verdict, verdict
from harness.invariants.timeline import faults_of

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
    seeded_keys: int = 0  # keys written into each task's changelog before the run (its state at the start)
    zombie_tolerance_s: float = 2.0  # fallback: only for an instance whose start recorded no session timeout
    settle_s: float = 5.0
    active_balance_slack: int = 1
    stateful_balance_slack: int = 2


def has_streams_events(history: History) -> bool:
    """Whether the history holds anything a Kafka Streams member wrote."""
    return history.derived("has_streams_events", lambda: any(
        e.get("type") in STREAMS_EVENT_TYPES or (e.get("type") == "started" and e.get("client") == "kafka-streams")
        for _, e in history.control()))


class _Snap(NamedTuple):
    t: float
    active: frozenset
    standby: frozenset
    lags: dict
    event: dict


class _View:
    """The derived views every Streams checker reads (see the module docstring)."""

    def __init__(self, history: History) -> None:
        self.history = history
        control = history.control()
        runs = [e["mono"] for _, e in control if e["type"] == "run_end"]
        self.end = runs[-1] if runs else history.mono_range[1]
        #: the control events up to E; the bulk ones are read from the history's columns
        self.events = [e for _, e in control if e["mono"] <= self.end]
        self.start: dict[str, float] = {}
        self.stop: dict[str, tuple[float, dict]] = {}  # member -> (end of its life, the event that ended it)
        self.racks: dict[str, str] = {}
        #: (start, end, members, fault_start) of every fault window
        self.faults = [(f.start, f.end, f.members, f.start_event) for f in faults_of(control, self.end)]
        for ty in ("processed", "committed"):  # a member's first bulk event may open its life
            b = history.bulk(ty)
            codes, at = np.unique(b.member, return_index=True)  # each member's first row
            for c, t in zip(codes.tolist(), b.mono[at].tolist()):
                m = history.values[c]
                if m and t <= self.end and t < self.start.get(m, INF):
                    self.start[m] = t
        for e in self.events:
            m, ty = e.get("member"), e["type"]
            if not m:
                continue
            if e["mono"] < self.start.get(m, INF):
                self.start[m] = e["mono"]
            if ty in ("member_exit", "stopped") and m not in self.stop:
                self.stop[m] = (e["mono"], e)
            if ty in ("started", "member_start") and e.get("rack") and (ty == "started" or m not in self.racks):
                self.racks[m] = e["rack"]
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
        """Member control events of these types written within the member's life (its `stopped` included)."""
        return [e for e in self.events if e["type"] in types and e.get("member") in self.start
                and self.start[e["member"]] <= e["mono"] <= self.end_of(e["member"])]

    def own_processed(self) -> list[tuple[int, str, str, float]]:
        """(row, member, task, mono) of the `processed` events written within their member's life, in order."""
        b, vals, out = self.history.bulk("processed"), self.history.values, []
        for r, (c, k, t) in enumerate(zip(b.member.tolist(), b.task.tolist(), b.mono.tolist())):
            m = vals[c]
            if m in self.start and self.start[m] <= t <= self.end_of(m) and t <= self.end:
                out.append((r, m, vals[k], t))
        return out

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

    def stable_points(self, settle_s: float, unsettled: Iterable[tuple[float, float]] = ()) \
            -> list[tuple[float, dict[str, _Snap | None]]]:
        """(time, each live member's snapshot) at the end of every stable stretch, in time order. `unsettled`:
        more (start, end) windows in which nothing is stable, as fault windows (a killed instance's until the
        group can notice: `bounds.unsettled_after_kills`)."""
        windows = [(s, e) for s, e, _, _ in self.faults] + list(unsettled)
        cuts = {self.end, *self.start.values(), *(t for t, _ in self.stop.values()), *self.reassigned}
        cuts |= {t for s, e in windows for t in (s, e) if t < INF}
        cuts = sorted(t for t in cuts | set(t for ts in self.state_t.values() for t in ts) if t <= self.end)
        out = []
        for a, b in zip(cuts, cuts[1:]):
            live = self.live(a)
            if b - a >= settle_s and live and not any(s <= a < e for s, e in windows) \
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


def view(history: History) -> "_View":
    """The Streams view of a history, built once and shared by every Streams checker."""
    return history.derived("streams-view", lambda: _View(history))
