"""share_subscribed_only: a share member is handed records of the topics its recorded subscription names, never of a
topic it dropped once its `control` event said the change returned. Histories that must pass and ones that must fail;
the plan's and the members' side of a share group's subscriptions.

Members m1 and m2 start at 1.0 on topics o and p (their `started` events say so); m1 drops p at 10.0.
"""
import json
from types import SimpleNamespace

import pytest
from histbuild import drained, ev, group_settings, history, member_exit, member_start, run_end, run_start
from test_invariant_share import EXPLICIT, GROUP, S

from harness.base.errors import BadInput
from harness.invariants.share import SHARE_CHECKERS, ShareCheckSettings, check_share
from harness.base.steps import Step
from harness.base.steps import kind_refusal as kind_refusal_of_step
from harness.plan.kinds.share import check_subscriptions
from harness.plan.scenario_file import parse
from harness.plan.scenario_format import kind_refusal

NAME = "share_subscribed_only"


def started(m, t, subscription=("o", "p")):
    fields = {} if subscription is None else {"subscription": list(subscription)}
    return ev("started", t, "member", member=m, protocol="share", effective=EXPLICIT, **fields)


def control(m, t, subscription, seq=1):
    return ev("control", t, "member", member=m, seq=seq, subscription=list(subscription), subscribe_by="subscribe")


def acq(m, t, topic, off, p=0):
    return ev("share_acquired", t, "member", member=m, topic=topic, partition=p, offset=off, delivery_count=1)


def frame(*, subscription=("o", "p"), members=("m1", "m2")):
    return [run_start(0.0, kind="share", share_settings={"topics": ["o", "p"]}), group_settings(0.5, group=GROUP),
            *[member_start(m, 1.0) for m in members], *[started(m, 1.05, subscription) for m in members],
            drained(55.0), run_end(60.0)]


def judge(*items, subscription=("o", "p")):
    return check_share(history(frame(subscription=subscription), *items), S, [NAME])[NAME]


def test_it_is_one_of_the_share_checkers():
    assert NAME in SHARE_CHECKERS


def test_records_of_both_topics_then_of_the_kept_one_after_the_drop_hold():
    v = judge(acq("m1", 2.0, "o", 0), acq("m1", 3.0, "p", 0), acq("m2", 4.0, "p", 1),
              control("m1", 10.0, ["o"]), acq("m1", 11.0, "o", 1), acq("m2", 12.0, "p", 2))
    assert v.status == "valid", v.message
    assert v.measurements == {"judged": 5, "after_change": 1, "changes": 1, "unjudged": 0, "in_grace": 0,
                              "longest_in_grace_s": 0.0}
    assert "1 after 1 subscription change" in v.message


def test_a_record_of_the_dropped_topic_after_the_change_returned_fails():
    v = judge(acq("m1", 3.0, "p", 0), control("m1", 10.0, ["o"]), acq("m1", 11.0, "o", 1), acq("m1", 12.5, "p", 4))
    assert v.status == "invalid"
    assert "1 of 3 deliveries" in v.message and "m1 was handed p-0@4 at 12.5s" in v.message
    assert "its subscription ['o'] since its control event at 10.0s" in v.message
    hit, setter = v.witnesses
    assert (hit["type"], hit["topic"], hit["offset"]) == ("share_acquired", "p", 4)
    assert setter["type"] == "control" and setter["subscription"] == ["o"]


def test_a_dropped_topics_records_within_a_heartbeat_interval_and_the_clock_slack_hold_past_it_fail():
    # the group's share.heartbeat.interval.ms is 500 (test_invariant_share.GROUP), the clock slack 1 s: 1.5 s
    v = judge(control("m1", 10.0, ["o"]), acq("m1", 10.37, "p", 6), acq("m1", 11.45, "p", 7))
    assert v.status == "valid", v.message
    assert v.measurements["in_grace"] == 2 and v.measurements["longest_in_grace_s"] == 1.45
    assert "allowed for 1.5s after the change" in v.message and "share.heartbeat.interval.ms" in v.message
    v = judge(control("m1", 10.0, ["o"]), acq("m1", 10.37, "p", 6), acq("m1", 11.6, "p", 7))
    assert v.status == "invalid" and v.witnesses[0]["offset"] == 7 and "1 of 2 deliveries" in v.message


def test_a_dropped_topics_record_with_no_heartbeat_interval_read_is_unknown():
    group = {k: v for k, v in GROUP.items() if k != "share.heartbeat.interval.ms"}
    h = history(run_start(0.0, kind="share", share_settings={"topics": ["o", "p"]}), group_settings(0.5, group=group),
                member_start("m1", 1.0), started("m1", 1.05), control("m1", 10.0, ["o"]), acq("m1", 10.2, "p", 6),
                run_end(60.0))
    v = check_share(h, S, [NAME])[NAME]
    assert v.status == "unknown" and "heartbeat interval unknown" in v.message


def test_a_topic_added_to_the_subscription_has_no_grace_the_one_never_named_fails():
    v = judge(control("m1", 10.0, ["o"]), acq("m1", 10.2, "q", 0))
    assert v.status == "invalid"


