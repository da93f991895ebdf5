"""One table of steps: every action a schedule may hold, described once as data (issue 45).

Each row (`ActionSpec`) names an action (`Step`, the one place the names are spelled), its parameters (name, type,
default, and the bound a value must keep beyond its type: `Bound`), the abilities it needs from the cluster backend
(`NEEDS`, the optional protocols of harness/cluster/base.py), the kinds of group it applies to, a doc line, how
the random mix draws a self-contained instance of it (`mix`, None: never in the mix), what it does to the member
slots (`Slots`: the plan bounds later steps' slots and counts by it) and to the brokers (`brokers`), and what it
leaves in the history as proof that it happened (`Proof`, the data `schedule_performed` reads).
Everything that reads a schedule reads this table: the scenario file parser (harness/plan/scenario_file.py), the
plan's checks (harness/plan/config.py, `refusal` here), the random mix (harness/plan/scenarios.py), docs/scenarios.md's
table (a test holds it to this), the nemesis, which registers one performer per action with `@performs(Step.X)`
(tests/unit/test_actions.py fails when one is missing or extra, or when its signature says otherwise), and the
invariants (harness/invariants/performed.py: the proof of each step).

Pure data and pure functions: it imports nothing of the harness but the vocabulary, so the invariants may read it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Callable, Literal

from harness.base.vocabulary import DEFAULT_SUBSCRIBE_BY, GROUP_KINDS, SUBSCRIBE_BY


class Step(StrEnum):
    """Every action's name (a str: a schedule, a history and a scenario file hold the plain word)."""

    SLEEP = "sleep"
    WAIT_STABLE = "wait_stable"
    WORKLOAD_RATE = "workload_rate"
    SCALE_OUT = "scale_out"
    SCALE_IN = "scale_in"
    KILL_MEMBER = "kill_member"
    PAUSE_MEMBER = "pause_member"
    BOUNCE = "bounce"
    BROKER_BOUNCE = "broker_bounce"
    KILL_COORDINATOR = "kill_coordinator"
    NETWORK_LATENCY = "network_latency"
    NETWORK_BLACKHOLE = "network_blackhole"
    POLL_STALL = "poll_stall"
    LEAVE_DURING_JOIN = "leave_during_join"
    SETTINGS_ROLL = "settings_roll"
    CHANGE_SUBSCRIPTION = "change_subscription"
    ADD_PARTITIONS = "add_partitions"
    GROUP_CONFIG = "group_config"
    AUTOSCALE = "autoscale"
    REPLACE_MEMBER = "replace_member"
    RESTART_CRASHED = "restart_crashed"
    RESTART_ALL = "restart_all"
    BROKER_ROLLING_RESTART = "broker_rolling_restart"
    BROKER_UPGRADE = "broker_upgrade"
    RESTART_COORDINATOR = "restart_coordinator"
    WAIT_OFFSETS_COMPACTED = "wait_offsets_compacted"
    RACK_OUTAGE = "rack_outage"
    BROKER_PARTITION = "broker_partition"
    RACK_PARTITION = "rack_partition"
    MOVE_LEADERS = "move_leaders"
    RESTART_PARTITION_LEADER = "restart_partition_leader"
    DELAY_REQUEST = "delay_request"
    HOLD_REQUEST = "hold_request"
    DROP_REQUEST = "drop_request"
    DROP_RESPONSE = "drop_response"
    ERROR_RESPONSE = "error_response"
    DISCONNECT = "disconnect"
    WAIT_REQUEST_FAULT = "wait_request_fault"
    CLEAR_REQUEST_FAULTS = "clear_request_faults"
    CREATE_TOPIC = "create_topic"
    DELETE_TOPIC = "delete_topic"


class Ability(StrEnum):
    """The abilities an action may need from the cluster backend (harness/cluster/base.py's optional protocols);
    two share their word with the action that needs them most."""

    KILL = "kill"
    NETWORK = "network"
    RACK_OUTAGE = Step.RACK_OUTAGE.value
    BROKER_PARTITION = Step.BROKER_PARTITION.value
    REQUESTS = "requests"
    LEADERS = "leaders"


#: a client or group setting's value as a file writes it (passed on as text)
Setting = str | int | float | bool
#: how a member changes its subscription (`change_subscription`'s `subscribe_by`; a scenario file's other word is
#: refused with the words it takes)
SubscribeBy = Literal[SUBSCRIBE_BY]
#: (an ability -> what an action needing it does, as a refusal says it)
NEEDS = {Ability.KILL: "kills, stops or restarts brokers (Killable)",
         Ability.NETWORK: "puts network faults between clients and brokers (Partitionable)",
         Ability.RACK_OUTAGE: "takes every broker of a rack down (RackOutages)",
         Ability.BROKER_PARTITION: "partitions brokers from each other (BrokerPartitions)",
         Ability.REQUESTS: "puts faults on chosen Kafka requests through the request proxy (RequestFaults)",
         Ability.LEADERS: "reads and moves partition leaders (Leadership: a reassignment and a leader election)"}
