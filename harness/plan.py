"""A run's configuration and its resolved plan: validated once, before anything starts.

`RunConfig` is what the user asked for (the CLI's options, a suite's parameters, a replayed run.json).
`resolve(cfg)` turns it into a `RunPlan`: the scenario, the kind of members, the Kafka and client
versions resolved, the kind's own settings checked, and the schedule drawn from the seed (or the
recorded one of a replay). Every "this cannot work" (an unknown scenario or protocol, a protocol the
brokers' version does not serve, a bad Streams setting) is a `BadInput` raised here, so it is said in
one line before a broker or member starts.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from harness import kafka_dist, scenarios
from harness.errors import BadInput
from harness.kinds import kind_of
from harness.rundir import SCHEDULE_JSON, RunDir
from harness.scenarios import PROTOCOLS, STREAMS_PROTOCOLS, Action, Scenario, ScenarioContext

MISBEHAVIOURS = ("process-after-revoke", "claim-extra")
#: Streams runs' self-tests: every instance runs with a recovery lag that defeats warmups (KIP-441), or
#: at_least_once while the run is judged as exactly_once_v2
STREAMS_MISBEHAVIOURS = ("defeat-warmup", "fake-eos")
#: what the brokers must run for a group protocol: (major, minor)
PROTOCOL_SINCE = {"consumer": (4, 0), "streams": (4, 1)}


@dataclass(frozen=True)
class RunConfig:
    """Everything that decides a run; recorded in run.json and enough to replay it."""

    scenario: str
    seed: int
    protocol: str = "classic-cooperative"
    kafka_version: str = "latest"
    client_version: str | None = None
    runs_root: str = "runs"
    brokers: int = 3
    partitions: int = 6
    rate_per_s: float = 50.0
    session_timeout_s: float = 6.0
    heartbeat_interval_s: float = 0.5
    stable_s: float = 2.0
    stable_timeout_s: float = 60.0
    drain_timeout_s: float = 60.0
    quiet_period_s: float = 3.0
    misbehave: str | None = None  # makes member slot 0 misbehave (harness self-test)
    member_command: tuple[str, ...] | None = None
    schedule: tuple[dict, ...] | None = None  # replay: run exactly this schedule
    streams_settings: tuple[tuple[str, object], ...] = ()  # Streams runs: settings over the scenario's

    def validate(self) -> Scenario:
        """The checks that need no version lookup; returns the scenario. BadInput when one fails."""
        sc = scenarios.get(self.scenario)
        if self.protocol not in PROTOCOLS + STREAMS_PROTOCOLS:
            raise BadInput(f"unknown protocol {self.protocol!r}; known: {', '.join(PROTOCOLS + STREAMS_PROTOCOLS)}")
        if self.protocol not in sc.protocols:
            raise BadInput(f"scenario {self.scenario} does not run with protocol {self.protocol} "
                           f"(it runs with {', '.join(sc.protocols)})")
        if self.misbehave not in (None, *(STREAMS_MISBEHAVIOURS if sc.kind == "streams" else MISBEHAVIOURS)):
            raise BadInput(f"unknown misbehaviour {self.misbehave!r} for scenario {self.scenario}")
        if self.brokers < 1 or self.partitions < 1:
            raise BadInput("a run needs at least one broker and one partition")
        kind_of(sc).check_config(self, sc)
        return sc

    def client_config(self) -> dict:
        """The classic protocol's group timings, as client settings."""
        return {"session.timeout.ms": int(self.session_timeout_s * 1000),
                "heartbeat.interval.ms": int(self.heartbeat_interval_s * 1000)}


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

    @property
    def kind(self) -> str:
        return self.scenario.kind

    def schedule_dicts(self) -> list[dict]:
        return [a.to_dict() for a in self.schedule]


def _major_minor(version: str) -> tuple[int, int]:
    return tuple(kafka_dist.version_key(version)[:2])  # type: ignore[return-value]


def resolve(cfg: RunConfig, *, shared=None, progress=print) -> RunPlan:
    """Check cfg and resolve it into a plan. `shared` is the cluster the run would share (None: its own).
    Raises BadInput before anything starts when the run cannot work."""
    sc = cfg.validate()
    own = sc.initial_kafka is not None or shared is None
    if own:
        version = kafka_dist.resolve(sc.initial_kafka or cfg.kafka_version, progress=progress).version
        racks = tuple(sorted({f"r{i % 3}" for i in range(cfg.brokers)}))
    else:
        version = shared.version
        racks = tuple(shared.racks_in_use())
    target = cfg.kafka_version
    ctx = ScenarioContext(session_timeout_s=cfg.session_timeout_s, brokers=cfg.brokers if own else
                          len(shared.broker_ids()), racks=len(racks), target_kafka=target)
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
        if since and _major_minor(version) < since:
            how = "runs with" if p == cfg.protocol else "moves members to"
            raise BadInput(f"scenario {cfg.scenario} {how} the {p} protocol, which needs Kafka "
                           f"{since[0]}.{since[1]} or newer; the cluster runs {version}")
    settings = kind_of(sc).settings(cfg, sc)
    return RunPlan(cfg=cfg, scenario=sc, kafka_version=version, own_cluster=own, racks=racks,
                   schedule=schedule, context=ctx, settings=settings)


def replay_config(run_dir: Path, **overrides) -> RunConfig:
    """The config of a recorded run, with its schedule pinned, for `harness replay`."""
    d = RunDir.open(run_dir)
    meta = d.meta()
    if "config" not in meta:
        raise BadInput(f"{run_dir}: run.json has no config to replay")
    cfg = dict(meta["config"])
    sched = meta.get("schedule")
    if sched is None and (d.path / SCHEDULE_JSON).exists():
        import json
        sched = json.loads((d.path / SCHEDULE_JSON).read_text())
    if sched is None:
        raise BadInput(f"{run_dir} has no recorded schedule (the run stopped before it started)")
    cfg["schedule"] = tuple(sched)
    if cfg.get("member_command"):
        cfg["member_command"] = tuple(cfg["member_command"])
    cfg["streams_settings"] = tuple(tuple(kv) for kv in cfg.get("streams_settings") or ())
    known = {f for f in RunConfig.__dataclass_fields__}
    return replace(RunConfig(**{k: v for k, v in cfg.items() if k in known}), **overrides)


def config_dict(cfg: RunConfig) -> dict:
    return asdict(cfg)
