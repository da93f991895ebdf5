"""assignor_shape: at each stable point the assignment is one the assignor in force then could produce; and the
assignor in force, from what the members and brokers recorded (`assignors`)."""
import pytest
from histbuild import (assigned, drained, effective, ev, stable_wait, group_settings, history, join, member_exit, member_start, revoked, run_end,
                       run_start, settings, started)

from harness.invariants import assignor_shape, judge, shapes, timeline
from harness.invariants.assignors import in_force
from harness.invariants.core import MissingSetting

TOPICS = (("t", 4), ("u", 4))
RANGE = "range"
COOP = "cooperative-sticky"
JAVA = "org.apache.kafka.clients.consumer."


def eff(strategy: str = RANGE, **kw) -> dict:
    return {**effective(), "partition.assignment.strategy": strategy, **kw}


def consumer_eff(remote: str | None = None) -> dict:
    return {**effective(protocol="consumer"), "group.remote.assignor": remote}


# -- the shapes, pure
def P(**held):
    """{member: {(topic, partition), ...}} from a=["t0", "u1"]-style lists."""
    return {m: {(x[0], int(x[1:])) for x in ps} for m, ps in held.items()}


SUBS2 = {"a": frozenset({"t", "u"}), "b": frozenset({"t", "u"})}
COUNTS2 = {"t": 4, "u": 4}


def test_range_gives_contiguous_co_partitioned_blocks():
    good = P(a=["t0", "t1", "u0", "u1"], b=["t2", "t3", "u2", "u3"])
    assert shapes.problems(RANGE, False, good, SUBS2, COUNTS2) == []
    crossed = P(a=["t0", "t1", "u2", "u3"], b=["t2", "t3", "u0", "u1"])
    got = shapes.problems(RANGE, False, crossed, SUBS2, COUNTS2)
    assert len(got) == 1 and "no one order of the members fits every topic's blocks" in got[0], got
    split = P(a=["t0", "t2", "u0", "u1"], b=["t1", "t3", "u2", "u3"])
    assert "[0, 2] of topic t are not one contiguous range" in shapes.problems(RANGE, False, split, SUBS2, COUNTS2)[0]


def test_range_gives_the_larger_blocks_first_and_counts_per_topic():
    subs = {m: frozenset({"t"}) for m in "abc"}
    assert shapes.problems(RANGE, False, P(a=["t0", "t1"], b=["t2"], c=["t3"]), subs, {"t": 4}) == []
    late = P(a=["t0"], b=["t1", "t2"], c=["t3"])
    assert "put a smaller block before a larger one" in shapes.problems(RANGE, False, late, subs, {"t": 4})[0]
    lopsided = P(a=["t0", "t1", "t2"], b=["t3"], c=[])
    assert "was split a:3, b:1, c:0, where range gives 1 of them 2 and the rest 1" in \
        shapes.problems(RANGE, False, lopsided, subs, {"t": 4})[0]


def test_the_brokers_range_and_racks_promise_only_the_per_topic_counts():
    """The group coordinator's range is sticky per topic, the clients' with racks matches racks first: neither
    promises contiguous blocks, both the counts."""
    split = P(a=["t0", "t2", "u1", "u3"], b=["t1", "t3", "u0", "u2"])
    assert shapes.problems(RANGE, True, split, SUBS2, COUNTS2) == []
    assert shapes.problems(RANGE, False, split, SUBS2, COUNTS2, racks=True) == []
    assert shapes.problems(RANGE, False, split, SUBS2, COUNTS2) != []
    uneven = P(a=["t0", "t1", "t2", "u0", "u1"], b=["t3", "u2", "u3"])
    assert shapes.problems(RANGE, True, uneven, SUBS2, COUNTS2)


@pytest.mark.parametrize("assignor", ["roundrobin", "uniform", "sticky", COOP])
def test_one_subscription_is_balanced_within_one(assignor):
    assert shapes.problems(assignor, False, P(a=["t0", "u2", "t3"], b=["t1", "t2", "u0"]), SUBS2, COUNTS2) == []
    got = shapes.problems(assignor, False, P(a=["t0", "t1", "t2", "u0", "u1"], b=["t3", "u2", "u3"]), SUBS2, COUNTS2)
    assert got == ["a held 5 partitions and b 3, more than one apart, all subscribing to the same topics"]


