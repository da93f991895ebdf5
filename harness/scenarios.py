"""The built-in scenarios: TOML files shipped in harness/builtin/, and the few a file cannot say.

Every consumer-group scenario a file can say is a file under harness/builtin/ (one per scenario, named
after it), read by the same interpreter as a user's file (harness/scenario_file.py, docs/scenarios.md).
Two kinds stay Python builders here: `random-mix`, which draws the kind of each action, and the Kafka
Streams `streams-*` scenarios, since the file format describes consumer-group members only. The files are
read on first use of `SCENARIOS`, not at import.
"""
from __future__ import annotations

from collections.abc import MutableMapping
from functools import cached_property
from importlib import resources
from pathlib import Path

from harness import scenario_file
from harness.actions import ACTIONS, MIX_CHOICES
from harness.errors import BadInput
from harness.scenario_model import (CONNECT_PROTOCOLS, PROTOCOLS, STREAMS_PROTOCOLS, Action, Scenario, ScenarioContext, schedule)

__all__ = ["CONNECT_PROTOCOLS", "PROTOCOLS", "STREAMS_PROTOCOLS", "Action", "Scenario", "ScenarioContext", "SCENARIOS", "get",
           "is_file", "schedule", "builtin_files"]


def _stable() -> Action:
    return Action("wait_stable", {})


def _mix_action(rng, ctx) -> Action:
    """One self-contained fault or change for the random mix (valid whatever ran before it): an action the registry
    gives a mix draw (harness/actions.py), each of its draws taken, so a seed gives one schedule."""
    kind = rng.choice(MIX_CHOICES)
    slot = rng.randrange(3)
    drawn = {name: ACTIONS[name].mix(rng, ctx, slot) for name in dict.fromkeys(MIX_CHOICES)}
    return Action(kind, drawn[kind])


def _random_mix(rng, ctx, *, actions: int | None = None):
    """A seeded mix of every kind of fault, each followed by a wait for a stable assignment."""
    out = []
    for _ in range(actions or rng.randint(10, 14)):
        out += [_mix_action(rng, ctx), _stable()]
    return out


PYTHON_BUILT_INS = [
    Scenario("random-mix", "A seeded random mix of member, broker and network faults (10-14 actions).",
             _random_mix),
]


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


def _streams_autoscale(rng, ctx):
    """As a horizontal autoscaler on a lag metric would scale the application on Kubernetes: two instances that
    keep up with twice the base rate (on paper: rebalances, restores and a busy host take some), a burst of 2.4
    times it for 25 s (lag builds, instances are added), then the base rate (lag falls, the added instances are
    removed)."""
    return [Action("sleep", {"s": round(rng.uniform(1, 3), 2)}),
            Action("autoscale", {"duration_s": 90.0, "burst_rate_per_s": 120.0, "burst_s": 25.0, "scale_out_lag": 300,
                                 "scale_in_lag": 100, "min_members": 2, "max_members": 4, "interval_s": 1.0,
                                 "cooldown_s": 15.0}), _stable()]


def _streams_protocol_migration(rng, ctx):
    """KIP-1071's offline migration, as Kafka's Streams guide describes it: every instance stops (a dynamic one
    leaves the group on close), the group is left empty, and all start again on the `streams` protocol with
    their state directories kept; the coordinator turns the empty classic group into a streams group, and
    only the committed offsets carry over. Then back to `classic` the same way."""
    down = round(rng.uniform(2, 4), 2)
    return [Action("sleep", {"s": round(rng.uniform(3, 5), 2)}),
            Action("restart_all", {"down_s": down, "protocol": "streams"}), _stable(),
            Action("sleep", {"s": round(rng.uniform(3, 5), 2)}),
            Action("restart_all", {"down_s": down, "protocol": "classic"}), _stable()]


