"""`schedule_performed` (harness/invariants/performed.py) on small hand-made histories: each step kind's effect
present must pass; each piece of that effect taken away, or the step's end saying it did nothing, must be
unknown with the step named."""
from __future__ import annotations

import pytest

from harness.record.history import History
from harness.invariants import performed
from histbuild import (broker_event, ev, fault_end, fault_start, group_settings, member_exit, processed,
                                  member_start, run_end, run_start)

S, E = 10.0, 20.0  # the step's start and end


def step(kind: str, params: dict | None = None, ok: bool = True, **result) -> list[dict]:
    return [ev("action_start", S, "harness", action_id="a1", kind=kind, params=params or {}),
            ev("action_end", E, "harness", action_id="a1", kind=kind, params=params or {}, ok=ok, error=None, **result)]


def stop(m: str, t: float) -> dict:
    return ev("member_stop", t, "harness", member=m)


def control(m: str, t: float, **change) -> dict:
    return ev("control", t, "member", member=m, seq=1, **change)


def proxy(t: float, rule: str, n: int, kind: str = "error_response") -> dict:
    answer = {"error": "NOT_COORDINATOR", "error_code": 16} if kind == "error_response" else {}
    return ev("fault_start", t, "harness", fault_id=f"kp{n}", kind=kind, targets=["m1"],
              members_affected=["m1"], brokers_affected=[1], member="m1", api="Heartbeat", api_version=4,
              correlation_id=n, client_id="m1", broker=1, rule=rule, **answer)


def restart(b: int, t: float, down: str = "terminate") -> list[dict]:
    return [broker_event(t, b, down), broker_event(t + 1, b, "start")]


