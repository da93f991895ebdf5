"""Which invariants a run's plan makes judgeable, decided before the run; and what a checker's `skipped` means then.

A checker says `skipped` when its history holds nothing to judge (no static member departed, no coordinator
failover, no transition between sticky assignments, ...). Whether that is right is not the history's to say:
a static member the scenario bounces must depart, and a history where none did is a run that did not do what
it was written to do. So the runner asks this module, from the plan alone (`PlanFacts`: the kind, protocol,
members and schedule, and the settings that decide an invariant: standby replicas, source connectors, a
dead-letter topic), which invariants apply, and writes the answer into the history's `run_start` event
(`applies`: invariant -> {"applies": bool, "why": str}); `judge` reads it back, so `harness check` needs
nothing but the history.

- `applicability(facts)`: the answer, for the checkers of the facts' kind that can skip (`RULES`; the others,
  and `schedule_performed`, apply to every run of their kind). An invariant applies only when the plan makes
  its condition certain (a step that *certainly* departs a static member, `slots`); when the plan cannot be
  sure (an autoscaler's members, a team's own program, a scenario that moves members to another protocol), it
  says it does not apply, and why: a checker that finds nothing then is `skipped` as before, never worse.
- `decide(verdict, entry, recorded)`: a checker's `skipped` becomes `unknown` ("the plan said <why>; nothing to
  judge: <the checker's message>") unless the plan said the invariant does not apply: then it is `skipped` with
  the plan's reason. Only `skipped` changes: a checker that judged (valid, invalid) or could not (unknown)
  stands. A history whose run_start has no `applies` (a run before it was recorded) makes every skip `unknown`:
  never a pass by skipping.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from harness.base.vocabulary import SHARE_CRASH_RECORDS, STICKY_ASSIGNORS, STRICTLY_STICKY_ASSIGNORS
from harness.invariants import protocols
from harness.invariants.assignors import BROKER_ASSIGNORS, REMOTE_ASSIGNOR, assignor_name, names
from harness.invariants.coordinator import COORDINATOR_ACTIONS
from harness.invariants.core import Verdict, verdict
from harness.invariants.slots import Slots, StepEffect
from harness.base.steps import Step

#: the client setting that picks a classic member's assignor (the sticky ones: STICKY_ASSIGNORS)
STRATEGY = "partition.assignment.strategy"


@dataclass(frozen=True)
class PlanFacts:
    """What the plan says before the run, as far as an invariant's applicability depends on it.

    `schedule`: (kind, params) of each step; `members`: the slots started at the run's start; `static`: whether
    they (and slots added later) are static; `racks`: the racks members are placed on (slot modulo them; none:
    no member has a rack); `team_slots`: `all` when every slot runs a program of the team's own, `some`, or
    `none`; `subscriptions`: members subscribe to something else than every topic (given per slot, for every
    slot, or by a step); `broker_settings`: what the run's own brokers were given (`--broker-set`); `units`: a Connect run's connectors and tasks; `source_connectors`, `sink_connectors`: how many of each kind; `backend`: the cluster backend."""

    kind: str
    protocol: str
    members: int
    schedule: tuple = ()
    static: bool = False
    racks: tuple[str, ...] = ()
    client_settings: dict = field(default_factory=dict)
    broker_settings: dict = field(default_factory=dict)
    team_slots: str = "none"
    subscriptions: bool = False
    standby_replicas: int = 0
    source_connectors: int = 0
    sink_connectors: int = 0
    units: int = 0
    dead_letter_topic: str | None = None
    backend: str = "local"

    def effects(self) -> list[tuple[int, str, dict, StepEffect, int]]:
        """(step number from 1, kind, params, certain effect, live members before it) of each step."""
        slots = Slots(self.members, static=self.static, racks=self.racks)
        out = []
        for n, (kind, params) in enumerate(self.schedule, 1):
            live = len(slots.live)
            out.append((n, kind, params or {}, slots.step(kind, params or {}), live))
        return out


Answer = tuple[bool, str]


def _first(facts: PlanFacts, test) -> tuple[int, str] | None:
    """(number, kind) of the first step whose certain effect passes `test(kind, params, effect, live)`."""
    return next(((n, k) for n, k, p, eff, live in facts.effects() if test(k, p, eff, live)), None)


def _changes_members(facts: PlanFacts, who: str) -> Answer:
    hit = _first(facts, lambda k, p, eff, live: eff.changes_members)
    if hit:
        return True, f"step {hit[0]} ({hit[1]}) starts or stops {who}"
    return False, f"no step certainly starts or stops {who} after the start"


def static_membership(facts: PlanFacts) -> Answer:
    if not protocols.rules_for(facts.protocol).static_membership:
        return False, f"{facts.protocol} has no static membership"
    hit = _first(facts, lambda k, p, eff, live: any(d.static for d in eff.departures))
    if hit:
        return True, f"step {hit[0]} ({hit[1]}) stops or kills a static member"
    return False, "no step certainly stops or kills a static member" + ("" if facts.static or any(
        (p or {}).get("static") for _, p in facts.schedule) else " (no member is static)")


def coordinator_survival(facts: PlanFacts) -> Answer:
    hit = next(((n, k) for n, (k, _) in enumerate(facts.schedule, 1) if k in COORDINATOR_ACTIONS), None)
    if hit:
        return True, f"step {hit[0]} ({hit[1]}) fails the group's coordinator over"
    return False, f"no step fails the coordinator over ({' or '.join(sorted(COORDINATOR_ACTIONS))})"


def commit_durability(facts: PlanFacts) -> Answer:
    if facts.backend == "fake":
        return False, "the fake backend's cluster has no group coordinator to read the committed offsets from"
    return True, "the harness reads the group's committed offsets from its coordinator at the end (and after each " \
                 "step that acts on brokers), and the members record each commit's outcome"


def streams_commit_durability(facts: PlanFacts) -> Answer:
    if facts.backend == "fake":
        return False, "the fake backend's cluster has no group coordinator to read the committed offsets from"
    if facts.team_slots == "all":
        return False, "every slot runs the team's own application, which need not record its acknowledged commits"
    return True, "the harness reads the application's committed offsets from its group's coordinator at the end " \
                 "(and after each step that acts on brokers), and the instances record each acknowledged commit " \
                 "(the consumer's interceptor; under exactly-once, each committed transaction)"


def connect_commit_durability(facts: PlanFacts) -> Answer:
    if facts.backend == "fake":
        return False, "the fake backend's cluster has no group coordinator to read the committed offsets from"
    if not facts.sink_connectors:
        return False, "no sink connector: no task commits offsets through a consumer group"
    return True, "the harness reads the sink connectors' groups' committed offsets from their coordinator at the end " \
                 "(and after each step that acts on brokers), and the workers record each acknowledged commit"


def topic_changes(facts: PlanFacts) -> Answer:
    hit = next(((n, k) for n, (k, _) in enumerate(facts.schedule, 1) if k in TOPIC_CHANGES), None)
    if hit:
        return True, f"step {hit[0]} ({hit[1]}) changes the topics or a subscription"
    return False, f"no step changes the topics or a subscription ({', '.join(sorted(TOPIC_CHANGES))})"


#: the steps `topic_changes` judges the group's answer to
TOPIC_CHANGES = frozenset({Step.CREATE_TOPIC, Step.DELETE_TOPIC, Step.CHANGE_SUBSCRIPTION})


def _strategy_sticky(settings: dict | None) -> bool:
    first = str((settings or {}).get(STRATEGY) or "").split(",")[0].strip()
    return not first or first.rsplit(".", 1)[-1] in STICKY_ASSIGNORS


def bounded_migrations(facts: PlanFacts) -> Answer:
    if not protocols.rules_for(facts.protocol).sticky:
        return False, f"{facts.protocol} runs {protocols.rules_for(facts.protocol).assignor}, not a sticky assignor"
    if not _strategy_sticky(facts.client_settings):
        return False, f"the members' {STRATEGY} is {facts.client_settings[STRATEGY]}, not a sticky assignor"
    if facts.team_slots != "none" and facts.protocol.startswith("classic"):
        return False, "a slot runs a program of the team's own, which chooses its own assignor"
    for n, (k, p) in enumerate(facts.schedule, 1):
        p = p or {}
        if (p.get("protocol") and not protocols.rules_for(p["protocol"]).sticky) \
                or not _strategy_sticky(p.get("client_settings")):
            return False, f"step {n} ({k}) moves members to a non-sticky assignor"
    if facts.subscriptions:
        return False, "members subscribe differently: a transition may leave a partition no member takes"
    hit = _first(facts, lambda k, p, eff, live: eff.changes_members or k == Step.ADD_PARTITIONS)
    if hit:
        return True, f"step {hit[0]} ({hit[1]}) moves the group from one stable assignment to another"
    return False, "no step certainly changes the group's members or partitions"


def assignor_shape(facts: PlanFacts) -> Answer:
    if facts.team_slots != "none":
        return False, "a slot runs a program of the team's own, which need not record the assignor settings it runs"
    return True, "the harness's members record their assignor settings at every start"


def rebalance_cause(facts: PlanFacts) -> Answer:
    if facts.backend == "fake":
        return False, "the fake backend's cluster has no group coordinator whose lines could be read"
    return True, "the group's coordinator logs each rebalance with its reason and the member it names"


def streams_rebalance_cause(facts: PlanFacts) -> Answer:
    if facts.backend == "fake":
        return False, "the fake backend's cluster has no group coordinator whose lines could be read"
    return True, "the group's coordinator logs each new generation or streams group epoch"


def coordinator_claims(facts: PlanFacts) -> Answer:
    if facts.backend == "fake":
        return False, "the fake backend's cluster has no group coordinator to ask for the assignment"
    if facts.team_slots != "none":
        return False, "a slot runs a program of the team's own, whose client.id (by which the coordinator names it) " \
                      "need not be its member id"
    return True, "the coordinator's assignment is recorded through the run, and the harness's members name " \
                 "themselves (client.id) by their member id"


def strict_stickiness(facts: PlanFacts) -> Answer:
    """`bounded_migrations`' conditions (a sticky assignor, one subscription), the consumer protocol's assignor named
    by the members sticky too, and a step whose changes of membership go one way: it starts members and stops none,
    or the reverse (the checker judges the union of a transition's causes, `causes`: joins alone, or departures
    alone, compose; after a kill and its replacement the group may answer each with its own rebalance, which it does
    not judge), and no change the other way before the schedule waits for the group to settle
    (`_mixed_before_settling`)."""
    applies, why = bounded_migrations(facts)
    if not applies:
        return applies, why
    if facts.team_slots != "none":
        return assignor_shape(facts)
    remote = assignor_name((facts.client_settings or {}).get(REMOTE_ASSIGNOR) or "")
    brokers = names((facts.broker_settings or {}).get(BROKER_ASSIGNORS) or "")
    if facts.protocol == "consumer" and remote and remote not in STRICTLY_STICKY_ASSIGNORS:
        return False, f"the members' {REMOTE_ASSIGNOR} is {remote}, not a strictly sticky assignor"
    if facts.protocol == "consumer" and not remote and brokers and brokers[0] not in STRICTLY_STICKY_ASSIGNORS:
        return False, f"the brokers' {BROKER_ASSIGNORS} puts {brokers[0]} first, not a strictly sticky assignor"
    if facts.racks:
        return False, f"members are on racks ({', '.join(facts.racks)}): the sticky assignors match racks too"
    mixed = _mixed_before_settling(facts)
    hit = _first(facts, lambda k, p, eff, live: len(eff.departures) + len(eff.starts) == 1 and not eff.uncertain
                 and (k, p) not in mixed)
    if hit:
        return True, f"step {hit[0]} ({hit[1]}) starts or stops a member, one cause between two stable assignments"
    many = _first(facts, lambda k, p, eff, live: bool(eff.departures) != bool(eff.starts) and not eff.uncertain
                  and (k, p) not in mixed)
    if many:  # several starts, or several stops: one-way changes of membership, judged together
        return True, (f"step {many[0]} ({many[1]}) starts or stops several members at once, changes of membership "
                      f"that go one way, judged together between two stable assignments")
    return False, "no step certainly only starts or only stops members (changes of membership that go one way)"


def _mixed_before_settling(facts: PlanFacts) -> list:
    """(kind, params) of the steps that change membership between two waits of the schedule for the group to settle
    (`wait_stable` steps; a step with `wait_stable = false` adds none) when the changes there go both ways:
    race-close-between-join-and-sync's scale-out left unsettled, then a scale-in. They fall between the same two
    stable assignments, a union that promises no stickiness."""
    out, window = [], []
    for _, k, p, eff, _ in [*facts.effects(), (0, Step.WAIT_STABLE, {}, None, 0)]:
        if k != Step.WAIT_STABLE:
            window.append((k, p, eff))
            continue
        changes = [(k2, p2, e) for k2, p2, e in window if e.starts or e.departures]
        if any(e.starts for _, _, e in changes) and any(e.departures for _, _, e in changes):
            out += [(k2, p2) for k2, p2, _ in changes]
        window = []
    return out


def warmup_before_active(facts: PlanFacts) -> Answer:
    if facts.protocol == "streams":
        return False, "the streams protocol's assignor has no warmup tasks"
    moved = next((n for n, (_, p) in enumerate(facts.schedule, 1) if (p or {}).get("protocol") == "streams"), None)
    if moved:
        return False, f"step {moved} moves instances to the streams protocol, whose assignor has no warmup tasks"
    if facts.team_slots == "all":
        return False, "every slot runs the team's own application"
    return _changes_members(facts, "an instance")


def standby_placement(facts: PlanFacts) -> Answer:
    if facts.standby_replicas > 0:
        return True, f"{facts.standby_replicas} standby replica{'s' * (facts.standby_replicas > 1)} configured"
    return False, "no standby replicas configured (num.standby.replicas 0)"


def state_kept(facts: PlanFacts) -> Answer:
    if facts.team_slots == "all":
        return False, "every slot runs the team's own application, which need not report its stores' keys"
    return True, "the harness's Streams member reports its store's keys at every task start"


def connect_scheduled_delay(facts: PlanFacts) -> Answer:
    if facts.protocol == "eager":
        return False, "the eager protocol has no scheduled delay"
    hit = _first(facts, lambda k, p, eff, live: bool(eff.departures) and facts.units >= live)
    if hit:
        return True, f"step {hit[0]} ({hit[1]}) takes a worker holding work away ({facts.units} connectors and tasks)"
    return False, "no step certainly takes away a worker holding work"


def connect_source_sequence(facts: PlanFacts) -> Answer:
    if facts.source_connectors:
        return True, "a source connector runs"
    return False, "no source connector configured"


def share_dead_letter(facts: PlanFacts) -> Answer:
    if facts.dead_letter_topic:
        return True, f"the group's dead-letter topic is {facts.dead_letter_topic}"
    return False, "the group has no dead-letter topic (errors.deadletterqueue.topic.name unset)"


def share_poison(facts: PlanFacts) -> Answer:
    given = str(facts.client_settings.get(SHARE_CRASH_RECORDS) or "").strip()
    if given:
        return True, f"the members die on the poison record(s) {given} ({SHARE_CRASH_RECORDS})"
    return False, f"no poison record kills a member ({SHARE_CRASH_RECORDS} unset)"


def connect_rebalance_cause(facts: PlanFacts) -> Answer:
    if facts.backend == "fake":
        return False, "the fake backend's cluster has no group coordinator to give the workers generations"
    return True, "each worker records the generation of every rebalance it completes (connect_rebalance)"


def share_rebalance_cause(facts: PlanFacts) -> Answer:
    if facts.backend == "fake":
        return False, "the fake backend's cluster has no group coordinator for the group watch to ask"
    return True, "the group watch records the group's epoch from the coordinator's answers (share_assignment)"


#: kind -> invariant -> its rule (the checkers that can say `skipped`; every other one applies to every run)
RULES = {
    "consumer": {"bounded_migrations": bounded_migrations, "static_membership": static_membership,
                 "coordinator_survival": coordinator_survival, "assignor_shape": assignor_shape,
                 "strict_stickiness": strict_stickiness, "rebalance_cause": rebalance_cause,
                 "coordinator_claims": coordinator_claims, "commit_durability": commit_durability,
                 "topic_changes": topic_changes},
    "streams": {"warmup_before_active": warmup_before_active,
                "probing_convergence": lambda f: _changes_members(f, "an instance"),
                "bounded_task_moves": lambda f: _changes_members(f, "an instance"),
                "standby_placement": standby_placement, "state_kept": state_kept,
                "commit_durability": streams_commit_durability,
                "streams_rebalance_cause": streams_rebalance_cause},
    "connect": {"connect_scheduled_delay": connect_scheduled_delay, "connect_source_sequence": connect_source_sequence,
                "commit_durability": connect_commit_durability,
                "connect_rebalance_cause": connect_rebalance_cause},
    "share": {"share_dead_letter": share_dead_letter, "share_poison": share_poison,
              "share_rebalance_cause": share_rebalance_cause},
}


def applicability(facts: PlanFacts) -> dict[str, dict]:
    """invariant -> {"applies": bool, "why": str}, for the run_start event's `applies`."""
    out = {}
    for name, rule in RULES.get(facts.kind, {}).items():
        applies, why = rule(facts)
        out[name] = {"applies": bool(applies), "why": why}
    return out


