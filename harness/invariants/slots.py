"""Which member slots a schedule keeps live, step by step, as the nemesis fills them: read from the plan alone.

A slot is a place for one member (harness/nemesis/core.py): the run starts `members` slots; `scale_out` appends slots;
`scale_in` empties the newest (or oldest) live ones, one always staying; `kill_member` empties its slot unless
`replace_after_s` fills it again, as `replace_member` does; `leave_during_join` appends a slot and empties the
named one; `bounce`, `settings_roll`, `restart_all` and `rack_outage` stop members and start them again in the
same slots. An `autoscale` adds and removes members by the group's lag, which no plan foresees: after it only the
`min_members` oldest slots it cannot have emptied are known live, the others *may* be, and slots appended later
have numbers the plan cannot know.

`Slots.step(kind, params)` walks one step and says what it does for certain (`StepEffect`): the members that
depart (their slot, how: `graceful` or `kill`, and whether the slot was static then) and the slots that start a
member; `uncertain` when the step may do more than that. The random mix (harness/plan/scenarios.py) draws its targets
among the live slots, and the invariants' applicability (`applies`) reads the departures and starts; nothing
here does I/O.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from harness.base.steps import Step


@dataclass(frozen=True)
class Departure:
    """A member that leaves its slot: gracefully (a stop) or killed (SIGKILL), static (an instance id) or not."""

    slot: int
    how: str
    static: bool


@dataclass
class StepEffect:
    """What one step does for certain: departures, slots that start a member; `uncertain` when it may do more."""

    departures: list[Departure] = field(default_factory=list)
    starts: list[int | None] = field(default_factory=list)  # None: a slot whose number the plan cannot know
    uncertain: bool = False
    idle: str | None = None  # why the step does nothing (an empty slot, one member left)

    @property
    def changes_members(self) -> bool:
        """Whether a member certainly starts or departs."""
        return bool(self.departures or self.starts)


#: steps that name a slot and leave its member in place (a pause, a stall, a subscription change)
IN_PLACE = frozenset({Step.PAUSE_MEMBER, Step.POLL_STALL, Step.CHANGE_SUBSCRIPTION})
#: the other steps that act on the member in a slot
ACTS_ON_SLOT = frozenset({Step.KILL_MEMBER, Step.BOUNCE, Step.LEAVE_DURING_JOIN})


class Slots:
    """The live slots of a schedule as it is walked (see the module docstring)."""

    def __init__(self, members: int, *, static: bool = False, racks: tuple[str, ...] = ()) -> None:
        self.made: int | None = members  # slots made so far (None: unknown, after an autoscale)
        self.live: list[int] = list(range(members))  # slots certainly holding a live member, in slot order
        self.maybe: set[int] = set()  # slots that may hold one
        self.static = {i: static for i in range(members)}
        self.static_new = static  # what a new slot starts as (the scenario's `static`)
        self.racks = tuple(racks)

    def rack(self, slot: int) -> str | None:
        """A slot's rack, as the kinds place members (slot modulo the racks), or None without racks."""
        return self.racks[slot % len(self.racks)] if self.racks else None

    def _append(self, n: int) -> list[int | None]:
        if self.made is None:
            return [None] * n
        new = list(range(self.made, self.made + n))
        self.made += n
        for s in new:
            self.static[s] = self.static_new
        self.live.extend(new)
        return list(new)

    def _restart(self, slots, how: str, static: bool | None = None) -> StepEffect:
        eff = StepEffect(uncertain=bool(self.maybe))
        for s in slots:
            eff.departures.append(Departure(s, how, self.static.get(s, False)))
            eff.starts.append(s)
            if static is not None:
                self.static[s] = static
        return eff

    def step(self, kind: str, params: dict) -> StepEffect:
        """Walk one step of the schedule; what it certainly does."""
        p = params or {}
        slot = p.get("slot")
        live = slot in self.live if isinstance(slot, int) else False
        if isinstance(slot, int) and kind in IN_PLACE | ACTS_ON_SLOT and not live:
            if slot in self.maybe:
                return StepEffect(uncertain=True)
            return StepEffect(idle=f"slot {slot} has no live member")
        if kind == Step.SCALE_OUT:
            return StepEffect(starts=self._append(int(p.get("count", 1))))
        if kind == Step.SCALE_IN:
            return self._scale_in(p.get("pick", "newest"), int(p.get("count", 1)))
        if kind == Step.KILL_MEMBER:
            eff = StepEffect(departures=[Departure(slot, "kill", self.static.get(slot, False))])
            if p.get("replace_after_s") is None:
                self.live.remove(slot)
            else:
                eff.starts.append(slot)
            return eff
        if kind == Step.REPLACE_MEMBER:
            if self.made is not None and slot < self.made and slot not in self.live and slot not in self.maybe:
                self.live = sorted(self.live + [slot])
                return StepEffect(starts=[slot])
            if slot in self.maybe or self.made is None:
                return StepEffect(uncertain=True)
            return StepEffect(idle=f"slot {slot} is not empty")
        if kind == Step.BOUNCE:
            return self._restart([slot], "graceful", p.get("static"))
        if kind == Step.SETTINGS_ROLL:
            return self._restart(list(self.live), "graceful", p.get("static"))
        if kind == Step.RESTART_ALL:
            return self._restart(list(self.live), "graceful")
        if kind == Step.RACK_OUTAGE:
            return self._restart([s for s in self.live if self.rack(s) == p.get("rack")], "kill")
        if kind == Step.LEAVE_DURING_JOIN:
            eff = StepEffect(departures=[Departure(slot, "graceful", self.static.get(slot, False))],
                             starts=self._append(1))
            self.live.remove(slot)
            return eff
        if kind == Step.AUTOSCALE:
            return self._autoscale(int(p.get("min_members", 1)))
        if kind == Step.RESTART_CRASHED:  # which members crash no plan foresees; each slot is filled again
            return StepEffect(uncertain=True)
        return StepEffect()

    def _scale_in(self, pick: str, count: int) -> StepEffect:
        if self.maybe:  # the live members are not all known: only the `count` newest (oldest) known ones may go
            n = min(count, len(self.live))
            may_go = set(self.live[len(self.live) - n:] if pick == "newest" else self.live[:n])
            if pick == "newest" and self.live and self.live[0] < min(self.maybe):
                may_go.discard(self.live[0])  # the oldest of all stays: one member always does
            self.maybe |= may_go
            self.live = [s for s in self.live if s not in may_go]
            return StepEffect(uncertain=True)
        if len(self.live) <= 1:
            return StepEffect(idle="one member left")
        n = min(count, len(self.live) - 1)
        gone = self.live[-n:][::-1] if pick == "newest" else self.live[:n]
        self.live = [s for s in self.live if s not in gone]
        return StepEffect(departures=[Departure(s, "graceful", self.static.get(s, False)) for s in gone])

    def _autoscale(self, min_members: int) -> StepEffect:
        keep = [s for s in sorted(set(self.live) | self.maybe)[:max(1, min_members)] if s in self.live]
        self.maybe |= set(self.live) - set(keep)
        self.live = keep
        self.made = None
        return StepEffect(uncertain=True)


def walk(members: int, schedule, *, static: bool = False, racks: tuple[str, ...] = ()) -> list[StepEffect]:
    """Each step's certain effect, for a schedule of (kind, params) pairs."""
    slots = Slots(members, static=static, racks=racks)
    return [slots.step(kind, params) for kind, params in schedule]