REQUIRED = object()  # a parameter without a default
ALL_KINDS = frozenset(GROUP_KINDS)
CONSUMER = frozenset({"consumer"})


class Bound(StrEnum):
    """What a parameter's value must be beyond its type (the words docs/scenarios.md says); `refusal` checks it."""

    POSITIVE = "> 0"  # a duration, latency, rate or timeout: 0 or less does nothing anyone could see
    AT_LEAST_0 = ">= 0"  # where 0 means something (no jitter, a replacement at once, partition 0, no lag)
    AT_LEAST_1 = ">= 1"  # a count of things the step makes or waits for
    SLOT = "a slot the schedule has by then"  # 0 <= slot < the run's members and the slots later steps added
    BROKER = "a broker of the cluster, 1 to N"
    FEWER_THAN_LIVE = "at most the live members less one"  # one member always stays


@dataclass(frozen=True)
class Param:
    """One parameter of an action: its name, its type (a typing hint), its default (REQUIRED: none), its bound and
    the words it takes besides (`"all"`, `"coordinator"`, ...)."""

    name: str
    type: object
    default: object = REQUIRED
    bound: Bound | None = None
    words: tuple[str, ...] = ()

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


#: a number of slots or members the plan cannot know (the autoscaler's scaling)
ANY = "any"


@dataclass(frozen=True)
class Slots:
    """What a step does to the member slots: `adds` new slots after the existing ones (a number, the parameter
    that gives it, or ANY), `fills` an empty slot (a replacement: one more live member, no new slot), `removes`
    that many live members for good (a number or the parameter that gives it)."""

    adds: int | str | None = None
    fills: bool = False
    removes: int | str | None = None


@dataclass(frozen=True)
class Members:
    """Members a step's result names (under any of `keys`) and what each must have left in the history: START a
    `member_start` between the step's `action_start` S and `action_end` E, STOP a `member_stop` or `member_exit`
    at or after S, KILL a `member_exit` how `kill` at or after S. `none`: what is missing when the result names no
    member (None: it may name none)."""

    keys: tuple[str, ...]
    event: str
    none: str | None = None


START, STOP, KILL = "start", "stop", "kill"
#: the proofs of their own a row's `Proof.result` names (what `schedule_performed` checks of the step's result)
RESULT_CHECKS = {
    "restarted": "each member of the result's `restarted` stopped and started again, none `skipped`",
    "moved": "the result's `moved` names a leader moved off the broker",
    "read_back": "a `group_settings` event in [S, E] reads back each setting the step set",
    "grew": "the result's partition `count` is above its count `before`",
    "sampled": "the autoscaler's lag `samples`, and each decision's member started or stopped",
    "rule_applied": "the request proxy's windows (`fault_start` with the step's `rule`) number the rule's `count` "
                    "(one for a rule bounded by time only)",
    "reached": "the result says `reached`",
    "members_killed": "each member the fault names (`members_affected`) has a `member_exit` how `kill`",
}


@dataclass(frozen=True)
class Proof:
    """What a step leaves in the history as proof that it happened (besides an `action_end` with `ok` true, which
    every step needs): `wait`: that end is its whole proof; `fault`: the `fault_start` kind it records, ended by a
    `fault_end`; `fault_member`: that fault names the result's `member` (`members_affected`);
    `restarts_brokers`: each broker of the fault stopped (`broker_event` kill or terminate) and started again
    within it; `members`: the member events its result's members left; `control`: the key of the member's own
    `control` event applying it; `result`: a check of its own (RESULT_CHECKS)."""

    wait: bool = False
    fault: str | None = None
    fault_member: bool = False
    restarts_brokers: bool = False
    members: tuple[Members, ...] = ()
    control: str | None = None
    result: str | None = None


@dataclass(frozen=True)
class ActionSpec:
    """An action: what it is called, takes, needs of the backend, applies to, does, and proves."""

    name: Step
    params: tuple[Param, ...]
    doc: str
    needs: frozenset[str] = frozenset()
    kinds: frozenset[str] = ALL_KINDS
    mix: Callable | None = None  # mix(rng, ctx, slot) -> params: the random mix's draw of it (None: not in the mix)
    mix_weight: int = 1  # how many times it is listed among the mix's choices
    settles: bool = True  # a scenario file's step of it waits for a stable group after it unless it says not
    proof: Proof = Proof()
    slots: Slots = Slots()
    brokers: str = ""  # what it does to the brokers, in words ("": nothing)

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


def _p(name: str, type_: object, default: object = REQUIRED, bound: Bound | None = None,
       words: tuple[str, ...] = ()) -> Param:
    return Param(name, type_, default, bound, words)