_STREAMS = dict(kind="streams", protocols=STREAMS_PROTOCOLS)
PYTHON_BUILT_INS += [
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
    # 20 ms of work per record: 50 records/s per instance. A recovery lag above any changelog's length makes
    # every instance count as caught up, so an added instance takes tasks at once and restores them (2,000
    # records of state per task, 2 s): the downtime an autoscaler's new pod brings, instead of a warmup and a
    # probing rebalance 60 s later
    Scenario("streams-autoscale", "Kafka Streams scaled by a lag-driven autoscaler: a burst adds instances, the "
             "calm after it removes them.", _streams_autoscale, members=2, max_members=4, processing_ms=20.0,
             streams={"acceptable.recovery.lag": 1000000, "harness.records.per.task": 2000}, **_STREAMS),
    Scenario("streams-protocol-migration", "Kafka Streams moved offline from the classic protocol to the streams "
             "protocol (KIP-1071) and back, every instance keeping its state directory.",
             _streams_protocol_migration, streams={"harness.records.per.task": 3000}, kind="streams",
             protocols=("classic",)),
]


def builtin_files() -> list:
    """The shipped scenario files (harness/builtin/*.toml, package data), by name."""
    return sorted((f for f in resources.files("harness").joinpath("builtin").iterdir() if f.name.endswith(".toml")),
                  key=lambda f: f.name)


def builtin_text(name: str) -> str | None:
    """The text of the shipped file of a built-in scenario (each is named after its scenario), or None."""
    f = resources.files("harness").joinpath("builtin", f"{name}.toml")
    return f.read_text() if f.is_file() else None


class _BuiltIns(MutableMapping):
    """Name -> Scenario of every built-in: the shipped files (in name order), then the Python ones. The files
    are read on first use; tests and benchmarks may add their own scenarios."""

    @cached_property
    def _all(self) -> dict[str, Scenario]:
        files = [scenario_file.loads(f.read_text(), f"harness/builtin/{f.name}") for f in builtin_files()]
        return {s.name: s for s in files + PYTHON_BUILT_INS}

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
    read by harness.scenario_file; `harness.plan.scenario_of` takes either)."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise BadInput(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)} (or a scenario file, "
                       "docs/scenarios.md)") from None


# -- Kafka Connect scenarios (the runner with harness/kinds/connect.py; docs/connect.md)
def _connect_worker_kill(rng, ctx):
    """A worker killed and kept away past scheduled.rebalance.max.delay.ms: its connectors and tasks wait the
    delay, then move to the others; a replacement joins afterwards. Not the oldest worker (slot 0), which
    leads the group: a new leader does not know the delay (connect-leader-kill)."""
    slot = rng.choice([1, 2])
    return [Action("sleep", {"s": round(rng.uniform(2, 4), 2)}), Action("kill_member", {"slot": slot}), _stable(),
            Action("replace_member", {"slot": slot}), _stable()]


def _connect_worker_kill_short(rng, ctx):
    """A worker killed and back before the scheduled delay ends: the returning worker takes its work back. Not
    the oldest worker (the leader, whose work moves at once: connect-leader-kill)."""
    return [Action("sleep", {"s": round(rng.uniform(2, 4), 2)}),
            Action("kill_member", {"slot": rng.choice([1, 2]), "replace_after_s": round(rng.uniform(0.5, 2.0), 2)}),
            _stable()]


def _connect_worker_pause(rng, ctx):
    """SIGSTOP a worker longer than its session timeout (its group drops it), then SIGCONT: a frozen worker's
    tasks are zombies until it runs again and learns it lost them."""
    return [Action("sleep", {"s": 2.0}),
            Action("pause_member", {"slot": rng.choice([1, 2]),
                                    "duration_s": round(rng.uniform(1.2, 1.8) * ctx.session_timeout_s, 2)}),
            _stable()]


def _connect_scale_out_in(rng, ctx):
    return [Action("sleep", {"s": 2.0}), Action("scale_out", {}), _stable(), Action("scale_out", {}), _stable(),
            Action("scale_in", {"pick": "newest"}), _stable(), Action("scale_in", {"pick": "newest"}), _stable()]


