"""Every action a schedule may hold, described once as data: its parameters, what it needs, where it applies.

Each `ActionSpec` names an action, its parameters (name, type, default), the abilities it needs from the
cluster backend (`NEEDS`, the optional protocols of harness/cluster/base.py), the kinds of group it applies to,
a doc line, and how the random mix draws a self-contained instance of it (`mix`, None: never in the mix).
Everything that reads a schedule reads this registry: the scenario file parser (harness/plan/scenario_file.py), the
plan's checks (harness/plan/config.py), the random mix (harness/plan/scenarios.py), docs/scenarios.md's table (a test
holds it to this) and the nemesis, which registers one performer per action with `@performs(name)`
(tests/unit/test_actions.py fails when one is missing or extra, or when its signature says otherwise).

This module imports nothing that starts a process: reading or checking a scenario loads only data.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

from harness.base.vocabulary import DEFAULT_SUBSCRIBE_BY, GROUP_KINDS, SUBSCRIBE_BY

#: a client or group setting's value as a file writes it (passed on as text)
Setting = str | int | float | bool
#: how a member changes its subscription (`change_subscription`'s `subscribe_by`; a scenario file's other word is
#: refused with the words it takes)
SubscribeBy = Literal[SUBSCRIBE_BY]
#: the abilities an action may need from the cluster backend (harness/cluster/base.py's optional protocols)
#: (an ability -> what an action needing it does, as a refusal says it)
NEEDS = {"kill": "kills, stops or restarts brokers (Killable)",
         "network": "puts network faults between clients and brokers (Partitionable)",
         "rack_outage": "takes every broker of a rack down (RackOutages)",
         "broker_partition": "partitions brokers from each other (BrokerPartitions)",
         "requests": "puts faults on chosen Kafka requests through the request proxy (RequestFaults)",
         "leaders": "reads and moves partition leaders (Leadership: a reassignment and a leader election)"}
REQUIRED = object()  # a parameter without a default
ALL_KINDS = frozenset(GROUP_KINDS)
CONSUMER = frozenset({"consumer"})


@dataclass(frozen=True)
class Param:
    """One parameter of an action: its name, its type (a typing hint) and its default (REQUIRED: none)."""

    name: str
    type: object
    default: object = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class ActionSpec:
    """An action: what it is called, takes, needs of the backend, applies to, and does."""

    name: str
    params: tuple[Param, ...]
    doc: str
    needs: frozenset[str] = frozenset()
    kinds: frozenset[str] = ALL_KINDS
    mix: Callable | None = None  # mix(rng, ctx, slot) -> params: the random mix's draw of it (None: not in the mix)
    mix_weight: int = 1  # how many times it is listed among the mix's choices
    settles: bool = True  # a scenario file's step of it waits for a stable group after it unless it says not


    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


def _p(name: str, type_: object, default: object = REQUIRED) -> Param:
    return Param(name, type_, default)


def _u(rng, lo: float, hi: float) -> float:
    return round(rng.uniform(lo, hi), 2)


SLOT = _p("slot", int)
# The order of the mixed actions is the order the random mix lists them (and draws their parameters in): a seed
# gives the schedule it gave before the mix read this registry
_SPECS = (
    ActionSpec("sleep", (_p("s", float),), "Wait `s` seconds."),
    ActionSpec("wait_stable", (), "Wait until the group is stable (the kind's rule) and quiet."),
    ActionSpec("workload_rate", (_p("rate_per_s", float),),
               "The producer writes this many records per second (the total over the topics) from now on; the "
               "result has the new and the former rate."),
    ActionSpec("scale_out", (_p("count", int, 1),), "`count` more members (one by default), in the next slots, "
               "started together.", mix=lambda rng, ctx, slot: {}),
    ActionSpec("scale_in", (_p("pick", str, "newest"), _p("count", int, 1)),
               "Stop the newest (or `\"oldest\"`) live member, or `count` of them at once (one always stays).",
               mix=lambda rng, ctx, slot: {"pick": "newest"}),
    ActionSpec("kill_member", (SLOT, _p("replace_after_s", float | None, None)),
               "SIGKILL the member in the slot; a replacement after that many seconds when given.",
               mix=lambda rng, ctx, slot: {"slot": slot, "replace_after_s": _u(rng, 0.5, 3.0)}),
    ActionSpec("pause_member", (SLOT, _p("duration_s", float)), "SIGSTOP the member in the slot, then SIGCONT.",
               mix=lambda rng, ctx, slot: {"slot": slot, "duration_s": round(rng.uniform(0.2, 1.8) *
                                                                             ctx.session_timeout_s, 2)},
               mix_weight=2),
    ActionSpec("bounce", (SLOT, _p("down_s", float, 0.5), _p("client_version", str | None, None),
                          _p("protocol", str | None, None), _p("client_settings", dict[str, Setting] | None, None),
                          _p("static", bool | None, None), _p("wipe_state", bool, False)),
               "Stop the member in the slot gracefully and start it again: on that client version or group protocol, "
               "with those client settings over its own, static or not; a Kafka Streams instance keeps its state "
               "directory (a StatefulSet's volume) unless `wipe_state` (a fresh pod).",
               mix=lambda rng, ctx, slot: {"slot": slot, "down_s": _u(rng, 0.2, 1.0)}),
    ActionSpec("broker_bounce", (_p("broker", int), _p("down_s", float, 1.0)),
               "Stop a broker (1-based) gracefully and start it again.", needs=frozenset({"kill"}),
               mix=lambda rng, ctx, slot: {"broker": rng.randint(1, ctx.brokers), "down_s": _u(rng, 0.5, 3.0)}),
    ActionSpec("kill_coordinator", (_p("down_s", float),),
               "SIGKILL the broker that coordinates the group, then start it again.", needs=frozenset({"kill"}),
               mix=lambda rng, ctx, slot: {"down_s": _u(rng, 1.0, 4.0)}),
    ActionSpec("network_latency", (_p("latency_ms", int), _p("jitter_ms", int), _p("duration_s", float)),
               "Latency and jitter between every client and every broker for a while.", needs=frozenset({"network"}),
               mix=lambda rng, ctx, slot: {"latency_ms": rng.choice([50, 150, 300]), "jitter_ms": rng.choice([0, 30]),
                                           "duration_s": _u(rng, 2, 5)}),
    ActionSpec("network_blackhole", (_p("broker", int), _p("duration_s", float)),
               "The broker's client traffic goes nowhere (timeouts) for a while.", needs=frozenset({"network"}),
               mix=lambda rng, ctx, slot: {"broker": rng.randint(1, ctx.brokers),
                                           "duration_s": round(rng.uniform(0.2, 0.5) * ctx.session_timeout_s, 2)}),
    # within the client's default max.poll.interval.ms (300 s): heartbeats go on, polls do not; in the mix a member
    # that takes no stall control is left alone (the action says so) rather than failing the night
    ActionSpec("poll_stall", (SLOT, _p("duration_s", float), _p("if_supported", bool, False)),
               "The member stops calling poll while its client stays up (heartbeats go on); past "
               "`max.poll.interval.ms` the client leaves the group.", kinds=CONSUMER,
               mix=lambda rng, ctx, slot: {"slot": slot, "duration_s": round(rng.uniform(0.5, 2.0) *
                                                                             ctx.session_timeout_s, 2),
                                           "if_supported": True}),
    ActionSpec("leave_during_join", (SLOT,),
               "A new member starts joining and at once the member in the slot leaves gracefully.", kinds=CONSUMER,
               mix=lambda rng, ctx, slot: {"slot": slot}),
    ActionSpec("settings_roll", (_p("client_settings", dict[str, Setting] | None, None), _p("static", bool | None, None),
                                 _p("down_s", float, 0.5)),
               "Every live member in turn, in slot order, restarts with these client settings (a `bounce`), the "
               "group settling in between.", kinds=CONSUMER,
               mix=lambda rng, ctx, slot: {"static": rng.choice([True, False]), "down_s": _u(rng, 0.2, 1.0)}),
    # a run of the mix has one topic: the member resubscribes to it (librdkafka leaves and rejoins)
    ActionSpec("change_subscription", (SLOT, _p("subscription", list[str]),
                                       _p("subscribe_by", SubscribeBy, DEFAULT_SUBSCRIBE_BY)),
               "The member resubscribes without a restart (names of `[[topics]]`, `^regexes`; empty: every topic); "
               "the slot keeps it across later restarts. `subscribe_by`: one `subscribe()` with the new list, or "
               "`\"unsubscribe-subscribe\"`: `unsubscribe()` first (the member leaves the group), then `subscribe()`.",
               kinds=CONSUMER,
               mix=lambda rng, ctx, slot: {"slot": slot, "subscription": []}),
    # the partitions exist from the CreatePartitions answer on; the members learn of them from their metadata (the
    # classic protocol's leader on its refresh, topic.metadata.refresh.interval.ms; the consumer protocol's and a
    # share group's coordinator; a Connect sink's consumers on their `consumer.metadata.max.age.ms`, a Connect setting);
    # the producer is made to learn of them at once (harness/members/workload.py). Kafka Streams refuses it (KAFKA_REFUSES)
    ActionSpec("add_partitions", (_p("count", int), _p("topic", str | None, None)),
               "The topic (a name of `[[topics]]`; default the first) gets partitions up to `count` in all (the new "
               "total) and the producer writes to them from then on; the result has the topic, the count before and "
               "after, and when the producer saw them.", kinds=CONSUMER | {"share", "connect"}),
    # KIP-848's session timeout, as a group config (no effect on classic groups); skipped before Kafka 4.0
    ActionSpec("group_config", (_p("settings", dict[str, Setting]), _p("if_supported", bool, False)),
               "Group configs set through the Admin API while the group runs (Kafka 4.0+).", kinds=CONSUMER,
               mix=lambda rng, ctx, slot: {"settings": {"consumer.session.timeout.ms": rng.choice([6000, 10000, 20000])},
                                           "if_supported": True}),
    # a short autoscaler over a burst: whether the members keep up decides whether it scales out; a calm group is
    # scaled in towards two members
    ActionSpec("autoscale", (_p("duration_s", float), _p("scale_out_lag", int), _p("scale_in_lag", int),
                             _p("min_members", int, 1), _p("max_members", int, 6), _p("interval_s", float, 1.0),
                             _p("cooldown_s", float, 10.0), _p("burst_rate_per_s", float | None, None),
                             _p("burst_s", float | None, None)),
               "A lag-driven autoscaler for `duration_s`: scale out or in one member by the group's lag "
               "(harness/nemesis/lag.py), over an optional burst of records.",
               mix=lambda rng, ctx, slot: {"duration_s": _u(rng, 20, 30), "scale_out_lag": 300, "scale_in_lag": 50,
                                           "min_members": 2, "max_members": 5, "cooldown_s": 8.0,
                                           "burst_rate_per_s": float(rng.choice([200, 400, 800])), "burst_s": 10.0}),
    ActionSpec("replace_member", (SLOT, _p("protocol", str | None, None)),
               "A member in an empty slot (after a kill), on that group protocol when given."),
    ActionSpec("restart_crashed", (_p("count", int), _p("timeout_s", float, 120.0)),
               "Each member that exits on its own (a crash: say a poison record killed it) starts again in its slot, "
               "as soon as its exit is seen, until `count` have or `timeout_s` passed; the result lists each (the "
               "member, its exit code, its replacement)."),
    ActionSpec("restart_all", (_p("down_s", float, 2.0), _p("protocol", str | None, None)),
               "Every live member stops, the group stays empty for `down_s`, every slot starts again (on that "
               "protocol when given: an offline migration)."),
    ActionSpec("broker_rolling_restart", (), "Restart every broker in turn.", needs=frozenset({"kill"})),
    ActionSpec("broker_upgrade", (_p("version", str),), "Roll every broker onto another Kafka version.",
               needs=frozenset({"kill"})),
    ActionSpec("restart_coordinator", (_p("down_s", float, 1.0),),
               "A graceful restart (SIGTERM, controlled shutdown) of the coordinator's broker.",
               needs=frozenset({"kill"})),
    ActionSpec("wait_offsets_compacted", (_p("timeout_s", float, 90.0),),
               "Wait until the log cleaner has compacted the group's `__consumer_offsets` partition on the "
               "coordinator's broker (the broker settings must let it run)."),
    ActionSpec("rack_outage", (_p("rack", str), _p("down_s", float)),
               "Kill every broker and member of a rack (`\"r0\"`, ...), then restore them.",
               needs=frozenset({"rack_outage"})),
    ActionSpec("broker_partition", (_p("broker", int | str, "coordinator"), _p("duration_s", float, 10.0)),
               "Cut a broker (the coordinator by default) off the other brokers and the quorum while its clients "
               "still reach it, then heal.", needs=frozenset({"broker_partition"})),
    ActionSpec("rack_partition", (_p("rack", str, "r0"), _p("duration_s", float, 10.0)),
               "Cut every broker of a rack off the other racks' brokers and the quorum, then heal.",
               needs=frozenset({"broker_partition"})),
    # the partitions' leaders (a share group's share-partition leaders) moved with no broker stopping; the result
    # has each moved partition's leader before and after (harness/cluster/leadership.py)
    ActionSpec("move_leaders", (_p("broker", int),),
               "Every partition of the run's first topic that the broker (1-based) leads gets another in-sync replica "
               "as its leader (its replica list turned, then a preferred-leader election); no broker stops.",
               needs=frozenset({"leaders"})),
    ActionSpec("restart_partition_leader", (_p("partition", int, 0), _p("down_s", float, 1.0),
                                            _p("same_leader", bool, False)),
               "A graceful restart of the broker leading that partition of the run's first topic; the result has its "
               "leader before, while down and after (with `[workload] replication = 1` it stays on that broker: the "
               "partition goes offline and comes back there; `same_leader`: another leader after makes the run "
               "indeterminate).", needs=frozenset({"kill", "leaders"})),
)
#: actions that signal one member's process (SIGKILL, SIGSTOP): refused when a process hosts several members
#: (`members_per_process`), where the signal would reach every member it hosts
ONE_PROCESS = frozenset({"kill_member", "pause_member", "rack_outage"})
# Request faults (harness/kproxy/, docs/scenarios.md "Request faults"): each installs one rule in the request proxy
# on the requests of one API from the member now in `slot` (or "all" members), to `broker` (1-based, or "all"), and
# returns at once with the rule live: it lifts itself after `count` requests or `duration_s` (without `count`: one
# request, or every request while `duration_s` lasts when that is given; `delay_request`: every request), at a
# `clear_request_faults`, or when the schedule ends; `wait_s` makes the step wait (at most that long) until the rule
# is spent. Not in the mix: a random request fault on a random API turns most runs into timeouts judged by nobody's
# rule, and the mix runs on clusters started without the proxy (the docker backend has none)
REQ = frozenset({"requests"})
_API, _WHO = (_p("api", str),), (_p("slot", int | str, "all"), _p("broker", int | str, "all"))
_TARGET = _API + _WHO
_SPENT = (_p("duration_s", float | None, None), _p("wait_s", float | None, None))
_REQUEST_SPECS = (
    ActionSpec("delay_request", _API + (_p("delay_s", float | list[float]),) + _WHO + (_p("count", int | None, None),) +
               _SPENT,
               "Requests of `api` reach the broker `delay_s` later (fixed, or `[lo, hi]` drawn per request).",
               needs=REQ, settles=False),
    ActionSpec("hold_request", _TARGET + (_p("count", int | None, None), _p("timeout_s", float, 30.0),
                                          _p("until_api", str | None, None), _p("until_slot", int | str, "other"),
                                          _p("until_step", int | None, None)) + _SPENT,
               "Requests of `api` wait at the proxy until a request of `until_api` comes from `until_slot` (any "
               "`\"other\"` member by default), until the step `until_step` steps later ends, or `timeout_s`.",
               needs=REQ, settles=False),
    ActionSpec("drop_request", _TARGET + (_p("count", int | None, None), _p("then", str, "stall")) + _SPENT,
               "Requests of `api` never reach the broker (`then = \"stall\"`: nor does the rest of the connection's).",
               needs=REQ, settles=False),
    ActionSpec("drop_response", _TARGET + (_p("count", int | None, None), _p("then", str, "stall")) + _SPENT,
               "Requests of `api` reach the broker; their answers never reach the client (`then = \"stall\"`: nor "
               "do later ones of the connection).", needs=REQ, settles=False),
    ActionSpec("error_response", _API + (_p("error", str | int),) + _WHO + (_p("count", int | None, None),) + _SPENT,
               "The proxy answers requests of `api` with `error` (NOT_COORDINATOR, ...) in the broker's stead.",
               needs=REQ, settles=False),
    ActionSpec("disconnect", _TARGET + (_p("count", int | None, None),) + _SPENT,
               "Requests of `api` reach the broker; when the broker answers one the proxy discards the answer and closes "
               "the client's connection (the requests the client sent behind it on that connection are lost with it).",
               needs=REQ, settles=False),
    ActionSpec("wait_request_fault", (_p("timeout_s", float, 30.0), _p("applied", int, 1)),
               "Wait until the last request fault installed was applied to `applied` requests (at most `timeout_s`; "
               "the result says whether it was).", needs=REQ, settles=False),
    ActionSpec("clear_request_faults", (), "Lift every request fault of the schedule; held requests go on.",
               needs=REQ, settles=False),
)
#: name -> spec, in the order above (the request faults last: harness/request_actions.py)
ACTIONS: dict[str, ActionSpec] = {s.name: s for s in _SPECS + _REQUEST_SPECS}
#: the actions the random mix draws from, as many times each as its weight, in the registry's order
MIX_CHOICES: tuple[str, ...] = tuple(s.name for s in _SPECS if s.mix for _ in range(s.mix_weight))


def spec(name: str) -> ActionSpec | None:
    """The spec of an action, or None for a name no action has."""
    return ACTIONS.get(name)


#: (action, kind) -> why Kafka itself refuses that action for that kind of group (said in the plan's refusal)
KAFKA_REFUSES = {
    # kafka-streams' InternalTopicManager (classic protocol: the leader's assignment throws and the app stops) and
    # the group coordinator's streams InternalTopicManager (streams protocol, KIP-1071: INCORRECTLY_PARTITIONED_TOPICS,
    # no task assigned); docs/streams.md
    ("add_partitions", "streams"):
        "Kafka Streams refuses it: a stateful app's changelog topics have as many partitions as its input topic, and "
        "once the input grows the changelogs no longer match (kafka-streams' InternalTopicManager: \"Existing internal "
        "topic ... has invalid partitions: expected: N; actual: M\", the instances stop; under the streams protocol the "
        "group coordinator answers INCORRECTLY_PARTITIONED_TOPICS and assigns no task); see docs/streams.md",
}


def kind_refusal(name: str, kind: str) -> str | None:
    """Why an action cannot run with members of `kind`, or None (an unknown action: what is known)."""
    s = ACTIONS.get(name)
    if s is None:
        return f"unknown action {name!r}; known: {', '.join(ACTIONS)}"
    if kind not in s.kinds:
        return KAFKA_REFUSES.get((name, kind)) or f"is for {' and '.join(sorted(s.kinds))} groups; these members are {kind}"
    return None


def missing(name: str, abilities: frozenset[str]) -> list[str]:
    """The abilities an action needs that a backend of these abilities lacks (sorted)."""
    return sorted(ACTIONS[name].needs - abilities)


def needs_requests(schedule) -> bool:
    """Whether a schedule (Actions, or their kinds) has a step that needs the request proxy."""
    return any("requests" in ACTIONS[k].needs for a in schedule
               if (k := getattr(a, "kind", a)) in ACTIONS)


def performs(name: str):
    """Marks a method as the nemesis's performer of action `name` (a name the registry must know)."""
    if name not in ACTIONS:
        raise ValueError(f"no action {name!r} in harness/plan/actions.py")

    def mark(fn):
        fn.performs = name
        return fn
    return mark
