"""Which invariants a plan makes judgeable (harness/invariants/applies.py, slots.py), what a checker's `skipped`
becomes under the plan's word (`decide`, through `judge`), and the random mix drawing only steps that can happen."""
from __future__ import annotations

import pytest

from harness.invariants import judge
from harness.invariants.applies import PlanFacts, applicability, decide
from harness.invariants.core import verdict
from harness.invariants.slots import Slots, walk
from harness.record.rundir import status_of
from histbuild import ev, history, join, run_end, run_start


def facts(kind="consumer", protocol="classic-cooperative", members=3, schedule=(), **kw) -> PlanFacts:
    return PlanFacts(kind=kind, protocol=protocol, members=members, schedule=tuple(schedule), **kw)


def says(f: PlanFacts, name: str) -> tuple[bool, str]:
    a = applicability(f)[name]
    return a["applies"], a["why"]


# -- the slots a schedule keeps live
def test_a_kill_empties_its_slot_until_a_replacement_and_a_second_kill_there_does_nothing():
    effs = walk(3, [("kill_member", {"slot": 1}), ("kill_member", {"slot": 1}), ("replace_member", {"slot": 1}),
                    ("kill_member", {"slot": 1, "replace_after_s": 1.0}), ("kill_member", {"slot": 1})])
    assert [d.slot for d in effs[0].departures] == [1] and not effs[0].starts
    assert effs[1].idle == "slot 1 has no live member" and not effs[1].changes_members
    assert effs[2].starts == [1]
    assert effs[3].starts == [1] and effs[4].changes_members  # a kill with a replacement keeps the slot live


def test_scale_in_takes_the_newest_and_never_the_last_member():
    s = Slots(2)
    assert [d.slot for d in s.step("scale_in", {}).departures] == [1]
    assert s.step("scale_in", {}).idle == "one member left" and s.live == [0]
    assert s.step("scale_out", {"count": 2}).starts == [2, 3] and s.live == [0, 2, 3]
    assert [d.slot for d in s.step("scale_in", {"pick": "oldest", "count": 5}).departures] == [0, 2]


def test_a_leave_during_join_adds_a_slot_and_empties_the_named_one():
    s = Slots(3)
    eff = s.step("leave_during_join", {"slot": 0})
    assert eff.starts == [3] and [d.slot for d in eff.departures] == [0] and s.live == [1, 2, 3]


def test_after_an_autoscale_only_its_oldest_kept_slots_are_known_live():
    s = Slots(4)
    assert s.step("autoscale", {"min_members": 2}).uncertain
    assert s.live == [0, 1] and s.maybe == {2, 3} and s.made is None
    assert s.step("scale_out", {}).starts == [None]  # a new slot whose number the plan cannot know
    eff = s.step("scale_in", {})
    assert eff.uncertain and not eff.departures and s.live == [0]  # slot 1 may be the newest live one
    assert s.step("kill_member", {"slot": 2}).uncertain


def test_static_ness_follows_the_slot_through_bounces_and_rolls():
    effs = walk(2, [("kill_member", {"slot": 0, "replace_after_s": 1}), ("bounce", {"slot": 1, "static": True}),
                    ("bounce", {"slot": 1}), ("settings_roll", {"static": False}), ("bounce", {"slot": 1})])
    static = [[d.static for d in e.departures] for e in effs]
    assert static == [[False], [False], [True], [False, True], [False]]


def test_a_rack_outage_departs_the_members_of_its_rack():
    eff = walk(3, [("rack_outage", {"rack": "r1", "down_s": 1})], racks=("r0", "r1", "r2"))[0]
    assert [(d.slot, d.how) for d in eff.departures] == [(1, "kill")]
    assert not walk(3, [("rack_outage", {"rack": "r1", "down_s": 1})])[0].changes_members  # no member has a rack