#: (name, kind, params, result, evidence events): each case's whole effect
CASES = [
    ("sleep", "sleep", {"s": 1.0}, {}, []),
    ("wait_stable", "wait_stable", {}, {"stable": True}, []),
    ("scale_out", "scale_out", {}, {"member": "m4"}, [member_start("m4", 11)]),
    ("scale_out two", "scale_out", {"count": 2}, {"members": ["m4", "m5"]}, [member_start("m4", 11),
                                                                             member_start("m5", 11.5)]),
    ("scale_in", "scale_in", {"pick": "newest"}, {"member": "m3"}, [stop("m3", 11)]),
    ("kill_member", "kill_member", {"slot": 0}, {"member": "m1"}, [member_exit("m1", 11, "kill")]),
    ("kill and replace", "kill_member", {"slot": 0, "replace_after_s": 1.0}, {"member": "m1", "replacement": "m4"},
     [member_exit("m1", 11, "kill"), member_start("m4", 12)]),
    ("replace_member", "replace_member", {"slot": 0}, {"replacement": "m4"}, [member_start("m4", 12)]),
    ("bounce", "bounce", {"slot": 1}, {"stopped": "m2", "started": "m4"}, [stop("m2", 11), member_start("m4", 12)]),
    ("settings_roll", "settings_roll", {"static": True}, {"restarted": [{"stopped": "m1", "started": "m4"}]},
     [stop("m1", 11), member_start("m4", 12)]),
    ("restart_all", "restart_all", {}, {"stopped": ["m1"], "started": ["m4"]},
     [fault_start(10.5, "f1", [], "restart_all"), stop("m1", 11), member_start("m4", 12), fault_end(13, "f1")]),
    ("leave_during_join", "leave_during_join", {"slot": 0}, {"joined": "m4", "left": "m1"},
     [fault_start(10.5, "f1", [], "leave_during_join"), member_start("m4", 11), stop("m1", 11.5), fault_end(12, "f1")]),
    ("pause_member", "pause_member", {"slot": 0, "duration_s": 2}, {"member": "m1"},
     [fault_start(11, "f1", ["m1"], "pause"), fault_end(13, "f1")]),
    ("poll_stall", "poll_stall", {"slot": 0, "duration_s": 2}, {"member": "m1"},
     [fault_start(11, "f1", ["m1"], "poll_stall"), control("m1", 11.1, stall=True), control("m1", 13.15, stall=False),
      fault_end(13.2, "f1")]),
    ("change_subscription", "change_subscription", {"slot": 0, "subscription": []}, {"member": "m1", "subscription": ["t"]},
     [fault_start(11, "f1", [], "subscription_change"), control("m1", 11.1, subscription=["t"]), fault_end(12, "f1")]),
    ("change_subscription by unsubscribe", "change_subscription",
     {"slot": 0, "subscription": ["u"], "subscribe_by": "unsubscribe-subscribe"},
     {"member": "m1", "subscription": ["u"], "subscribe_by": "unsubscribe-subscribe"},
     [fault_start(11, "f1", [], "subscription_change"),
      control("m1", 11.1, subscription=["u"], subscribe_by="unsubscribe-subscribe"), fault_end(12, "f1")]),
    ("add_partitions", "add_partitions", {"count": 8}, {"topic": "t", "before": 6, "count": 8},
     [fault_start(11, "f1", [], "add_partitions"), fault_end(12, "f1")]),
    ("group_config", "group_config", {"settings": {"consumer.session.timeout.ms": 10000}},
     {"settings": {"consumer.session.timeout.ms": "10000"}},
     [fault_start(11, "f1", [], "group_config"), group_settings(11.5, {"consumer.session.timeout.ms": "10000"}),
      fault_end(12, "f1")]),
    ("autoscale", "autoscale", {"duration_s": 5, "scale_out_lag": 10, "scale_in_lag": 1},
     {"samples": [[0.0, 50, 3]], "decisions": [{"scale": "out", "member": "m4"}], "rates": []},
     [fault_start(11, "f1", [], "autoscale"), member_start("m4", 12), fault_end(15, "f1")]),
    ("network_latency", "network_latency", {"latency_ms": 50, "jitter_ms": 0, "duration_s": 2}, {},
     [fault_start(11, "f1", ["m1"], "network_latency"), fault_end(13, "f1")]),
    ("network_blackhole", "network_blackhole", {"broker": 2, "duration_s": 2}, {},
     [fault_start(11, "f1", ["m1"], "network_blackhole", [2]), fault_end(13, "f1")]),
    ("broker_partition", "broker_partition", {}, {"broker": 2},
     [fault_start(11, "f1", [], "broker_partition", [2]), fault_end(13, "f1")]),
    ("broker_bounce", "broker_bounce", {"broker": 2}, {"broker": 2},
     [fault_start(11, "f1", [], "broker_bounce", [2]), *restart(2, 11.5), fault_end(14, "f1")]),
    ("kill_coordinator", "kill_coordinator", {"down_s": 1}, {"broker": 3},
     [fault_start(11, "f1", [], "broker_kill", [3]), *restart(3, 11.5, "kill"), fault_end(14, "f1")]),
    ("restart_coordinator", "restart_coordinator", {}, {"broker": 1},
     [fault_start(11, "f1", [], "coordinator_restart", [1]), *restart(1, 11.5), fault_end(14, "f1")]),
    ("broker_rolling_restart", "broker_rolling_restart", {}, {},
     [fault_start(11, "f1", [], "broker_rolling_restart", [1, 2]), *restart(1, 11.5), *restart(2, 13),
      fault_end(15, "f1")]),
    ("rack_outage", "rack_outage", {"rack": "r0", "down_s": 2}, {"brokers": [1], "members": 1},
     [fault_start(11, "f1", ["m1"], "rack_outage", [1]), member_exit("m1", 11.2, "kill"), *restart(1, 11.5, "kill"),
      fault_end(14, "f1")]),
    ("move_leaders", "move_leaders", {"broker": 1}, {"broker": 1, "topic": "t", "moved": {"0": [1, 2]}},
     [fault_start(11, "f1", [], "leader_move", [1]), fault_end(12, "f1")]),
    ("restart_partition_leader", "restart_partition_leader", {}, {"broker": 2, "leader_before": 2},
     [fault_start(11, "f1", [], "leader_restart", [2]), *restart(2, 11.5), fault_end(14, "f1")]),
    ("error_response", "error_response", {"api": "Heartbeat", "error": "NOT_COORDINATOR", "count": 2},
     {"rule": "r1", "member": "m1", "count": 2}, [proxy(11, "r1", 1), proxy(12, "r1", 2)]),
    ("disconnect", "disconnect", {"api": "Heartbeat", "count": 2}, {"rule": "r1", "member": "m1", "count": 2},
     [proxy(11, "r1", 1, "disconnect"), proxy(12, "r1", 2, "disconnect")]),
    ("delay_request by time", "delay_request", {"api": "Heartbeat", "delay_s": 1, "duration_s": 3},
     {"rule": "r1", "member": "m1", "count": None}, [proxy(11, "r1", 1)]),
]


