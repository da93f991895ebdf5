"""The causes view (`harness.invariants.causes`): each kind of cause, derived once per history from the history alone,
with its members, partitions, window and the event it comes from."""
from histbuild import (broker_event, effective, ev, fault_end, fault_start, history, join, lost, member_exit,
                       member_start, run_end, run_start, settings)

from harness.invariants import CheckSettings, causes, timeline


def view(evs, **kw):
    h = history(evs)
    s = settings(**kw)
    return causes.build(timeline.build(h, s))


def kinds(cs, kind):
    return [c for c in cs.all if c.kind == kind]


def two():
    return [run_start(0.0), *join("a", 0.1, [0, 1], effective=effective()),
            *join("b", 0.2, [2, 3], effective=effective())]


def control(m, t, **kw):
    return ev("control", t, "member", member=m, seq=1, **kw)


def test_a_join_is_each_life_start_with_its_event():
    cs = view([*two(), run_end(30.0)])
    got = kinds(cs, "join")
    assert [(sorted(c.members), c.start, c.end) for c in got] == [(["a"], 0.1, 0.1), (["b"], 0.2, 0.2)]
    assert got[0].event["type"] == "member_start"


def test_a_graceful_stop_is_a_leave_from_its_shutdown_start_to_its_exit():
    evs = [*two(), ev("member_stop", 10.0, "harness", member="b"), member_exit("b", 11.0), run_end(30.0)]
    (c,) = kinds(view(evs), "leave")
    assert c.members == {"b"} and (c.start, c.end) == (10.0, 11.0) and c.event["type"] == "member_exit"
    assert not kinds(view(evs), "expire")  # a dynamic member's leave leaves no session to expire


def test_a_kill_is_killed_then_an_expiry_over_its_session_timeout():
    evs = [*two(), member_exit("b", 10.0, how="kill"), run_end(30.0)]
    cs = view(evs)
    (k,) = kinds(cs, "killed")
    (x,) = kinds(cs, "expire")
    assert k.detail == "kill" and k.start == 10.0
    assert x.members == {"b"} and (x.start, x.end) == (10.0, 16.0) and not x.unknown  # session.timeout.ms 6000


def test_an_expiry_whose_session_timeout_is_unrecorded_says_so_and_lasts_past_the_end():
    evs = [run_start(0.0), member_start("a", 0.1), ev("started", 0.2, "member", member="a", protocol="classic"),
           member_exit("a", 5.0, how="crash"), run_end(30.0)]
    tl = timeline.build(history(evs), CheckSettings.from_dict({"topic": "t", "partitions": 4}))
    (x,) = kinds(causes.build(tl), "expire")
    assert x.end == float("inf") and "a's session timeout is unknown" in x.unknown


def test_a_lost_naming_partitions_is_fenced_with_them():
    evs = [*two(), lost("a", 12.0, [0, 1]), lost("b", 13.0, []), run_end(30.0)]
    (c,) = kinds(view(evs), "fenced")
    assert c.members == {"a"} and c.partitions == {0, 1} and c.start == 12.0


def test_a_stall_lasts_until_the_member_polls_again_or_its_life_ends():
    evs = [*two(), control("a", 5.0, stall=True), control("a", 8.0, stall=False), control("b", 9.0, stall=True),
           member_exit("b", 12.0), run_end(30.0)]
    got = sorted((sorted(c.members), c.start, c.end) for c in kinds(view(evs), "stalled"))
    assert got == [(["a"], 5.0, 8.0), (["b"], 9.0, 12.0)]


def test_a_fault_reaches_its_members_and_a_network_fault_those_started_inside_it():
    evs = [*two(), fault_start(5.0, "f1", members=["a"]), fault_end(7.0, "f1"),
           {**fault_start(10.0, "f2", members=["a", "b"], kind="network_latency"), "targets": [1]},
           *join("c", 11.0, effective=effective()), fault_end(14.0, "f2"), *join("d", 15.0, effective=effective()),
           run_end(30.0)]
    got = [(c.detail, sorted(c.members), c.start, c.end) for c in kinds(view(evs), "faulted")]
    assert got == [("pause", ["a"], 5.0, 7.0), ("network_latency", ["a", "b", "c"], 10.0, 14.0)]


def test_a_request_fault_is_its_window_on_the_member_whose_request_it_was():
    evs = [*two(), {**fault_start(9.5, "kp1", members=["a"], kind="hold_request"), "api": "OffsetCommit"},
           fault_end(13.0, "kp1"), run_end(30.0)]
    cs = view(evs)
    (c,) = kinds(cs, "request")
    assert c.members == {"a"} and (c.start, c.end) == (9.5, 13.0) and c.detail == "OffsetCommit"
    assert cs.touching("a", 12.0, 20.0) == [c] and cs.touching("b", 0.0, 20.0) == []
    assert cs.touching("a", 13.0, 20.0) == []  # the window is over by then