# -- the rules
def test_static_membership_applies_only_where_a_static_member_certainly_departs():
    assert says(facts(static=True, schedule=[("kill_member", {"slot": 0})]), "static_membership") == \
        (True, "step 1 (kill_member) stops or kills a static member")
    assert says(facts(schedule=[("kill_member", {"slot": 0})]), "static_membership") == \
        (False, "no step certainly stops or kills a static member (no member is static)")
    # slot 1 turns static at its bounce (the departing life was not), then slot 2, dynamic, is killed
    f = facts(schedule=[("bounce", {"slot": 1, "static": True}), ("kill_member", {"slot": 2})])
    assert says(f, "static_membership") == (False, "no step certainly stops or kills a static member")
    f = facts(schedule=[*f.schedule, ("bounce", {"slot": 1})])
    assert says(f, "static_membership")[0] is True and "step 3 (bounce)" in says(f, "static_membership")[1]
    assert says(facts(static=True, schedule=[("pause_member", {"slot": 0, "duration_s": 30})]),
                "static_membership")[0] is False  # a pause is no departure


def test_coordinator_survival_applies_with_a_coordinator_step():
    assert says(facts(schedule=[("restart_coordinator", {})]), "coordinator_survival")[0] is True
    assert says(facts(schedule=[("broker_bounce", {"broker": 1})]), "coordinator_survival") == \
        (False, "no step fails the coordinator over (kill_coordinator or restart_coordinator)")


@pytest.mark.parametrize("f, applies, why", [
    (facts(schedule=[("scale_out", {})]), True, "step 1 (scale_out) moves the group"),
    (facts(schedule=[("add_partitions", {"count": 8})]), True, "step 1 (add_partitions)"),
    (facts(protocol="classic-eager", schedule=[("scale_out", {})]), False, "classic-eager runs range"),
    (facts(schedule=[("network_latency", {}), ("pause_member", {"slot": 0, "duration_s": 1})]), False,
     "no step certainly changes"),
    (facts(schedule=[("scale_out", {}), ("bounce", {"slot": 0, "protocol": "classic-eager"})]), False,
     "step 2 (bounce) moves members to a non-sticky assignor"),
    (facts(client_settings={"partition.assignment.strategy": "range"}, schedule=[("scale_out", {})]), False,
     "partition.assignment.strategy is range"),
    (facts(team_slots="some", schedule=[("scale_out", {})]), False, "chooses its own assignor"),
    (facts(protocol="consumer", team_slots="all", schedule=[("scale_out", {})]), True, "step 1"),
    (facts(subscriptions=True, schedule=[("scale_out", {})]), False, "subscribe differently"),
    (facts(schedule=[("scale_in", {})], members=1), False, "no step certainly changes"),  # one member: it stays
])
def test_bounded_migrations_applies_to_sticky_assignors_moved_for_certain(f, applies, why):
    got = says(f, "bounded_migrations")
    assert got[0] is applies and why in got[1], got


@pytest.mark.parametrize("f, applies, why", [
    (facts(schedule=[("scale_out", {})]), True, "step 1 (scale_out) starts or stops a member, one cause"),
    (facts(schedule=[("scale_in", {"count": 2})], members=4), True,
     "step 1 (scale_in) starts or stops several members at once, changes of membership that go one way"),
    (facts(schedule=[("scale_out", {"count": 3}), ("wait_stable", {}), ("scale_in", {})]), True,
     "step 3 (scale_in)"),
    (facts(schedule=[("kill_member", {"slot": 1, "replace_after_s": 1.0}), ("wait_stable", {}), ("scale_in", {})]),
     True, "step 3 (scale_in)"),  # the kill with its replacement is two causes: the scale-in is the one judged
    # race-close-between-join-and-sync: the scale-out is not waited on (`wait_stable = false`), the scale-in comes
    # before the group settles: both changes fall between the same two stable assignments, no one-way change
    (facts(schedule=[("hold_request", {"api": "SyncGroup", "slot": 0}), ("scale_out", {}),
                     ("wait_request_fault", {}), ("scale_in", {"pick": "oldest"}), ("wait_stable", {})]), False,
     "no step certainly only starts or only stops members"),
    (facts(schedule=[("scale_out", {}), ("wait_stable", {}), ("scale_in", {"pick": "oldest"}), ("wait_stable", {})]),
     True, "step 1 (scale_out) starts or stops a member, one cause"),  # its twin, settled in between
    (facts(schedule=[("kill_member", {"slot": 1, "replace_after_s": 1.0})]), False,
     "no step certainly only starts or only stops members"),
    (facts(protocol="classic-eager", schedule=[("scale_out", {})]), False, "classic-eager runs range"),
    (facts(protocol="consumer", client_settings={"group.remote.assignor": "range"}, schedule=[("scale_out", {})]),
     False, "the members' group.remote.assignor is range"),
    (facts(protocol="consumer", client_settings={"group.remote.assignor": "uniform"}, schedule=[("scale_out", {})]),
     True, "step 1"),
    (facts(protocol="consumer", broker_settings={"group.consumer.assignors": "range,uniform"},
           schedule=[("scale_out", {})]), False, "the brokers' group.consumer.assignors puts range first"),
    (facts(racks=("r1", "r2"), schedule=[("scale_out", {})]), False, "members are on racks (r1, r2)"),
    (facts(protocol="consumer", team_slots="some", schedule=[("scale_out", {})]), False,
     "need not record the assignor settings it runs"),
])
def test_strict_stickiness_applies_to_one_cause_under_a_sticky_assignor(f, applies, why):
    got = says(f, "strict_stickiness")
    assert got[0] is applies and why in got[1], got


