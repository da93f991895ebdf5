"""A run's configuration and its resolved plan: validated once, before anything starts.

`RunConfig` is what the user asked for (the CLI's options, a suite's parameters, a replayed run.json).
`precheck(cfg)` and `plan(cfg, version=...)` turn it into a `RunPlan`: the scenario, the kind of members, the
kind's own settings checked, and the schedule drawn from the seed (or the recorded one of a replay). Every "this
cannot work" that the configuration alone tells (an unknown scenario or protocol, a protocol the brokers' version
does not serve, a bad Streams setting, an action the kind or the backend cannot take) is a `BadInput` raised here,
so it is said in one line before a broker or member starts.

Nothing here looks at the machine: the Kafka version a name resolves to (Maven), the setting names a release
defines (its jars), the engine of the docker backend and the confluent-kafka version installed are looked up by
`harness.run.resolve`, which calls these two around its lookups. The scenario is looked up once per config
(`RunConfig.scenario_spec`) and passed on.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path

from harness.plan import actions
from harness.plan import request_checks
from harness.plan import scenario_file
from harness.plan import scenarios
from harness.plan.backends import ABILITIES, BACKENDS
from harness.plan.topics import check as check_topics, schedule_refusal as topic_steps_refusal
from harness.base import near
from harness.base.errors import BadInput
from harness.plan.kinds.checks import check_commit_mode, check_hosting, check_revoke_delay, checks_of
from harness.record.rundir import RUN_JSON, SCHEDULE_JSON, RunDir
from harness.plan.scenarios import Action, Scenario, ScenarioContext
from harness.base.versions import GROUP_CONFIGS_SINCE, PROTOCOL_BEFORE, PROTOCOL_SINCE, dotted, major_minor
from harness.base.vocabulary import ALL_PROTOCOLS, DEFAULT_COMMIT_MODE, DEFAULT_PROTOCOL, MEMBER_KINDS, misbehaviours

#: client settings a member's contract fixes; `--client-set` may not change them
RESERVED_CLIENT_KEYS = {"bootstrap.servers": "HARNESS_BOOTSTRAP", "group.id": "HARNESS_GROUP_ID",
                        "group.protocol": "use --protocol", "group.instance.id": "HARNESS_INSTANCE_ID",
                        "client.rack": "HARNESS_RACK", "enable.auto.commit": "the contract commits itself",
                        "client.id": "the member id"}
Settings = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class RunConfig:
    """Everything that decides a run; recorded in run.json and enough to replay it."""

    scenario: str  # a built-in's name, or the name a scenario file gives (`for_scenario` reads the file)
    seed: int
    protocol: str = DEFAULT_PROTOCOL
    kafka_version: str = "latest"
    backend: str = "local"  # the cluster backend a run's own cluster starts on (harness/cluster/backends.py)
    client_version: str | None = None
    runs_root: str = "runs"
    brokers: int = 3
    partitions: int = 6
    replication: int | None = None  # replicas of the run's topics (None: min(3, brokers)); consumer and share groups
    rate_per_s: float = 50.0
    session_timeout_s: float = 6.0
    heartbeat_interval_s: float = 0.5
    max_poll_interval_s: float = 20.0  # the members' max.poll.interval.ms: their rebalance timeout, tuned down
    stable_s: float = 2.0
    stable_timeout_s: float = 60.0
    drain_timeout_s: float = 60.0
    quiet_period_s: float = 3.0
    misbehave: str | None = None  # makes member slot 0 misbehave (an assignor's self-test: every member)
    member_command: tuple[str, ...] | None = None  # every slot runs this program (the member contract)
    member: str = "python"  # the built-in member every slot runs without a command of its own: python | java
    commit_mode: str = DEFAULT_COMMIT_MODE  # how members commit (COMMIT_MODES), given to each as HARNESS_COMMIT_MODE
    processing_ms: float = 0.0  # simulated work per record, given to each member as HARNESS_PROCESSING_MS
    revoke_delay_ms: float = 0.0  # the revoke handler's wait before its commit, as HARNESS_REVOKE_DELAY_MS
    slot_commands: tuple[tuple[int, tuple[str, ...]], ...] = ()  # (slot, command): slot N (0-based) runs it
    client_settings: Settings = ()  # given to every member's client (HARNESS_CLIENT_CONFIG), over the harness's
    broker_settings: Settings = ()  # into every broker's server.properties (a run's own cluster only)
    group_settings: Settings = ()  # GROUP config resources set through the Admin API before the first member
    schedule: tuple[dict, ...] | None = None  # replay: run exactly this schedule
    streams_settings: tuple[tuple[str, object], ...] = ()  # Streams runs: settings over the scenario's
    connect_settings: tuple[tuple[str, object], ...] = ()  # Connect runs: settings over the scenario's
    scenario_file: str | None = None  # a scenario file's path (then `scenario` is the name the file gives)
    scenario_text: str | None = None  # and its text, as read when the run was asked for (replay reads this)
    topics: tuple[tuple[str, int], ...] = ()  # named topics (name, partitions); none: one topic of `partitions`
    subscription: tuple[str, ...] = ()  # every slot's subscription (names or ^regexes); none: every topic
    slot_subscriptions: tuple[tuple[int, tuple[str, ...]], ...] = ()  # (slot, subscription): slot N's own
    members_per_process: int = 1  # consumers one Python member process hosts (docs/member-contract.md)
    shrink_of: str | None = None  # a shrink attempt: the run (its directory's name) whose failing schedule it shrinks

    @classmethod
    def for_scenario(cls, scenario: str, **given) -> "RunConfig":
        """The config of a run of `scenario`, a built-in's name or a scenario file's path (read here, once): the
        file's settings are defaults under the ones given (a given value equal to the field's default cannot be
        told from none: the file's then stands); no `protocol` (or None) is the scenario's default one."""
        if not scenarios.is_file(scenario):
            sc = scenarios.get(scenario)
            if given.get("protocol") is None:
                given["protocol"] = sc.default_protocol
            text = scenarios.builtin_text(scenario)
            if text is not None:  # a shipped file: its settings are defaults as a user's file's are
                return cls(scenario=scenario, **cls._file_defaults(scenario_file.parse(text, scenario), given))._with(sc)
            if sc.processing_ms and not given.get("processing_ms"):
                given["processing_ms"] = sc.processing_ms
            return cls(scenario=scenario, **given)._with(sc)
        text, model = scenario_file.read(scenario)
        sc = scenario_file.scenario_of(model, scenario)
        if given.get("protocol") is None:
            given["protocol"] = sc.default_protocol
        return cls(scenario=model.name, scenario_file=scenario, scenario_text=text,
                   **cls._file_defaults(model, given))._with(sc)

    @cached_property
    def scenario_spec(self) -> Scenario:
        """The scenario this config runs: a built-in by name, or the recorded file text read; looked up once."""
        return (scenario_file.loads(self.scenario_text, self.scenario_file) if self.scenario_text is not None
                else scenarios.get(self.scenario))

    def _with(self, sc: Scenario) -> "RunConfig":
        """This config, its scenario already in hand (`for_scenario` read it: no second lookup)."""
        self.__dict__["scenario_spec"] = sc  # cached_property's own slot; the dataclass's fields are untouched
        return self

    @classmethod
    def _file_defaults(cls, model, given: dict) -> dict:
        """The given fields over a scenario file's: settings and slots merged key by key, the rest the file's
        where the caller said nothing (or the field's default)."""
        given = dict(given)
        for key, value in scenario_file.run_defaults(model).items():
            if key in ("client_settings", "broker_settings", "group_settings", "slot_commands", "slot_subscriptions"):
                merged = {**dict(value), **dict(given.get(key, ()))}
                given[key] = tuple(sorted(merged.items()) if key.startswith("slot_") else merged.items())
            elif key == "backend" and given.get(key):
                continue  # a backend asked for by name wins, the default one too (the plan then says if it cannot)
            elif given.get(key, cls.__dataclass_fields__[key].default) == cls.__dataclass_fields__[key].default:
                given[key] = value  # the caller said nothing (or the default): the file's stands
        return given

    def validate(self) -> Scenario:
        """The checks that need no version lookup; returns the scenario. BadInput when one fails."""
        sc = self.scenario_spec
        self._check(sc, checks_of(sc.kind))
        return sc

    def _check(self, sc: Scenario, checks) -> None:
        if self.protocol not in ALL_PROTOCOLS:
            raise BadInput(near.unknown("protocol", self.protocol, ALL_PROTOCOLS))
        if self.protocol not in sc.protocols:
            raise BadInput(f"scenario {self.scenario} does not run with protocol {self.protocol} "
                           f"(it runs with {', '.join(sc.protocols)})")
        if self.misbehave not in (None, *misbehaviours(sc.kind)):
            raise BadInput(f"{near.unknown('misbehaviour', self.misbehave, misbehaviours(sc.kind))} "
                           f"(scenario {self.scenario}, a {sc.kind} group)")
        if self.backend not in BACKENDS:
            raise BadInput(near.unknown("backend", self.backend, BACKENDS))
        request_checks.check_backend(sc, self.backend)
        if self.brokers < 1 or self.partitions < 1:
            raise BadInput("a run needs at least one broker and one partition")
        if self.replication is not None and not (1 <= self.replication <= self.brokers and sc.kind in ("consumer", "share")):
            raise BadInput(f"replication {self.replication}: from 1 to the {self.brokers} brokers, for consumer and share groups")
        if self.member not in MEMBER_KINDS:
            raise BadInput(near.unknown("member", self.member, MEMBER_KINDS))
        check_commit_mode(self, sc)
        if not 0 <= self.processing_ms <= 60000:
            raise BadInput(f"processing time {self.processing_ms!r} ms per record: from 0 to 60000")
        if self.processing_ms and self.member == "java" and self.member_command is None and sc.kind == "consumer":
            raise BadInput("the Java member does not simulate processing: --processing-ms needs --member python or "
                           "a member command")
        check_revoke_delay(self, sc)
        for slot, cmd in self.slot_commands:
            if slot < 0 or not cmd:
                raise BadInput(f"bad member command for slot {slot}: a slot is 0 or more, a command not empty")
        for flag, pairs in (("client", self.client_settings), ("broker", self.broker_settings),
                            ("group", self.group_settings)):
            for k, v in pairs:
                if not k or not isinstance(v, str):
                    raise BadInput(f"bad {flag} setting {k!r}={v!r}: KEY=VALUE with a non-empty KEY")
        check_setting_text(self, sc)
        subs = {f"slot {s}": e for s, e in self.slot_subscriptions}
        if self.subscription:
            subs["every member"] = self.subscription
        if (self.topics or subs) and sc.kind not in ("consumer", "share"):
            raise BadInput(f"scenario {self.scenario}: topics and subscriptions are for consumer-group and share-group "
                           f"members")
        check_topics(self.topics, subs)
        check_hosting(self, sc)
        reserved = sorted(k for k, _ in self.client_settings if k in RESERVED_CLIENT_KEYS)
        if reserved:
            raise BadInput(f"client setting {reserved[0]} is the harness's to set ({RESERVED_CLIENT_KEYS[reserved[0]]})")
        checks.check_config(self, sc)

    def slot_command(self, slot: int) -> tuple[str, ...] | None:
        """The program slot `slot` runs, or None for the built-in member."""
        return dict(self.slot_commands).get(slot, self.member_command)

    def slot_subscription(self, slot: int) -> tuple[str, ...]:
        """The subscription entries of slot `slot` (empty: every topic of the run)."""
        return dict(self.slot_subscriptions).get(slot, self.subscription)

    def user_settings(self) -> dict:
        """The settings asked for on the command line, as run.json and run_start record them."""
        return {"client_settings": dict(self.client_settings), "broker_settings": dict(self.broker_settings),
                "group_settings": dict(self.group_settings), "commit_mode": self.commit_mode}

    def client_config(self) -> dict:
        """The harness's tuned-down group timings, as client settings (under the consumer protocol the session and
        heartbeat timings are the group's, so `plan.kinds.settings.timings_for` drops them there)."""
        return {"session.timeout.ms": int(self.session_timeout_s * 1000),
                "heartbeat.interval.ms": int(self.heartbeat_interval_s * 1000),
                "max.poll.interval.ms": int(self.max_poll_interval_s * 1000)}


@dataclass(frozen=True)
class RunPlan:
    """A run resolved and checked: what will start, on which versions, with which schedule."""

    cfg: RunConfig
    scenario: Scenario
    kafka_version: str  # the version the run's cluster starts on (resolved: x.y.z)
    own_cluster: bool  # False: the run uses a cluster shared with other runs
    racks: tuple[str, ...]
    schedule: tuple[Action, ...]
    context: ScenarioContext
    settings: dict = field(default_factory=dict)  # the kind's own settings (Streams: every Streams setting)
    #: the kind's settings this release takes in the brokers' own config (a share group's settings that are no group
    #: configs there: `group.share.delivery.count.limit` on Kafka 4.2), put there when the run's cluster starts
    broker_settings: dict = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.scenario.kind

    def schedule_dicts(self) -> list[dict]:
        return [a.to_dict() for a in self.schedule]


def check_setting_text(cfg: RunConfig, sc: Scenario) -> None:
    """BadInput when a setting (client, broker, group, Streams, Connect; given or the scenario's) could write a line
    of its own into a properties file: a control character in its key or value, or a key a properties reader
    splits (harness/base/properties.py)."""
    from harness.base.properties import setting_problem
    for what, pairs in (("client", cfg.client_settings), ("broker", cfg.broker_settings),
                        ("group", cfg.group_settings), ("Streams", (*sc.streams.items(), *cfg.streams_settings)),
                        ("Connect", (*sc.connect.items(), *cfg.connect_settings))):
        for k, v in pairs:
            if (why := setting_problem(k, v)) is not None:
                raise BadInput(f"{what} setting {str(k)[:60]!r} refused: {why}")


def scenario_of(name: str) -> Scenario:
    """A built-in scenario by name, or the scenario of a file (docs/scenarios.md); BadInput when neither."""
    return scenario_file.load(name) if scenarios.is_file(name) else scenarios.get(name)


def precheck(cfg: RunConfig, *, shared=None) -> bool:
    """What the configuration alone can tell before any version is looked up; whether the run starts its own
    cluster (False: it runs on `shared`, a cluster shared with other runs)."""
    sc = cfg.scenario_spec
    cfg._check(sc, checks_of(sc.kind))
    if sc.initial_kafka is None and shared is not None and getattr(shared, "backend", cfg.backend) not in (cfg.backend, "fake"):
        raise BadInput(f"the run asks for the {cfg.backend} backend but shares a cluster of the {shared.backend} one")
    return sc.initial_kafka is not None or shared is None


def plan(cfg: RunConfig, *, version: str, shared=None) -> RunPlan:
    """The plan of cfg whose cluster runs Kafka `version` (resolved: x.y.z): every check that needs no lookup.
    `shared` is the cluster the run shares (None: its own), read for its version, brokers, racks and settings."""
    sc = cfg.scenario_spec
    checks = checks_of(sc.kind)
    own = sc.initial_kafka is not None or shared is None
    if own:
        racks = tuple(sorted({f"r{i % 3}" for i in range(cfg.brokers)}))
    else:
        racks = tuple(shared.racks_in_use())
    target = cfg.kafka_version
    ctx = ScenarioContext(session_timeout_s=cfg.session_timeout_s, brokers=cfg.brokers if own else
                          len(shared.broker_ids()), racks=len(racks), target_kafka=target, kafka=version)
    if cfg.schedule is not None:
        try:
            schedule = tuple(Action.from_dict(a) for a in cfg.schedule)
        except (KeyError, TypeError, AttributeError) as e:
            raise BadInput(f"the recorded schedule cannot be read: {e!r}") from None
    else:
        schedule = tuple(scenarios.schedule(sc, seed=cfg.seed, ctx=ctx))
    wanted = {cfg.protocol} | {a.params["protocol"] for a in schedule if a.params.get("protocol")}
    for p in sorted(wanted):
        since = PROTOCOL_SINCE.get(p)
        if since and major_minor(version) < since:
            how = "runs with" if p == cfg.protocol else "moves members to"
            why = f" ({PROTOCOL_BEFORE[p]})" if p in PROTOCOL_BEFORE else ""
            raise BadInput(f"scenario {cfg.scenario} {how} the {p} protocol, which needs Kafka "
                           f"{dotted(since)} or newer{why}; the cluster runs {version}")
    if cfg.group_settings and major_minor(version) < GROUP_CONFIGS_SINCE:
        raise BadInput(f"group settings ({cfg.group_settings[0][0]}) need Kafka {dotted(GROUP_CONFIGS_SINCE)} "
                       f"or newer (group configs); the cluster runs {version}")
    checks.check_versions(cfg, sc, version, schedule)
    _check_actions(cfg, sc, schedule, backend=getattr(shared, "backend", cfg.backend) if not own else cfg.backend,
                   brokers=ctx.brokers)
    request_checks.check(schedule, brokers=ctx.brokers, shared=None if own else shared)
    if why := topic_steps_refusal(cfg.topics, schedule):
        raise BadInput(f"scenario {cfg.scenario}: {why}")
    for i, a in enumerate(schedule):
        if a.kind == actions.Step.CHANGE_SUBSCRIPTION:
            if a.params.get("subscription"):  # an empty one is every topic of the run
                check_topics(cfg.topics, {f"step {i} (change_subscription)": tuple(a.params["subscription"])})
        if a.kind == actions.Step.GROUP_CONFIG and not a.params.get("if_supported") and major_minor(version) < GROUP_CONFIGS_SINCE:
            raise BadInput(f"step {i} (group_config) needs Kafka {dotted(GROUP_CONFIGS_SINCE)} "
                           f"or newer (group configs); the cluster runs {version}")
    settings = checks.settings(cfg, sc)
    brokers = _broker_settings(cfg, checks.broker_settings(settings, version), version, shared=None if own else shared)
    return RunPlan(cfg=cfg, scenario=sc, kafka_version=version, own_cluster=own, racks=racks,
                   schedule=schedule, context=ctx, settings=settings, broker_settings=brokers)


def brokers_need(cfg: RunConfig, version: str) -> dict:
    """Every broker setting a run of cfg on Kafka `version` needs its cluster started with: its `--broker-set` and
    its kind's (a share group's settings that are no group configs there)."""
    checks = checks_of(cfg.scenario_spec.kind)
    return {**checks.broker_settings(checks.settings(cfg, cfg.scenario_spec), version), **dict(cfg.broker_settings)}


def _broker_settings(cfg: RunConfig, kind: dict, version: str, *, shared) -> dict:
    """The kind's settings that Kafka `version` takes in the brokers' own config (a share group's settings that are
    no group configs there), checked against the run's `--broker-set` and, on a shared cluster, against what it
    was started with (with the run's own broker settings); BadInput in one line on a conflict."""
    given = dict(cfg.broker_settings)
    for k, v in kind.items():
        if k in given and given[k] != v:
            raise BadInput(f"broker setting {k}={given[k]} contradicts the group's setting {k[len('group.'):]}={v}, "
                           f"which Kafka {version} takes as the broker setting {k}; set it once, with --group-set")
    if shared is not None:
        have = shared.settings.properties()
        for k, v in [*cfg.broker_settings, *kind.items()]:
            if have.get(k) != v:
                what = "broker setting" if k in given else \
                    f"the group's setting {k[len('group.'):]}, on Kafka {version} the broker setting"
                raise BadInput(f"{what} {k}={v} cannot apply to a run on a shared cluster (started with "
                               f"{k}={have.get(k, '(unset)')}); start the cluster with it, or run on its own cluster")
    return kind


def _check_actions(cfg: RunConfig, sc: Scenario, schedule, *, backend: str, brokers: int | None = None) -> None:
    """Every step an action the table knows (harness/base/steps.py), for this kind of group, on a backend that
    can do what it needs, each parameter within its row's bound: slots among the scenario's members and the slots
    earlier steps add, brokers among the cluster's `brokers` (default: the run's own cluster's)."""
    abilities = ABILITIES.get(backend, frozenset())
    for i, a in enumerate(schedule):
        if cfg.members_per_process > 1 and a.kind in actions.ONE_PROCESS:
            raise BadInput(f"step {i} ({a.kind}) signals one member's process, which hosts {cfg.members_per_process} "
                           f"members here (--members-per-process): it would act on all of them; run it with 1")
        why = actions.kind_refusal(a.kind, sc.kind)
        if why:
            raise BadInput(f"step {i} ({a.kind}) {why} (scenario {cfg.scenario})")
        lacking = actions.missing(a.kind, abilities)
        if lacking:
            able = [b for b in BACKENDS if set(lacking) <= ABILITIES[b]]
            raise BadInput(f"step {i} ({a.kind}) {actions.NEEDS[lacking[0]]}, which needs the {' or '.join(able)} "
                           f"backend (--backend {able[0]}); this run's cluster is {backend}" if able else
                           f"step {i} ({a.kind}) {actions.NEEDS[lacking[0]]}, which no backend can do")
    if why := actions.refusal(schedule, members=sc.members, brokers=cfg.brokers if brokers is None else brokers):
        raise BadInput(f"{why} (scenario {cfg.scenario})")


def replay_config(run_dir: Path, **overrides) -> RunConfig:
    """The config of a recorded run, with its schedule pinned, for `harness replay`."""
    d = RunDir.open(run_dir)
    meta = d.meta()
    if "config" not in meta:
        raise BadInput(f"{run_dir}: {RUN_JSON} has no config to replay")
    cfg = dict(meta["config"])
    sched = meta.get("schedule")
    if sched is None and (d.path / SCHEDULE_JSON).exists():
        import json
        sched = json.loads((d.path / SCHEDULE_JSON).read_text())
    if sched is None:
        raise BadInput(f"{run_dir} has no recorded schedule (the run stopped before it started)")
    cfg["schedule"] = tuple(sched)
    cfg.pop("shrink_of", None)  # a replay of a shrink attempt reproduces it: a run of its own, not an attempt
    if cfg.get("member_command"):
        cfg["member_command"] = tuple(cfg["member_command"])
    cfg["streams_settings"] = tuple(tuple(kv) for kv in cfg.get("streams_settings") or ())
    cfg["connect_settings"] = tuple(tuple(kv) for kv in cfg.get("connect_settings") or ())
    cfg["slot_commands"] = tuple((int(s), tuple(c)) for s, c in cfg.get("slot_commands") or ())
    cfg["slot_subscriptions"] = tuple((int(s), tuple(e)) for s, e in cfg.get("slot_subscriptions") or ())
    cfg["topics"] = tuple((t[0], int(t[1]), *t[2:]) for t in cfg.get("topics") or ())
    cfg["subscription"] = tuple(cfg.get("subscription") or ())
    for key in ("client_settings", "broker_settings", "group_settings"):
        cfg[key] = tuple((k, v) for k, v in cfg.get(key) or ())
    known = {f for f in RunConfig.__dataclass_fields__}
    return replace(RunConfig(**{k: v for k, v in cfg.items() if k in known}), **overrides)


def config_dict(cfg: RunConfig) -> dict:
    return asdict(cfg)
