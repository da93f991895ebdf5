"""Which runs may share a cluster at the same time: one rule, read from the action registry.

Runs on one cluster have their own topics and groups (harness/plan/topics.py, `g-<run id>`), so a run whose
schedule acts only on its own members, topics and group cannot disturb another. A run disturbs every group
on the cluster when a step of its schedule needs a backend ability (harness/plan/actions.py `NEEDS`): each acts on
brokers or on the client path that every run goes through (a broker killed or restarted, network faults in
front of a broker, a rack down, brokers partitioned, a request fault that matches any member's requests,
partition leaders moved). Such
a run, one that starts a cluster of its own (the brokers' processes share the machine) and one that asks for
broker settings of its own run alone: nothing else runs on that cluster meanwhile (harness/drive/pool.py).
"""
from __future__ import annotations

from harness.plan.actions import ACTIONS, NEEDS, Ability

#: the backend abilities whose actions reach beyond the run's own group: all of them (each is described in
#: harness/plan/actions.py NEEDS; tests/unit/test_run_pool.py fails when an ability is added without a decision here)
CLUSTER_WIDE: frozenset[str] = frozenset({Ability.KILL, Ability.NETWORK, Ability.RACK_OUTAGE, Ability.BROKER_PARTITION,
                                          Ability.REQUESTS, Ability.LEADERS})


def disturbing_actions(schedule) -> list[str]:
    """The kinds of the schedule's steps (Actions or kinds) that act on the whole cluster, in schedule order."""
    out: list[str] = []
    for a in schedule:
        kind = getattr(a, "kind", a)
        if ACTIONS[kind].needs & CLUSTER_WIDE and kind not in out:
            out.append(kind)
    return out


def exclusive_reason(plan) -> str | None:
    """Why a planned run (harness.plan.config.RunPlan) must run alone on its cluster, or None when it may share it."""
    if plan.own_cluster:
        return "starts a cluster of its own"
    if plan.cfg.broker_settings:
        return "has broker settings of its own: " + ", ".join(f"{k}={v}" for k, v in plan.cfg.broker_settings)
    acting = disturbing_actions(plan.schedule)
    if acting:
        return "acts on the whole cluster: " + ", ".join(f"{k} ({NEEDS[sorted(ACTIONS[k].needs)[0]]})"
                                                         for k in acting)
    return None