def _connect_rolling_bounce(rng, ctx):
    out = [Action("sleep", {"s": 2.0})]
    for slot in rng.sample(range(3), 3):
        out += [Action("bounce", {"slot": slot, "down_s": round(rng.uniform(0.5, 2.0), 2)}), _stable()]
    return out


def _connect_join_back_to_back(rng, ctx):
    """Two workers join one right after the other: the second joins while the first one's rebalance runs."""
    return [Action("sleep", {"s": 2.0}), Action("scale_out", {}), Action("scale_out", {}), _stable()]


def _connect_leader_kill(rng, ctx):
    """SIGKILL the oldest worker (the group's leader unless a rebalance made another one leader), replace it
    later than the delay."""
    return [Action("sleep", {"s": 2.0}), Action("kill_member", {"slot": 0}), _stable(),
            Action("replace_member", {"slot": 0}), _stable()]


def _connect_broker_bounce(rng, ctx):
    return [Action("sleep", {"s": 2.0}),
            Action("broker_bounce", {"broker": rng.randint(1, ctx.brokers), "down_s": round(rng.uniform(1, 3), 2)}),
            _stable()]


def _connect_rack_outage(rng, ctx):
    return [Action("sleep", {"s": 2.0}),
            Action("rack_outage", {"rack": f"r{rng.randrange(ctx.racks)}", "down_s": round(rng.uniform(3, 6), 2)}),
            _stable()]


def _connect_rolling_upgrade(rng, ctx):
    """The workers start on an older connect-runtime (the scenario's initial_client) and are bounced one at a
    time onto the brokers' version: a mixed-version Connect cluster on the way."""
    out = [Action("sleep", {"s": 2.0})]
    for slot in range(3):
        out += [Action("bounce", {"slot": slot, "down_s": round(rng.uniform(0.5, 2.0), 2), "client_version": "brokers"}),
                _stable()]
    return out


_CONNECT = dict(kind="connect", protocols=CONNECT_PROTOCOLS)
PYTHON_BUILT_INS += [
    Scenario("connect-worker-kill", "Kafka Connect: SIGKILL a worker and keep it away past the scheduled delay; "
             "its work moves after the delay, not before.", _connect_worker_kill, smoke=True, **_CONNECT),
    Scenario("connect-worker-kill-short", "Kafka Connect: SIGKILL a worker and start it again within the "
             "scheduled delay; the returning worker takes its work back.", _connect_worker_kill_short, **_CONNECT),
    Scenario("connect-worker-pause", "Kafka Connect: pause a worker past its session timeout, then resume it.",
             _connect_worker_pause, **_CONNECT),
    Scenario("connect-scale-out-in", "Kafka Connect: add two workers one at a time, then remove them.",
             _connect_scale_out_in, max_members=5, **_CONNECT),
    Scenario("connect-rolling-bounce", "Kafka Connect: graceful rolling bounce of every worker.",
             _connect_rolling_bounce, **_CONNECT),
    Scenario("connect-join-back-to-back", "Kafka Connect: two workers join one right after the other.",
             _connect_join_back_to_back, max_members=5, **_CONNECT),
    Scenario("connect-leader-kill", "Kafka Connect: SIGKILL the oldest worker (the leader), replace it after "
             "the scheduled delay.", _connect_leader_kill, **_CONNECT),
    Scenario("connect-broker-bounce", "Kafka Connect: restart one broker under the workers.",
             _connect_broker_bounce, **_CONNECT),
    Scenario("connect-rolling-upgrade", "Kafka Connect: workers on connect-runtime 3.9.1 bounced one by one onto "
             "the brokers' version.", _connect_rolling_upgrade, initial_client="3.9.1", **_CONNECT),
    Scenario("connect-rack-outage", "Kafka Connect: one rack (its brokers and workers) down, then back.",
             _connect_rack_outage, racks=True, **_CONNECT),
]
