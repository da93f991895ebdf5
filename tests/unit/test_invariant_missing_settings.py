"""A bound whose input could not be read is `unknown`, naming what was missing, never Kafka's default.

Under the consumer protocol (KIP-848) the session and heartbeat timings are the group's, read by DescribeConfigs
into the `group_settings` event (harness/kinds/consumer.py `record_group_settings`). When DescribeConfigs fails the
event says so (`unread`: the resource and why): the verdicts that need those timings are unknown. They used to be
judged with Kafka's documented defaults (45 s session, 5 s heartbeat) while the brokers ran 6 s.
"""
from histbuild import (assigned, drained, effective, group_settings, history, join, member_exit, revoked, run_end,
                       run_start, settings)

from harness.invariants import check_all, judge
from harness.invariants.core import MissingSetting
from harness.invariants.settings import group_setting_ms

BROKER = {"group.consumer.session.timeout.ms": "6000", "group.consumer.heartbeat.interval.ms": "500"}
REFUSED = "DescribeConfigs: KafkaError{code=CLUSTER_AUTHORIZATION_FAILED,val=31}"
UNREAD = {"group": REFUSED, "broker 1": REFUSED, "broker 2": REFUSED, "broker 3": REFUSED}


def refused(t: float = 0.05) -> dict:
    """The event record_group_settings writes when every DescribeConfigs was refused."""
    return {**group_settings(t), "error": "; ".join(f"{k}: {v}" for k, v in UNREAD.items()), "unread": dict(UNREAD)}


def kill_run(gs: dict) -> list[dict]:
    """Two members on the consumer protocol; b is killed at 10 and a takes its partitions 7 s later (within 6 s of
    session and two rounds of a 20 s rebalance timeout, but past 45 s of Kafka's default it would be nothing)."""
    eff = effective(session_ms=45000, heartbeat_ms=3000, max_poll_ms=20000, protocol="consumer")
    return [run_start(0.0, settings={"topic": "t", "partitions": 4, "protocol": "consumer"}), gs,
            *join("a", 0.1, [0, 1], effective=eff), *join("b", 0.2, [2, 3], effective=eff),
            member_exit("b", 10.0, how="kill"), assigned("a", 17.0, [2, 3]), drained(30.0),
            revoked("a", 34.0, [0, 1, 2, 3]), member_exit("a", 34.5), run_end(35.0)]


def test_the_groups_timings_unread_make_the_bounds_unknown_naming_what_is_missing():
    vs = check_all(history(kill_run(refused())), settings(protocol="consumer"))
    for name in ("coverage_liveness", "convergence_balance"):
        assert vs[name].status == "unknown", (name, vs[name].message)
        assert "consumer.session.timeout.ms could not be read" in vs[name].message
        assert "CLUSTER_AUTHORIZATION_FAILED" in vs[name].message
        assert "45" not in vs[name].message.split("could not be read")[0]  # no default stands in


def test_the_same_run_with_the_timings_read_is_judged():
    vs = check_all(history(kill_run(group_settings(0.05, broker=BROKER))), settings(protocol="consumer"))
    assert vs["convergence_balance"].status == "valid", vs["convergence_balance"].message
    assert vs["coverage_liveness"].status == "valid", vs["coverage_liveness"].message
    assert "(bound 46.0s)" in vs["convergence_balance"].message  # 6 s read + 2 x 20 s, not 45 s + 2 x 20 s


def test_brokers_read_but_the_groups_configs_not_is_still_unknown():
    """A group config may override the brokers' value (a scenario's [group] settings): theirs is no stand-in."""
    gs = {**group_settings(0.05, broker=BROKER), "error": f"GROUP g: {REFUSED}", "unread": {"group": REFUSED}}
    with __import__("pytest").raises(MissingSetting, match="the group's consumer.session.timeout.ms could not be read"):
        group_setting_ms(gs, "consumer", "session")
    v = check_all(history(kill_run(gs)), settings(protocol="consumer"))["convergence_balance"]
    assert v.status == "unknown" and "no stand-in" in v.message