def test_under_differing_subscriptions_roundrobin_promises_no_balance_the_sticky_ones_do():
    """Kafka's RoundRobinAssignor javadoc: differing subscriptions can leave the counts uneven."""
    subs = {"a": frozenset({"t"}), "b": frozenset({"t", "u"})}
    held = P(a=["t0"], b=["t1", "t2", "t3", "u0", "u1", "u2", "u3"])
    assert shapes.problems("roundrobin", False, held, subs, COUNTS2) == []
    assert "b held 7 partitions and a 1, though a subscribes to a topic of b's" in \
        shapes.problems("uniform", True, held, subs, COUNTS2)[0]


def test_an_assignor_whose_shape_is_unknown_is_refused():
    with pytest.raises(ValueError, match="not known"):
        shapes.problems("my-own", False, {}, {}, {})


# -- the assignor in force
def tl_of(evs, **kw):
    kw.setdefault("topics", TOPICS)
    return timeline.build(history(evs), settings(**kw))


def test_classic_members_vote_for_the_assignor_they_all_offer():
    evs = [run_start(0.0), *join("a", 0.1, effective=eff(f"{COOP},{RANGE}")),
           *join("b", 0.2, effective=eff(f"{JAVA}RangeAssignor,{JAVA}CooperativeStickyAssignor")),
           *join("c", 0.3, effective=eff(RANGE)), run_end(10.0)]
    f = in_force(tl_of(evs), {"a", "b", "c"}, 5.0)
    assert f.assignors == (RANGE,) and not f.server and "a: cooperative-sticky,range" in f.source
    f = in_force(tl_of(evs), {"a", "b"}, 5.0)
    assert f.assignors == (COOP, RANGE)  # one vote each: the coordinator's choice is arbitrary, both are in force
    evs[-2:-1] = [started("c", 0.4, effective=eff("roundrobin"))]
    with pytest.raises(MissingSetting, match="no assignor every member offers"):
        in_force(tl_of(evs), {"a", "b", "c"}, 5.0)


def test_the_consumer_protocol_takes_the_members_choice_else_the_brokers_first():
    base = [run_start(0.0), *join("a", 0.1, effective=consumer_eff()), *join("b", 0.2, effective=consumer_eff()),
            run_end(10.0)]
    with pytest.raises(MissingSetting, match="group.consumer.assignors was not recorded"):
        in_force(tl_of(base), {"a", "b"}, 5.0)
    rec = base + [group_settings(0.05, broker={"group.consumer.assignors": "uniform,range"})]
    f = in_force(tl_of(rec), {"a", "b"}, 5.0)
    assert f.assignors == ("uniform",) and f.server and "group.consumer.assignors=uniform,range" in f.source
    named = [run_start(0.0), *join("a", 0.1, effective=consumer_eff(RANGE)), *join("b", 0.2, effective=consumer_eff()),
             group_settings(0.05, broker={"group.consumer.assignors": "uniform,range"}), run_end(10.0)]
    assert in_force(tl_of(named), {"a", "b"}, 5.0).assignors == (RANGE,)


def test_members_of_both_protocols_need_the_migration_policy():
    evs = [run_start(0.0), *join("a", 0.1, effective=consumer_eff()), *join("b", 0.2, effective=eff(COOP)),
           run_end(10.0)]
    with pytest.raises(MissingSetting, match="members of both protocols"):
        in_force(tl_of(evs + [group_settings(0.05, broker={"group.consumer.assignors": "uniform"})]), {"a", "b"}, 5.0)
    ok = evs + [group_settings(0.05, broker={"group.consumer.assignors": "uniform",
                                             "group.consumer.migration.policy": "bidirectional"})]
    assert in_force(tl_of(ok), {"a", "b"}, 5.0).assignors == ("uniform",)


# -- the checker
def check(evs, **kw):
    kw.setdefault("topics", TOPICS)
    return assignor_shape.check(history(evs), settings(**kw))


def ranged(held_a, held_b, strategy=RANGE) -> list[dict]:
    return [run_start(0.0), *join("a", 0.1, held_a, effective=eff(strategy)),
            *join("b", 0.2, held_b, effective=eff(strategy)), drained(19.0)]


def test_co_partitioned_range_is_valid_and_crossed_range_invalid():
    good = ranged([("t", 0), ("t", 1), ("u", 0), ("u", 1)], [("t", 2), ("t", 3), ("u", 2), ("u", 3)])
    v = check([*good, run_end(20.0)])
    assert v.status == "valid" and v.measurements["judged"] == {"range": 1}, v.message
    crossed = ranged([("t", 0), ("t", 1), ("u", 2), ("u", 3)], [("t", 2), ("t", 3), ("u", 0), ("u", 1)])
    v = check([*crossed, run_end(20.0)])
    assert v.status == "invalid", v.message
    assert "under range (the coordinator's choice among the members' partition.assignment.strategy" in v.message
    assert "no one order of the members fits every topic's blocks" in v.message
    assert {w["member"] for w in v.witnesses} == {"a", "b"}


