"""The share group's dead-letter topic (KIP-1191): `share_dead_letter` on histories that must pass and ones that
must fail, the read-back's header parsing, the poison member settings and the plan's refusal before Kafka 4.4.

The group's record lock is 5 s and its delivery count limit 3, as the `group_settings` event reads them, with the
dead-letter topic `dlq.t`; the group is `g` (histbuild's group_settings).
"""
import pytest
from histbuild import acked, drained, ev, group_settings, history, member_start, run_end, run_start

from harness.base.errors import BadInput
from harness.invariants.share import SHARE_CHECKERS, ShareCheckSettings, check_share
from harness.kinds.share_dlq import record_fields
from harness.plan.kinds.share import check_dlq, poison_keys
from harness.cluster.fake import FakeCluster
from harness.plan.config import RunConfig
from harness.run.resolve import resolve

DLQ = "dlq.t"
GROUP = {"share.record.lock.duration.ms": "5000", "share.delivery.count.limit": "3",
         "errors.deadletterqueue.topic.name": DLQ}
S = ShareCheckSettings()


def acq(m, t, off, count=1):
    return ev("share_acquired", t, "member", member=m, topic="t", partition=0, offset=off, delivery_count=count)


def ack(m, t, off, kind="accept"):
    return ev("share_acked", t + 0.05, "member", member=m, topic="t", partition=0, offset=off, ack=kind, ok=True,
              error=None, requested_mono=t)


def dlq(t, off, count, message="Offset rejected by client.", group="g", dlq_offset=None):
    return ev("share_dlq_record", t, "harness-output", dlq_topic=DLQ, dlq_partition=0,
              dlq_offset=off if dlq_offset is None else dlq_offset, group=group, topic="t", partition=0, offset=off,
              delivery_count=count, message=message)


def read(t, n, complete=True):
    return ev("share_dlq_read", t, "harness-output", dlq_topic=DLQ, records=n, other_groups=0, complete=complete,
              dlq_partitions=1)


def base(group=None, end=60.0):
    return [run_start(0.0, kind="share", share_settings={"topics": ["t"]}),
            group_settings(0.5, group=GROUP if group is None else group), member_start("m1", 1.0),
            drained(end - 5), run_end(end)]


def accepted(t, off):
    return [acked(t, 0, off), acq("m1", t + 0.2, off), ev("share_processed", t + 0.3, "member", member="m1",
                                                          topic="t", partition=0, offset=off), ack("m1", t + 0.4, off)]


def rejected(t, off):
    return [acked(t, 0, off), acq("m1", t + 0.2, off), ack("m1", t + 0.3, off, "reject")]


def archived(t, off):
    """Released on each of its three deliveries: the third, at the limit, archives it."""
    return [acked(t, 0, off)] + [x for c in (1, 2, 3) for x in (acq("m1", t + c, off, c), ack("m1", t + c + 0.1, off,
                                                                                              "release"))]


def judge(*items):
    return check_share(history(*items), S, ["share_dead_letter"])["share_dead_letter"]


def test_it_is_a_share_checker():
    assert "share_dead_letter" in SHARE_CHECKERS


def test_valid_when_every_rejected_and_archived_record_and_no_other_is_on_the_topic():
    v = judge(base(), accepted(2, 0), rejected(3, 1), archived(4, 2), dlq(50, 1, 1),
              dlq(50.1, 2, 3, "Offset delivery count exceeded the threshold."), read(51, 2))
    assert v.status == "valid", v.message
    assert (v.measurements["rejected"], v.measurements["archived"], v.measurements["in_dlq"]) == (1, 1, 2)
    assert DLQ in v.message and "delivery count limit=3" in v.message
    assert v.measurements["count_mismatches"] == 0 and len(v.measurements["messages"]) == 2


def test_invalid_when_a_rejected_record_is_missing_from_the_topic():
    v = judge(base(), rejected(3, 1), archived(4, 2), dlq(50, 2, 3), read(51, 1))
    assert v.status == "invalid" and v.measurements["missing"] == 1, v.message
    assert "('t', 0, 1) rejected" in v.witnesses[0]["why"] and "not on the dead-letter topic" in v.witnesses[0]["why"]


def test_invalid_when_a_record_archived_at_the_limit_is_missing():
    v = judge(base(), rejected(3, 1), archived(4, 2), dlq(50, 1, 1), read(51, 1))
    assert v.status == "invalid" and "archived at the limit" in v.witnesses[0]["why"]


def test_invalid_when_an_accepted_record_is_on_the_topic():
    v = judge(base(), accepted(2, 0), rejected(3, 1), dlq(50, 0, 1), dlq(50.1, 1, 1), read(51, 2))
    assert v.status == "invalid" and v.measurements["unexpected"] == 1, v.message
    assert "accepted by the group" in v.witnesses[0]["why"]


def test_invalid_when_a_record_released_below_the_limit_is_on_the_topic():
    below = [acked(2, 0, 3), acq("m1", 2.2, 3), ack("m1", 2.3, 3, "release"), acq("m1", 2.5, 3, 2),
             ack("m1", 2.6, 3)]  # released at count 1 only, then accepted at count 2: not given up on
    v = judge(base(), below, rejected(3, 1), dlq(50, 1, 1), dlq(50.1, 3, 1), read(51, 2))
    assert v.status == "invalid" and v.measurements["unexpected"] == 1