def _u(rng, lo: float, hi: float) -> float:
    return round(rng.uniform(lo, hi), 2)


POS, NONNEG, ONE_UP = Bound.POSITIVE, Bound.AT_LEAST_0, Bound.AT_LEAST_1
SLOT = _p("slot", int, bound=Bound.SLOT)
BROKER = _p("broker", int, bound=Bound.BROKER)
KILL_NEED, NETWORK_NEED = frozenset({Ability.KILL}), frozenset({Ability.NETWORK})
WAIT = Proof(wait=True)
_STARTED = Members(("member", "members", "replacement"), START, "no member")
_RESTARTED = (Members(("stopped",), STOP, "no member stopped"), Members(("started",), START, "no member started"))


def _restart(fault: str) -> Proof:
    return Proof(fault=fault, restarts_brokers=True)


# The order of the mixed actions is the order the random mix lists them (and draws their parameters in): a seed
# gives the schedule it gave before the mix read this table
_SPECS = (
    ActionSpec(Step.SLEEP, (_p("s", float, bound=POS),), "Wait `s` seconds.", proof=WAIT),
    ActionSpec(Step.WAIT_STABLE, (), "Wait until the group is stable (the kind's rule) and quiet.", proof=WAIT),
    ActionSpec(Step.WORKLOAD_RATE, (_p("rate_per_s", float, bound=POS),),
               "The producer writes this many records per second (the total over the topics) from now on; the "
               "result has the new and the former rate.", proof=WAIT),
    ActionSpec(Step.SCALE_OUT, (_p("count", int, 1, ONE_UP),), "`count` more members (one by default), in the next "
               "slots, started together.", mix=lambda rng, ctx, slot: {},
               proof=Proof(members=(_STARTED,)), slots=Slots(adds="count")),
    ActionSpec(Step.SCALE_IN, (_p("pick", str, "newest", words=("newest", "oldest")),
                               _p("count", int, 1, Bound.FEWER_THAN_LIVE)),
               "Stop the newest (or `\"oldest\"`) live member, or `count` of them at once (one always stays).",
               mix=lambda rng, ctx, slot: {"pick": "newest"},
               proof=Proof(members=(Members(("member", "members"), STOP, "no member"),)), slots=Slots(removes="count")),
    ActionSpec(Step.KILL_MEMBER, (SLOT, _p("replace_after_s", float | None, None, NONNEG)),
               "SIGKILL the member in the slot; a replacement after that many seconds when given.",
               mix=lambda rng, ctx, slot: {"slot": slot, "replace_after_s": _u(rng, 0.5, 3.0)},
               proof=Proof(members=(Members(("member",), KILL, "no member"), Members(("replacement",), START)))),
    ActionSpec(Step.PAUSE_MEMBER, (SLOT, _p("duration_s", float, bound=POS)),
               "SIGSTOP the member in the slot, then SIGCONT.",
               mix=lambda rng, ctx, slot: {"slot": slot, "duration_s": round(rng.uniform(0.2, 1.8) *
                                                                             ctx.session_timeout_s, 2)},
               mix_weight=2, proof=Proof(fault="pause", fault_member=True)),
    ActionSpec(Step.BOUNCE, (SLOT, _p("down_s", float, 0.5, POS), _p("client_version", str | None, None),
                             _p("protocol", str | None, None), _p("client_settings", dict[str, Setting] | None, None),
                             _p("static", bool | None, None), _p("wipe_state", bool, False)),
               "Stop the member in the slot gracefully and start it again: on that client version or group protocol, "
               "with those client settings over its own, static or not; a Kafka Streams instance keeps its state "
               "directory (a StatefulSet's volume) unless `wipe_state` (a fresh pod).",
               mix=lambda rng, ctx, slot: {"slot": slot, "down_s": _u(rng, 0.2, 1.0)}, proof=Proof(members=_RESTARTED)),
    ActionSpec(Step.BROKER_BOUNCE, (BROKER, _p("down_s", float, 1.0, POS)),
               "Stop a broker (1-based) gracefully and start it again.", needs=KILL_NEED,
               mix=lambda rng, ctx, slot: {"broker": rng.randint(1, ctx.brokers), "down_s": _u(rng, 0.5, 3.0)},
               proof=_restart("broker_bounce"), brokers="stops the broker `broker` (SIGTERM) and starts it again"),
    ActionSpec(Step.KILL_COORDINATOR, (_p("down_s", float, bound=POS),),
               "SIGKILL the broker that coordinates the group, then start it again.", needs=KILL_NEED,
               mix=lambda rng, ctx, slot: {"down_s": _u(rng, 1.0, 4.0)},
               proof=_restart("broker_kill"), brokers="kills the group's coordinator (SIGKILL) and starts it again"),
    ActionSpec(Step.NETWORK_LATENCY, (_p("latency_ms", int, bound=POS), _p("jitter_ms", int, bound=NONNEG),
                                      _p("duration_s", float, bound=POS)),
               "Latency and jitter between every client and every broker for a while.", needs=NETWORK_NEED,
               mix=lambda rng, ctx, slot: {"latency_ms": rng.choice([50, 150, 300]), "jitter_ms": rng.choice([0, 30]),
                                           "duration_s": _u(rng, 2, 5)},
               proof=Proof(fault="network_latency"), brokers="slows every client's traffic to every broker"),
    ActionSpec(Step.NETWORK_BLACKHOLE, (BROKER, _p("duration_s", float, bound=POS)),
               "The broker's client traffic goes nowhere (timeouts) for a while.", needs=NETWORK_NEED,
               mix=lambda rng, ctx, slot: {"broker": rng.randint(1, ctx.brokers),
                                           "duration_s": round(rng.uniform(0.2, 0.5) * ctx.session_timeout_s, 2)},
               proof=Proof(fault="network_blackhole"), brokers="cuts the broker `broker` off its clients"),
    # within the client's default max.poll.interval.ms (300 s): heartbeats go on, polls do not; in the mix a member
    # that takes no stall control is left alone (the action says so) rather than failing the night
    ActionSpec(Step.POLL_STALL, (SLOT, _p("duration_s", float, bound=POS), _p("if_supported", bool, False)),
               "The member stops calling poll while its client stays up (heartbeats go on); past "
               "`max.poll.interval.ms` the client leaves the group.", kinds=CONSUMER,
               mix=lambda rng, ctx, slot: {"slot": slot, "duration_s": round(rng.uniform(0.5, 2.0) *
                                                                             ctx.session_timeout_s, 2),
                                           "if_supported": True},
               proof=Proof(fault="poll_stall", fault_member=True, control="stall")),
    ActionSpec(Step.LEAVE_DURING_JOIN, (SLOT,),
               "A new member starts joining and at once the member in the slot leaves gracefully.", kinds=CONSUMER,
               mix=lambda rng, ctx, slot: {"slot": slot},
               proof=Proof(fault="leave_during_join", members=(Members(("joined",), START, "no member_start of None"),
                                                                Members(("left",), STOP, "no member_stop or member_exit "
                                                                                         "of None"))),
               slots=Slots(adds=1, removes=1)),
    ActionSpec(Step.SETTINGS_ROLL, (_p("client_settings", dict[str, Setting] | None, None),
                                    _p("static", bool | None, None), _p("down_s", float, 0.5, POS)),
               "Every live member in turn, in slot order, restarts with these client settings (a `bounce`), the "
               "group settling in between.", kinds=CONSUMER,
               mix=lambda rng, ctx, slot: {"static": rng.choice([True, False]), "down_s": _u(rng, 0.2, 1.0)},
               proof=Proof(result="restarted")),
    # a run of the mix has one topic: the member resubscribes to it (librdkafka leaves and rejoins)
    ActionSpec(Step.CHANGE_SUBSCRIPTION, (SLOT, _p("subscription", list[str]),
                                          _p("subscribe_by", SubscribeBy, DEFAULT_SUBSCRIBE_BY)),
               "The member resubscribes without a restart (names of `[[topics]]`, `^regexes` but for a share member; "
               "empty: every topic); "
               "the slot keeps it across later restarts. `subscribe_by`: one `subscribe()` with the new list, or "
               "`\"unsubscribe-subscribe\"`: `unsubscribe()` first (the member leaves the group), then `subscribe()`.",
               kinds=CONSUMER | {"share"}, mix=lambda rng, ctx, slot: {"slot": slot, "subscription": []},
               proof=Proof(fault="subscription_change", control="subscription")),
    # the partitions exist from the CreatePartitions answer on; the members learn of them from their metadata (the
    # classic protocol's leader on its refresh, topic.metadata.refresh.interval.ms; the consumer protocol's and a
    # share group's coordinator; a Connect sink's consumers on their `consumer.metadata.max.age.ms`, a Connect setting);
    # the producer is made to learn of them at once (harness/members/workload.py). Kafka Streams refuses it (KAFKA_REFUSES)
    ActionSpec(Step.ADD_PARTITIONS, (_p("count", int, bound=ONE_UP), _p("topic", str | None, None)),
               "The topic (a name of `[[topics]]`; default the first) gets partitions up to `count` in all (the new "
               "total) and the producer writes to them from then on; the result has the topic, the count before and "
               "after, and when the producer saw them.", kinds=CONSUMER | {"share", "connect"},
               proof=Proof(fault="add_partitions", result="grew")),
    # a topic that comes and goes while the group runs (issue 47): `[[topics]]` names it with `created = "later"`, so
    # the members may subscribe to it (by name or regex) before it exists and the workload never writes to it; the
    # plan checks that each create_topic names a later topic absent by then and each delete_topic one present by then
    # (harness/plan/topics.py `schedule_refusal`); `topic_changes` judges the group's answer to both
    ActionSpec(Step.CREATE_TOPIC, (_p("topic", str), _p("partitions", int | None, None, ONE_UP),
                                   _p("records", int, 0, NONNEG)),
               "Create the topic (a name of `[[topics]]` with `created = \"later\"`) with `partitions` (default: its "
               "`[[topics]]` count) and write `records` records to it, spread over its partitions; the result has the "
               "topic, its partitions and the records written per partition.", kinds=CONSUMER,
               proof=Proof(fault="topic_create")),
    ActionSpec(Step.DELETE_TOPIC, (_p("topic", str),),
               "Delete the topic (one a `create_topic` made earlier) and wait until the cluster's metadata no longer "
               "lists it; the result has the topic and the partitions it had.", kinds=CONSUMER,
               proof=Proof(fault="topic_delete")),
    # KIP-848's session timeout, as a group config (no effect on classic groups); skipped before Kafka 4.0
    ActionSpec(Step.GROUP_CONFIG, (_p("settings", dict[str, Setting]), _p("if_supported", bool, False)),
               "Group configs set through the Admin API while the group runs (Kafka 4.0+).", kinds=CONSUMER,
               mix=lambda rng, ctx, slot: {"settings": {"consumer.session.timeout.ms": rng.choice([6000, 10000, 20000])},
                                           "if_supported": True},
               proof=Proof(fault="group_config", result="read_back")),
    # a short autoscaler over a burst: whether the members keep up decides whether it scales out; a calm group is
    # scaled in towards two members
    ActionSpec(Step.AUTOSCALE, (_p("duration_s", float, bound=POS), _p("scale_out_lag", int, bound=NONNEG),
                                _p("scale_in_lag", int, bound=NONNEG), _p("min_members", int, 1, ONE_UP),
                                _p("max_members", int, 6, ONE_UP), _p("interval_s", float, 1.0, POS),
                                _p("cooldown_s", float, 10.0, NONNEG), _p("burst_rate_per_s", float | None, None, POS),
                                _p("burst_s", float | None, None, POS)),
               "A lag-driven autoscaler for `duration_s`: scale out or in one member by the group's lag "
               "(harness/nemesis/lag.py), over an optional burst of records.",
               mix=lambda rng, ctx, slot: {"duration_s": _u(rng, 20, 30), "scale_out_lag": 300, "scale_in_lag": 50,
                                           "min_members": 2, "max_members": 5, "cooldown_s": 8.0,
                                           "burst_rate_per_s": float(rng.choice([200, 400, 800])), "burst_s": 10.0},
               proof=Proof(fault="autoscale", result="sampled"), slots=Slots(adds=ANY)),
    ActionSpec(Step.REPLACE_MEMBER, (SLOT, _p("protocol", str | None, None)),
               "A member in an empty slot (after a kill), on that group protocol when given.",
               proof=Proof(members=(_STARTED,)), slots=Slots(fills=True)),
    ActionSpec(Step.RESTART_CRASHED, (_p("count", int, bound=ONE_UP), _p("timeout_s", float, 120.0, POS)),
               "Each member that exits on its own (a crash: say a poison record killed it) starts again in its slot, "
               "as soon as its exit is seen, until `count` have or `timeout_s` passed; the result lists each (the "
               "member, its exit code, its replacement)."),
    ActionSpec(Step.RESTART_ALL, (_p("down_s", float, 2.0, POS), _p("protocol", str | None, None)),
               "Every live member stops, the group stays empty for `down_s`, every slot starts again (on that "
               "protocol when given: an offline migration).", proof=Proof(fault="restart_all", members=_RESTARTED)),
    ActionSpec(Step.BROKER_ROLLING_RESTART, (), "Restart every broker in turn.", needs=KILL_NEED,
               proof=_restart("broker_rolling_restart"), brokers="stops and starts every broker in turn"),
    ActionSpec(Step.BROKER_UPGRADE, (_p("version", str),), "Roll every broker onto another Kafka version.",
               needs=KILL_NEED, proof=_restart("broker_upgrade"),
               brokers="stops every broker in turn and starts it on the other version"),
    ActionSpec(Step.RESTART_COORDINATOR, (_p("down_s", float, 1.0, POS),),
               "A graceful restart (SIGTERM, controlled shutdown) of the coordinator's broker.",
               needs=KILL_NEED, proof=_restart("coordinator_restart"),
               brokers="stops the group's coordinator (SIGTERM) and starts it again"),
    ActionSpec(Step.WAIT_OFFSETS_COMPACTED, (_p("timeout_s", float, 90.0, POS),),
               "Wait until the log cleaner has compacted the group's `__consumer_offsets` partition on the "
               "coordinator's broker (the broker settings must let it run).", proof=WAIT),
    ActionSpec(Step.RACK_OUTAGE, (_p("rack", str), _p("down_s", float, bound=POS)),
               "Kill every broker and member of a rack (`\"r0\"`, ...), then restore them.",
               needs=frozenset({Ability.RACK_OUTAGE}),
               proof=Proof(fault="rack_outage", restarts_brokers=True, result="members_killed"),
               brokers="kills every broker of the rack and starts them again"),
    ActionSpec(Step.BROKER_PARTITION, (_p("broker", int | str, "coordinator", Bound.BROKER, ("coordinator",)),
                                       _p("duration_s", float, 10.0, POS)),
               "Cut a broker (the coordinator by default) off the other brokers and the quorum while its clients "
               "still reach it, then heal.", needs=frozenset({Ability.BROKER_PARTITION}),
               proof=Proof(fault="broker_partition"), brokers="cuts the broker off the other brokers and the quorum"),
    ActionSpec(Step.RACK_PARTITION, (_p("rack", str, "r0"), _p("duration_s", float, 10.0, POS)),
               "Cut every broker of a rack off the other racks' brokers and the quorum, then heal.",
               needs=frozenset({Ability.BROKER_PARTITION}), proof=Proof(fault="rack_partition"),
               brokers="cuts the rack's brokers off the other racks' brokers and the quorum"),
    # the partitions' leaders (a share group's share-partition leaders) moved with no broker stopping; the result
    # has each moved partition's leader before and after (harness/cluster/leadership.py)
    ActionSpec(Step.MOVE_LEADERS, (BROKER,),
               "Every partition of the run's first topic that the broker (1-based) leads gets another in-sync replica "
               "as its leader (its replica list turned, then a preferred-leader election); no broker stops.",
               needs=frozenset({Ability.LEADERS}), proof=Proof(fault="leader_move", result="moved"),
               brokers="moves the leaders off the broker `broker`"),
    ActionSpec(Step.RESTART_PARTITION_LEADER, (_p("partition", int, 0, NONNEG), _p("down_s", float, 1.0, POS),
                                               _p("same_leader", bool, False)),
               "A graceful restart of the broker leading that partition of the run's first topic; the result has its "
               "leader before, while down and after (with `[workload] replication = 1` it stays on that broker: the "
               "partition goes offline and comes back there; `same_leader`: another leader after makes the run "
               "indeterminate).", needs=frozenset({Ability.KILL, Ability.LEADERS}),
               proof=_restart("leader_restart"), brokers="stops the partition's leader (SIGTERM) and starts it again"),
)
#: actions that signal one member's process (SIGKILL, SIGSTOP): refused when a process hosts several members
#: (`members_per_process`), where the signal would reach every member it hosts
ONE_PROCESS = frozenset({Step.KILL_MEMBER, Step.PAUSE_MEMBER, Step.RACK_OUTAGE})
# Request faults (harness/kproxy/, docs/scenarios.md "Request faults"): each installs one rule in the request proxy
# on the requests of one API from the member now in `slot` (or "all" members), to `broker` (1-based, or "all"), and
# returns at once with the rule live: it lifts itself after `count` requests or `duration_s` (without `count`: one
# request, or every request while `duration_s` lasts when that is given; `delay_request`: every request), at a
# `clear_request_faults`, or when the schedule ends; `wait_s` makes the step wait (at most that long) until the rule
# is spent. Not in the mix: a random request fault on a random API turns most runs into timeouts judged by nobody's
# rule, and the mix runs on clusters started without the proxy (the docker backend has none)
REQ = frozenset({Ability.REQUESTS})
_API = (_p("api", str),)
_WHO = (_p("slot", int | str, "all", Bound.SLOT, ("all",)), _p("broker", int | str, "all", Bound.BROKER, ("all",)))
_TARGET = _API + _WHO
_COUNT = (_p("count", int | None, None, ONE_UP),)
_SPENT = (_p("duration_s", float | None, None, POS), _p("wait_s", float | None, None, NONNEG))
RULE = Proof(result="rule_applied")
_REQUEST_SPECS = (
    ActionSpec(Step.DELAY_REQUEST, _API + (_p("delay_s", float | list[float]),) + _WHO + _COUNT + _SPENT,
               "Requests of `api` reach the broker `delay_s` later (fixed, or `[lo, hi]` drawn per request).",
               needs=REQ, settles=False, proof=RULE),
    ActionSpec(Step.HOLD_REQUEST, _TARGET + _COUNT + (_p("timeout_s", float, 30.0, POS),
                                                      _p("until_api", str | None, None),
                                                      _p("until_slot", int | str, "other", Bound.SLOT, ("other",)),
                                                      _p("until_step", int | None, None, ONE_UP)) + _SPENT,
               "Requests of `api` wait at the proxy until a request of `until_api` comes from `until_slot` (any "
               "`\"other\"` member by default), until the step `until_step` steps later ends, or `timeout_s`.",
               needs=REQ, settles=False, proof=RULE),
    ActionSpec(Step.DROP_REQUEST, _TARGET + _COUNT + (_p("then", str, "stall"),) + _SPENT,
               "Requests of `api` never reach the broker (`then = \"stall\"`: nor does the rest of the connection's).",
               needs=REQ, settles=False, proof=RULE),
    ActionSpec(Step.DROP_RESPONSE, _TARGET + _COUNT + (_p("then", str, "stall"),) + _SPENT,
               "Requests of `api` reach the broker; their answers never reach the client (`then = \"stall\"`: nor "
               "do later ones of the connection).", needs=REQ, settles=False, proof=RULE),
    ActionSpec(Step.ERROR_RESPONSE, _API + (_p("error", str | int),) + _WHO + _COUNT + _SPENT
               + (_p("partition", int | None, None, NONNEG), _p("topic", str | None, None)),
               "The proxy answers requests of `api` with `error` (NOT_COORDINATOR, ...) in the broker's stead; with "
               "`partition`, the broker answers and the proxy puts `error` in that partition's entry of its answer "
               "(of `topic`, the run's first by default).", needs=REQ, settles=False, proof=RULE),
    ActionSpec(Step.DISCONNECT, _TARGET + _COUNT + _SPENT,
               "Requests of `api` reach the broker; when the broker answers one the proxy discards the answer and closes "
               "the client's connection (the requests the client sent behind it on that connection are lost with it).",
               needs=REQ, settles=False, proof=RULE),
    ActionSpec(Step.WAIT_REQUEST_FAULT, (_p("timeout_s", float, 30.0, POS), _p("applied", int, 1, ONE_UP)),
               "Wait until the last request fault installed was applied to `applied` requests (at most `timeout_s`; "
               "the result says whether it was).", needs=REQ, settles=False, proof=Proof(result="reached")),
    ActionSpec(Step.CLEAR_REQUEST_FAULTS, (), "Lift every request fault of the schedule; held requests go on.",
               needs=REQ, settles=False, proof=WAIT),
)
#: name -> spec, in the order above (the request faults last: harness/nemesis/requests.py)
ACTIONS: dict[str, ActionSpec] = {s.name: s for s in _SPECS + _REQUEST_SPECS}
#: the actions the random mix draws from, as many times each as its weight, in the table's order
MIX_CHOICES: tuple[str, ...] = tuple(s.name for s in _SPECS if s.mix for _ in range(s.mix_weight))
#: the steps that install a rule in the request proxy (each also the proxy's `fault_start` kind of that name)
REQUEST_STEPS: tuple[str, ...] = tuple(s.name for s in _REQUEST_SPECS if s.proof.result == "rule_applied")
#: the proof data as harness/invariants/performed.py spelled it before it read this table
WAITS = frozenset(s.name for s in ACTIONS.values() if s.proof.wait)
FAULT_OF = {s.name: s.proof.fault for s in ACTIONS.values() if s.proof.fault}
RESTARTS_BROKERS = frozenset(s.name for s in ACTIONS.values() if s.proof.restarts_brokers)


