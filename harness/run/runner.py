"""Runs one scenario and judges it: a small orchestrator over the run's parts.

    plan (harness.run.resolve)      -> what runs: checked and resolved before anything starts
    run directory (rundir)   -> where it is recorded; STATUS says incomplete until judged
    cluster backend          -> the brokers (the run's own, or one shared with other runs)
    kind (harness.kinds)     -> consumer group or Streams app: topics, member specs, "stable"
    nemesis                  -> the schedule's actions and faults
    context (RunContext)     -> all a kind and the nemesis are handed of the run, filled in as set-up goes
    waits + observer         -> the only waiting, over the history read incrementally
    invariants.judge         -> the verdicts, from the history alone

A crash, an error, Ctrl-C or a torn history leaves no process and a run directory never read as a pass.
"""
from __future__ import annotations

import logging
import time
import traceback
from contextlib import ExitStack, suppress
from datetime import datetime, timezone
from functools import partial

from harness.plan.applicability import applies
from harness.cluster.backends import new_backend
from harness.cluster.broker_log import BrokerLog
from harness.cluster import event_sinks
from harness.cluster.base import BrokerSettings
from harness.base.errors import HarnessError, HistoryNotWhole
from harness.record.history import HistoryWriter
from harness.invariants import judge
from harness.kinds import kind_of
from harness.kinds.consumer import record_group_settings, set_group_configs
from harness.members import MemberPool
from harness.nemesis.core import Nemesis
from harness.run.context import RunContext
from harness.run.observe import Observer
from harness.run.planned import action_id, planned_steps
from harness.base.steps import Step, needs_requests
from harness.plan.config import RunConfig, RunPlan, config_dict, replay_config
from harness.plan.kinds.settings import client_settings
from harness.run.resolve import resolve
from harness.record.rundir import BROKERS_HISTORY, HARNESS_HISTORY, PRODUCER_HISTORY, RunDir, RunResult, utc_now
from harness.plan.topics import run_topics
from harness.run.waits import Waits
from harness.members.workload import Workload

__all__ = ["Run", "RunConfig", "RunResult", "replay_config", "run_scenario"]
log = logging.getLogger("harness.run")


def new_cluster(*, backend: str = "local", work_dir, version: str, brokers: int, on_event, progress, settings=None,
                request_faults: bool = False):
    """The cluster a run starts for itself, of the run's backend (`--backend`); with the request proxy in the
    client path when the schedule puts faults on requests."""
    return new_backend(backend, work_dir=work_dir, version=version, brokers=brokers, on_event=on_event,
                       progress=progress, settings=settings, request_faults=request_faults)


