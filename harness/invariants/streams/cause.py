"""`streams_rebalance_cause`: every rebalance of a Kafka Streams group had a cause in the history, and no cause set
off more rebalances than the group's own settings allow (docs/invariants.md, "Streams rebalance causes").

A Streams group's rebalances are its coordinator's, read from its log lines (the `broker` events about the group,
`brokers.said`): under the classic protocol each new generation (`Preparing to rebalance group G ... with old
generation N`, `coordinator_log.bumps`); under the `streams` protocol (KIP-1071) each new group epoch (`[GroupId G]
[MemberId M] Bumped streams group epoch to N with metadata hash H ...`, Kafka's GroupMetadataManager
`streamsGroupHeartbeat`, which bumps the epoch when a member joins or its metadata changes, the topology is first
validated, the subscribed topics' metadata hash changes or the group's assignment configs change). A generation or
epoch logged by a coordinator already deposed (`coordinator_log`) is not the group's and is not judged.

What may cause one is the one model of the run's causes (`causes.build`): members starting, stopping, killed,
expiring, stalled, faulted, request faults, subscription and topic changes, settings changed on either side, broker
events. A cause's *reach* is its window and, after it, the bound the group may take to settle after a disturbance
then (`settled.bound_at`, `group_settled`'s: a killed instance's session timeout, (ceil(tasks / max.warmup.replicas)
+ 1) probing rebalances, the state's restore; all from what the instances and the brokers recorded), since the
rounds a disturbance sets off (the cooperative second round, KIP-429; the probing rebalances that move warmed-up
tasks, KIP-441; under the streams protocol the topology's validation) come within it.

- *Uncaused*: a rebalance that no cause reaches (none began by then, or the last reach ended before it) is a
  violation naming the generation or epoch, its time (run seconds), the coordinator's line and the last cause
  before it with its reach.
- *Storm*: between two cause starts the causes in effect (those whose reach covers the stretch) may set off at most
  `budget` rebalances each: threads x 2 x (ceil(tasks / max.warmup.replicas) + 1) (each stream thread is a member of
  the group; each probing round and the disturbance's own may take two rebalances, the one that revokes and the
  one that assigns, KIP-429), with threads the most an instance's start recorded (`started.threads`). More is a
  storm: a violation naming the stretch, the rebalances in it, the causes in effect and the budget with its source.

`skipped` when the facts were not recorded (the brokers' logs not collected, or the lines hold no rebalance of the
group: a run before this invariant, `applies.FACTS_RECORDED_LATER`; a run whose plan names it is then `unknown`),
and on the fake backend; `unknown` when a broker's log could not be read or a bound's input was not recorded.
Measurements: `rebalances` (by protocol), `uncaused`, `storms`, `budget`, `causes` (by kind, of those in effect).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from harness.record.history import History
from harness.invariants import brokers, causes, timeline
from harness.invariants.clock import run_t0
from harness.invariants.coordinator_log import bumps
from harness.invariants.core import CheckSettings, MissingSetting, Verdict, verdict, witness
from harness.invariants.rebalance_cause import CLOCK_SLACK_S
from harness.invariants.streams.assignor import assignors_at
from harness.invariants.streams.settled import bound_at
from harness.invariants.streams.view import INF, StreamsCheckSettings, _empty, view

NAME = "streams_rebalance_cause"
#: the streams protocol's coordinator bumping the group epoch (Kafka 4.1 on, GroupMetadataManager)
STREAMS_BUMPED = re.compile(r"\[GroupId (?P<group>[^\]]+)\](?:\[MemberId (?P<m>[^\]]*)\])? Bumped streams group "
                            r"epoch to (?P<epoch>\d+)")


@dataclass(frozen=True)
class Rebalance:
    """One new generation (classic) or group epoch (streams) of the group, at `mono`, from the coordinator's line."""

    mono: float
    protocol: str  # classic | streams
    number: int
    event: dict

    def what(self) -> str:
        return f"generation {self.number}" if self.protocol == "classic" else f"group epoch {self.number}"