def recorded(history) -> dict | None:
    """The `applies` of the history's first run_start event, or None when it has none (an older run)."""
    start = history.run_start() or {}
    got = start.get("applies")
    return got if isinstance(got, dict) else None


#: invariants whose facts the harness records only since a run's plan names them (`commit_durability`: the reads of
#: the group's committed offsets; the Connect and share cause checks' generations and epochs): a recorded `applies`
#: that does not name one is a run whose plan made no such facts
FACTS_RECORDED_LATER = frozenset({"commit_durability", "topic_changes", "streams_rebalance_cause",
                                  "connect_rebalance_cause", "share_rebalance_cause"})


def decide(v: Verdict, applies: dict | None) -> Verdict:
    """The verdict, its `skipped` judged against the plan's `applies` (None: the history recorded none)."""
    if v.status != "skipped":
        return v
    entry = (applies or {}).get(v.name)
    if applies is not None and entry is None and v.name in FACTS_RECORDED_LATER:
        return verdict(v.name, "skipped", f"does not apply: the run was recorded before its plan made this invariant's "
                                          f"facts (its run_start's `applies` does not name {v.name}); {v.message}",
                       v.witnesses, v.measurements)
    if applies is None:
        return verdict(v.name, "unknown", f"the history does not say which invariants the plan made judgeable (its "
                                          f"run_start has no `applies`: an older run), so a skip is not a pass; "
                                          f"nothing to judge: {v.message}", v.witnesses, v.measurements)
    if isinstance(entry, dict) and entry.get("applies") is False:
        return verdict(v.name, "skipped", f"does not apply: {entry.get('why')} (the plan); {v.message}",
                       v.witnesses, v.measurements)
    said = entry.get("why") if isinstance(entry, dict) else "this invariant applies to every run of its kind"
    return verdict(v.name, "unknown", f"the plan said {said}; nothing to judge: {v.message}", v.witnesses,
                   v.measurements)
