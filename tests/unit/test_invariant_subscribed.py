"""subscribed_only: at each stable point, members own only partitions of topics they subscribe to, and every
subscribed partition has a subscriber owning it."""
from histbuild import assigned, drained, effective, ev, history, join, revoked, run_end, run_start, settings, stable_wait

from harness.invariants import subscribed

TOPICS = (("t", 4), ("u", 2))


def check(evs, **kw):
    kw.setdefault("topics", TOPICS)
    return subscribed.check(history(evs), settings(**kw))


def control(m: str, t: float, subscription: list[str]) -> dict:
    return ev("control", t, "member", member=m, seq=1, subscription=list(subscription))


def two_topics() -> list[dict]:
    """a and b subscribe to t and u; a holds t-0, t-1, u-0 and b t-2, t-3, u-1 from 1 s on."""
    return [run_start(0.0), *join("a", 0.1, [("t", 0), ("t", 1), ("u", 0)], subscription=["t", "u"]),
            *join("b", 0.2, [("t", 2), ("t", 3), ("u", 1)], subscription=["t", "^u$"]), stable_wait(5.0)]


def end(t: float = 20.0) -> list[dict]:
    """The run's end: the drain after the runner's final wait, then the end."""
    return [drained(t - 1.0), run_end(t)]


def test_a_whole_assignment_is_valid():
    v = check([*two_topics(), *end()])
    assert v.status == "valid", v.message
    assert v.measurements["points"] == 1 and v.measurements["misplaced"] == 0


def test_a_member_left_with_a_topic_it_dropped_is_invalid():
    """b drops u at 10 s (a subscription change mid-run) and keeps u-1: the point after it is broken."""
    v = check([*two_topics(), control("b", 10.0, ["t"]), *end()])
    assert v.status == "invalid", v.message
    assert v.message.startswith("at 10.0s b held u-1 of topic u, which its subscription ['t'] does not take")
    assert v.measurements["misplaced"] == 1 and v.witnesses[0]["type"] == "assigned"


def test_the_dropped_topic_handed_over_is_valid():
    """The same change carried out: b gives u-1 up and a, which still subscribes to u, takes it."""
    v = check([*two_topics(), control("b", 10.0, ["t"]), revoked("b", 10.5, [("u", 1)]),
               assigned("a", 11.0, [("u", 1)]), *end()])
    assert v.status == "valid", v.message
    assert v.measurements["points"] == 2


def test_a_subscribed_partition_no_member_holds_is_invalid():
    v = check([*two_topics(), control("b", 10.0, ["t"]), revoked("b", 10.5, [("u", 1)]), *end()])
    assert v.status == "invalid", v.message
    assert "u-1 of topic u was held by no member while a subscribed to it" in v.message
    assert v.witnesses[0]["type"] == "revoked"


def test_the_members_own_subscriptions_win_over_the_runs_topics():
    """Both members subscribe to t alone (their started events) and nobody holds u: valid. Judged by the run's
    topics (every member taking every topic, as a member that wrote no subscription does), u would be unowned."""
    evs = [run_start(0.0), *join("a", 0.1, [("t", 0), ("t", 1)], subscription=["t"]),
           *join("b", 0.2, [("t", 2), ("t", 3)], subscription=["^t$"]), *end()]
    assert check(evs).status == "valid"
    run_wide = [{k: v for k, v in e.items() if k != "subscription"} for e in evs]
    v = check(run_wide)
    assert v.status == "invalid" and "u-0 of topic u was held by no member" in v.message, v.message


def test_no_stable_point_is_unknown():
    """Causes every second: no window's last stretch lasts the quiet period, and no wait of the runner saw one."""
    evs = [run_start(0.0), *join("a", 0.1, [("t", 0), ("t", 1), ("u", 0)], subscription=["t", "u"])]
    evs += [x for i in range(5) for x in join(f"m{i}", 1.0 + i, [], subscription=["t"])]
    v = check([*evs, run_end(6.5)])
    assert v.status == "unknown" and "no stable point to judge" in v.message, v.message
    assert "ended within the quiet period (3s)" in v.message


def test_a_wait_of_the_runner_that_found_the_group_stable_makes_a_short_stretch_a_point():
    evs = [*two_topics()[:-1], stable_wait(2.0), control("b", 2.5, ["t"]), *end()]
    v = check(evs, quiet_period_s=5.0)
    assert v.status == "invalid" and v.measurements["points"] == 2, v.message


def test_a_quiet_stretch_is_a_point_only_past_the_protocols_rebalance_allowance():
    """No wait of the runner and no drain: the assignment quiet from 1 s to 20 s is a stable point only when it outlasts
    two rounds (cooperative) of the members' max.poll.interval.ms as their starts recorded it: not under 300 s (a member
    may take that long to carry out a revocation), yes under 5 s."""
    def run(max_poll_ms):
        eff = effective(max_poll_ms=max_poll_ms)
        return [run_start(0.0), *join("a", 0.1, [("t", 0), ("t", 1), ("u", 0)], subscription=["t", "u"], effective=eff),
                *join("b", 0.2, [("t", 2), ("t", 3)], subscription=["t", "u"], effective=eff), run_end(20.0)]

    v = check(run(300000))
    assert v.status == "unknown" and "ended within the protocol's rebalance allowance" in v.message, v.message
    v = check(run(5000))
    assert v.status == "invalid" and "u-1 of topic u was held by no member" in v.message, v.message


def unsubscribed(m: str, t: float, subscription: list[str], held) -> list[dict]:
    """m changes its subscription by unsubscribe() then subscribe() at t: every partition it held revoked first (it
    left the group), its `control` event once it subscribed again."""
    return [revoked(m, t, held), ev("control", t + 0.05, "member", member=m, seq=1, subscription=list(subscription),
                                    subscribe_by="unsubscribe-subscribe")]


def test_an_unsubscribe_then_subscribe_to_one_topic_judged_by_the_new_subscription():
    """b leaves t and u (unsubscribe) and joins again on u alone: it gets u-0 and u-1, a takes every partition of t."""
    evs = [*two_topics(), *unsubscribed("b", 10.0, ["u"], [("t", 2), ("t", 3), ("u", 1)]),
           revoked("a", 10.3, [("u", 0)]), assigned("a", 10.8, [("t", 2), ("t", 3)]),
           assigned("b", 10.8, [("u", 0), ("u", 1)]), *end()]
    v = check(evs)
    assert v.status == "valid", v.message
    assert v.measurements["points"] == 1  # the assignment after the change (from 10.8 s), judged by b's ['u']


def test_an_unsubscribe_then_subscribe_whose_member_is_given_a_dropped_topic_again_is_invalid():
    """The same change, but the group gives b back t-3 when it joins afresh: b no longer subscribes to t."""
    evs = [*two_topics(), *unsubscribed("b", 10.0, ["u"], [("t", 2), ("t", 3), ("u", 1)]),
           revoked("a", 10.3, [("u", 0)]), assigned("a", 10.8, [("t", 2)]),
           assigned("b", 10.8, [("t", 3), ("u", 0), ("u", 1)]), *end()]
    v = check(evs)
    assert v.status == "invalid", v.message
    assert v.message.startswith("at 10.8s b held t-3 of topic t, which its subscription ['u'] does not take"), v.message