class Run:
    """One scenario run; use `execute()`."""

    def __init__(self, cfg: RunConfig, *, cluster=None, make_cluster=None, make_workload=Workload,
                 progress=None) -> None:
        self.cfg = cfg
        self.shared_cluster = cluster
        self.make_cluster = make_cluster or partial(new_cluster, backend=cfg.backend)
        self.make_workload = make_workload
        self.progress = progress or log.info
        self.t0 = self.clock()
        self.plan: RunPlan = resolve(cfg, shared=cluster, progress=self.say)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        self.dir = RunDir.create(cfg.runs_root, f"{stamp}-{cfg.scenario}-{cfg.protocol}-{cfg.seed}")
        self.run_id = self.dir.name
        self.ctx = RunContext(plan=self.plan, run_id=self.run_id, group_id=f"g-{self.run_id}",
                              topics=run_topics(self.run_id, cfg.topics, cfg.partitions), run_dir=self.dir,
                              say=self.say, event=self.event, clock=self.clock)
        self.kind = kind_of(self.plan.scenario)(self.ctx)
        self.hist: HistoryWriter | None = None
        self.cluster = self.pool = self.nemesis = self.workload = self.broker_log = None
        self.ran: list[dict] = []
        self.meta = {"run_id": self.run_id, "config": config_dict(cfg), "started": utc_now()}

    clock = staticmethod(time.monotonic)

    def say(self, msg: str) -> None:
        self.progress(f"[{self.clock() - self.t0:7.1f}s] {msg}")

    def event(self, type_: str, **fields) -> None:
        if self.hist and not self.hist.closed:  # closed once judging starts: what comes after is not history
            self.hist.event(type_, **fields)

    # -- the run
    def execute(self) -> RunResult:
        """Set up, run the schedule, tear down, judge. Never leaves a process behind."""
        d = self.dir
        d.write_meta(self.meta)
        self.hist = HistoryWriter(d.history_file(HARNESS_HISTORY), source="harness", member=None,
                                  backend=getattr(self.shared_cluster, "backend", None) or self.cfg.backend)
        try:
            with ExitStack() as stack:
                stack.callback(self._teardown)
                self._setup()
                self._run_schedule()
                self._finish()
            return self._judge()
        except HistoryNotWhole as e:  # its own files torn or missing: never judged, incomplete (not an error)
            return self._error(str(e), str(e), status="incomplete")
        except HarnessError as e:
            return self._error(str(e), str(e))
        except Exception as e:  # a bug or an unexpected failure: recorded as an error, never a pass
            what = f"unexpected {type(e).__name__}: {e}"
            return self._error(what, f"{what} (see {d.error_path})")
        except KeyboardInterrupt:
            judging = self.hist.closed  # the history was complete (its run_end written) when judging began
            self.event("run_end", status="aborted", error="interrupted")
            d.set_status("incomplete", "interrupted (Ctrl-C or SIGTERM) while judging; no verdict (`harness check` "
                         "judges it)" if judging else "interrupted (Ctrl-C or SIGTERM); no verdict")
            raise
        finally:
            self.hist.close()

    def _error(self, status_reason: str, error: str, *, status: str = "error") -> RunResult:
        self.event("run_end", status="aborted", error=status_reason)
        self.dir.set_status(status, status_reason)
        self.dir.write_error(traceback.format_exc())
        return RunResult(self.dir.path, status, error=error)

    def _setup(self) -> None:
        cfg, plan, d, ctx = self.cfg, self.plan, self.dir, self.ctx
        self.meta.update(self.kind.prepare())
        self._start_cluster()
        ctx.cluster = self.cluster
        self.broker_log = BrokerLog(self.cluster, group_id=ctx.group_id)  # where each broker's log ends now
        self.meta.update({
            "scenario": cfg.scenario, "seed": cfg.seed, "protocol": cfg.protocol, "topic": ctx.topic,
            "topics": [[t.real, t.partitions] for t in ctx.topics],
            "group_id": ctx.group_id, "kafka_version": self.cluster.version,
            "backend": getattr(self.cluster, "backend", self.cfg.backend),
            "brokers": len(self.cluster.broker_ids()), "broker_settings": self.cluster.settings.properties(),
            "check_settings": self.kind.check_settings(), "cluster_dir": str(self.cluster.work_dir),
            "schedule": plan.schedule_dicts(), "replay": f"harness replay {d.path}",
            "group_settings": dict(cfg.group_settings)})
        self.meta.setdefault("kind", plan.kind)
        d.write_meta(self.meta)
        d.write_schedule(plan.schedule_dicts())
        self.event("run_start", run_id=self.run_id, scenario=cfg.scenario, seed=cfg.seed, kind=plan.kind,
                   backend=self.meta["backend"], plan=planned_steps(plan.schedule),
                   settings=self.meta["check_settings"], **cfg.user_settings(), applies=applies(plan, self.meta),
                   **({"streams_settings": self.meta["streams_check_settings"]} if plan.kind == "streams" else {}),
                   **({"connect_settings": self.meta["connect_check_settings"]} if plan.kind == "connect" else {}),
                   **({"share_settings": self.kind.share_check_settings()} if plan.kind == "share" else {}))
        self.meta.update(self.kind.create_topics())
        set_group_configs(ctx, self.kind.group_configs())
        record_group_settings(ctx)
        self.pool = ctx.pool = MemberPool(bootstrap=self.cluster.bootstrap(), group_id=ctx.group_id,
                                          topic=ctx.topic, history_dir=d.history_dir, log_dir=d.logs_dir,
                                          on_event=self.event, client_config=self.kind.pool_config(),
                                          merge_settings=client_settings)
        self.observer = ctx.observer = Observer(d.history_dir, [t.real for t in ctx.topics])
        self.waits = ctx.waits = Waits(observer=self.observer, pool=self.pool, kind=self.kind, cfg=cfg, event=self.event,
                                       say=self.say, clock=self.clock, notice=self.cluster.notice_exits)
        self.workload = self.make_workload(bootstrap=self.cluster.bootstrap(), topics=[t.real for t in ctx.topics],
                                           history_path=d.history_file(PRODUCER_HISTORY), rate_per_s=cfg.rate_per_s,
                                           on_event=self.event)
        self.nemesis = Nemesis(ctx, kind=self.kind, workload=self.workload)
        self.workload.start()
        self.say(f"topic{'s' if len(ctx.topics) > 1 else ''} {', '.join(t.real for t in ctx.topics)}: producing {cfg.rate_per_s:g} records/s; starting {plan.scenario.members} "
                 f"{plan.kind} members ({cfg.protocol}, {self.meta['client_library']} {self.meta['client_version']})")
        self.kind.members_started(self.nemesis.add_members(plan.scenario.members))
        self.waits.wait_stable("initial assignment")

    def _start_cluster(self) -> None:
        """Start the run's own cluster, or take the shared one."""
        if self.plan.own_cluster:
            version = self.plan.kafka_version
            proxy = needs_requests(self.plan.schedule)
            self.say(f"starting a {self.cfg.brokers}-broker Kafka {version} cluster"
                     f"{' with the request proxy' if proxy else ''}")
            self.cluster = self.make_cluster(work_dir=self.dir.cluster_dir, version=version,
                                             brokers=self.cfg.brokers, on_event=self.event, progress=self.say,
                                             settings=BrokerSettings.for_brokers(
                                                 self.cfg.brokers, {**self.plan.broker_settings,
                                                                    **dict(self.cfg.broker_settings)}),
                                             **({"request_faults": True} if proxy else {}))
            self.cluster.start()
        else:
            self.cluster = self.shared_cluster
            event_sinks.attach(self.cluster, self.event)  # with every other run on it now

    def _run_schedule(self) -> None:
        for i, action in enumerate(self.plan.schedule):
            aid = action_id(i)
            self.event("action_start", action_id=aid, kind=action.kind, params=action.params)
            if action.kind not in (Step.SLEEP, Step.WAIT_STABLE):
                self.say(f"{action.kind} {action.params or ''}")
            info = self.nemesis.perform(action, step=i)
            if info.get("skipped"):  # it did nothing: not ok, and schedule_performed names it
                self.say(f"step {i + 1} ({action.kind}) did not happen: {info['skipped']}")
            self.event("action_end", action_id=aid, kind=action.kind, ok=not info.get("skipped"), error=None, **info)
            self.ran.append({**action.to_dict(), **({"result": info} if info else {})})
            self.nemesis.step_done(i)
        if needs_requests(self.plan.schedule):
            lifted = self.nemesis.end_request_faults()  # none outlives the schedule: the final wait sees no fault
            if lifted:
                self.say(f"the schedule ended: {lifted} request fault rule{'s' * (lifted > 1)} lifted")

    def _finish(self) -> None:
        self.waits.wait_stable("final")
        left = self.workload.stop()
        self.say(f"producer stopped: {self.workload.acked} acknowledged, {self.workload.failed} failed, "
                 f"{left} unacknowledged; draining")
        missing = self.waits.wait_drained(timeout_s=self.cfg.drain_timeout_s)
        self.event("drained", ok=not missing, missing=missing)
        self.waits.sleep(self.cfg.quiet_period_s)
        self.say("stopping members")
        self.pool.stop_all()
        self.kind.finish()

    def _teardown(self) -> None:
        self.kind.close()
        if self.pool:
            self.pool.kill_all()
        if self.workload is not None and not self.workload.stopped:
            self.workload.stop(timeout_s=5)
        if self.cluster is not None and self.plan.own_cluster:
            self.cluster.stop()
        elif self.cluster is not None:
            with suppress(Exception):  # a heal that fails leaves the shared cluster to its own stop
                self.cluster.heal()
            event_sinks.detach(self.cluster, self.event)  # not this run's history, closed after it

    def _judge(self) -> RunResult:
        brokers = self.dir.history_file(BROKERS_HISTORY)
        said = self.broker_log.collect(brokers)  # what the brokers said of the group
        self.say(f"{said} broker log lines about the group ({brokers.relative_to(self.dir.path)})")
        self.event("run_end", status="complete")
        self.hist.close()
        verdicts = judge(self.dir.history())
        status = self.dir.write_verdicts(verdicts)
        self.meta.update({"finished": utc_now(), "status": status, "schedule_ran": self.ran,
                          "duration_s": round(self.clock() - self.t0, 1)})
        self.dir.write_meta(self.meta)
        self.dir.set_status(status, "an invariant could not be decided" if status == "unknown" else None)
        return RunResult(self.dir.path, status, verdicts)


def run_scenario(cfg: RunConfig, *, cluster=None, progress=None) -> RunResult:
    """Run one scenario and judge it (BadInput before anything starts when it cannot work)."""
    return Run(cfg, cluster=cluster, progress=progress).execute()
