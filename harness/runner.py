"""Runs one scenario against a cluster and writes its run directory; judging is left to the invariants.

Layout of a run directory (docs/run-directory.md): STATUS, run.json, schedule.json, history/*.jsonl,
logs/, verdicts.json. STATUS says `incomplete` from the first moment until the run finished and was
judged, so a crash or Ctrl-C never leaves something that reads as a pass.
"""
from __future__ import annotations

import json
import time
import traceback
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from harness import scenarios
from harness.members import clients
from harness.cluster.local import LocalCluster
from harness.errors import BadInput, HarnessError, Indeterminate, SetupError
from harness.history import History, HistoryWriter
from harness.invariants import CheckSettings, Verdict, check_all
from harness.members import MemberPool, MemberSpec
from harness.observe import acked_unprocessed, current_ownership
from harness.scenarios import PROTOCOLS, STREAMS_PROTOCOLS, Action, ScenarioContext
from harness.workload import Workload


MISBEHAVIOURS = ("process-after-revoke", "claim-extra")
#: Streams runs' self-tests: every instance runs with a recovery lag that defeats warmups (KIP-441), or
#: at_least_once while the run is judged as exactly_once_v2
STREAMS_MISBEHAVIOURS = ("defeat-warmup", "fake-eos")


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

    def validate(self) -> scenarios.Scenario:
        sc = scenarios.get(self.scenario)
        if self.protocol not in PROTOCOLS + STREAMS_PROTOCOLS:
            raise BadInput(f"unknown protocol {self.protocol!r}; known: {', '.join(PROTOCOLS + STREAMS_PROTOCOLS)}")
        if self.protocol not in sc.protocols:
            raise BadInput(f"scenario {self.scenario} does not run with protocol {self.protocol} "
                           f"(it runs with {', '.join(sc.protocols)})")
        if self.misbehave not in (None, *(STREAMS_MISBEHAVIOURS if sc.kind == "streams" else MISBEHAVIOURS)):
            raise BadInput(f"unknown misbehaviour {self.misbehave!r}")
        if sc.kind == "streams":
            from harness.streams_run import streams_settings
            streams_settings(self, sc)
        elif self.streams_settings:
            raise BadInput(f"scenario {self.scenario} has no Kafka Streams members: Streams settings do not apply")
        return sc

    def client_config(self) -> dict:
        return {"session.timeout.ms": int(self.session_timeout_s * 1000),
                "heartbeat.interval.ms": int(self.heartbeat_interval_s * 1000)}


@dataclass
class RunResult:
    run_dir: Path
    status: str  # pass, fail, unknown (no verdict reached: never a pass), error, incomplete
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    error: str | None = None

    @property
    def exit_code(self) -> int:
        return {"pass": 0, "fail": 1, "unknown": 1}.get(self.status, 2)


def _ts() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")