def test_records_of_other_groups_are_not_judged():
    v = judge(base(), rejected(3, 1), dlq(50, 1, 1), dlq(50.1, 0, 1, group="another"), read(51, 1))
    assert v.status == "valid", v.message


def test_skipped_without_a_dead_letter_topic():
    group = {k: v for k, v in GROUP.items() if k != "errors.deadletterqueue.topic.name"}
    v = judge(base(group=group), rejected(3, 1))
    assert v.status == "skipped" and "no dead-letter topic" in v.message


@pytest.mark.parametrize("items, needle", [
    ((), "was not read back"),
    ((read(51, 0, complete=False),), "did not complete"),
])
def test_unknown_when_the_topic_was_not_read_in_full(items, needle):
    v = judge(base(), rejected(3, 1), *items)
    assert v.status == "unknown" and needle in v.message


def test_unknown_when_nothing_was_rejected_or_archived():
    v = judge(base(), accepted(2, 0), read(51, 0))
    assert v.status == "unknown" and "nothing to find" in v.message


def test_a_missing_record_is_unknown_when_the_run_did_not_drain():
    h = [run_start(0.0, kind="share", share_settings={"topics": ["t"]}), group_settings(0.5, group=GROUP),
         member_start("m1", 1.0), drained(55, ok=False, missing=3), run_end(60)]
    v = judge(h, rejected(3, 1), read(51, 0))
    assert v.status == "unknown" and "did not drain" in v.message


def test_the_brokers_headers_become_fields():
    hs = [("__dlq.errors.group", b"g"), ("__dlq.errors.topic", b"t"), ("__dlq.errors.partition", b"2"),
          ("__dlq.errors.offset", b"41"), ("__dlq.errors.delivery.count", b"4"),
          ("__dlq.errors.message", b"Offset delivery count exceeded the threshold."), ("x", b"y")]
    assert record_fields(hs) == {"group": "g", "topic": "t", "partition": 2, "offset": 41, "delivery_count": 4,
                                 "message": "Offset delivery count exceeded the threshold."}
    assert record_fields([("__dlq.errors.offset", b"x")]) == {}
    assert record_fields(None) == {}


# -- the plan's checks
def cfg(**given):
    return RunConfig.for_scenario("share-dead-letter", seed=1, **given)


def test_the_scenario_sets_the_topic_and_poison_keys():
    c = cfg()
    assert c.validate().kind == "share"
    assert poison_keys(c) == {"reject": ["k7", "k19"], "release": ["k13"]}
    assert dict(c.group_settings)["errors.deadletterqueue.topic.name"] == "dlq.harness-share"


@pytest.mark.parametrize("version", ["4.2.0", "4.3.1"])
def test_a_release_without_the_dead_letter_topic_is_refused_by_the_plan_in_one_line(tmp_path, version):
    cluster = FakeCluster(work_dir=tmp_path / "shared", version=version)  # never started
    with pytest.raises(BadInput) as e:
        resolve(cfg(runs_root=str(tmp_path / "runs")), shared=cluster, progress=lambda *_: None)
    msg = str(e.value)
    assert "needs Kafka 4.4 or newer (KIP-1191)" in msg and f"the cluster runs {version}" in msg and "\n" not in msg
    assert cluster.calls == [] and not (tmp_path / "runs").exists()


def test_the_plan_takes_it_on_4_4(tmp_path):
    plan = resolve(cfg(), shared=FakeCluster(work_dir=tmp_path / "shared", version="4.4.0"), progress=lambda *_: None)
    assert plan.settings["errors.deadletterqueue.topic.name"] == "dlq.harness-share"


@pytest.mark.parametrize("settings, broker, needle", [
    ({"errors.deadletterqueue.topic.name": "other.x"}, {}, "starts with 'dlq.'"),
    ({"errors.deadletterqueue.topic.name": "__x"}, {"errors.deadletterqueue.topic.name.prefix": ""}, "not with '__'"),
])
def test_a_name_the_brokers_refuse_is_refused(settings, broker, needle):
    with pytest.raises(BadInput, match=needle):
        check_dlq("x", settings, "4.4.0", broker)


@pytest.mark.parametrize("given, needle", [
    ((("harness.share.reject.keys", "poison"),), "not a record key"),
    ((("harness.share.release.keys", "k3"), ("share.acknowledgement.mode", "implicit")), "needs share.acknowledgement"),
])
def test_bad_poison_settings_are_refused_in_one_line(given, needle):
    with pytest.raises(BadInput) as e:
        cfg(client_settings=given).validate()
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_a_record_whose_holder_was_killed_before_the_answer_may_be_on_the_topic():
    killed = [acked(5, 0, 4), acq("m1", 5.2, 4), ev("member_exit", 5.3, "harness", member="m1", how="kill", code=-9)]
    v = judge(base(), rejected(3, 1), killed, dlq(50, 1, 1), dlq(50.1, 4, 1), read(51, 2))
    assert v.status == "valid" and v.measurements["holder_left_before_answer"] == 1, v.message