def test_assignor_shape_applies_unless_a_team_program_runs_a_slot():
    assert says(facts(), "assignor_shape")[0] is True
    assert says(facts(team_slots="all"), "assignor_shape") == \
        (False, "a slot runs a program of the team's own, which need not record the assignor settings it runs")


def test_the_streams_rules():
    kill = [("kill_member", {"slot": 0, "replace_after_s": 1})]
    assert says(facts("streams", "classic", schedule=kill), "warmup_before_active")[0] is True
    assert says(facts("streams", "streams", schedule=kill), "warmup_before_active") == \
        (False, "the streams protocol's assignor has no warmup tasks")
    assert "step 1 moves instances to the streams protocol" in says(
        facts("streams", "classic", schedule=[("bounce", {"slot": 0, "protocol": "streams"})]), "warmup_before_active")[1]
    assert says(facts("streams", "classic", schedule=kill), "probing_convergence")[0] is True
    assert says(facts("streams", "classic"), "bounded_task_moves") == \
        (False, "no step certainly starts or stops an instance after the start")
    assert says(facts("streams", "classic", standby_replicas=1), "standby_placement")[0] is True
    assert says(facts("streams", "classic"), "standby_placement")[0] is False
    assert says(facts("streams", "classic"), "state_kept")[0] is True
    assert says(facts("streams", "classic", team_slots="all"), "state_kept")[0] is False


def test_the_connect_and_share_rules():
    kill = [("kill_member", {"slot": 0})]
    assert says(facts("connect", "sessioned", schedule=kill, units=6), "connect_scheduled_delay")[0] is True
    assert says(facts("connect", "sessioned", schedule=kill, units=2), "connect_scheduled_delay")[0] is False
    assert says(facts("connect", "eager", schedule=kill, units=6), "connect_scheduled_delay") == \
        (False, "the eager protocol has no scheduled delay")
    assert says(facts("connect", "sessioned", schedule=[("pause_member", {"slot": 0, "duration_s": 9})], units=6),
                "connect_scheduled_delay")[0] is False
    assert says(facts("connect", "sessioned", source_connectors=1), "connect_source_sequence")[0] is True
    assert says(facts("connect", "sessioned"), "connect_source_sequence")[0] is False
    assert says(facts("share", "share", dead_letter_topic="dlq"), "share_dead_letter")[0] is True
    assert says(facts("share", "share"), "share_dead_letter")[0] is False
    assert set(applicability(facts("share", "share"))) == {"share_dead_letter", "share_poison", "share_rebalance_cause"}
    poisoned = facts("share", "share", client_settings={"harness.share.crash.records": "0:60"})
    assert says(poisoned, "share_poison")[0] is True and says(facts("share", "share"), "share_poison")[0] is False


