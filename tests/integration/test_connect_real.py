"""Verify: Kafka Connect workers on the real connect-runtime, judged by the Connect invariants: a worker killed
and kept away past scheduled.rebalance.max.delay.ms has its tasks reassigned after the delay and not before
(with the delay at 0, at the next rebalance); a task that goes on producing after it was stopped, and a run
judged with another delay than it ran with, each fail a real run; the workers' histories follow the schema.

Setup: the shared cluster of the session (harness/suite/plugin.py), the connect-worker-kill and
connect-join-back-to-back scenarios with three distributed workers on the brokers' connect-runtime running
HarnessSource (4 tasks) and HarnessSink (3 tasks).
Marked nightly: four real Connect runs of 1-2 minutes each, which a CI gate leaves to the night
(`./dev test -m nightly`); the CI runs the smoke connect-worker-kill of suites/test_connect_chaos.py.
"""
import pytest

from harness.record.schema import validate_dir

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.nightly]


def _departure(r):
    v = r.verdicts["connect_scheduled_delay"]
    deps = v.measurements["departures"]
    assert len(deps) == 1 and deps[0]["how"] == "kill", deps
    return v, deps[0]


def test_killed_worker_tasks_move_after_the_delay_and_not_before(run_scenario):
    r = run_scenario("connect-worker-kill", protocol="sessioned")
    v, d = _departure(r)
    assert r.status == "pass", {n: x.message for n, x in r.verdicts.items()}
    assert v.status == "valid" and not d["leader"] and d["units"] > 0
    # the delay (10 s) starts when the group notices the kill (a session timeout, 6 s, at most)
    assert 10.0 <= d["first_restart_s"] <= d["last_restart_s"] <= 10.0 + 6.0 + 5.0, d
    assert validate_dir(r.run_dir / "history") == []


def test_with_the_delay_at_zero_tasks_move_at_the_next_rebalance(run_scenario):
    r = run_scenario("connect-worker-kill", protocol="sessioned",
                     connect_settings=(("scheduled.rebalance.max.delay.ms", 0),))
    v, d = _departure(r)
    assert r.status == "pass", {n: x.message for n, x in r.verdicts.items()}
    assert v.status == "valid" and d["last_restart_s"] < 10.0, d  # the session timeout (6 s) and one rebalance


def test_a_run_judged_with_another_delay_fails(run_scenario):
    """The workers wait 10 s; the run is judged as if they were to wait 30 s (`wrong-delay`)."""
    r = run_scenario("connect-worker-kill", protocol="sessioned", misbehave="wrong-delay")
    v, d = _departure(r)
    assert r.status == "fail" and v.status == "invalid", v.message
    assert "before the 30s delay" in v.witnesses[0]["why"]


def test_a_task_producing_after_it_was_stopped_fails(run_scenario):
    """Every source task, when stopped, goes on writing batches for 10 s (`zombie-task`): two workers joining
    make the others give tasks up, which start on the new workers while the old ones still produce. Source tasks
    only (no sink connector), so that the tasks given up are source tasks."""
    r = run_scenario("connect-join-back-to-back", protocol="sessioned", misbehave="zombie-task",
                     connect_settings=(("harness.sink.tasks", 0), ("harness.source.tasks", 6)))
    v = r.verdicts["connect_task_exclusive"]
    assert r.status == "fail" and v.status == "invalid", v.message
    assert any("at once" in w["why"] for w in v.witnesses), v.witnesses