def rebalances(lines: list[dict], group: str) -> list[Rebalance]:
    """The group's new generations and epochs its coordinator logged, in time order (deposed coordinators' left out)."""
    got = [Rebalance(b.mono, "classic", b.number, b.event) for b in bumps(lines, group)
           if b.protocol == "classic" and b.deposed is None]
    got += [Rebalance(e["mono"], "streams", int(m["epoch"]), e) for e in lines
            if (m := STREAMS_BUMPED.search(e.get("message") or "")) and m["group"] == group]
    return sorted(got, key=lambda r: r.mono)


def check_streams_rebalance_cause(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge that each rebalance of the Streams group had a cause, and that no cause set off a storm (module doc)."""
    if (v := _empty(NAME, history)) is not None:
        return v
    if (history.run_start() or {}).get("backend") == "fake":
        return verdict(NAME, "skipped", "the fake backend's cluster has no group coordinator whose lines could be read")
    if not brokers.collected(history):
        return verdict(NAME, "skipped", "the brokers' logs were not collected: the coordinator's rebalances are unseen")
    if gone := brokers.unread(history):
        return verdict(NAME, "unknown", "a broker's log could not be read, so a rebalance it coordinated may be "
                       "unseen: " + "; ".join(f"broker {e.get('broker')} ({e.get('error')})" for e in gone))
    group = brokers.group_of(history) or next((e.get("group_id") for _, e in history.control()
                                                if e.get("type") == "started" and e.get("group_id")), None)
    if not group:
        return verdict(NAME, "unknown", "neither the brokers' lines nor the instances' starts say which group it is")
    seen = rebalances(brokers.said(history), group)
    if not seen:
        return verdict(NAME, "skipped", f"the coordinator's lines hold no rebalance of group {group} (a generation "
                                        f"or streams group epoch these patterns read)")
    return _Judge(history, settings).judge(seen)


class _Judge:
    def __init__(self, history: History, settings: StreamsCheckSettings) -> None:
        self.history, self.settings, self.t0 = history, settings, run_t0(history)
        start = history.run_start() or {}
        check = CheckSettings.from_dict(start.get("settings") if isinstance(start.get("settings"), dict) else {})
        self.tl = timeline.build(history, check)
        self.vw = view(history)
        self.causes = [c for c in causes.build(self.tl).all if c.start <= self.tl.end]
        self._reach: dict[float, tuple[float, str]] = {}

    def at(self, t: float) -> str:
        return f"{t - self.t0:.1f}s"

    def reach(self, c) -> tuple[float, str]:
        """(until when the cause may set off rebalances, how that was derived)."""
        if c.end >= INF:
            return INF, "its window lasts past the end"
        if c.start not in self._reach:
            self._reach[c.start] = bound_at(self.vw, self.settings, c.start)  # MissingSetting: unknown
        s, why = self._reach[c.start]
        return c.end + s, f"its end {self.at(c.end)} + {s:g}s ({why})"

    def in_effect(self, t: float) -> list:
        return [c for c in self.causes if c.start - CLOCK_SLACK_S <= t <= self.reach(c)[0] + CLOCK_SLACK_S]

    def judge(self, seen: list[Rebalance]) -> Verdict:
        seen = [r for r in seen if r.mono <= self.tl.end]
        if not seen:
            return verdict(NAME, "skipped", f"the coordinator's lines hold no rebalance of the group by the end of "
                                            f"the run ({self.at(self.tl.end)})")
        budget, source = self.budget(seen)
        found, used = [], Counter()
        for r in seen:
            cs = self.in_effect(r.mono)
            used.update(c.kind for c in cs)
            if not cs:
                found.append((f"{self.at(r.mono)} the coordinator started {r.what()} ({_quote(r.event)}): "
                              f"{self.nothing(r)}", r.event))
        storms = self.storms(seen, budget, source)
        found = sorted(found + storms, key=lambda x: x[1]["mono"])  # the first in time first
        bad, wits = [t for t, _ in found], [witness(e, t) for t, e in found]
        m = {"rebalances": dict(Counter(r.protocol for r in seen)), "uncaused": len(bad) - len(storms),
             "storms": len(storms), "budget": budget, "causes": dict(used)}
        if bad:
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            return verdict(NAME, "invalid", bad[0] + more, wits, m)
        return verdict(NAME, "valid", f"each of {len(seen)} rebalances had a cause in the history within its reach, "
                                      f"and no cause set off more than {budget} ({source})", measurements=m)

    def nothing(self, r: Rebalance) -> str:
        """Why no cause reaches the rebalance r: the facts looked at."""
        before = [c for c in self.causes if c.start - CLOCK_SLACK_S <= r.mono]
        if not before:
            return "no cause began before it (no member started, stopped or was touched by a fault, no setting, " \
                   "topic or broker changed)"
        last = max(before, key=lambda c: self.reach(c)[0])
        until, how = self.reach(last)
        return (f"no cause reaches it: the one that reached furthest, {last.show(self.t0)}, reached until "
                f"{self.at(until)} ({how}), and none began since")

    def budget(self, seen: list[Rebalance]) -> tuple[int, str]:
        """The rebalances one cause may set off (module docstring), and where its inputs were read."""
        threads = [int(e["threads"]) for e in self.vw.events if e["type"] == "started" and
                   isinstance(e.get("threads"), int) and e["threads"] > 0]
        if not threads:
            raise MissingSetting("no instance's start recorded its stream threads (started.threads)")
        active = {k for ss in self.vw.snaps.values() for s in ss for k in s.active}
        n = self.settings.tasks or len(active)
        worst, how = 0, ""
        for t in sorted({r.mono for r in seen}):  # the assignor's settings as the instances rebalancing then ran
            for a in assignors_at(self.vw, self.settings, t):
                rounds = math.ceil(n / max(1, a.max_warmup_replicas)) + 1
                if rounds > worst:
                    worst, how = rounds, f"ceil({n} tasks / {a.value('max_warmup_replicas')}) + 1"
        budget = max(threads) * 2 * worst
        return budget, (f"{max(threads)} stream thread(s), the most an instance's start recorded, x 2 rebalances a "
                        f"round x {worst} rounds: {how}")

    def storms(self, seen: list[Rebalance], budget: int, source: str) -> list[tuple[str, dict]]:
        """Stretches between cause starts with more rebalances than the causes in effect may set off."""
        starts = sorted({c.start for c in self.causes})
        out = []
        for i, s in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else INF
            inside = [r for r in seen if s - CLOCK_SLACK_S <= r.mono < end - CLOCK_SLACK_S]
            if not inside:
                continue
            effect = [c for c in self.causes if c.start <= s + CLOCK_SLACK_S
                      and self.reach(c)[0] + CLOCK_SLACK_S >= inside[0].mono]
            allowed = budget * len(effect)
            if len(inside) <= allowed or not effect:
                continue
            over = inside[allowed]
            named = "; ".join(c.show(self.t0) for c in effect[:3]) + (
                f" and {len(effect) - 3} more" if len(effect) > 3 else "")
            out.append((f"a storm of rebalances: {len(inside)} from {self.at(inside[0].mono)} to "
                        f"{self.at(inside[-1].mono)} ({inside[0].what()} to {inside[-1].what()}) with no new cause, "
                        f"while {len(effect)} cause(s) were in effect ({named}), which may set off at most "
                        f"{budget} each ({source}): {allowed} in all, exceeded by {over.what()} at {self.at(over.mono)}",
                        over.event))
        return out


def _quote(e: dict) -> str:
    msg = e.get("message") or ""
    return f"broker {e.get('broker')}: \"{msg[msg.find(']') + 1:].strip()[:160]}\""
