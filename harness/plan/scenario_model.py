"""What a scenario is: its actions, its record, the context a schedule is drawn in.

A schedule is a list of small frozen `Action` records. The runner logs each before it acts and is
the only part that waits. A scenario's `build(rng, ctx)` draws every timing and choice from
`random.Random(seed)`, so the same seed gives the same schedule; the schedule a run actually ran is saved
with it and replayed as is. Built-in scenarios and scenario files (harness/plan/scenario_file.py) both give a
`Scenario`; harness/plan/scenarios.py holds the built-in ones.
"""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Callable

from harness.base.vocabulary import CONSUMER_PROTOCOLS, DEFAULT_PROTOCOL


@dataclass(frozen=True)
class Action:
    """One step: what to do and its parameters (member slots, durations in seconds)."""

    kind: str
    params: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Action":
        return cls(kind=d["kind"], params=dict(d.get("params") or {}))


@dataclass(frozen=True)
class ScenarioContext:
    """What a schedule may depend on besides the seed: the run's session timeout, cluster and targets."""

    session_timeout_s: float
    brokers: int
    racks: int
    target_kafka: str = "latest"
    target_client: str = "default"
    kafka: str = ""  # the Kafka version the run's cluster starts on, resolved (x.y.z; empty: not known)


@dataclass(frozen=True)
class Scenario:
    """A scenario: how to build its schedule, and what the run needs and tolerates."""

    name: str
    doc: str
    build: Callable[[random.Random, ScenarioContext], list[Action]]
    members: int = 3
    static: bool = False
    racks: bool = False
    initial_kafka: str | None = None  # e.g. 'latest-3' for the upgrade scenario: needs its own cluster
    initial_client: str | None = None  # confluent-kafka version members start on, unless --client-version
    protocols: tuple[str, ...] = CONSUMER_PROTOCOLS
    check_overrides: Callable[[ScenarioContext, list[Action]], dict] = lambda ctx, sched: {}
    smoke: bool = False
    kind: str = "consumer"  # "consumer" (consumer-group members), "streams", "connect" (workers), "share" (KIP-932)
    streams: dict = field(default_factory=dict)  # Streams settings of the scenario (over STREAMS_DEFAULTS)
    connect: dict = field(default_factory=dict)  # Connect settings of the scenario (over CONNECT_DEFAULTS)
    max_members: int | None = None  # the most members the schedule ever runs (default: members)
    processing_ms: float = 0.0  # simulated work per record of its runs, unless the run says otherwise
    backend: str | None = None  # the backend its actions need (broker partitions: docker); None: any
    needs: frozenset[str] = frozenset()  # the backend abilities its steps' actions need (harness/plan/actions.py NEEDS)

    @property
    def default_protocol(self) -> str:
        """DEFAULT_PROTOCOL when it runs with it, else the first it runs with."""
        return DEFAULT_PROTOCOL if DEFAULT_PROTOCOL in self.protocols else self.protocols[0]


def schedule(scenario: Scenario, *, seed: int, ctx: ScenarioContext) -> list[Action]:
    """The concrete schedule a seed gives for a scenario."""
    return scenario.build(random.Random(seed), ctx)
