"""The plan's facts an invariant's applicability depends on, read from a resolved plan (harness/plan/config.py) and the
checkers' settings its kind derived from it, for the `run_start` event's `applies` (harness/invariants/applies.py
decides; this module only reads the plan).
"""
from __future__ import annotations

from harness.invariants.applies import PlanFacts, applicability
from harness.plan.kinds.share import dlq_topic
from harness.base.steps import Step


def _team_slots(cfg) -> str:
    """`all` when every slot runs a program of the team's own, `some` when some do, else `none`."""
    if cfg.member_command:
        return "all"
    return "some" if cfg.slot_commands else "none"


def plan_facts(plan, *, streams: dict | None = None, connect: dict | None = None,
               backend: str | None = None) -> PlanFacts:
    """The facts of a RunPlan; `streams` and `connect`: the kind's checker settings (StreamsCheckSettings,
    ConnectCheckSettings as dicts), where its standby replicas and connectors are said; `backend`: the backend of
    the cluster the run got (a shared one's may differ from the plan's own)."""
    cfg, sc = plan.cfg, plan.scenario
    rack_aware = str((plan.settings or {}).get("harness.rack.aware", "")).lower() == "true"
    subs = bool(cfg.subscription or cfg.slot_subscriptions) or any(
        a.kind == Step.CHANGE_SUBSCRIPTION and a.params.get("subscription") for a in plan.schedule)
    connect = connect or {}
    return PlanFacts(
        kind=plan.kind, protocol=cfg.protocol, members=sc.members,
        schedule=tuple((a.kind, dict(a.params)) for a in plan.schedule), static=sc.static,
        racks=tuple(plan.racks) if (sc.racks or rack_aware) else (), client_settings=dict(cfg.client_settings),
        broker_settings=dict(cfg.broker_settings), team_slots=_team_slots(cfg), subscriptions=subs,
        standby_replicas=int((streams or {}).get("standby_replicas") or 0),
        source_connectors=len(connect.get("source_connectors") or ()),
        sink_connectors=len(connect.get("sink_connectors") or ()),
        units=len(connect.get("connectors") or ()) + sum(int(n) for n in (connect.get("tasks") or {}).values()),
        dead_letter_topic=dlq_topic(dict(plan.settings or {})) if plan.kind == "share" else None,
        backend=backend or cfg.backend)


def applies(plan, meta: dict) -> dict:
    """The run_start event's `applies` for a plan, with the checkers' settings the run's metadata holds."""
    return applicability(plan_facts(plan, streams=meta.get("streams_check_settings"),
                                    connect=meta.get("connect_check_settings"), backend=meta.get("backend")))