# -- what a skip becomes
def test_decide_holds_a_skip_to_the_plans_word():
    skip = verdict("static_membership", "skipped", "no static member departed")
    plan_yes = {"static_membership": {"applies": True, "why": "step 2 (kill_member) stops or kills a static member"}}
    plan_no = {"static_membership": {"applies": False, "why": "no member is static"}}
    v = decide(skip, plan_yes)
    assert v.status == "unknown" and v.message == ("the plan said step 2 (kill_member) stops or kills a static member; "
                                                   "nothing to judge: no static member departed")
    v = decide(skip, plan_no)
    assert v.status == "skipped" and v.message.startswith("does not apply: no member is static (the plan)")
    assert decide(skip, {}).status == "unknown"  # not in the table: it applies to every run of its kind
    v = decide(skip, None)
    assert v.status == "unknown" and "run_start has no `applies`" in v.message
    for status in ("valid", "invalid", "unknown"):
        assert decide(verdict("static_membership", status, "x"), plan_no).status == status


def _static_run(applies: dict | None):
    extra = {} if applies is None else {"applies": applies}
    return history(run_start(0.0, kind="consumer", settings={"topic": "t", "partitions": 4}, **extra),
                   *join("a", 0.1, [0, 1]), *join("b", 0.2, [2, 3]),
                   ev("processed", 5.0, "member", member="a", topic="t", partition=0, first_offset=0,
                      last_offset=0, count=1), run_end(20.0))


def test_judge_turns_a_skip_the_plan_did_not_allow_into_unknown():
    no = {"static_membership": {"applies": False, "why": "no member is static"},
          "coordinator_survival": {"applies": False, "why": "no coordinator step"},
          "bounded_migrations": {"applies": False, "why": "no step changes members"}}
    v = judge(_static_run(no))
    assert v["static_membership"].status == "skipped" and "no member is static (the plan)" in v["static_membership"].message
    assert list(v)[0] == "schedule_performed" and v["schedule_performed"].status == "valid"
    v = judge(_static_run(None))  # an older run: no `applies`
    assert v["static_membership"].status == "unknown" and v["coordinator_survival"].status == "unknown"
    assert status_of(x.status for x in v.values()) != "pass"
    yes = {**no, "static_membership": {"applies": True, "why": "step 1 (bounce) stops a static member"}}
    v = judge(_static_run(yes))
    assert v["static_membership"].status == "unknown"
    assert v["static_membership"].message.startswith("the plan said step 1 (bounce) stops a static member")


def test_status_of_a_valid_run_with_plan_skips_is_pass_and_of_skips_alone_is_not():
    assert status_of(["valid", "skipped", "skipped"]) == "pass"
    assert status_of(["skipped", "skipped"]) == "unknown"


# -- the random mix draws only steps that can happen
def test_the_random_mix_names_only_live_slots_and_scales_in_only_beside_another_member():
    from harness.plan.scenarios import MIX_MEMBERS, SCENARIOS, ScenarioContext, schedule
    ctx = ScenarioContext(session_timeout_s=6.0, brokers=3, racks=3)
    for seed in range(200):
        sched = schedule(SCENARIOS["random-mix"], seed=seed, ctx=ctx)
        assert sched == schedule(SCENARIOS["random-mix"], seed=seed, ctx=ctx)  # a seed gives one schedule
        slots = Slots(MIX_MEMBERS)
        for a in sched:
            if "slot" in a.params:
                assert a.params["slot"] in slots.live, (seed, a, slots.live)
            if a.kind == "scale_in":
                assert len(slots.live) >= 2, (seed, a)
            assert slots.step(a.kind, a.params).idle is None, (seed, a)


def test_the_random_mix_draws_no_group_config_for_brokers_without_them():
    from harness.plan.scenarios import SCENARIOS, ScenarioContext, schedule
    old = ScenarioContext(session_timeout_s=6.0, brokers=3, racks=3, kafka="3.9.2")
    assert not any(a.kind == "group_config" for seed in range(100)
                   for a in schedule(SCENARIOS["random-mix"], seed=seed, ctx=old))
    new = ScenarioContext(session_timeout_s=6.0, brokers=3, racks=3, kafka="4.2.1")
    assert any(a.kind == "group_config" for seed in range(100)
               for a in schedule(SCENARIOS["random-mix"], seed=seed, ctx=new))


def test_rebalance_cause_applies_but_on_the_fake_backend():
    assert says(facts(), "rebalance_cause")[0] is True
    assert says(facts(team_slots="all"), "rebalance_cause")[0] is True  # a team's program is told by its first join
    assert says(facts(backend="fake"), "rebalance_cause") == \
        (False, "the fake backend's cluster has no group coordinator whose lines could be read")
