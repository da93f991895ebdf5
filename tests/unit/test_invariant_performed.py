"""`schedule_performed` (harness/invariants/performed.py) on small hand-made histories: each step kind's effect
present must pass; each piece of that effect taken away, or the step's end saying it did nothing, must be
unknown with the step named."""
from __future__ import annotations

import pytest

from harness.record.history import History
from harness.invariants import performed
from histbuild import (broker_event, ev, fault_end, fault_start, group_settings, member_exit,
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
     [fault_start(11, "f1", ["m1"], "poll_stall"), control("m1", 11.1, stall=True), fault_end(13, "f1")]),
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


def _history(kind, params, result, evidence, drop=None) -> History:
    evs = [run_start(0.0), *step(kind, params, **result), *[e for i, e in enumerate(evidence) if i != drop],
           run_end(30.0)]
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