def action_id(i: int) -> str:
    """The `action_id` of a schedule's step i (from 0): a1, a2, ... (its action_start and action_end carry it)."""
    return f"a{i + 1}"


def planned(schedule) -> list[dict]:
    """`run_start`'s `plan`: each step of a schedule (Actions, or the dicts run.json records them as), in order, as
    its action_start names it."""
    return [{"action_id": action_id(i), "kind": a["kind"] if isinstance(a, dict) else a.kind,
             "params": (a.get("params") or {}) if isinstance(a, dict) else a.params} for i, a in enumerate(schedule)]


def spec(name: str) -> ActionSpec | None:
    """The spec of an action, or None for a name no action has."""
    return ACTIONS.get(name)


#: the history event of group configs set through the Admin API (at a run's start, or by the step): the step's word
GROUP_CONFIG_EVENT = Step.GROUP_CONFIG.value


def fault_of(name: str) -> str:
    """The `fault_start` kind the step records (its row's proof)."""
    return ACTIONS[name].proof.fault


#: (action, kind) -> why Kafka itself refuses that action for that kind of group (said in the plan's refusal)
KAFKA_REFUSES = {
    # kafka-streams' InternalTopicManager (classic protocol: the leader's assignment throws and the app stops) and
    # the group coordinator's streams InternalTopicManager (streams protocol, KIP-1071: INCORRECTLY_PARTITIONED_TOPICS,
    # no task assigned); docs/streams.md
    (Step.ADD_PARTITIONS, "streams"):
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
    return any(Ability.REQUESTS in ACTIONS[k].needs for a in schedule
               if (k := getattr(a, "kind", a)) in ACTIONS)


def performs(name: str):
    """Marks a method as the nemesis's performer of action `name` (a name the table must know)."""
    if name not in ACTIONS:
        raise ValueError(f"no action {name!r} in harness/base/steps.py")

    def mark(fn):
        fn.performs = name
        return fn
    return mark


# -- the bounds of a schedule's values, checked by the plan before anything starts


@dataclass
class _Reach:
    """What the schedule can have by a step: the slots that exist (the most), the members live (the most)."""

    slots: float
    live: float

    def after(self, row: ActionSpec, params: dict) -> None:
        """Moves past a step of `row` with these parameters."""
        def number(v) -> float:
            if v == ANY:
                return math.inf
            n = params.get(v, row.param(v).default) if isinstance(v, str) else v
            return n if isinstance(n, int) and not isinstance(n, bool) else 0

        adds = number(row.slots.adds) if row.slots.adds is not None else 0
        self.slots += adds
        self.live += adds + (1 if row.slots.fills else 0)
        self.live = min(self.live, self.slots)
        if row.slots.removes is not None:
            self.live = max(1, self.live - number(row.slots.removes))


def _number(v, *, whole: bool) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return isinstance(v, int) if whole else math.isfinite(v)


def _beyond(p: Param, v, reach: _Reach, brokers: int) -> str | None:
    """Why value `v` of parameter `p` is out of its bound by then, or None."""
    if v is None and p.default is None:
        return None
    if isinstance(v, str) and p.words:
        return None if v in p.words else \
            f"is {' or '.join(repr(w) for w in p.words)}{' or a number' if p.bound else ''}, not {v!r}"
    if p.bound is None:
        return None
    words = "".join(f" or \"{w}\"" for w in p.words)
    whole = p.bound in (Bound.SLOT, Bound.BROKER, Bound.FEWER_THAN_LIVE, Bound.AT_LEAST_1) or p.type in (int, int | None)
    if not _number(v, whole=whole):
        return f"is {'a whole number' if whole else 'a finite number'}{words}, not {v!r}"
    if p.bound is Bound.POSITIVE and not v > 0:
        return f"must be more than 0, not {v!r}"
    if p.bound is Bound.AT_LEAST_0 and not v >= 0:
        return f"must be 0 or more, not {v!r}"
    if p.bound is Bound.AT_LEAST_1 and not v >= 1:
        return f"must be 1 or more, not {v!r}"
    if p.bound is Bound.SLOT and not 0 <= v < reach.slots:
        return (f"is a member slot from 0 to {int(reach.slots) - 1}{words} (the run's members and the slots earlier "
                f"steps added: {int(reach.slots)} by then), not {v!r}")
    if p.bound is Bound.BROKER and not 1 <= v <= brokers:
        return f"is a broker from 1 to {brokers} (the cluster's brokers){words}, not {v!r}"
    if p.bound is Bound.FEWER_THAN_LIVE and not 1 <= v < reach.live:
        return (f"is from 1 to {int(reach.live) - 1}: at most {int(reach.live)} members are live by then and one "
                f"always stays, so {v!r} cannot all stop" if reach.live > 1 else
                f"cannot stop {v!r}: at most one member is live by then and one always stays")
    return None


def _unknown_or_missing(row: ActionSpec, params: dict) -> str | None:
    """A parameter the row does not take, or a required one not given (a schedule not read from a file: a
    recorded or a built one), or None."""
    names = [p.name for p in row.params]
    if extra := sorted(set(params) - set(names)):
        return f"no parameter {extra[0]!r}; it takes {', '.join(names) or 'none'}"
    if lacking := [p.name for p in row.params if p.required and p.name not in params]:
        return f"{lacking[0]} is required (it takes {', '.join(names)})"
    return None


def refusal(schedule, *, members: int, brokers: int) -> str | None:
    """Why a schedule's step has a parameter its row does not take, lacks a required one, or has one outside its
    bound ('step i (kind): param ...'), or None. Slots
    are bounded by the run's `members` plus the slots earlier steps added (an autoscaler: any), a `scale_in`'s count
    by the most members live by then, less the one that always stays; brokers by the cluster's `brokers`. Steps of
    no row are left to `kind_refusal`."""
    reach = _Reach(slots=members, live=members)
    for i, a in enumerate(schedule):
        row = ACTIONS.get(a.kind)
        if row is None:
            continue
        if why := _unknown_or_missing(row, a.params):
            return f"step {i} ({a.kind}): {why}"
        for p in row.params:
            if p.name in a.params and (why := _beyond(p, a.params[p.name], reach, brokers)):
                return f"step {i} ({a.kind}): {p.name} {why}"
        reach.after(row, a.params)
    return None

