"""Named, parameterised scenarios: a seed turns each into a concrete schedule of actions.

A schedule is a list of small frozen `Action` records. The runner logs each before it acts and is
the only part that waits. Every timing and choice here comes from `random.Random(seed)`, so the same
seed gives the same schedule; the schedule a run actually ran is saved with it and replayed as is.
"""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from harness.errors import BadInput

PROTOCOLS = ("classic-eager", "classic-cooperative", "consumer")
#: group protocols of Kafka Streams members: the classic one, and KIP-1071's broker-side `streams`
STREAMS_PROTOCOLS = ("classic", "streams")


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
class Scenario:
    """A scenario: how to build its schedule, and what the run needs and tolerates."""

    name: str
    doc: str
    build: Callable[[random.Random, "ScenarioContext"], list[Action]]
    members: int = 3
    static: bool = False
    racks: bool = False
    initial_kafka: str | None = None  # e.g. 'latest-3' for the upgrade scenario: needs its own cluster
    initial_client: str | None = None  # confluent-kafka version members start on, unless --client-version
    protocols: tuple[str, ...] = PROTOCOLS
    check_overrides: Callable[["ScenarioContext", list[Action]], dict] = lambda ctx, sched: {}
    smoke: bool = False
    kind: str = "consumer"  # "consumer" (consumer-group members) or "streams" (Kafka Streams members)
    streams: dict = field(default_factory=dict)  # Streams settings of the scenario (over STREAMS_DEFAULTS)
    max_members: int | None = None  # the most members the schedule ever runs (default: members)

    @property
    def default_protocol(self) -> str:
        return "classic-cooperative" if "classic-cooperative" in self.protocols else self.protocols[0]


@dataclass(frozen=True)
class ScenarioContext:
    session_timeout_s: float
    brokers: int
    racks: int
    target_kafka: str = "latest"
    target_client: str = "default"


def _stable() -> Action:
    return Action("wait_stable", {})


def _scale_out_in(rng, ctx):
    extra = rng.randint(2, 3)
    acts = [Action("scale_out", {}) for _ in range(extra)]
    ins = [Action("scale_in", {"pick": "newest"}) for _ in range(extra)]
    out = []
    for a in acts + ins:
        out += [a, _stable(), Action("sleep", {"s": round(rng.uniform(0.5, 2.0), 2)})]
    return out


def _rolling_bounce(rng, ctx, *, n=3):
    out = []
    for slot in rng.sample(range(n), n):
        out += [Action("bounce", {"slot": slot, "down_s": round(rng.uniform(0.2, 1.0), 2)}), _stable()]
    return out


def _hard_kill(rng, ctx):
    slot = rng.randrange(3)
    return [Action("sleep", {"s": round(rng.uniform(1, 3), 2)}), Action("kill_member", {"slot": slot}), _stable(),
            Action("replace_member", {"slot": slot}), _stable()]


def _pause(short: bool):
    def build(rng, ctx):
        st = ctx.session_timeout_s
        dur = round(rng.uniform(0.2, 0.4) * st, 2) if short else round(rng.uniform(1.4, 1.8) * st, 2)
        return [Action("sleep", {"s": 1.0}), Action("pause_member", {"slot": rng.randrange(3), "duration_s": dur}),
                _stable()]
    return build


def _static_bounce(rng, ctx):
    out = []
    for slot in rng.sample(range(3), 3):
        down = round(rng.uniform(0.1, 0.3) * ctx.session_timeout_s, 2)
        out += [Action("bounce", {"slot": slot, "down_s": down}), Action("sleep", {"s": 2.0}), _stable()]
    return out


def _broker_rolling_restart(rng, ctx):
    return [Action("sleep", {"s": 1.0}), Action("broker_rolling_restart", {}), _stable()]


def _broker_upgrade(rng, ctx):
    return [Action("sleep", {"s": 1.0}), Action("broker_upgrade", {"version": ctx.target_kafka}), _stable()]


def _coordinator_kill(rng, ctx):
    return [Action("sleep", {"s": 1.0}),
            Action("kill_coordinator", {"down_s": round(rng.uniform(2, 5), 2)}), _stable()]


def _rack_outage(rng, ctx):
    rack = f"r{rng.randrange(ctx.racks)}"
    return [Action("sleep", {"s": 1.0}), Action("rack_outage", {"rack": rack, "down_s": round(rng.uniform(3, 6), 2)}),
            _stable()]


def _latency(rng, ctx):
    return [Action("sleep", {"s": 1.0}),
            Action("network_latency", {"latency_ms": rng.choice([100, 200, 300]), "jitter_ms": rng.choice([0, 50]),
                                       "duration_s": round(rng.uniform(4, 8), 2)}), _stable()]


def _blackhole(rng, ctx):
    return [Action("sleep", {"s": 1.0}),
            Action("network_blackhole", {"broker": rng.randint(1, ctx.brokers),
                                         "duration_s": round(rng.uniform(0.2, 0.5) * ctx.session_timeout_s, 2)}),
            _stable()]


