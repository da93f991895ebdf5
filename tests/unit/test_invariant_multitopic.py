"""The invariants judge a group over several topics whose members subscribe to different ones.

Topics are given as CheckSettings.topics; partitions are named "topic-p" in messages, witnesses and
measurements; a member's subscription comes from its `started` event (names, or `^` regexes).
"""
from __future__ import annotations

import json

import pytest

from harness.invariants import CheckSettings, check_all, judge
from harness.invariants import convergence, coverage, exclusive, integrity, migrations, static, timeline
from tests.unit.histbuild import (acked, assigned, drained, ev, history, join, member_exit, processed, revoked, run_end,
                                  run_start, started)

O, P = "orders", "payments"


def multi(*topics, **kw) -> CheckSettings:
    kw.setdefault("max_poll_interval_s", 10.0)  # no member records its own: bounds of 2 rounds of 10 s
    return CheckSettings(topics=topics or ((O, 3), (P, 2)), **kw)


def group(members: dict, end: float = 40.0, extra=()):
    """A history in which each member (name -> (subscription or None, [(topic, p), ...])) starts at once
    and keeps what it is given until the end."""
    evs = [run_start(0.0)]
    for i, (m, (sub, parts)) in enumerate(members.items()):
        evs += join(m, 0.1 + 0.1 * i, parts, subscription=sub)
    return history(evs, *extra, run_end(end))


def tps(topic, *ps):
    return [(topic, p) for p in ps]


# ---------------------------------------------------------------- settings and timeline

def test_topics_setting_round_trips_through_json_and_stays_hashable():
    s = CheckSettings.from_dict({"topics": [[O, 3], [P, 2]], "topic": O, "partitions": 5})
    assert s.topics == ((O, 3), (P, 2))
    hash(s)
    d = s.to_dict()
    assert d["topics"] == [[O, 3], [P, 2]]
    # the same values (settings read from another dict remember other fields held: `held`, not a setting)
    assert CheckSettings.from_dict(json.loads(json.dumps(d))).to_dict() == d
    assert CheckSettings().to_dict()["topics"] == []
    with pytest.raises(ValueError):
        CheckSettings(topics=((O, 3), (O, 2)))
    with pytest.raises(ValueError):
        CheckSettings.from_dict({"topics": [[O]]})


def test_global_index_names_partitions_by_topic():
    h = group({"a": (None, tps(O, 0, 1, 2) + tps(P, 0, 1))})
    tl = timeline.build(h, multi())
    assert tl.partitions == 5 and tl.all_partitions == [0, 1, 2, 3, 4]
    assert [tl.name(p) for p in tl.all_partitions] == ["orders-0", "orders-1", "orders-2", "payments-0", "payments-1"]
    assert tl.layout.tp(3) == (P, 0)


def test_a_partition_above_the_declared_count_does_not_collide_with_the_next_topic():
    h = group({"a": (None, tps(O, 0, 1, 2, 7) + tps(P, 0, 1))})
    tl = timeline.build(h, multi())
    assert sorted(tl.name(p) for p in tl.by_partition) == ["orders-0", "orders-1", "orders-2", "orders-7",
                                                           "payments-0", "payments-1"]


def test_an_old_history_naming_two_topics_without_topics_settings_is_still_an_error():
    h = group({"a": (None, tps(O, 0) + tps(P, 0))})
    with pytest.raises(timeline.TimelineError, match="topics"):
        timeline.build(h, CheckSettings())


def test_subscription_is_that_of_the_latest_started():
    h = group({"a": ([O], tps(O, 0, 1, 2) + tps(P, 0, 1))}, extra=[started("a", 10.0, subscription=[P])])
    tl = timeline.build(h, multi())
    assert tl.subscribed("a", 5.0) == {0}
    assert tl.subscribed("a", 10.0) == {1}
    assert tl.subscribed("a", 10.0, before=True) == {0}
    assert tl.subscribed("nobody", 5.0) == {0, 1}  # no started: every topic


def test_judge_reads_the_topics_from_run_start():
    h = group({"a": ([O, P], tps(O, 0, 1, 2)), "b": ([O, P], tps(P, 0, 1))})
    h = history([e for e in h.events if e["type"] != "run_start"],
                run_start(0.0, settings=multi().to_dict(), kind="consumer"))
    v = judge(h)
    assert v["convergence_balance"].status == "valid", v["convergence_balance"]
    assert v["coverage_liveness"].status == "valid", v["coverage_liveness"]


# ---------------------------------------------------------------- convergence_balance

def test_balanced_heterogeneous_state_is_valid():
    h = group({"a": ([O, P], tps(O, 2) + tps(P, 0, 1)), "b": ([O], tps(O, 0, 1))})
    v = check_all(h, multi())
    for name in ("convergence_balance", "coverage_liveness", "exclusive_ownership"):
        assert v[name].status == "valid", v[name]
    assert v["convergence_balance"].measurements["subscriptions"] == {"a": [O, P], "b": [O]}


