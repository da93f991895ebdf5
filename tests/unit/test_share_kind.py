"""The share kind's pure parts: its group configs and their checks, what a share run refuses, its stable rule,
its timeline rows and redelivery marks."""
import pytest
from histbuild import ev, group_settings, history, member_start, run_end, run_start

from harness.base.errors import BadInput
from harness.invariants import balance
from harness.plan.kinds.share import SHARE_GROUP_DEFAULTS, ack_mode, share_group_configs
from harness.plan.config import RunConfig
from harness.report.share_timeline import (assignment_strips, dead_letter_marks, redelivery_marks,
                                           share_holds_as_ownership)
from harness.report.timeline import render_svg


def cfg(**given):
    return RunConfig.for_scenario("share-member-kill", seed=1, **given)


def test_the_group_configs_are_the_defaults_with_the_run_timings_under_group_set():
    out = share_group_configs(cfg())
    assert out["share.record.lock.duration.ms"] == str(SHARE_GROUP_DEFAULTS["share.record.lock.duration.ms"])
    assert out["share.auto.offset.reset"] == "earliest" and out["share.session.timeout.ms"] == "6000"
    given = share_group_configs(cfg(group_settings=(("share.record.lock.duration.ms", "8000"),)))
    assert given["share.record.lock.duration.ms"] == "8000"


@pytest.mark.parametrize("given, needle", [
    ({"group_settings": (("share.record.lock.duration.ms", "0.5"),)}, "share.record.lock.duration.ms"),
    ({"group_settings": (("share.delivery.count.limit", "1"),)}, "at least 2"),
    ({"client_settings": (("share.acknowledgement.mode", "auto"),)}, "explicit, implicit"),
    ({"commit_mode": "async"}, "commit mode async"),
    ({"misbehave": "claim-extra"}, "unknown misbehaviour"),
    ({"protocol": "consumer"}, "does not run with protocol consumer"),
])
def test_what_a_share_run_refuses_is_one_line(given, needle):
    with pytest.raises(BadInput) as e:
        cfg(**given).validate()
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_a_share_run_takes_its_self_tests_and_ack_modes():
    assert cfg(member="java").validate().kind == "share"
    for m in ("ack-unheld", "process-expired"):
        assert cfg(misbehave=m).validate().kind == "share"
    assert ack_mode(cfg(client_settings=(("share.acknowledgement.mode", "implicit"),))) == "implicit"
    assert cfg().protocol == "share"


def test_stable_means_every_live_member_was_delivered_records():
    assert balance.share({"m1": 3, "m2": 1}).ok
    assert not balance.share({"m1": 3, "m2": 0}).ok and balance.share({"m1": 3, "m2": 0}).waiting == ("m2",)
    assert not balance.share({}).ok


def _acq(m, t, off, count=1, p=0):
    return ev("share_acquired", t, "member", member=m, topic="t", partition=p, offset=off, delivery_count=count)


def _ack(m, t, off, p=0):
    return ev("share_acked", t, "member", member=m, topic="t", partition=p, offset=off, ack="accept", ok=True,
              error=None, requested_mono=t)


def _run():
    return history(run_start(0.0, kind="share"), group_settings(0.5, group={"share.record.lock.duration.ms": "5000"}),
                   member_start("m1", 1.0), member_start("m2", 1.0), _acq("m1", 2.0, 0), _ack("m1", 2.2, 0),
                   _acq("m1", 2.5, 1), _ack("m1", 2.6, 1), _acq("m1", 9.0, 2), _ack("m1", 9.1, 2),
                   _acq("m2", 3.0, 3, p=1), _acq("m1", 9.5, 3, count=2, p=1), _ack("m1", 9.6, 3, p=1), run_end(12.0))


def test_holds_become_bars_per_member_and_partition_and_redeliveries_marks():
    h = share_holds_as_ownership(_run())
    bars = [(e["member"], e["partitions"][0][1], e["type"], e["mono"]) for e in h.events
            if e["type"] in ("assigned", "revoked")]
    m1p0 = sorted(t for m, p, _, t in bars if m == "m1" and p == 0)
    assert m1p0 == [2.0, 2.6, 9.0, 9.1]  # two bars: 2.0-2.6 (merged) and 9.0-9.1
    assert ("m2", 1, "revoked", 7.0) in bars  # m2's hold of offset 3 ends at its lock expiry less the slack
    marks = redelivery_marks(_run())
    assert marks == [(9.5, "t", 1, "m1 got offset 3 again: delivery count 2")]
    svg = render_svg(h, {}, topic="t", topics=[["t", 2]], marks=marks)
    assert svg.count('class="mark"') == 1 and "redelivered (1)" in svg


def test_a_record_on_the_dead_letter_topic_is_marked_at_its_reject():
    rej = ev("share_acked", 2.7, "member", member="m1", topic="t", partition=0, offset=1, ack="reject", ok=True,
             error=None, requested_mono=2.65)
    dl = ev("share_dlq_record", 13.0, "harness-output", dlq_topic="dlq.t", dlq_partition=0, dlq_offset=0, group="g",
            topic="t", partition=0, offset=1, delivery_count=1, message="Offset rejected by client.")
    h = history(list(_run().events), rej, dl)
    marks = dead_letter_marks(h)
    assert marks == [(2.7, "t", 0, "offset 1 rejected by m1, on the dead-letter topic dlq.t (delivery count 1: "
                                   "Offset rejected by client.)")]
    assert dead_letter_marks(_run()) == []
    svg = render_svg(share_holds_as_ownership(h), {}, topic="t", topics=[["t", 2]], dlq_marks=marks)
    assert svg.count('class="dlq"') == 1 and "dead-lettered (1)" in svg


