"""The settings of the Connect checkers and the derived view they all read (built once per history).

E, the end of the history, is the last `run_end` (else the last event); nothing after E is read. A worker's
*life* runs from its `member_start` to its `member_exit` (E if none). A *run* of a unit (a connector, or a
task: connector and task number) on a worker lasts from its `connect_*_started` event to the matching
`connect_*_stopped` of that worker, or to the end of the worker's life; it *ended cleanly* when the stopped
event came first. The *leader* at t is the worker the workers' latest `connect_rebalance` event
(the connect-worker-rebalance-metrics MBean's leader-name, a REST URL) names. A *departure* is a worker's
`member_exit`; the units it *held* are those whose run on it
was open at its `member_stop` (a graceful stop: the worker stops its units while it leaves) or at the exit.
W, the end of the judged window, is the `drained` event (after it the harness only waits a quiet period and
stops every worker), else E.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from harness.record.history import History
from harness.invariants.core import SettingsDict
from harness.invariants.terms import faults_of

INF = math.inf
#: event types only Connect workers (and the harness about them) write
CONNECT_EVENT_TYPES = frozenset({"connect_task_started", "connect_task_stopped", "connect_connector_started",
                                 "connect_connector_stopped", "connect_batch", "connect_commit"})
STARTS = {"connect_task_started": "task", "connect_connector_started": "connector"}
STOPS = {"connect_task_stopped": "task", "connect_connector_stopped": "connector"}


@dataclass(frozen=True, kw_only=True)
class ConnectCheckSettings(SettingsDict):
    """What the Connect checkers need to know about a run, and the tolerances they judge it with.

    `scheduled_delay_s`: the workers' scheduled.rebalance.max.delay.ms in seconds; `reassign_slack_s`: how
    long after the delay (and the detection of a killed worker, one session timeout) a rebalance round may
    take to start the units elsewhere."""

    protocol: str = "sessioned"
    scheduled_delay_s: float = 300.0
    session_timeout_s: float = 10.0  # fallback, as zombie_tolerance_s (`bounds`)
    rebalance_timeout_s: float = 60.0
    reassign_slack_s: float = 5.0
    connectors: tuple = ()
    source_connectors: tuple = ()
    sink_connectors: tuple = ()
    tasks: dict = field(default_factory=dict)  # connector -> tasks.max
    source_topic: str = ""
    quiet_period_s: float = 3.0
    zombie_tolerance_s: float = 2.0  # fallback: only for a worker whose start recorded no session.timeout.ms
    balance_slack: int = 1

    def __post_init__(self) -> None:
        for k in ("connectors", "source_connectors", "sink_connectors"):
            object.__setattr__(self, k, tuple(getattr(self, k)))


def unit_name(key: tuple) -> str:
    """("task", "c", 2) -> "c-2"; ("connector", "c", None) -> "c"."""
    return key[1] if key[0] == "connector" else f"{key[1]}-{key[2]}"


class Run(NamedTuple):
    key: tuple  # ("task", connector, n) or ("connector", connector, None)
    member: str
    start: float
    end: float
    clean: bool  # ended by its own stopped event
    how: str  # "stopped", or how its worker's life ended ("kill", "crash", "graceful"), or "open"


class Departure(NamedTuple):
    member: str
    at: float  # member_exit
    how: str
    stop_at: float  # member_stop (graceful) or the exit
    held: tuple  # unit keys


class View:
    """The derived view every Connect checker reads (see the module docstring)."""

    def __init__(self, history: History) -> None:
        control = history.control()
        runs_end = [e["mono"] for _, e in control if e["type"] == "run_end"]
        self.end = runs_end[-1] if runs_end else history.mono_range[1]
        self.events = [e for _, e in control if e["mono"] <= self.end]
        drained = [e["mono"] for e in self.events if e["type"] == "drained"]
        self.window_end = drained[-1] if drained else self.end
        self.faults = faults_of(control, self.end)
        self.born: dict[str, float] = {}
        self.died: dict[str, tuple[float, str]] = {}
        self.stopping: dict[str, float] = {}
        for e in self.events:
            t, m = e["type"], e.get("member")
            if t == "member_start":
                self.born.setdefault(m, e["mono"])
            elif t == "member_stop":
                self.stopping.setdefault(m, e["mono"])
            elif t == "member_exit":
                self.died.setdefault(m, (e["mono"], e.get("how") or "crash"))
        self.urls = {e.get("member"): e.get("rest_url") for e in self.events if e["type"] == "started"
                     and e.get("rest_url")}
        self.runs: list[Run] = []
        self.batches: list[dict] = []
        open_: dict[tuple, tuple[float, dict]] = {}
        for e in self.events:
            t, m = e["type"], e.get("member")
            if m in self.died and e["mono"] > self.died[m][0] and t not in ("member_exit",):
                if t == "connect_batch":
                    self.batches.append(e)  # a dead worker's batch: judged (outside every run)
                continue
            if t in STARTS:
                key = self._key(STARTS[t], e)
                open_.setdefault((m, key), (e["mono"], e))
            elif t in STOPS:
                key = self._key(STOPS[t], e)
                if (m, key) in open_:
                    s, _ = open_.pop((m, key))
                    self.runs.append(Run(key, m, s, e["mono"], True, "stopped"))
            elif t == "member_exit":
                for mk in [k for k in open_ if k[0] == m]:
                    s, _ = open_.pop(mk)
                    self.runs.append(Run(mk[1], m, s, e["mono"], False, e.get("how") or "crash"))
            elif t == "connect_batch":
                self.batches.append(e)
        for (m, key), (s, _) in open_.items():
            self.runs.append(Run(key, m, s, INF, False, "open"))
        self.runs.sort(key=lambda r: r.start)
        self.departures = [self._departure(m, at, how) for m, (at, how) in sorted(self.died.items(), key=lambda x: x[1])]

    @staticmethod
    def _key(kind: str, e: dict) -> tuple:
        return (kind, e.get("connector"), e.get("task") if kind == "task" else None)

    def _departure(self, m: str, at: float, how: str) -> Departure:
        stop_at = self.stopping.get(m, at) if how == "graceful" else at
        held = tuple(sorted({r.key for r in self.runs if r.member == m and r.start <= stop_at and r.end >= stop_at},
                            key=str))
        return Departure(m, at, how, min(stop_at, at), held)

    def paused(self, member: str, t: float) -> bool:
        """Whether a fault that had started by t and freezes the member (a pause) affected it."""
        return any(f.start <= t and member in f.members and f.kind == "pause" for f in self.faults)

    def leader_at(self, t: float) -> str | None:
        """The worker the workers' latest `connect_rebalance` before t names as leader (by its REST URL, matched
        to the worker alive at t that has it), or None when no worker said."""
        ev = next((e for e in reversed(self.events) if e["type"] == "connect_rebalance" and e["mono"] <= t
                   and e.get("leader")), None)
        if ev is None:
            return None
        url = str(ev["leader"]).rstrip("/")
        for m, u in self.urls.items():
            if u.rstrip("/") == url and self.born.get(m, -INF) <= t and (m not in self.died or self.died[m][0] >= t):
                return m
        return None

    def runs_at(self, t: float) -> list[Run]:
        return [r for r in self.runs if r.start <= t < r.end]


def view_of(history: History) -> View:
    return history.derived("connect_view", lambda: View(history))


def has_connect_events(history: History) -> bool:
    return history.derived("has_connect_events", lambda: any(e.get("type") in CONNECT_EVENT_TYPES
                                                             for _, e in history.control()))