def test_a_subscription_control_counts_from_the_asking_and_an_unsubscribe_is_a_leave():
    evs = [*two(), fault_start(10.0, "s1", kind="subscription_change"), control("a", 10.4, subscription=["t"]),
           fault_end(10.5, "s1"), control("b", 20.0, subscription=["t"], subscribe_by="unsubscribe-subscribe"),
           run_end(30.0)]
    evs[-5] = {**evs[-5], "targets": ["a"], "members_affected": []}
    cs = view(evs)
    subs = [(sorted(c.members), c.start, c.end) for c in kinds(cs, "subscription")]
    assert subs == [(["a"], 10.0, 10.4), ([], 10.0, 10.5), (["b"], 20.0, 20.0)]  # the step's bracket lists no one
    assert [(sorted(c.members), c.detail) for c in kinds(cs, "leave")] == [(["b"], "unsubscribe")]


def test_added_partitions_name_the_new_partitions_from_the_actions_start():
    evs = [*two(), ev("action_start", 10.0, "harness", action_id="g1", kind="add_partitions", params={}),
           ev("action_end", 11.0, "harness", action_id="g1", kind="add_partitions", ok=True, error=None, topic="t",
              before=4, count=6), run_end(30.0)]
    (c,) = kinds(view(evs, partitions=6), "partitions")
    assert (c.start, c.end) == (10.0, 11.0) and c.partitions == {4, 5} and c.detail == "t"


def test_a_changed_setting_at_a_restart_names_its_keys_and_an_assignor_key_is_an_assignor_cause():
    longer = effective(session_ms=60000)
    ranged = {**effective(), "partition.assignment.strategy": "range"}
    evs = [*two(), member_exit("a", 10.0), *join("a", 11.0, effective=longer), member_exit("b", 12.0),
           *join("b", 13.0, effective=ranged), run_end(30.0)]
    cs = view(evs)
    assert [(sorted(c.members), c.detail) for c in kinds(cs, "setting")] == [(["a"], "session.timeout.ms")]
    assert [(sorted(c.members), c.detail) for c in kinds(cs, "assignor")] == [
        (["b"], "partition.assignment.strategy")]


def test_a_group_config_step_is_a_setting_that_lists_no_member():
    evs = [*two(), {**fault_start(10.0, "g1", kind="group_config"), "targets": ["g"]}, fault_end(10.2, "g1"),
           run_end(30.0)]
    cs = view(evs)
    (c,) = kinds(cs, "setting")
    assert not c.members and not c.listed and (c.start, c.end) == (10.0, 10.2)
    assert cs.unlisted_faults(10.1, 10.1) == [c]


def test_a_broker_event_and_a_broker_fault_are_broker_causes():
    evs = [*two(), broker_event(5.0, 1, "kill"), fault_start(8.0, "b1", kind="broker_kill", brokers=[1]),
           fault_end(9.0, "b1"), run_end(30.0)]
    got = [(c.start, c.end, c.listed) for c in kinds(view(evs), "broker")]
    assert got == [(5.0, 5.0, True), (8.0, 9.0, False)]


def test_the_view_is_built_once_per_history_and_answers_windows():
    h = history([*two(), member_exit("b", 10.0, how="kill"), *join("c", 12.0), run_end(30.0)])
    tl = timeline.build(h, settings())
    cs = causes.build(tl)
    assert causes.build(tl) is cs
    assert [c.kind for c in cs.started_within(0.2, 20.0)] == ["killed", "expire", "join"]
    assert [c.kind for c in cs.within(15.0, 15.0)] == ["expire"]
    assert cs.of("join")[-1].show(tl.start) == "join on c at 12.0s"


def test_an_assignor_change_in_force_is_a_cause_with_its_roll_as_event():
    ranged = {**effective(), "partition.assignment.strategy": "range"}
    evs = [run_start(0.0), *join("a", 0.1, [0, 1, 2, 3], effective=effective()), member_exit("a", 10.0),
           *join("a", 11.0, [0, 1, 2, 3], effective=ranged), run_end(30.0)]
    h = history(evs)
    tl = timeline.build(h, settings())
    c = causes.build(tl).assignor_change({"a"}, 5.0, {"a"}, 20.0)
    assert c is not None and c.kind == "assignor" and "cooperative-sticky" in c.detail and "range" in c.detail
    assert c.event["type"] == "started" and c.event["mono"] == 11.1
    assert causes.build(tl).assignor_change({"a"}, 1.0, {"a"}, 5.0) is None