def planned(*steps: tuple) -> dict:
    """A run_start carrying the plan of the given (kind, params) steps, as the runner writes it."""
    return run_start(0.0, plan=[{"action_id": f"a{n}", "kind": k, "params": p} for n, (k, p) in enumerate(steps, 1)])


def _history(kind, params, result, evidence, drop=None) -> History:
    evs = [planned((kind, params or {})), *step(kind, params, **result),
           *[e for i, e in enumerate(evidence) if i != drop], run_end(30.0)]
    return History.from_events(evs)


@pytest.mark.parametrize("name, kind, params, result, evidence", CASES, ids=[c[0] for c in CASES])
def test_a_step_whose_effect_is_in_the_history_passes(name, kind, params, result, evidence):
    v = performed.check(_history(kind, params, result, evidence))
    assert v.status == "valid", v.message
    assert v.measurements == {"steps": 1, "performed": 1, "not_performed": []}


EVIDENCE = [(c[0], i) for c in CASES for i, _ in enumerate(c[4])]


@pytest.mark.parametrize("name, drop", EVIDENCE, ids=[f"{n}-without-{i}" for n, i in EVIDENCE])
def test_a_step_missing_any_part_of_its_effect_is_unknown(name, drop):
    _, kind, params, result, evidence = next(c for c in CASES if c[0] == name)
    v = performed.check(_history(kind, params, result, evidence, drop=drop))
    assert v.status == "unknown", (evidence[drop], v.message)
    assert f"step 1 (a1) {kind}" in v.message and "did not happen" in v.message
    assert v.measurements["not_performed"] == [1] and v.witnesses[0]["type"] == "action_start"


@pytest.mark.parametrize("name, kind, params, result", [
    ("a kill of an empty slot", "kill_member", {"slot": 2}, {"skipped": "slot 2 has no live member"}),
    ("a scale-in of the last member", "scale_in", {}, {"skipped": "one member left"}),
    ("a stall a member cannot take", "poll_stall", {"slot": 0, "duration_s": 3, "if_supported": True},
     {"skipped": "member m1 takes no stall control"}),
    ("group configs before 4.0", "group_config", {"settings": {"x": 1}, "if_supported": True},
     {"skipped": "Kafka 3.9.2 has no group configs"}),
    ("a leader move with nothing to move", "move_leaders", {"broker": 1},
     {"broker": 1, "topic": "t", "skipped": "broker 1 leads no partition of t with another replica in sync"}),
])
def test_a_step_the_runner_marked_skipped_is_unknown_with_its_reason(name, kind, params, result):
    evs = [run_start(0.0), *step(kind, params, ok=False, **result), run_end(30.0)]
    v = performed.check(History.from_events(evs))
    assert v.status == "unknown"
    assert f"step 1 (a1) {kind}" in v.message and result["skipped"] in v.message
    assert ("if_supported" in v.message) == bool(params.get("if_supported"))


def test_the_issues_stall_on_a_member_without_the_control_names_it():
    evs = [run_start(0.0), *step("poll_stall", {"slot": 0, "duration_s": 9.0, "if_supported": True}, ok=False,
                                 skipped="member m0 takes no stall control"), run_end(30.0)]
    v = performed.check(History.from_events(evs))
    assert v.status == "unknown"
    assert "step 1 (a1) poll_stall {'slot': 0, 'duration_s': 9.0, 'if_supported': True} did not happen: member m0 " \
           "takes no stall control (if_supported" in v.message


def test_a_request_fault_below_its_count_and_a_wait_that_was_not_reached_are_unknown():
    below = [run_start(0.0), *step("drop_request", {"api": "JoinGroup", "count": 3}, rule="r1", member="m1", count=3),
             proxy(11, "r1", 1), run_end(30.0)]
    v = performed.check(History.from_events(below))
    assert v.status == "unknown" and "rule r1 (m1) to 1 request, not 3 (its count)" in v.message
    never = [run_start(0.0), *step("error_response", {"api": "ConsumerGroupHeartbeat", "error": "NOT_COORDINATOR"},
                                   rule="r1", member="m1", count=1), proxy(11, "r2", 1), run_end(30.0)]
    assert "to 0 requests, not 1" in performed.check(History.from_events(never)).message
    wait = [run_start(0.0), *step("wait_request_fault", {"applied": 2}, rule="r1", applied=1, reached=False),
            run_end(30.0)]
    v = performed.check(History.from_events(wait))
    assert v.status == "unknown" and "applied to 1 requests, not the 2 it waited for" in v.message