def test_idle_member_subscribed_to_the_busy_members_topic_is_unbalanced():
    h = group({"a": ([O, P], []), "b": ([O], tps(O, 0, 1, 2)), "c": ([P], tps(P, 0, 1))})
    v = convergence.check(h, multi())
    assert v.status == "invalid", v
    assert v.measurements["unbalanced_pair"] == ["b", "a"]
    assert "b holds 3, a holds 0" in v.message


def test_idle_member_not_subscribed_to_the_busy_members_topic_is_balanced():
    # the counts of the test above, but a subscribes to a topic outside the run: it can take nothing
    h = group({"a": (["shipments"], []), "b": ([O], tps(O, 0, 1, 2)), "c": ([P], tps(P, 0, 1))})
    v = convergence.check(h, multi())
    assert v.status == "valid", v
    assert v.measurements["final_counts"] == {"a": 0, "b": 3, "c": 2}
    # a subscribes to payments only: b's 3 orders are out of its reach, c's one payment is no imbalance
    h = group({"a": ([P], []), "b": ([O], tps(O, 0, 1, 2)), "c": ([P], tps(P, 0))})
    v = convergence.check(h, multi((O, 3), (P, 1)))
    assert v.status == "valid", v
    assert v.measurements["final_counts"] == {"a": 0, "b": 3, "c": 1}


def test_regex_subscription_decides_eligibility():
    # payments-0..2 with b, orders-0 with c; a holds nothing and may take only what its regex names
    def run(regex):
        h = group({"a": ([regex], []), "b": ([P], tps(P, 0, 1, 2)), "c": ([O], tps(O, 0))})
        return convergence.check(h, multi((O, 1), (P, 3)))

    assert run("^orders.*").status == "valid"
    assert run("^pay.*").status == "invalid"
    assert run("^(orders|payments)$").status == "invalid"
    assert run("^ord").measurements["subscriptions"]["a"] == [O]  # anchored at the start only (re.match)
    assert run("^rders").measurements["subscriptions"]["a"] == []


def test_equal_subscriptions_are_balanced_on_the_total_not_per_topic():
    settings = multi((O, 2), (P, 2))
    per_topic_skew = group({"a": ([O, P], tps(O, 0, 1)), "b": ([O, P], tps(P, 0, 1))})
    assert convergence.check(per_topic_skew, settings).status == "valid"
    no_subscription = group({"a": (None, tps(O, 0, 1)), "b": (None, tps(P, 0, 1))})
    assert convergence.check(no_subscription, settings).status == "valid"
    total_skew = group({"a": ([O, P], tps(O, 0, 1) + tps(P, 0)), "b": ([O, P], tps(P, 1))})
    v = convergence.check(total_skew, settings)
    assert v.status == "invalid" and v.measurements["final_counts"] == {"a": 3, "b": 1}


def test_a_topic_nobody_alive_subscribes_to_need_not_be_owned():
    h = group({"a": ([O], tps(O, 0, 1)), "b": ([O], tps(O, 2))})
    assert convergence.check(h, multi()).status == "valid"
    assert coverage.check(h, multi()).status == "valid"
    # once a member subscribes to payments, its partitions must be owned
    h = group({"a": ([O], tps(O, 0, 1)), "b": ([O, P], tps(O, 2))})
    v = convergence.check(h, multi())
    assert v.status == "invalid" and "incomplete" in v.message


# ---------------------------------------------------------------- exclusive_ownership

def test_two_owners_of_a_partition_of_the_second_topic_is_invalid():
    h = group({"a": ([O, P], tps(O, 0, 1) + tps(P, 1)), "b": ([O, P], tps(O, 2) + tps(P, 0))},
              extra=[assigned("b", 5.0, tps(P, 1))])
    v = exclusive.check(h, multi())
    assert v.status == "invalid", v
    assert "partition payments-1 assigned to b" in v.message
    assert all("payments-1" in w["why"] for w in v.witnesses)


def test_processing_a_partition_of_the_other_topic_is_invalid():
    h = group({"a": ([O, P], tps(O, 0, 1, 2)), "b": ([O, P], tps(P, 0, 1))},
              extra=[processed("a", 5.0, 0, 0, 9, topic=P), processed("a", 5.0, 0, 0, 9, topic=O)])
    v = exclusive.check(h, multi())
    assert v.status == "invalid" and v.measurements["processed_without_holding"] == 1
    assert "a processed partition payments-0" in v.message


# ---------------------------------------------------------------- record_integrity

