"""strict_stickiness: between consecutive stable points a sticky assignor keeps each surviving member's partitions up
to its new quota."""
from histbuild import (assigned, drained, effective, ev, fault_end, fault_start, history, join, lost, member_exit, revoked, run_end,
                       run_start, settings, stable_wait)

from harness.invariants import stickiness

COOP = {**effective(), "partition.assignment.strategy": "cooperative-sticky"}
RANGE = {**effective(), "partition.assignment.strategy": "range"}


def check(evs, **kw):
    return stickiness.check(history(evs), settings(**kw))


def on(evs, eff):
    return [{**e, "effective": eff} if e["type"] == "started" else e for e in evs]


def base(eff=COOP):
    """a:[0,1] and b:[2,3] from 1 s on."""
    return [run_start(0.0), *join("a", 0.1, [0, 1], effective=eff), *join("b", 0.2, [2, 3], effective=eff),
            stable_wait(5.0)]


def end(t: float = 30.0) -> list[dict]:
    """The drain after the runner's final wait, then the end."""
    return [drained(t - 1.0), run_end(t)]


def scale_out_sticky():
    return [*base(), *join("c", 10.0, effective=COOP), revoked("a", 11.0, [1]), assigned("c", 12.0, [1]),
            *end()]


def shuffle():
    """c joins; a gives up 0 and 1 and takes 2 (b gives it up): the fewest moves would have left a its own."""
    return [*base(), *join("c", 10.0, effective=COOP), revoked("a", 11.0, [0, 1]), revoked("b", 11.0, [2]),
            assigned("c", 12.0, [0, 1]), assigned("a", 12.0, [2]), *end()]


def test_a_sticky_scale_out_is_valid():
    v = check(scale_out_sticky())
    assert v.status == "valid", v.message
    assert v.measurements["judged"] == 1 and v.measurements["transitions"] == 1


def test_a_member_that_gives_up_its_own_while_taking_another_is_invalid():
    v = check(shuffle())
    assert v.status == "invalid", v.message
    assert v.message.startswith("between the stable points at 0.7s and 12.0s a gave up [0, 1] while it took [2] "
                                "(it held 2, holds 1) under cooperative-sticky")
    assert {(w["member"], w["type"]) for w in v.witnesses} == {("a", "revoked"), ("a", "assigned")}


def test_a_kill_is_answered_after_the_session_timeout_by_gains_alone():
    """b is killed at 10 s (session 6 s, as its start recorded): the point after it begins once its session ran out,
    and a only gains. c's join after that point is a transition of its own: b's expiry, whose window the point may
    begin within by a heartbeat, is no cause of it."""
    evs = [*base(), member_exit("b", 10.0, how="kill"), assigned("a", 15.6, [2, 3]), stable_wait(19.0), *end()]
    v = check(evs)
    assert v.status == "valid" and v.measurements["judged"] == 1, v.message
    joined = [*evs[:-2], *join("c", 20.0, effective=COOP), revoked("a", 21.0, [0, 1]), assigned("c", 21.5, [0, 1]),
              *end(40.0)]
    v = check(joined)
    assert v.status == "valid" and v.measurements["judged"] == 2, v.message


def test_a_subscription_change_mid_run_is_judged_on_the_topics_still_subscribed():
    """Both members drop u at 10 s (one cause): they give its partitions up and keep their t ones: valid. Had a
    taken t-2 in place of its t-1, invalid."""
    topics = (("t", 4), ("u", 2))

    def ctl(m, t):
        return ev("control", t, "member", member=m, seq=1, subscription=["t"])

    start = [run_start(0.0), *join("a", 0.1, [("t", 0), ("t", 1), ("u", 0)], subscription=["t", "u"], effective=COOP),
             *join("b", 0.2, [("t", 2), ("t", 3), ("u", 1)], subscription=["t", "u"], effective=COOP),
             stable_wait(5.0), ctl("a", 10.0), ctl("b", 10.0)]
    kept = [revoked("a", 10.5, [("u", 0)]), revoked("b", 10.5, [("u", 1)]), *end()]
    v = check([*start, *kept], topics=topics)
    assert v.status == "valid" and v.measurements["judged"] == 1, v.message
    swapped = [revoked("a", 10.5, [("u", 0), ("t", 1)]), revoked("b", 10.5, [("u", 1), ("t", 2)]),
               assigned("a", 11.0, [("t", 2)]), assigned("b", 11.0, [("t", 1)]), *end()]
    v = check([*start, *swapped], topics=topics)
    assert v.status == "invalid" and "a gave up ['t-1'] while it took ['t-2']" in v.message, v.message


def test_the_members_recorded_assignor_wins_over_the_runs_protocol():
    """The run says classic-eager, the members' starts say cooperative-sticky: judged (invalid). The run says
    cooperative, the members ran range: not judged (skipped), where the run-wide protocol would fail it."""
    assert check(shuffle(), protocol="classic-eager").status == "invalid"
    v = check(on(shuffle(), RANGE), protocol="classic-cooperative")
    assert v.status == "skipped" and "not strictly sticky (range)" in v.message, v.message