def test_evidence_before_the_step_does_not_count():
    evs = [run_start(0.0), member_exit("m1", 5.0, "kill"), *step("kill_member", {"slot": 0}, member="m1"),
           run_end(30.0)]
    v = performed.check(History.from_events(evs))
    assert v.status == "unknown" and "no member_exit (kill) of m1" in v.message


def test_a_step_that_never_ended_and_the_count_of_several_steps():
    evs = [run_start(0.0), *step("sleep", {"s": 1}),
           ev("action_start", 21, "harness", action_id="a2", kind="scale_out", params={}),
           ev("action_start", 25, "harness", action_id="a3", kind="wait_stable", params={}),
           ev("action_end", 26, "harness", action_id="a3", kind="wait_stable", ok=True, error=None), run_end(30.0)]
    v = performed.check(History.from_events(evs))
    assert v.status == "unknown" and v.measurements == {"steps": 3, "performed": 2, "not_performed": [2]}
    assert "step 2 (a2) scale_out {} did not happen: it has no action_end" in v.message


def test_no_step_is_valid():
    v = performed.check(History.from_events([run_start(0.0), run_end(5.0)]))
    assert v.status == "valid" and v.measurements["steps"] == 0


@pytest.mark.parametrize("name, change, says", [
    ("add_partitions", {"before": 8, "count": 8}, "the partition count went from 8 to 8"),
    ("group_config", {"settings": {"consumer.session.timeout.ms": "20000"}},
     "the group's consumer.session.timeout.ms reads '10000', not '20000'"),
    ("autoscale", {"samples": []}, "the autoscaler took no lag sample"),
    ("move_leaders", {"moved": {}}, "no leader moved off broker 1"),
    ("settings_roll", {"restarted": []}, "no member was restarted"),
    ("restart_all", {"stopped": [], "started": []}, "no member stopped"),
    ("scale_out", {"member": None}, "no member"),
])
def test_a_result_that_says_nothing_changed_is_unknown(name, change, says):
    _, kind, params, result, evidence = next(c for c in CASES if c[0] == name)
    v = performed.check(_history(kind, params, {**result, **change}, evidence))
    assert v.status == "unknown" and says in v.message, v.message


def test_a_subscription_change_the_member_made_another_way_than_asked_is_unknown():
    """Asked to unsubscribe first, the member's control event says it subscribed once (or says nothing of the way, as
    a program that does not know the field: the default)."""
    params = {"slot": 0, "subscription": ["u"], "subscribe_by": "unsubscribe-subscribe"}
    for said in ({"subscribe_by": "subscribe"}, {}):
        evs = [run_start(0.0), *step("change_subscription", params, member="m1", subscription=["u"]),
               fault_start(11, "f1", [], "subscription_change"), control("m1", 11.1, subscription=["u"], **said),
               fault_end(12, "f1"), run_end(30.0)]
        v = performed.check(History.from_events(evs))
        assert v.status == "unknown", v.message
        assert "m1's control event applied the subscription by subscribe, not by unsubscribe-subscribe" in v.message


# -- the plan in run_start: each planned step, in order, before run_end

SLEEP = ("sleep", {"s": 1.0})


def steps(*spans: tuple) -> list[dict]:
    """Sleep steps a1, a2, ... each from its (start, end)."""
    out = []
    for n, (s, e) in enumerate(spans, 1):
        out += [ev("action_start", s, "harness", action_id=f"a{n}", kind="sleep", params={"s": 1.0}),
                ev("action_end", e, "harness", action_id=f"a{n}", kind="sleep", ok=True, error=None)]
    return out


def judged(*evs: dict):
    return performed.check(History.from_events(list(evs)))


def test_every_planned_step_in_order_before_run_end_passes():
    v = judged(planned(SLEEP, SLEEP, SLEEP), *steps((1, 2), (2, 3), (3, 4)), run_end(10.0))
    assert v.status == "valid" and v.measurements == {"steps": 3, "performed": 3, "not_performed": []}, v.message
    assert "in order before run_end" in v.message and "carries no plan" not in v.message