def test_draining_counts_a_record_released_at_the_delivery_limit_as_done(tmp_path):
    import json

    from harness.run.observe import Observer
    hdr = {"type": "header", "schema": "rebalance-history", "version": 1, "source": "member", "member": "m1"}
    (tmp_path / "producer.jsonl").write_text("\n".join(json.dumps(x) for x in [
        {**hdr, "source": "producer", "member": None},
        {"type": "acked", "mono": 0.5, "wall": 0.5, "topic": "t", "partition": 0, "offset": 0, "key": "k0", "seq": 0}]) + "\n")
    (tmp_path / "member-m1.jsonl").write_text("\n".join(json.dumps(x) for x in [
        hdr, {"type": "share_acquired", "mono": 1.0, "wall": 1.0, "member": "m1", "topic": "t", "partition": 0,
              "offset": 0, "delivery_count": 4},
        {"type": "share_acked", "mono": 1.1, "wall": 1.1, "member": "m1", "topic": "t", "partition": 0, "offset": 0,
         "ack": "release", "ok": True, "error": None, "requested_mono": 1.05}]) + "\n")
    o = Observer(tmp_path, ["t"])
    o.poll()
    assert o.unprocessed() == 1  # released, the limit unknown: it may come back
    o = Observer(tmp_path, ["t"])
    o.share_limit = 4
    o.poll()
    assert o.unprocessed() == 0 and o.share_deliveries == {"m1": 1}


def test_draining_under_latest_waits_for_an_added_partitions_records_not_for_those_skipped_by_the_policy(tmp_path):
    """Partition 0 (the topic's own) and partition 1 (added by add_partitions): each has offsets 0 and 1 acknowledged
    and only offset 1 delivered and accepted. Under latest partition 0's offset 0 was skipped by the group's policy;
    partition 1's is still due (share_completion's rule, KAFKA-20742)."""
    import json

    from harness.run.observe import Observer
    hdr = {"type": "header", "schema": "rebalance-history", "version": 1, "source": "member", "member": "m1"}
    acks = [{"type": "acked", "mono": 0.5, "wall": 0.5, "topic": "t", "partition": p, "offset": o, "key": "k", "seq": 0}
            for p in (0, 1) for o in (0, 1)]
    (tmp_path / "producer.jsonl").write_text("\n".join(json.dumps(x) for x in [{**hdr, "source": "producer",
                                                                                "member": None}, *acks]) + "\n")
    (tmp_path / "harness.jsonl").write_text("\n".join(json.dumps(x) for x in [
        {**hdr, "source": "harness", "member": None},
        {"type": "action_end", "mono": 0.4, "wall": 0.4, "kind": "add_partitions", "topic": "t", "before": 1,
         "count": 2, "ok": True}]) + "\n")
    (tmp_path / "member-m1.jsonl").write_text("\n".join(json.dumps(x) for x in [hdr, *[e for p in (0, 1) for e in (
        {"type": "share_acquired", "mono": 1.0, "wall": 1.0, "member": "m1", "topic": "t", "partition": p,
         "offset": 1, "delivery_count": 1},
        {"type": "share_acked", "mono": 1.1, "wall": 1.1, "member": "m1", "topic": "t", "partition": p, "offset": 1,
         "ack": "accept", "ok": True, "error": None, "requested_mono": 1.05})]]) + "\n")
    for reset, left in ((None, 2), ("earliest", 2), ("latest", 1)):
        o = Observer(tmp_path, ["t"])
        o.share_reset = reset
        o.poll()
        assert o.unprocessed() == left, reset


def test_the_coordinators_assignment_is_drawn_as_strips_faded_once_the_member_is_gone():
    def said(t, held):
        return ev("share_assignment", t, "harness", asked_mono=t, interval_s=0.5, error=None, group_epoch=1,
                  assignment_epoch=1, state="Stable",
                  members=[{"member": m, "consumer_id": m, "epoch": 1, "partitions": [["t", p] for p in ps]}
                           for m, ps in held.items()])
    blind = ev("share_assignment", 8.0, "harness", asked_mono=8.0, interval_s=0.5, error="ShareGroupDescribe: "
               "COORDINATOR_LOAD_IN_PROGRESS", group_epoch=None, assignment_epoch=None, state=None, members=None)
    h = history(list(_run().events), said(1.5, {"m1": [0], "m2": [1]}), ev("member_exit", 4.0, "harness", member="m1",
                how="kill", code=-9), said(7.0, {"m2": [0, 1]}), blind, said(9.0, {"m2": [0, 1]}))
    strips = assignment_strips(h)
    assert strips == [(1.5, 7.0, "t", 0, "m1", 4.0), (1.5, 8.0, "t", 1, "m2", None), (7.0, 8.0, "t", 0, "m2", None),
                      (9.0, 12.0, "t", 0, "m2", None), (9.0, 12.0, "t", 1, "m2", None)]
    svg = render_svg(share_holds_as_ownership(h), {}, topic="t", topics=[["t", 2]], assigned=strips)
    assert svg.count('class="assigned"') == 6  # m1's strip in two parts: alive, then gone (faded)
    assert svg.count('fill-opacity="0.35"><title>the coordinator assigned partition 0 to m1 (gone since') == 1
    assert "coordinator&#x27;s assignment (strip)" in svg
    assert assignment_strips(_run()) == [] and 'class="assigned"' not in render_svg(
        share_holds_as_ownership(_run()), {}, topic="t", topics=[["t", 2]])