OLDER_CLIENT = "2.12.2"


def _client_upgrade(rng, ctx):
    """Each member in turn comes back on the harness's own confluent-kafka version."""
    out = []
    for slot in rng.sample(range(3), 3):
        out += [Action("bounce", {"slot": slot, "down_s": round(rng.uniform(0.2, 1.0), 2),
                                  "client_version": ctx.target_client}), _stable()]
    return out


def _protocol_migration(rng, ctx):
    """Each member in turn comes back speaking the consumer protocol (KIP-848 online migration)."""
    out = []
    for slot in rng.sample(range(3), 3):
        out += [Action("bounce", {"slot": slot, "down_s": round(rng.uniform(0.2, 1.0), 2), "protocol": "consumer"}),
                _stable()]
    return out


def _mix_action(rng, ctx) -> Action:
    """One self-contained fault or change for the random mix (valid whatever ran before it)."""
    st = ctx.session_timeout_s
    kind = rng.choice(["scale_out", "scale_in", "kill_member", "pause_member", "pause_member", "bounce",
                       "broker_bounce", "kill_coordinator", "network_latency", "network_blackhole"])
    slot = rng.randrange(3)
    params = {
        "scale_out": {},
        "scale_in": {"pick": "newest"},
        "kill_member": {"slot": slot, "replace_after_s": round(rng.uniform(0.5, 3.0), 2)},
        "pause_member": {"slot": slot, "duration_s": round(rng.uniform(0.2, 1.8) * st, 2)},
        "bounce": {"slot": slot, "down_s": round(rng.uniform(0.2, 1.0), 2)},
        "broker_bounce": {"broker": rng.randint(1, ctx.brokers), "down_s": round(rng.uniform(0.5, 3.0), 2)},
        "kill_coordinator": {"down_s": round(rng.uniform(1.0, 4.0), 2)},
        "network_latency": {"latency_ms": rng.choice([50, 150, 300]), "jitter_ms": rng.choice([0, 30]),
                            "duration_s": round(rng.uniform(2, 5), 2)},
        "network_blackhole": {"broker": rng.randint(1, ctx.brokers),
                              "duration_s": round(rng.uniform(0.2, 0.5) * st, 2)},
    }[kind]
    return Action(kind, params)


def _random_mix(rng, ctx, *, actions: int | None = None):
    """A seeded mix of every kind of fault, each followed by a wait for a stable assignment."""
    out = []
    for _ in range(actions or rng.randint(10, 14)):
        out += [_mix_action(rng, ctx), _stable()]
    return out


def pause_tolerance(ctx, sched):
    """A paused member (or one that stopped polling) holds its partitions, in its own view, until it runs (polls)
    again: the window is the pause plus detection."""
    longest = max((a.params.get("duration_s", 0) for a in sched if a.kind in ("pause_member", "poll_stall")),
                  default=0)
    return {"zombie_tolerance_s": longest + 2 * ctx.session_timeout_s}


SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    Scenario("scale-out-in", "Scale out one member at a time, then back in.", _scale_out_in, members=1, smoke=True),
    Scenario("rolling-bounce", "Gracefully restart every member in turn.", _rolling_bounce),
    Scenario("member-kill", "SIGKILL one member, wait for the group to recover, start a replacement.", _hard_kill,
             smoke=True),
    Scenario("pause-short", "Pause a member (SIGSTOP) for less than the session timeout.", _pause(True),
             check_overrides=pause_tolerance),
    Scenario("pause-long", "Pause a member for longer than the session timeout: it comes back a zombie.",
             _pause(False), check_overrides=pause_tolerance),
    Scenario("static-bounce", "Rolling bounce of static members within the session timeout.", _static_bounce,
             static=True),
    Scenario("broker-rolling-restart", "Restart every broker in turn with members running.",
             _broker_rolling_restart),
    Scenario("broker-upgrade", "Roll the brokers from the newest 3.9.x to the newest 4.x with members running.",
             _broker_upgrade, initial_kafka="latest-3", protocols=("classic-eager", "classic-cooperative")),
    Scenario("coordinator-kill", "SIGKILL the broker that coordinates the group, restart it.", _coordinator_kill),
    Scenario("rack-outage", "Kill every broker and member of one rack, then restore them.", _rack_outage, racks=True),
    Scenario("network-latency", "Add latency and jitter between members and brokers.", _latency),
    Scenario("network-blackhole", "Blackhole one broker's client traffic for less than the session timeout.",
             _blackhole, smoke=True),
    Scenario("client-rolling-upgrade", f"Rolling bounce from confluent-kafka {OLDER_CLIENT} (or --client-version) "
             "onto the harness's own version.", _client_upgrade, initial_client=OLDER_CLIENT),
    Scenario("random-mix", "A seeded random mix of member, broker and network faults (10-14 actions).",
             _random_mix, check_overrides=pause_tolerance),
    Scenario("protocol-migration", "Rolling bounce from the classic protocol to the consumer protocol.",
             _protocol_migration, protocols=("classic-eager", "classic-cooperative")),
]}