def test_acknowledged_record_of_the_second_topic_never_processed_is_invalid():
    owners = {"a": ([O, P], tps(O, 0, 1, 2)), "b": ([O, P], tps(P, 0, 1))}
    ok = [acked(1.0, 0, 0, topic=O), acked(1.0, 1, 0, topic=P), acked(1.1, 1, 1, topic=P),
          processed("a", 2.0, 0, 0, 0, topic=O), processed("b", 2.0, 1, 0, 1, topic=P)]
    v = integrity.check(group(owners, extra=ok), multi())
    assert v.status == "valid" and v.measurements["acked"] == 3, v
    lost = ok[:-1] + [processed("b", 2.0, 1, 0, 0, topic=P)]
    v = integrity.check(group(owners, extra=lost), multi())
    assert v.status == "invalid", v
    assert v.measurements["lost_by_partition"] == {"payments-1": 1}
    assert "partition payments-1 never processed" in v.witnesses[0]["why"]


def test_the_same_offsets_of_two_topics_are_no_duplicates():
    owners = {"a": ([O, P], tps(O, 0, 1, 2) + tps(P, 0, 1))}
    evs = [acked(1.0, 0, 0, topic=O), acked(1.0, 0, 0, topic=P),
           processed("a", 2.0, 0, 0, 0, topic=O), processed("a", 2.0, 0, 0, 0, topic=P)]
    v = integrity.check(group(owners, extra=evs), multi(exactly_once=True))
    assert v.status == "valid" and v.measurements["duplicates"] == 0, v


# ---------------------------------------------------------------- coverage_liveness

def test_a_partition_of_the_second_topic_unowned_past_the_protocols_bound_is_invalid():
    h = group({"a": ([O, P], tps(O, 0, 1, 2) + tps(P, 0)), "b": ([P], [])})
    v = coverage.check(h, multi(max_poll_interval_s=15.0))  # 39.8 s quiet at the end, past 2 rounds of 15 s
    assert v.status == "invalid", v
    assert v.measurements["unowned_partitions"] == ["payments-1"]
    assert "partition payments-1 had no live owner for 39.400s" in v.message
    assert v.measurements["max_unowned_partition"] == "payments-1"  # its gap since the first assignment too
    h = group({"a": ([O, P], tps(O, 0, 1, 2) + tps(P, 0)), "b": ([P], [])})  # fresh: the views are kept per history
    within = coverage.check(h, multi(max_poll_interval_s=60.0))  # 2 rounds of 60 s: the group may still rebalance
    assert within.status == "unknown" and "['payments-1'] have no live owner" in within.message


def test_a_topic_taken_up_midway_is_owned_from_then_not_from_the_first_assignment():
    """b subscribes to orders only; at 30 s it takes payments up (a control event) and is given both partitions at
    30.5 s: payments had no subscriber before, so nobody had to own them (a real run was judged unowned 24.2 s, past
    2 rounds of 12 s, from the first assignment). Given them only at 55 s, the 25 s since its subscription is a gap."""
    def run(given: float):
        evs = [run_start(0.0), *join("a", 0.1, tps(O, 0, 1, 2), subscription=[O]),
               *join("b", 0.2, [], subscription=[O]),
               ev("control", 30.0, "member", member="b", seq=1, subscription=[O, P]),
               assigned("b", given, tps(P, 0, 1), topic=P), run_end(60.0)]
        return coverage.check(history(evs), multi())
    v = run(30.5)
    assert v.status == "valid" and v.measurements["max_unowned_s"] <= 0.5, v.message
    v = run(55.0)
    assert v.status == "invalid" and "had no live owner for 25.000s from 30.0s" in v.message, v.message


# ---------------------------------------------------------------- bounded_migrations

def _scale_out(b_gets, a_revokes):
    """a holds everything, then b joins; a gives up `a_revokes`, b is given `b_gets`."""
    return history(run_start(0.0), join("a", 0.1, tps(O, 0, 1) + tps(P, 0, 1), subscription=[O, P]),
                   join("b", 10.0, subscription=[O, P]), revoked("a", 12.0, a_revokes),
                   assigned("b", 12.5, b_gets), run_end(30.0))


def test_equal_subscriptions_over_two_topics_judge_moves_on_the_total():
    settings = multi((O, 2), (P, 2))
    v = migrations.check(_scale_out(tps(O, 1) + tps(P, 1), tps(O, 1) + tps(P, 1)), settings)
    assert v.status == "valid" and v.measurements["total_moves"] == 2, v
    v = migrations.check(_scale_out(tps(O, 0, 1) + tps(P, 1), tps(O, 0, 1) + tps(P, 1)), settings)
    assert v.status == "invalid" and v.measurements["total_moves"] == 3, v
    assert any("orders-0" in w["why"] for w in v.witnesses)