class Run:
    """One scenario run; use `execute()`."""

    def __init__(self, cfg: RunConfig, *, cluster: LocalCluster | None = None, progress=print) -> None:
        self.cfg = cfg
        self.sc = cfg.validate()
        self.shared_cluster = cluster
        self.progress = progress
        self.run_id = f"{_ts()}-{cfg.scenario}-{cfg.protocol}-{cfg.seed}"
        self.dir = Path(cfg.runs_root) / self.run_id
        n = 1
        while self.dir.exists():
            n += 1
            self.dir = Path(cfg.runs_root) / f"{self.run_id}-{n}"
        self.run_id = self.dir.name
        self.topic = f"t-{self.run_id}"
        self.group_id = f"g-{self.run_id}"
        self.t0 = time.monotonic()
        self.hist: HistoryWriter | None = None
        self.cluster: LocalCluster | None = None
        self.pool: MemberPool | None = None
        self.slots: list = []
        self.specs: list[MemberSpec] = []
        self.ran: list[dict] = []
        self._fault_n = 0

    # -- recording
    def say(self, msg: str) -> None:
        self.progress(f"[{time.monotonic() - self.t0:7.1f}s] {msg}")

    def event(self, type_: str, **fields) -> None:
        if self.hist:
            self.hist.event(type_, **fields)

    def _write_json(self, name: str, obj) -> None:
        tmp = self.dir / (name + ".tmp")
        tmp.write_text(json.dumps(obj, indent=2, default=str))
        tmp.replace(self.dir / name)

    def _status(self, status: str, reason: str | None = None) -> None:
        (self.dir / "STATUS").write_text(status + ("\n" + reason if reason else "") + "\n")

    # -- the run
    def execute(self) -> RunResult:
        """Set up, run the schedule, tear down, judge. Never leaves a process behind."""
        self.dir.mkdir(parents=True)
        (self.dir / "history").mkdir()
        (self.dir / "logs").mkdir()
        self._status("incomplete")
        meta = {"run_id": self.run_id, "config": asdict(self.cfg), "started": datetime.now(timezone.utc).isoformat()}
        self._write_json("run.json", meta)
        self.hist = HistoryWriter(self.dir / "history" / "harness.jsonl", source="harness", member=None)
        result = RunResult(self.dir, "incomplete")
        try:
            with ExitStack() as stack:
                stack.callback(self._teardown)
                self._setup(meta)
                self._run_schedule()
                self._finish()
            result = self._judge(meta)
        except HarnessError as e:
            self.event("run_end", status="aborted", error=str(e))
            self._status("error", str(e))
            result = RunResult(self.dir, "error", error=str(e))
            (self.dir / "logs" / "harness-error.txt").write_text(traceback.format_exc())
        except Exception as e:  # a bug or an unexpected failure: recorded as an error, never a pass
            self.event("run_end", status="aborted", error=repr(e))
            self._status("error", f"unexpected {type(e).__name__}: {e}")
            (self.dir / "logs" / "harness-error.txt").write_text(traceback.format_exc())
            result = RunResult(self.dir, "error", error=f"unexpected {type(e).__name__}: {e} "
                                                        f"(see {self.dir / 'logs' / 'harness-error.txt'})")
        except KeyboardInterrupt:
            self.event("run_end", status="aborted", error="interrupted")
            self._status("incomplete", "interrupted (Ctrl-C or SIGTERM); no verdict")
            raise
        finally:
            if self.hist:
                self.hist.close()
        return result

    def _setup(self, meta: dict) -> None:
        cfg = self.cfg
        client_version, client_path = clients.client_path(cfg.client_version or self.sc.initial_client,
                                                          progress=self.say)
        self._start_cluster()
        if cfg.protocol == "consumer" and self.cluster._dist(self.cluster.requested_version).major < 4:
            raise BadInput(f"protocol consumer needs Kafka 4.0 or newer; the cluster runs {self.cluster.version}")
        ctx = self._plan()
        if self.cluster._dist(self.cluster.requested_version).major < 4 and any(
                a.params.get("protocol") == "consumer" for a in self.schedule):
            raise BadInput(f"scenario {cfg.scenario} moves members to the consumer protocol, which needs Kafka 4.0 "
                           f"or newer; the cluster runs {self.cluster.version}")
        self.check_settings = CheckSettings.from_dict({
            "topic": self.topic, "partitions": cfg.partitions, "protocol": cfg.protocol,
            "session_timeout_s": cfg.session_timeout_s, "quiet_period_s": cfg.quiet_period_s,
            **self.sc.check_overrides(ctx, self.schedule)})
        meta.update({
            "scenario": cfg.scenario, "seed": cfg.seed, "protocol": cfg.protocol, "topic": self.topic,
            "group_id": self.group_id, "kafka_version": self.cluster.version, "client_version": client_version,
            "client_library": "confluent-kafka", "backend": "local", "brokers": cfg.brokers,
            "broker_settings": self.cluster.settings.properties(), "client_settings": cfg.client_config(),
            "check_settings": self.check_settings.to_dict(),
            "cluster_dir": str(self.cluster.work_dir), "schedule": [a.to_dict() for a in self.schedule],
            "replay": f"harness replay {self.dir}",
        })
        self._write_json("run.json", meta)
        self._write_json("schedule.json", [a.to_dict() for a in self.schedule])
        self.event("run_start", run_id=self.run_id, scenario=cfg.scenario, seed=cfg.seed,
                   settings=self.check_settings.to_dict())
        self.cluster.create_topic(self.topic, partitions=cfg.partitions, replication=min(3, cfg.brokers))
        self.pool = MemberPool(bootstrap=self.cluster.bootstrap(), group_id=self.group_id, topic=self.topic,
                               history_dir=self.dir / "history", log_dir=self.dir / "logs", on_event=self.event,
                               client_config=cfg.client_config())
        self.client_path = client_path
        self._start_load_and_members(f"members ({cfg.protocol})")

    def _start_load_and_members(self, what: str) -> None:
        """Start the producer, then the scenario's first members one after another; wait for stability."""
        self.workload = Workload(bootstrap=self.cluster.bootstrap(), topic=self.topic,
                                 history_path=self.dir / "history" / "producer.jsonl", rate_per_s=self.cfg.rate_per_s)
        self.workload.start()
        self.say(f"topic {self.topic}: producing {self.cfg.rate_per_s:g} records/s; starting {self.sc.members} {what}")
        racks = self.cluster.racks_in_use()
        for _ in range(self.sc.members):
            self._add_member(racks)
        self._members_started()
        self.wait_stable("initial assignment")

    def _members_started(self) -> None:
        """The scenario's first members are up (their `started` events seen); a hook for subclasses."""

    def _plan(self) -> ScenarioContext:
        """The schedule: the recorded one of a replay, else the seed's. Returns the context it was made in."""
        cfg = self.cfg
        ctx = ScenarioContext(session_timeout_s=cfg.session_timeout_s, brokers=cfg.brokers,
                              racks=len(self.cluster.racks_in_use()), target_kafka=cfg.kafka_version)
        if cfg.schedule is not None:
            self.schedule = [Action.from_dict(a) for a in cfg.schedule]
        else:
            self.schedule = scenarios.schedule(self.sc, seed=cfg.seed, ctx=ctx)
        return ctx

    def _start_cluster(self) -> None:
        """Start the scenario's own cluster, or take the shared one."""
        cfg = self.cfg
        if self.sc.initial_kafka or self.shared_cluster is None:
            version = self.sc.initial_kafka or cfg.kafka_version
            self.say(f"starting a {cfg.brokers}-broker Kafka {version} cluster")
            self.cluster = LocalCluster(work_dir=self.dir / "cluster", version=version, brokers=cfg.brokers,
                                        on_event=self.event, progress=self.say)
            self._own_cluster = True
            self.cluster.start()
        else:
            self.cluster = self.shared_cluster
            self._own_cluster = False
            self.cluster.on_event = self.event

    def _new_spec(self, racks: list[str]) -> MemberSpec:
        i = len(self.specs)
        return MemberSpec(protocol=self.cfg.protocol,
                          instance_id=f"{self.group_id}-s{i}" if self.sc.static else None,
                          rack=racks[i % len(racks)] if self.sc.racks else None,
                          client_path=self.client_path, command=self.cfg.member_command,
                          misbehave=self.cfg.misbehave if i == 0 else None)

    def _add_member(self, racks: list[str]):
        spec = self._new_spec(racks)
        self.specs.append(spec)
        m = self.pool.start(spec)
        self.slots.append(m)
        return m

    # -- waiting (the only place that waits)
    def wait_stable(self, what: str, *, timeout_s: float | None = None) -> bool:
        """Wait until every partition has exactly one live owner, owned counts differ by at most one, and
        nothing changed for stable_s. On timeout it records `wait_timeout` and goes on: the checkers judge."""
        timeout_s = timeout_s or self.cfg.stable_timeout_s
        deadline = time.monotonic() + timeout_s
        last, since = None, time.monotonic()
        while time.monotonic() < deadline:
            self.pool.reap()
            own = current_ownership(self.dir / "history", self.topic)
            held = [p for parts in own.values() for p in parts]
            snapshot = tuple(sorted((m, tuple(sorted(ps))) for m, ps in own.items()))
            if snapshot != last:
                last, since = snapshot, time.monotonic()
            complete = sorted(held) == list(range(self.cfg.partitions))
            counts = [len(ps) for ps in own.values()]
            balanced = bool(counts) and max(counts) - min(counts) <= 1
            if complete and balanced and time.monotonic() - since >= self.cfg.stable_s:
                self.say(f"stable ({what}): " + ", ".join(f"{m}:{len(ps)}" for m, ps in sorted(own.items())))
                return True
            time.sleep(0.2)
        self.say(f"not stable after {timeout_s:.0f}s ({what}); continuing, the invariants will judge")
        self.event("wait_timeout", what=what, timeout_s=timeout_s)
        return False

    def _sleep(self, s: float) -> None:
        end = time.monotonic() + s
        while time.monotonic() < end:
            self.pool.reap()
            time.sleep(min(0.2, max(0.0, end - time.monotonic())))

    # -- faults
    def _fault(self, kind: str, *, targets, members=(), brokers=()) -> str:
        self._fault_n += 1
        fid = f"f{self._fault_n}"
        self.event("fault_start", fault_id=fid, kind=kind, targets=list(targets), members_affected=list(members),
                   brokers_affected=list(brokers))
        return fid

    def _fault_end(self, fid: str) -> None:
        self.event("fault_end", fault_id=fid)

    def _live_ids(self) -> list[str]:
        return [m.member_id for m in self.pool.live()]

    # -- the schedule
    def _run_schedule(self) -> None:
        for i, action in enumerate(self.schedule):
            aid = f"a{i + 1}"
            self.event("action_start", action_id=aid, kind=action.kind, params=action.params)
            if action.kind not in ("sleep", "wait_stable"):
                self.say(f"{action.kind} {action.params or ''}")
            info = getattr(self, "_do_" + action.kind.replace("-", "_"))(**action.params) or {}
            self.event("action_end", action_id=aid, kind=action.kind, ok=True, error=None, **info)
            self.ran.append({**action.to_dict(), **({"result": info} if info else {})})

    def _do_sleep(self, s: float):
        self._sleep(s)

    def _do_wait_stable(self):
        return {"stable": self.wait_stable("after action")}

    def _do_scale_out(self):
        return {"member": self._add_member(self.cluster.racks_in_use()).member_id}

    def _do_scale_in(self, pick: str = "newest"):
        live = [i for i, m in enumerate(self.slots) if m is not None and not m.exited]
        if len(live) <= 1:
            return {"skipped": "one member left"}
        slot = live[-1] if pick == "newest" else live[0]
        m = self.slots[slot]
        self.pool.stop(m)
        self.slots[slot] = None
        return {"member": m.member_id}

    def _live_slot(self, slot: int):
        """The live member in a slot, or None (a shrunk or mixed schedule may name an empty slot)."""
        m = self.slots[slot] if 0 <= slot < len(self.slots) else None
        return m if m is not None and not m.exited else None

    def _do_bounce(self, slot: int, down_s: float = 0.5, client_version: str | None = None,
                   protocol: str | None = None):
        old = self._live_slot(slot)
        if old is None:
            return {"skipped": f"slot {slot} has no live member"}
        if client_version:  # a rolling client upgrade: the member comes back on another library version
            version, path = clients.client_path(client_version, progress=self.say)
            self.specs[slot] = replace(self.specs[slot], client_path=path)
        if protocol:  # an online group protocol migration, one member at a time
            self.specs[slot] = replace(self.specs[slot], protocol=protocol)
        self.pool.stop(old)
        self._sleep(down_s)
        new = self.pool.start(self.specs[slot])
        self.slots[slot] = new
        return {"stopped": old.member_id, "started": new.member_id}

    def _do_kill_member(self, slot: int, replace_after_s: float | None = None):
        m = self._live_slot(slot)
        if m is None:
            return {"skipped": f"slot {slot} has no live member"}
        self.pool.kill(m)
        if replace_after_s is None:
            return {"member": m.member_id}
        self._sleep(replace_after_s)
        return {"member": m.member_id, **self._do_replace_member(slot)}

    def _do_replace_member(self, slot: int):
        if slot >= len(self.specs) or self._live_slot(slot) is not None:
            return {"skipped": f"slot {slot} is not empty"}
        m = self.pool.start(self.specs[slot])
        self.slots[slot] = m
        return {"replacement": m.member_id}

    def _do_broker_bounce(self, broker: int, down_s: float = 1.0):
        fid = self._fault("broker_bounce", targets=[broker], brokers=[broker])
        try:
            self.cluster.terminate_broker(broker)
            self._sleep(down_s)
            self.cluster.start_broker(broker)
        finally:
            self._fault_end(fid)
        return {"broker": broker}

    def _do_pause_member(self, slot: int, duration_s: float):
        m = self._live_slot(slot)
        if m is None:
            return {"skipped": f"slot {slot} has no live member"}
        fid = self._fault("pause", targets=[m.member_id], members=[m.member_id])
        self.pool.pause(m)
        try:
            self._sleep(duration_s)
        finally:
            self.pool.resume(m)
            self._fault_end(fid)
        return {"member": m.member_id}

    def _do_broker_rolling_restart(self):
        fid = self._fault("broker_rolling_restart", targets=self.cluster.broker_ids(),
                          brokers=self.cluster.broker_ids())
        try:
            self.cluster.rolling_restart()
        finally:
            self._fault_end(fid)

    def _do_broker_upgrade(self, version: str):
        before = self.cluster.version
        fid = self._fault("broker_upgrade", targets=self.cluster.broker_ids(), brokers=self.cluster.broker_ids())
        try:
            self.cluster.rolling_upgrade(version)
        finally:
            self._fault_end(fid)
        return {"from": before, "to": self.cluster.nodes[1].version}

    def _coordinator(self, *, timeout_s: float = 30.0) -> int:
        """The broker coordinating the group (retried: mid-rebalance or mid-failover it may not answer)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fut = self.cluster.admin().describe_consumer_groups([self.group_id])[self.group_id]
                return fut.result(timeout=10).coordinator.id
            except Exception as e:
                if time.monotonic() >= deadline:
                    raise Indeterminate(f"could not find the coordinator of {self.group_id}: {e}") from None
                # after a coordinator failover the admin client can keep asking the old coordinator
                # (NOT_COORDINATOR over and over): a new client looks it up afresh
                self.cluster.reset_admin()
                time.sleep(0.5)

    def _do_kill_coordinator(self, down_s: float):
        bid = self._coordinator()
        fid = self._fault("broker_kill", targets=[bid], brokers=[bid])
        try:
            self.cluster.kill_broker(bid)
            self._sleep(down_s)
            self.cluster.start_broker(bid)
        finally:
            self._fault_end(fid)
        return {"broker": bid}

    def _do_rack_outage(self, rack: str, down_s: float):
        brokers = self.cluster.brokers_of_rack(rack)
        victims = [i for i, m in enumerate(self.slots) if m is not None and not m.exited and m.spec.rack == rack]
        fid = self._fault("rack_outage", targets=[rack], brokers=brokers,
                          members=[self.slots[i].member_id for i in victims])
        try:
            for i in victims:
                self.pool.kill(self.slots[i])
            self.cluster.rack_outage(rack)
            self._sleep(down_s)
            self.cluster.rack_restore(rack)
            for i in victims:
                self.slots[i] = self.pool.start(self.specs[i])
        finally:
            self._fault_end(fid)
        return {"brokers": brokers, "members": len(victims)}

    def _do_network_latency(self, latency_ms: int, jitter_ms: int, duration_s: float):
        fid = self._fault("network_latency", targets=self.cluster.broker_ids(), members=self._live_ids())
        try:
            self.cluster.add_latency(latency_ms=latency_ms, jitter_ms=jitter_ms)
            self._sleep(duration_s)
        finally:
            self.cluster.heal()
            self._fault_end(fid)

    def _do_network_blackhole(self, broker: int, duration_s: float):
        fid = self._fault("network_blackhole", targets=[broker], members=self._live_ids(), brokers=[broker])
        try:
            self.cluster.blackhole(broker_ids=[broker])
            self._sleep(duration_s)
        finally:
            self.cluster.heal()
            self._fault_end(fid)

    # -- the end
    def _finish(self) -> None:
        self.wait_stable("final")
        left = self.workload.stop()
        self.say(f"producer stopped: {self.workload.acked} acknowledged, {self.workload.failed} failed, "
                 f"{left} unacknowledged; draining")
        deadline = time.monotonic() + self.cfg.drain_timeout_s
        missing = acked_unprocessed(self.dir / "history", self.topic)
        while missing and time.monotonic() < deadline:
            time.sleep(0.3)
            missing = acked_unprocessed(self.dir / "history", self.topic)
        self.event("drained", ok=not missing, missing=missing)
        self._sleep(self.cfg.quiet_period_s)
        self.say("stopping members")
        self.pool.stop_all()

    def _teardown(self) -> None:
        if self.pool:
            self.pool.kill_all()
        if getattr(self, "workload", None) and not self.workload._stop.is_set():
            self.workload.stop(timeout_s=5)
        if self.cluster and getattr(self, "_own_cluster", False):
            self.cluster.stop()
        elif self.cluster:
            try:
                self.cluster.heal()
            except Exception:
                pass

    def _judge(self, meta: dict) -> RunResult:
        self.event("run_end", status="complete")
        self.hist.close()
        history = History.load(self.dir / "history")
        return self._record_verdicts(meta, check_all(history, self.check_settings))

    def _record_verdicts(self, meta: dict, verdicts: dict[str, Verdict]) -> RunResult:
        """verdicts.json, the final run.json and STATUS; the run's result."""
        self._write_json("verdicts.json", {k: v.to_dict() for k, v in verdicts.items()})
        statuses = {v.status for v in verdicts.values()}
        status = "fail" if "invalid" in statuses else ("pass" if statuses <= {"valid", "skipped"} else "unknown")
        meta.update({"finished": datetime.now(timezone.utc).isoformat(), "status": status,
                     "schedule_ran": self.ran, "duration_s": round(time.monotonic() - self.t0, 1)})
        self._write_json("run.json", meta)
        self._status(status, "an invariant could not be decided" if status == "unknown" else None)
        return RunResult(self.dir, status, verdicts)


def run_scenario(cfg: RunConfig, *, cluster: LocalCluster | None = None, progress=print) -> RunResult:
    """Run one scenario and judge it."""
    if scenarios.get(cfg.scenario).kind == "streams":
        from harness.streams_run import StreamsRun
        return StreamsRun(cfg, cluster=cluster, progress=progress).execute()
    return Run(cfg, cluster=cluster, progress=progress).execute()


def replay_config(run_dir: Path, **overrides) -> RunConfig:
    """The config of a recorded run, with its schedule pinned, for `harness replay`."""
    meta_path = Path(run_dir) / "run.json"
    if not meta_path.exists():
        raise BadInput(f"{run_dir} is not a run directory (no run.json)")
    meta = json.loads(meta_path.read_text())
    cfg = dict(meta["config"])
    sched = meta.get("schedule")
    if sched is None:
        raise BadInput(f"{run_dir} has no recorded schedule (the run stopped before it started)")
    cfg["schedule"] = tuple(sched)
    if cfg.get("member_command"):
        cfg["member_command"] = tuple(cfg["member_command"])
    cfg["streams_settings"] = tuple(tuple(kv) for kv in cfg.get("streams_settings") or ())
    return replace(RunConfig(**cfg), **overrides)