def stop(m: str, t: float) -> dict:
    return ev("member_stop", t, "harness", member=m)


def roll(strategy_after: str) -> list[dict]:
    """a and b on range with co-partitioned blocks; at 10 s both restart as a2 and b2 on `strategy_after` and take
    interleaved partitions (not one contiguous range)."""
    def life(m, t, parts, strategy):
        return [member_start(m, t), started(m, t + 0.1, effective=eff(strategy)), assigned(m, t + 0.5, parts)]

    first = [("t", 0), ("t", 1), ("u", 0), ("u", 1)], [("t", 2), ("t", 3), ("u", 2), ("u", 3)]
    return [run_start(0.0), *life("a", 0.1, first[0], RANGE), *life("b", 0.2, first[1], RANGE), stable_wait(5.0),
            stop("a", 9.9), revoked("a", 10.0, first[0]), member_exit("a", 10.1),
            stop("b", 9.9), revoked("b", 10.0, first[1]), member_exit("b", 10.1),
            *life("a2", 10.5, [("t", 0), ("t", 2), ("u", 0), ("u", 2)], strategy_after),
            *life("b2", 10.6, [("t", 1), ("t", 3), ("u", 1), ("u", 3)], strategy_after), drained(29.0), run_end(30.0)]


def test_a_rolling_change_of_assignor_is_judged_by_each_side():
    """Before the roll range's blocks, after it cooperative-sticky's balance: valid. The same interleaved partitions
    after a roll that kept range are invalid."""
    v = check(roll(COOP))
    assert v.status == "valid", v.message
    assert v.measurements["judged"] == {"range": 1, COOP: 1}
    v = check(roll(RANGE))
    assert v.status == "invalid" and "at 11.1s under range" in v.message and "not one contiguous range" in v.message


def test_the_members_recorded_assignor_wins_over_the_runs_protocol():
    """The run says classic-eager (range), the members' started events say cooperative-sticky: the interleaved
    assignment is valid; judged with the run's protocol it would be invalid."""
    inter = ranged([("t", 0), ("t", 2), ("u", 0), ("u", 2)], [("t", 1), ("t", 3), ("u", 1), ("u", 3)], COOP)
    assert check([*inter, run_end(20.0)], protocol="classic-eager").status == "valid"
    as_run = [{**e, "effective": eff(RANGE)} if e["type"] == "started" else e for e in inter]
    assert check([*as_run, run_end(20.0)], protocol="classic-cooperative").status == "invalid"


def test_members_that_record_no_settings_leave_it_to_the_plan():
    """Members whose starts recorded no settings (a team's program): the checker skips, and the plan's word decides:
    `unknown` where it said the invariant applies (the harness's members record them), `skipped` where a team's
    program runs a slot."""
    bare = [{k: v for k, v in e.items() if k != "effective"} for e in
            ranged([("t", 0), ("t", 1), ("u", 0), ("u", 1)], [("t", 2), ("t", 3), ("u", 2), ("u", 3)])]
    v = check([*bare, run_end(20.0)])
    assert v.status == "skipped" and "a's start recorded no effective settings" in v.message, v.message
    for applies, status in ((True, "unknown"), (False, "skipped")):
        start = run_start(0.0, kind="consumer", settings=settings(topics=TOPICS).to_dict(),
                          applies={"assignor_shape": {"applies": applies, "why": "the plan"}})
        got = judge(history([start, *bare[1:], run_end(20.0)]))["assignor_shape"]
        assert got.status == status, got.message


def test_an_unrecorded_broker_assignor_is_unknown():
    consumer = [run_start(0.0), *join("a", 0.1, [("t", 0), ("t", 1), ("t", 2), ("u", 0)], effective=consumer_eff()),
                *join("b", 0.2, [("t", 3), ("u", 1), ("u", 2), ("u", 3)], effective=consumer_eff()), drained(19.0),
                run_end(20.0)]
    v = check(consumer)
    assert v.status == "unknown" and "group.consumer.assignors was not recorded" in v.message, v.message
    v = check([*consumer, group_settings(0.05, broker={"group.consumer.assignors": "uniform,range"})])
    assert v.status == "valid" and v.measurements["judged"] == {"uniform (server side)": 1}, v.message
    v = check([*consumer, group_settings(0.05, broker={"group.consumer.assignors": "range,uniform"})])
    assert v.status == "invalid" and "under range (server side)" in v.message, v.message