def test_differing_subscriptions_are_judged_with_the_fewest_moves_under_them():
    """orders has 5 partitions, payments 1; a and b take both, c joins for payments only. Balanced: c holds
    payments-0 and a may keep 3 (c could take none of them), so one move is enough: the closed form over equal
    subscriptions (two each, two moves) would pass an assignor that also moves orders-2 from a to b."""
    settings = multi((O, 5), (P, 1))

    def run(extra_moves=()):
        return history(run_start(0.0), join("a", 0.1, tps(O, 0, 1, 2), subscription=[O, P]),
                       join("b", 0.2, tps(O, 3, 4) + tps(P, 0), subscription=[O, P]),
                       join("c", 10.0, subscription=[P]), revoked("b", 11.0, tps(P, 0)), assigned("c", 11.5, tps(P, 0)),
                       *extra_moves, run_end(30.0))

    v = migrations.check(run(), settings)
    assert v.status == "valid", v.message
    assert v.measurements["per_transition"] == [{"at": 11.5, "moves": 1, "min_moves": 1, "members": 3, "phantoms": 0,
                                                 "subscriptions": 2}]
    v = migrations.check(run([revoked("a", 11.0, tps(O, 2)), assigned("b", 11.5, tps(O, 2))]), settings)
    assert v.status == "invalid" and "2 partitions moved where 1 would reach balance" in v.message, v.message
    assert migrations.min_moves(6, {"a", "b", "c"}, {"a": 3, "b": 3}) == 2  # what equal subscriptions would allow


def test_a_member_that_drops_a_topic_makes_the_moves_it_forces_fewest():
    """a and b read orders and payments (2 partitions each); a drops payments: it must give payments-0 up, and
    balance then gives it orders-1 (b could not keep three while a, reading orders, holds one). Two moves are
    the fewest; the equal-subscription count (two each, as before: none) would call them needless."""
    from tests.unit.histbuild import ev
    settings = multi((O, 2), (P, 2))
    h = history(run_start(0.0), join("a", 0.1, tps(O, 0) + tps(P, 0), subscription=[O, P]),
                join("b", 0.2, tps(O, 1) + tps(P, 1), subscription=[O, P]),
                ev("control", 10.0, "member", member="a", seq=1, subscription=[O]),
                revoked("a", 10.5, tps(P, 0)), revoked("b", 10.5, tps(O, 1)),
                assigned("b", 11.0, tps(P, 0)), assigned("a", 11.0, tps(O, 1)), run_end(30.0))
    v = migrations.check(h, settings)
    assert v.status == "valid", v.message
    assert v.measurements["per_transition"][-1]["min_moves"] == 2 and v.measurements["total_moves"] == 2
    assert migrations.min_moves(4, {"a", "b"}, {"a": 2, "b": 2}) == 0


# ---------------------------------------------------------------- static_membership

def test_static_restart_gets_its_partitions_of_both_topics_back():
    def run(back):
        return history(run_start(0.0), join("a", 0.1, tps(O, 0) + tps(P, 1), instance_id="i1"),
                       join("b", 0.2, tps(O, 1, 2) + tps(P, 0)),
                       revoked("a", 10.0, tps(O, 0) + tps(P, 1)), member_exit("a", 10.2),
                       join("a2", 11.0, back, instance_id="i1"), drained(30.0), run_end(31.0))

    assert static.check(run(tps(O, 0) + tps(P, 1)), multi()).status == "valid"
    v = static.check(run(tps(O, 0) + tps(P, 0)), multi())
    assert v.status == "invalid" and "['orders-0', 'payments-0'] back, held ['orders-0', 'payments-1']" in v.message


# ---------------------------------------------------------------- commit progress

def test_commit_progress_judges_every_topic_and_names_the_stalled_partition():
    """a commits orders-0 after every batch but never payments-1: the stall is on the second topic."""
    from harness.invariants import commits
    from tests.unit.histbuild import committed
    evs = [run_start(0.0), *join("a", 0.1, tps(O, 0) + tps(P, 1), subscription=[O, P])]
    for t in range(2, 38):
        evs += [processed("a", t, 0, 10 * t, 10 * t + 9, topic=O), committed("a", t + 0.01, {0: 10 * t + 10}, topic=O),
                processed("a", t + 0.5, 1, 10 * t, 10 * t + 9, topic=P)]
    v = commits.check(history(evs, run_end(40.0)), multi())
    assert v.status == "invalid", v.message
    assert "payments-1" in v.message and v.measurements["stalled_partitions"] == ["payments-1"]
    evs += [committed("a", t + 0.6, {1: 10 * t + 10}, topic=P) for t in range(2, 38)]
    assert commits.check(history(evs, run_end(40.0)), multi()).status == "valid"