def test_a_planned_step_with_no_line_is_unknown_and_named():
    v = judged(planned(SLEEP, SLEEP, SLEEP), *steps((1, 2)), run_end(10.0))
    assert v.status == "unknown" and v.measurements["not_performed"] == [2, 3], v.message
    assert "step 2 (a2) sleep {'s': 1.0} did not happen: the history has no line of it" in v.message
    assert "step 3 (a3) sleep" in v.message


def test_an_empty_plan_with_a_step_in_the_history_is_an_extra_step():
    v = judged(planned(), *steps((1, 2)), run_end(10.0))
    assert v.status == "unknown" and "an extra step a1 sleep {'s': 1.0} that the plan does not hold" in v.message
    assert judged(planned(), run_end(10.0)).status == "valid"


def test_a_step_of_another_kind_or_parameters_than_planned_is_unknown():
    v = judged(planned(("sleep", {"s": 5.0})), *steps((1, 2)), run_end(10.0))
    assert v.status == "unknown" and "its action_start is sleep {'s': 1.0}, not the planned step" in v.message


@pytest.mark.parametrize("late, says", [
    (((1, 2), (11, 12)), "step 2 (a2) sleep {'s': 1.0} did not happen: it began after run_end (late)"),
    (((1, 2), (3, 12)), "step 2 (a2) sleep {'s': 1.0} did not happen: it ended after run_end (late)"),
])
def test_a_step_after_run_end_is_late(late, says):
    v = judged(planned(SLEEP, SLEEP), *steps(*late), run_end(10.0))
    assert v.status == "unknown" and says in v.message, v.message


def test_an_effect_only_after_run_end_is_late():
    evs = [planned(("kill_member", {"slot": 0})), *step("kill_member", {"slot": 0}, member="m1"), run_end(25.0),
           member_exit("m1", 26.0, "kill")]
    v = judged(*evs)
    assert v.status == "unknown" and "its effect came after run_end (late)" in v.message, v.message
    assert "no member_exit (kill) of m1" in v.message


def test_a_step_begun_before_the_one_before_it_ended_is_out_of_order():
    v = judged(planned(SLEEP, SLEEP), *steps((1, 5), (3, 4)), run_end(10.0))
    assert v.status == "unknown" and "step 2 (a2)" in v.message and "out of order" in v.message, v.message


def test_a_history_without_run_end_is_unknown():
    v = judged(planned(SLEEP), *steps((1, 2)))
    assert v.status == "unknown" and "the history has no run_end" in v.message, v.message
    assert judged(run_start(0.0)).status == "unknown"  # no plan, no step, no end: nothing says the run finished


def test_an_action_end_must_say_ok_true():
    no_ok = [e if e["type"] != "action_end" else {k: v for k, v in e.items() if k != "ok"} for e in steps((1, 2))]
    v = judged(planned(SLEEP), *no_ok, run_end(10.0))
    assert v.status == "unknown" and "its action_end has no `ok`" in v.message, v.message
    not_bool = [e if e["type"] != "action_end" else {**e, "ok": "yes"} for e in steps((1, 2))]
    assert judged(planned(SLEEP), *not_bool, run_end(10.0)).status == "unknown"


def test_a_step_started_twice_is_unknown():
    twice = [*steps((1, 2)), ev("action_start", 3, "harness", action_id="a1", kind="sleep", params={"s": 1.0})]
    v = judged(planned(SLEEP), *twice, run_end(10.0))
    assert v.status == "unknown" and "step a1 has 2 action_start events" in v.message, v.message


def test_a_plan_that_is_not_a_list_of_steps_is_unknown():
    v = judged(run_start(0.0, plan="sleep"), *steps((1, 2)), run_end(10.0))
    assert v.status == "unknown" and "run_start's plan is not a list of steps" in v.message, v.message


def test_an_older_history_without_the_plan_is_judged_on_its_steps_numbered_without_a_gap():
    """Recorded before run_start carried the plan: judged on the action_start events, and said so; a number missing
    between them is a step whose lines were deleted."""
    v = judged(run_start(0.0), *steps((1, 2), (2, 3)), run_end(10.0))
    assert v.status == "valid" and "carries no plan" in v.message and "a1 to a2 with no gap" in v.message, v.message
    gap = [e for e in steps((1, 2), (2, 3), (3, 4)) if e["action_id"] != "a2"]
    v = judged(run_start(0.0), *gap, run_end(10.0))
    assert v.status == "unknown" and "step 2 (a2)" in v.message and "no line of it" in v.message, v.message
    assert judged(run_start(0.0), run_end(5.0)).status == "valid"  # no plan and no step: nothing was asked