def test_a_record_of_a_topic_never_subscribed_fails_from_the_start():
    v = judge(acq("m2", 2.0, "q", 0), subscription=("o",))
    assert v.status == "invalid" and v.witnesses[1]["type"] == "started"


def test_a_restart_takes_the_subscription_its_started_event_says():
    v = judge(control("m1", 10.0, ["o"]), member_exit("m1", 20.0), member_start("m1", 21.0),
              started("m1", 21.05, ["o", "p"]), acq("m1", 22.0, "p", 3))
    assert v.status == "valid", v.message


def test_a_member_that_records_no_subscription_is_on_every_topic_of_the_run():
    h = history(frame(subscription=None), acq("m1", 2.0, "o", 0), acq("m2", 2.5, "p", 0))
    v = check_share(h, ShareCheckSettings(topics=("o", "p")), [NAME])[NAME]
    assert v.status == "valid" and v.measurements["judged"] == 2, v.message
    h = history(frame(subscription=None), acq("m1", 2.0, "q", 0))
    assert check_share(h, ShareCheckSettings(topics=("o", "p")), [NAME])[NAME].status == "invalid"


def test_with_neither_its_subscription_nor_the_runs_topics_known_it_is_unknown_never_valid():
    v = judge(acq("m1", 2.0, "o", 0), subscription=None)  # S: no topics recorded
    assert v.status == "unknown" and "no member's subscription is known" in v.message
    assert v.measurements["unjudged"] == 1
    assert judge().status == "unknown"  # nothing delivered: nothing judged


def test_a_control_gives_a_member_without_one_a_subscription_judged_from_then_on():
    v = judge(acq("m1", 2.0, "p", 0), control("m1", 10.0, ["o"]), acq("m1", 11.0, "p", 1), subscription=None)
    assert v.status == "invalid" and v.measurements["unjudged"] == 1


def test_a_share_scenario_takes_topics_and_a_subscription_change():
    model = parse('name = "s"\n[members]\nkind = "share"\nsubscription = ["o", "p"]\n'
                  '[[topics]]\nname = "o"\n[[topics]]\nname = "p"\npartitions = 2\n'
                  '[[steps]]\naction = "change_subscription"\nslot = 0\nsubscription = ["o"]\n', "s.toml")
    assert [t.name for t in model.topics] == ["o", "p"] and kind_refusal(model) is None
    assert kind_refusal_of_step("change_subscription", "share") is None


def test_a_share_subscription_by_regex_is_refused_in_one_line():
    cfg = SimpleNamespace(subscription=("o",), slot_subscriptions=((1, ("o", "p")),))
    check_subscriptions(cfg, [SimpleNamespace(kind=Step.CHANGE_SUBSCRIPTION, params={"subscription": ["o"]})])
    with pytest.raises(BadInput, match=r"^step 1 \(change_subscription\): '\^p.\*' is a regex; a share-group member "
                                       r"subscribes to topics by name"):
        check_subscriptions(cfg, [SimpleNamespace(kind=Step.SLEEP, params={}),
                                  SimpleNamespace(kind=Step.CHANGE_SUBSCRIPTION, params={"subscription": ["^p.*"]})])
    with pytest.raises(BadInput, match=r"^members.slot_subscriptions.1: '\^o' is a regex"):
        check_subscriptions(SimpleNamespace(subscription=(), slot_subscriptions=((1, ("^o",)),)), [])


def test_the_share_member_applies_a_subscription_control(tmp_path, monkeypatch):
    from harness.members import share_member
    calls = []

    class FakeShare:
        def __init__(self, conf):
            pass

        def set_acknowledgement_commit_callback(self, cb):
            pass

        def subscribe(self, topics):
            calls.append(("subscribe", list(topics)))

        def unsubscribe(self):
            calls.append(("unsubscribe",))

        def commit_sync(self, timeout):
            calls.append(("commit",))
            return {}

    monkeypatch.setattr(share_member.confluent_kafka, "ShareConsumer", FakeShare, raising=False)
    ctl = tmp_path / "m1.control"
    env = {"HARNESS_MEMBER_ID": "m1", "HARNESS_TOPICS": "o,p", "HARNESS_GROUP_ID": "g",
           "HARNESS_HISTORY": str(tmp_path / "m1.jsonl"), "HARNESS_CONTROL": str(ctl)}
    for misbehave, expect in ((None, [("commit",), ("unsubscribe",), ("subscribe", ["o"])]),
                              ("keep-dropped-share-topic", [])):
        calls.clear()
        m = share_member.ShareMember({**env, **({"HARNESS_MISBEHAVE": misbehave} if misbehave else {})})
        ctl.write_text(json.dumps({"seq": 1, "subscription": ["o"], "subscribe_by": "unsubscribe-subscribe"}))
        m._control()
        m.hist.close()
        assert calls == expect and m.topics == ["o"]
    lines = [json.loads(x) for x in (tmp_path / "m1.jsonl").read_text().splitlines()]
    controls = [x for x in lines if x.get("type") == "control"]
    assert [(c["seq"], c["subscription"], c["subscribe_by"]) for c in controls] == \
        [(1, ["o"], "unsubscribe-subscribe")] * 2
