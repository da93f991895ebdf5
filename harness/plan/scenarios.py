"""The built-in scenarios: TOML files shipped in harness/plan/builtin/, and the mix a file cannot say.

Every built-in of every kind of group (consumer groups, Kafka Streams `streams-*`, Kafka Connect `connect-*`)
is a file under harness/plan/builtin/ (one per scenario, named after it), read by the same interpreter as a user's
file (harness/plan/scenario_file.py, docs/scenarios.md). Only `random-mix` stays a Python builder here: it draws the
kind of each action (from the registry's mix, harness/plan/actions.py). The files are read on first use of
`SCENARIOS`, not at import.
"""
from __future__ import annotations

from collections.abc import MutableMapping
from functools import cached_property
from importlib import resources
from pathlib import Path

from harness.plan import scenario_file
from harness.plan.actions import ACTIONS, MIX_CHOICES
from harness.base.errors import BadInput
from harness.base.near import closest
from harness.invariants.slots import Slots
from harness.base.versions import GROUP_CONFIGS_SINCE, major_minor
from harness.plan.scenario_model import Action, Scenario, ScenarioContext, schedule
from harness.base.steps import Step

__all__ = ["Action", "Scenario", "ScenarioContext", "SCENARIOS", "get",
           "is_file", "schedule", "builtin_files"]


def _stable() -> Action:
    return Action(Step.WAIT_STABLE, {})


#: the members a random-mix run starts with
MIX_MEMBERS = 3


def _can_happen(kind: str, slots: Slots, ctx) -> bool:
    """Whether a step of this kind can happen here: a slot to name among those certainly live, a member to
    scale in beside the one that always stays, brokers that take group configs (Kafka 4.0+)."""
    if kind == Step.SCALE_IN:
        return len(slots.live) >= 2
    if ACTIONS[kind].param("slot") is not None:
        return bool(slots.live)
    if kind == Step.GROUP_CONFIG:
        return not ctx.kafka or major_minor(ctx.kafka) >= GROUP_CONFIGS_SINCE
    return True


def _mix_action(rng, ctx, slots: Slots) -> Action:
    """One fault or change for the random mix that can happen after the steps drawn before it (`slots` walks
    them, harness/invariants/slots.py): an action the registry gives a mix draw (harness/plan/actions.py), its slot
    one certainly live then; every choice from the seed's rng, so a seed gives one schedule."""
    kind = rng.choice([k for k in MIX_CHOICES if _can_happen(k, slots, ctx)])
    slot = rng.choice(slots.live) if slots.live else 0
    return Action(kind, ACTIONS[kind].mix(rng, ctx, slot))


def _random_mix(rng, ctx, *, actions: int | None = None):
    """A seeded mix of every kind of fault, each followed by a wait for a stable assignment; each step one that
    can happen where it stands (a kill names a live slot, a scale-in leaves a member)."""
    out, slots = [], Slots(MIX_MEMBERS)
    for _ in range(actions or rng.randint(10, 14)):
        a = _mix_action(rng, ctx, slots)
        slots.step(a.kind, a.params)
        out += [a, _stable()]
    return out


PYTHON_BUILT_INS = [
    Scenario("random-mix", "A seeded random mix of member, broker and network faults (10-14 actions).",
             _random_mix, members=MIX_MEMBERS),
]


def builtin_files() -> list:
    """The shipped scenario files (harness/plan/builtin/*.toml, package data), by name."""
    return sorted((f for f in resources.files("harness.plan").joinpath("builtin").iterdir() if f.name.endswith(".toml")),
                  key=lambda f: f.name)


def builtin_text(name: str) -> str | None:
    """The text of the shipped file of a built-in scenario (each is named after its scenario), or None."""
    f = resources.files("harness.plan").joinpath("builtin", f"{name}.toml")
    return f.read_text() if f.is_file() else None


#: the Streams and Connect built-ins, in the order they are listed after the mix (the order they had as Python
#: builders: the nightly's seeded picks index the list, so a seed picks what it picked; a new one goes at the end)
LISTED_AFTER_THE_MIX = (
    "streams-scale-out", "streams-scale-in", "streams-static-bounce", "streams-rack-outage", "streams-broker-bounce",
    "streams-eos-kill", "streams-pod-restarts", "streams-autoscale", "streams-protocol-migration",
    "connect-worker-kill", "connect-worker-kill-short", "connect-worker-pause", "connect-scale-out-in",
    "connect-rolling-bounce", "connect-join-back-to-back", "connect-leader-kill", "connect-broker-bounce",
    "connect-rolling-upgrade", "connect-rack-outage")


#: built-ins added after the list above was recorded: listed last, in this order, so that the scenarios before
#: them keep their places
LISTED_LAST = ("scale-group", "scale-partitions-added", "share-partitions-added", "share-dead-letter",
               "share-rack-outage", "share-rolling-upgrade", "share-leader-move", "share-leader-restart",
               "connect-partitions-added", "share-ack-answer-lost", "share-ack-held",
               "livelock-commit-starves-heartbeat", "share-poison-record", "share-partitions-added-latest",
               "topic-created-late", "topic-deleted-recreated", "topic-regex-dropped",
               "fetch-path-partition-errors",
               "share-subscription-change")


class _BuiltIns(MutableMapping):
    """Name -> Scenario of every built-in: the consumer-group files (in name order), the mix, then the Streams and
    Connect files (LISTED_AFTER_THE_MIX, then any other in name order), then the race scenarios (files whose steps
    put faults on requests, in name order), then LISTED_LAST. The files are read on first use; tests
    and benchmarks may add their own scenarios."""

    @cached_property
    def _all(self) -> dict[str, Scenario]:
        files = [scenario_file.loads(f.read_text(), f"harness/plan/builtin/{f.name}") for f in builtin_files()]
        rank = {name: i for i, name in enumerate(LISTED_AFTER_THE_MIX)}
        late = sorted((s for s in files if s.kind != "consumer" and s.name not in LISTED_LAST), key=lambda s: (rank.get(s.name, len(rank)), s.name))
        races = [s for s in files if "requests" in s.needs and s.name not in LISTED_LAST]  # came after the Streams and Connect files
        last = sorted((s for s in files if s.name in LISTED_LAST), key=lambda s: LISTED_LAST.index(s.name))
        early = [s for s in files if s.kind == "consumer" and s not in races and s not in last]
        return {s.name: s for s in early + PYTHON_BUILT_INS + late + races + last}

    def __getitem__(self, name: str) -> Scenario:
        return self._all[name]

    def __setitem__(self, name: str, sc: Scenario) -> None:
        self._all[name] = sc

    def __delitem__(self, name: str) -> None:
        del self._all[name]

    def __iter__(self):
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)


SCENARIOS: MutableMapping[str, Scenario] = _BuiltIns()


def is_file(name: str) -> bool:
    """Whether a scenario argument names a file: not a built-in, and ends in .toml or is an existing file."""
    return name not in SCENARIOS and (name.endswith(".toml") or Path(name).is_file())


def get(name: str) -> Scenario:
    """The built-in scenario of that name, or BadInput listing the known ones (a user's scenario file is
    read by harness.plan.scenario_file; `harness.plan.config.scenario_of` takes either)."""
    try:
        return SCENARIOS[name]
    except KeyError:
        near = closest(name, SCENARIOS)  # the one meant: `did you mean member-kill?`
        hint = f"did you mean {' or '.join(near)}? " if near else ""
        raise BadInput(f"unknown scenario {name!r}; {hint}`harness scenarios` lists the {len(SCENARIOS)} built-in "
                       "ones (or name a scenario file, docs/scenarios.md)") from None