def test_a_group_config_read_decides_whatever_a_broker_did():
    gs = {**group_settings(0.05, group={"consumer.session.timeout.ms": "6000",
                                        "consumer.heartbeat.interval.ms": "500"}),
          "error": f"BROKER 2: {REFUSED}", "unread": {"broker 2": REFUSED}}
    assert group_setting_ms(gs, "consumer", "session", t0=0.0) == (6000, "group config consumer.session.timeout.ms="
                                                                         "6000 (DescribeConfigs at 0.1s)")
    # without the run's start the source names the read, never the host's raw clock
    assert group_setting_ms(gs, "consumer", "session")[1] == "group config consumer.session.timeout.ms=6000 " \
                                                             "(DescribeConfigs)"
    assert check_all(history(kill_run(gs)), settings(protocol="consumer"))["convergence_balance"].status == "valid"


def test_no_group_settings_event_is_unknown_too():
    evs = [e for e in kill_run(refused()) if e["type"] != "group_settings"]
    v = check_all(history(evs), settings(protocol="consumer"))["convergence_balance"]
    assert v.status == "unknown" and "no group_settings event" in v.message


def test_an_older_event_with_an_error_and_no_unread_is_read_conservatively():
    gs = {**group_settings(0.05, broker=BROKER), "error": "DescribeConfigs g: timed out"}
    with __import__("pytest").raises(MissingSetting, match="timed out"):
        group_setting_ms(gs, "consumer", "session")


def test_classic_members_need_no_group_settings():
    """Under the classic protocols the timings are the clients' own (their `started` effective)."""
    eff = effective(session_ms=6000, max_poll_ms=20000)
    evs = [run_start(0.0, settings={"topic": "t", "partitions": 4}), refused(),
           *join("a", 0.1, [0, 1], effective=eff), *join("b", 0.2, [2, 3], effective=eff),
           member_exit("b", 10.0, how="kill"), assigned("a", 17.0, [2, 3]), drained(30.0),
           revoked("a", 34.0, [0, 1, 2, 3]), member_exit("a", 34.5), run_end(35.0)]
    assert judge(history(evs))["convergence_balance"].status == "valid"


def test_a_share_groups_lock_unread_makes_the_share_checkers_unknown():
    from test_invariant_share import GROUP, base, consumed, verdicts, watched
    brokers_only = {k.replace("share.", "group.share."): v for k, v in GROUP.items()}
    h = [e for e in base() if e["type"] != "group_settings"] + \
        [{**group_settings(0.5, broker=brokers_only), "error": f"GROUP g: {REFUSED}", "unread": {"group": REFUSED}},
         watched(), *consumed("m1", 2.0, 0)]
    vs = verdicts(h)
    assert vs.pop("share_poison").status == "skipped"  # no member was given a poison record: nothing to read for
    # judged by the subscriptions alone: a group setting (the heartbeat interval) only for a dropped topic's records
    assert vs.pop("share_subscribed_only").status == "valid"
    assert {v.status for v in vs.values()} == {"unknown"}, {n: v.message for n, v in vs.items()}
    assert "share.record.lock.duration.ms could not be read" in vs["share_exclusive"].message


def test_the_streams_protocols_session_timeout_unread_is_unknown():
    from streamsbuild import fault_start, group, task_active, settings as ssettings
    from harness.invariants import streams
    evs = [dict(e, protocol="streams") if e["type"] == "started" else e for e in group()]
    evs += [refused(), fault_start(10.0, "p1", ["m1"]), task_active("m2", 17.0, "0_0")]
    v = streams.check_streams(history(evs), ssettings(protocol="streams"), ["task_exclusive_active"])
    assert v["task_exclusive_active"].status == "unknown"
    assert "streams.session.timeout.ms could not be read" in v["task_exclusive_active"].message