def test_a_fenced_member_is_no_survivor_and_joins_alone_compose():
    """a is fenced (lost) before c joins: what it takes after is no swap. Two members joining between the points go
    one way (each round a survivor keeps part of what it kept): judged, and a, which took 2 it never held while giving
    up its own, breaks the rule."""
    fenced = [*base(), *join("c", 10.0, effective=COOP), lost("a", 10.6, [0, 1]), revoked("b", 11.0, [2]),
              assigned("c", 12.0, [0, 1]), assigned("a", 12.0, [2]), *end()]
    v = check(fenced)
    assert v.status == "valid" and v.measurements["judged"] == 1, v.message
    two = [*base(), *join("c", 10.0, effective=COOP), *join("d", 10.5, effective=COOP), revoked("a", 11.0, [0, 1]),
           revoked("b", 11.0, [2]), assigned("c", 12.0, [0]), assigned("d", 12.0, [1]), assigned("a", 12.0, [2]),
           *end()]
    v = check(two)
    assert v.status == "invalid" and "a gave up [0, 1] while it took [2]" in v.message, v.message
    sticky = [*base(), *join("c", 10.0, effective=COOP), *join("d", 10.5, effective=COOP), revoked("a", 11.0, [1]),
              revoked("b", 11.0, [3]), assigned("c", 12.0, [1]), assigned("d", 12.0, [3]), *end()]
    v = check(sticky)
    assert v.status == "valid" and v.measurements["judged"] == 1, v.message


def test_a_join_beside_a_kill_promises_nothing():
    """c joins while b is killed: the group may answer each with its own rebalance, and the second may give a what
    the first took from it: not judged, the causes named. Without the kill (c's join alone) the same swap fails."""
    evs = [*base(), *join("c", 10.0, effective=COOP), member_exit("b", 10.2, how="kill"), revoked("a", 16.5, [0]),
           assigned("a", 17.0, [2]), assigned("c", 17.0, [0, 3]), *end()]
    v = check(evs)
    assert v.status == "skipped" and v.measurements["several_causes"] == 1, v.message
    assert "join on c at 10.0s" in v.message and "killed (kill) on b at 10.2s" in v.message, v.message
    twin = [*base(), *join("c", 10.0, effective=COOP), revoked("a", 11.0, [0]), revoked("b", 11.0, [2, 3]),
            assigned("a", 12.0, [2]), assigned("c", 12.0, [0, 3]), *end()]
    v = check(twin)
    assert v.status == "invalid" and "a gave up [0] while it took [2]" in v.message, v.message


def test_members_that_record_no_settings_are_skipped_for_the_plan_to_decide():
    bare = [{k: v for k, v in e.items() if k != "effective"} for e in shuffle()]
    v = check(bare)
    assert v.status == "skipped" and v.measurements["unrecorded"] == 1, v.message
    assert "a's start recorded no effective settings" in v.message


def held(api: str, kind: str = "hold_request") -> list[dict]:
    """a's OffsetCommit (or `api`) held at the proxy from 9.5 s to 13 s, across c's join (race-commit-across-revocation)."""
    return [{**fault_start(9.5, "kp1", members=["a"], kind=kind), "api": api}, fault_end(13.0, "kp1")]


def test_a_commit_held_across_a_join_is_no_second_cause():
    """race-commit-across-revocation on confluent-kafka 2.10.0 was `unknown` in every run ("after several causes"):
    the held OffsetCommit starts no rebalance; c's join is the one cause. The same shuffle with it still fails."""
    v = check([*scale_out_sticky()[:-2], *held("OffsetCommit"), *end()])
    assert v.status == "valid" and v.measurements["judged"] == 1, v.message
    v = check([*shuffle()[:-2], *held("OffsetCommit"), *end()])
    assert v.status == "invalid" and "a gave up [0, 1] while it took [2]" in v.message, v.message


def test_a_request_fault_beside_the_cooperative_second_round_is_judged_with_the_join():
    """race-commit-across-revocation's shape with a fault a membership rides on (a held JoinGroup, a delayed
    Heartbeat, a commit answered with an error) on a, across c's join and the cooperative protocol's two rounds (a
    revokes 1, then c is given it): a kept its membership (no `lost`), so the union of the causes is c's join alone:
    judged, valid (it was "after several causes"). The buggy side's twin, the same fault and a giving up its own for
    b's, fails."""
    for api, kind in (("JoinGroup", "hold_request"), ("Heartbeat", "delay_request"), ("OffsetCommit", "error_response")):
        v = check([*scale_out_sticky()[:-2], *held(api, kind), *end()])
        assert v.status == "valid" and v.measurements["judged"] == 1, (api, kind, v.message)
        v = check([*shuffle()[:-2], *held(api, kind), *end()])
        assert v.status == "invalid" and "a gave up [0, 1] while it took [2]" in v.message, (api, kind, v.message)


def test_a_fault_beside_a_fenced_member_is_not_told():
    """A fault on a while b is fenced (lost) and rejoins: the fault may have made members leave and join again:
    not judged (several causes), where the join alone would be."""
    evs = [*base(), *join("c", 10.0, effective=COOP), *held("JoinGroup"), lost("b", 10.8, [2, 3]),
           revoked("a", 11.0, [1]), assigned("c", 14.0, [1, 3]), assigned("b", 14.0, [2]), *end()]
    v = check(evs)
    assert v.status == "skipped" and v.measurements["several_causes"] == 1, v.message