# -- Kafka Streams scenarios (the runner with harness/kinds/streams.py; docs/streams.md)
def _streams_scale_out(rng, ctx):
    """The KIP-441 case: a new instance must warm its tasks up before it takes them active."""
    return [Action("sleep", {"s": round(rng.uniform(1, 3), 2)}), Action("scale_out", {}), _stable()]


def _streams_scale_in(rng, ctx):
    return [Action("sleep", {"s": round(rng.uniform(1, 3), 2)}),
            Action("scale_in", {"pick": rng.choice(["newest", "oldest"])}), _stable()]


def _streams_static_bounce(rng, ctx):
    out = []
    for slot in rng.sample(range(3), 3):
        out += [Action("bounce", {"slot": slot, "down_s": round(rng.uniform(0.5, 2.0), 2)}), _stable()]
    return out


def _streams_rack_outage(rng, ctx):
    rack = f"r{rng.randrange(ctx.racks)}"
    return [Action("sleep", {"s": 2.0}), Action("rack_outage", {"rack": rack, "down_s": round(rng.uniform(3, 6), 2)}),
            _stable()]


def _streams_broker_bounce(rng, ctx):
    return [Action("sleep", {"s": 2.0}),
            Action("broker_bounce", {"broker": rng.randint(1, ctx.brokers), "down_s": round(rng.uniform(1, 3), 2)}),
            _stable()]


def _streams_eos_kill(rng, ctx):
    return [Action("sleep", {"s": round(rng.uniform(2, 4), 2)}),
            Action("kill_member", {"slot": rng.randrange(3), "replace_after_s": round(rng.uniform(1, 3), 2)}),
            _stable()]


def _streams_pod_restarts(rng, ctx):
    """As on Kubernetes: an instance restarted keeping its state directory (a StatefulSet's volume), then
    another on a wiped one (a fresh pod): the second restores its tasks' state from the changelog."""
    first, second = rng.sample(range(3), 2)
    return [Action("sleep", {"s": 2.0}),
            Action("bounce", {"slot": first, "down_s": round(rng.uniform(1, 3), 2)}), _stable(),
            Action("bounce", {"slot": second, "down_s": round(rng.uniform(1, 3), 2), "wipe_state": True}), _stable()]


_STREAMS = dict(kind="streams", protocols=STREAMS_PROTOCOLS)
SCENARIOS.update({s.name: s for s in [
    Scenario("streams-scale-out", "Kafka Streams: add an instance to two with large state; it warms up first.",
             _streams_scale_out, members=2, max_members=3, smoke=True, **_STREAMS),
    Scenario("streams-scale-in", "Kafka Streams: stop one of three instances with standbys.", _streams_scale_in,
             streams={"num.standby.replicas": 1}, **_STREAMS),
    Scenario("streams-static-bounce", "Kafka Streams: rolling bounce of static instances.", _streams_static_bounce,
             static=True, streams={"num.standby.replicas": 1}, kind="streams", protocols=("classic",)),
    Scenario("streams-rack-outage", "Kafka Streams: one rack down with rack-aware standbys, then back.",
             _streams_rack_outage, racks=True, streams={"num.standby.replicas": 1, "harness.rack.aware": True},
             **_STREAMS),
    Scenario("streams-broker-bounce", "Kafka Streams: restart one broker under the instances.",
             _streams_broker_bounce, **_STREAMS),
    Scenario("streams-eos-kill", "Kafka Streams, exactly_once_v2: SIGKILL an instance, start a replacement; "
             "no record twice in the committed output.", _streams_eos_kill,
             streams={"processing.guarantee": "exactly_once_v2", "num.standby.replicas": 1}, **_STREAMS),
    Scenario("streams-pod-restarts", "Kafka Streams as on Kubernetes: one instance restarted with its state "
             "directory kept (a StatefulSet), another with it wiped (a fresh pod).", _streams_pod_restarts,
             **_STREAMS),
]})


def is_file(name: str) -> bool:
    """Whether a scenario argument names a file: not a built-in, and ends in .toml or is an existing file."""
    return name not in SCENARIOS and (name.endswith(".toml") or Path(name).is_file())


def get(name: str) -> Scenario:
    """The built-in scenario of that name, or BadInput listing the known ones (a scenario file is read by
    harness.scenario_file, which builds on this module; `harness.plan.scenario_of` takes either)."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise BadInput(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)} (or a scenario file, "
                       "docs/scenarios.md)") from None


def schedule(scenario: Scenario, *, seed: int, ctx: ScenarioContext) -> list[Action]:
    """The concrete schedule a seed gives for a scenario."""
    return scenario.build(random.Random(seed), ctx)
