"""A poison record that kills its holder (`share_poison`): histories that must pass and ones that must fail; the
members' and the plan's reading of `harness.share.crash.records`; `restart_crashed` on the fake backend.

The group's delivery count limit is 3 (test_invariant_share.GROUP), or the brokers' own
`group.share.delivery.count.limit` where the group config is missing (Kafka 4.2), as the `group_settings` event reads it.
"""
import pytest
from histbuild import ev, group_settings, history, member_exit
from test_invariant_share import EXPLICIT, GROUP, S, acq, ack, base

from harness.base.errors import BadInput
from harness.invariants.share import check_share
from harness.members.share_member import crash_records as member_crash_records
from harness.plan.config import RunConfig
from harness.plan.kinds.share import crash_records

POISON = {**EXPLICIT, "crash_records": [["t", 0, 7]]}


def run(*items, group=None):
    frame = base(group=group, members=("m1", "m2", "m3", "m4"), effective=POISON)
    return check_share(history(frame, *items), S, ["share_poison"])["share_poison"]


def dies(m, t, count):
    """m is delivered offset 7 at t with that count and dies 0.1 s later, without acknowledging it."""
    return [acq(m, t, 7, count), ev("error", t + 0.05, "member", member=m, fatal=True, poison=["t", 0, 7, count],
                                    error="poison record"), member_exit(m, t + 0.1, how="crash", code=3)]


def test_a_record_that_kills_each_holder_until_the_limit_then_never_comes_back_holds():
    v = run(*dies("m1", 5.0, 1), *dies("m2", 11.0, 2), *dies("m3", 17.0, 3))
    assert v.status == "valid", v.message
    assert "counts 1, 2, 3" in v.message and "share.delivery.count.limit" in v.message
    assert v.measurements["deaths"] == 3


def test_the_limit_is_the_brokers_own_where_the_group_has_no_such_config():
    group = {k: v for k, v in GROUP.items() if k != "share.delivery.count.limit"}
    h = history(base(group=group, members=("m1", "m2", "m3"), effective=POISON),
                group_settings(0.6, group=group, broker={"group.share.delivery.count.limit": "2"}),
                *dies("m1", 5.0, 1), *dies("m2", 11.0, 2))
    v = check_share(h, S, ["share_poison"])["share_poison"]
    assert v.status == "valid" and "group.share.delivery.count.limit" in v.message and "brokers' default" in v.message


def test_a_delivery_after_the_limit_is_not_archived_and_fails():
    v = run(*dies("m1", 5.0, 1), *dies("m2", 11.0, 2), *dies("m3", 17.0, 3), *dies("m4", 23.0, 4))
    assert v.status == "invalid"
    assert any("past the delivery count limit 3" in w["why"] for w in v.witnesses)
    assert any("not archived" in w["why"] for w in v.witnesses)


def test_a_holder_that_lives_on_fails():
    v = run(*dies("m1", 5.0, 1), acq("m2", 11.0, 7, 2), ack("m2", 11.2, 7))
    assert v.status == "invalid" and "did not die on it" in v.witnesses[0]["why"]


def test_below_the_limit_at_the_end_or_never_delivered_is_unknown():
    assert run(*dies("m1", 5.0, 1), *dies("m2", 11.0, 2)).status == "unknown"
    v = run(acq("m1", 2.0, 0), ack("m1", 2.1, 0))
    assert v.status == "unknown" and "never delivered" in v.message


def test_without_a_poison_record_it_is_skipped():
    h = history(base(members=("m1",)), acq("m1", 2.0, 0), ack("m1", 2.1, 0))
    assert check_share(h, S, ["share_poison"])["share_poison"].status == "skipped"


def test_the_plan_and_the_member_read_the_poison_records_alike():
    cfg = RunConfig.for_scenario("share-poison-record", seed=1)
    assert crash_records(cfg) == [(0, 60)]
    env = {"HARNESS_CLIENT_CONFIG": '{"harness.share.crash.records": "0:60, 2:5"}', "HARNESS_TOPIC": "t"}
    assert member_crash_records(env) == {("t", 0, 60), ("t", 2, 5)}
    for bad, needle in (("0-60", "<partition>:<offset>"), ("x:1", "<partition>:<offset>")):
        with pytest.raises(BadInput, match=needle):
            RunConfig.for_scenario("share-member-kill", seed=1,
                                   client_settings=(("harness.share.crash.records", bad),)).validate()
    with pytest.raises(BadInput, match="explicit"):
        RunConfig.for_scenario("share-member-kill", seed=1, client_settings=(
            ("harness.share.crash.records", "0:1"), ("share.acknowledgement.mode", "implicit"))).validate()
