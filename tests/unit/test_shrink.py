"""Shrinking: a failing schedule of 10+ actions becomes a shorter one that still fails."""
from harness.plan import scenarios
from harness.drive.nightly import parse_budget
from harness.plan.scenarios import Action, ScenarioContext
from harness.drive.shrink import flatten, shrink, units

CTX = ScenarioContext(session_timeout_s=6.0, brokers=3, racks=3)

import pytest  # noqa: E402


def _mix(seed):
    return scenarios.schedule(scenarios.get("random-mix"), seed=seed, ctx=CTX)


def test_units_keep_waits_with_their_action():
    s = [Action("sleep", {"s": 1}), Action("kill_member", {"slot": 0}), Action("wait_stable"),
         Action("scale_out"), Action("sleep", {"s": 2}), Action("wait_stable")]
    us = units(s)
    assert [[a.kind for a in u] for u in us] == [["sleep"], ["kill_member", "wait_stable"],
                                                 ["scale_out", "sleep", "wait_stable"]]
    assert flatten(us) == s


def test_shrinks_to_the_two_actions_that_together_fail():
    """The failure needs a pause AND a broker bounce somewhere in the schedule (an interaction)."""
    sched = [Action("scale_out"), Action("wait_stable"), Action("pause_member", {"slot": 1, "duration_s": 9}),
             Action("wait_stable")] + [a for i in range(4) for a in (Action("bounce", {"slot": i % 3}),
                                                                        Action("wait_stable"))] \
        + [Action("broker_bounce", {"broker": 2}), Action("wait_stable"), Action("network_latency"),
           Action("wait_stable"), Action("scale_in"), Action("wait_stable"), Action("kill_coordinator"),
           Action("wait_stable")]
    assert len([a for a in sched if a.kind != "wait_stable"]) >= 10

    def fails(s):
        kinds = [a.kind for a in s]
        return "pause_member" in kinds and "broker_bounce" in kinds

    res = shrink(sched, fails, max_attempts=60)
    assert fails(res.schedule)
    assert [a.kind for a in res.schedule] == ["pause_member", "broker_bounce"]
    assert res.attempts <= 60


def test_a_schedule_whose_every_part_matters_is_kept():
    sched = [Action("scale_out"), Action("kill_member", {"slot": 0}), Action("bounce", {"slot": 1})]
    res = shrink(sched, lambda s: len(s) == 3)
    assert res.schedule == sched


def test_attempt_budget_bounds_shrinking():
    calls = []

    def fails(s):
        calls.append(1)
        return len(s) >= 1

    res = shrink(_mix(3), fails, max_attempts=5)
    assert len(calls) == 5 == res.attempts
    assert fails(res.schedule)


def test_shrinking_is_deterministic():
    def fails(s):
        return any(a.kind == "kill_coordinator" for a in s) or len(s) > 20
    a = shrink(_mix(11), fails)
    b = shrink(_mix(11), fails)
    assert a.schedule == b.schedule and a.log == b.log


@pytest.mark.parametrize("text, secs", [("30m", 1800), ("90s", 90), ("1h30m", 5400), ("45", 45)])
def test_budget(text, secs):
    assert parse_budget(text) == secs