# -- a poll stall proven by the member's processing gap

STALL = {"slot": 0, "duration_s": 2}


def stall_run(*member_events: dict, on: float = 11.1, off: float | None = 13.15) -> History:
    evs = [planned(("poll_stall", STALL)), *step("poll_stall", STALL, member="m1"),
           fault_start(11, "f1", ["m1"], "poll_stall"), control("m1", on, stall=True),
           *([control("m1", off, stall=False)] if off is not None else []), fault_end(13.2, "f1"),
           processed("m1", 9.0, 0, 0, 9), processed("m1", 14.0, 0, 10, 19), *member_events, run_end(30.0)]
    return History.from_events(evs)


def test_a_stall_with_the_members_processing_gap_passes():
    v = performed.check(stall_run(processed("m2", 12.0, 1, 0, 9)))  # another member goes on: not m1's gap
    assert v.status == "valid", v.message


def test_a_member_that_says_stalled_and_goes_on_processing_is_unknown():
    batches = [processed("m1", 11.2 + 0.1 * i, 0, 20 + 10 * i, 29 + 10 * i) for i in range(11)]
    v = performed.check(stall_run(*batches))
    assert v.status == "unknown", v.message
    assert "step 1 (a1) poll_stall" in v.message and "m1 processed 11 batches inside its stall" in v.message
    one = performed.check(stall_run(processed("m1", 13.1, 0, 20, 29)))
    assert one.status == "unknown" and "m1 processed 1 batch inside" in one.message, one.message


def test_a_stall_shorter_than_its_duration_is_unknown():
    v = performed.check(stall_run(on=11.1, off=12.0))
    assert v.status == "unknown" and "m1's stall lasted 0.900 s" in v.message and "duration_s 2" in v.message


def test_a_stall_ended_by_the_members_exit_needs_no_resume():
    v = performed.check(stall_run(member_exit("m1", 12.0, "crash"), off=None))
    assert v.status == "valid", v.message
    v = performed.check(stall_run(off=None))
    assert v.status == "unknown" and "no control event of m1 resuming" in v.message, v.message


def test_an_older_history_judges_a_step_otherwise_named_on_its_own():
    other = [ev("action_start", 5, "harness", action_id="x1", kind="sleep", params={}),
             ev("action_end", 6, "harness", action_id="x1", kind="sleep", ok=True, error=None)]
    v = judged(run_start(0.0), *steps((1, 2)), *other, run_end(10.0))
    assert v.status == "valid" and v.measurements["steps"] == 2, v.message
    v = judged(run_start(0.0), *other[:1], run_end(10.0))
    assert v.status == "unknown" and "step 1 (x1) sleep {} did not happen: it has no action_end" in v.message


def test_a_broker_that_died_on_its_own_makes_the_run_unknown_with_kafkas_reason():
    died = {**broker_event(5.0, 2, "died"), "code": 1, "pid": 4242,
            "reason": "[2026-12-07 19:01:02,345] ERROR Exiting Kafka due to fatal exception (kafka.Kafka$)"}
    v = judged(planned(SLEEP), *steps((1, 2)), died, run_end(10.0))
    assert v.status == "unknown", v.message
    assert "broker 2 died on its own at 5.0 s (exit code 1): [2026-12-07 19:01:02,345] ERROR Exiting Kafka" in v.message
    assert "no step stopped it" in v.message and v.witnesses[-1]["type"] == "broker_event"
    signalled = {**died, "code": -9, "reason": ""}
    v = judged(planned(SLEEP), *steps((1, 2)), signalled, run_end(10.0))
    assert "broker 2 died on its own at 5.0 s (killed by signal 9): its log names no error" in v.message, v.message
    # the same run, its broker stopped by a step (kill, terminate) or never stopped: no such word
    for what in ("kill", "terminate"):
        assert "died" not in judged(planned(SLEEP), *steps((1, 2)), broker_event(5.0, 2, what), run_end(10.0)).message
    assert judged(planned(SLEEP), *steps((1, 2)), run_end(10.0)).status == "valid"
