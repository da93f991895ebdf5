"""A request fault that only made a request late (held or delayed at the request proxy, then sent on: `Cause.late`,
harness/invariants/causes.py) changes the group's timing, not what its assignor must produce: it cuts no window of
the stable points and leaves the stretch it came and went in a stable point, so `strict_stickiness` judges the
transition across it (and fails a real violation beside it); a request fault that answered with an error, or whose
connection closed under it, is still a cause. Setup: histories built by hand (a joins with t-0 and t-1, b with t-2 and
t-3, c joins at 5 s; quiet period 3 s), and the kept explored run fixtures/histories/explore-race-commit-2.16.1-pass
(`harness run race-commit-across-revocation --explore 5 --seed 2 --shrink-attempts 0`, Kafka 4.4.0,
classic-cooperative, confluent-kafka 2.16.1, run 5 of 5, 2026-12-07: m2's Heartbeat #6 delayed 0.19 s at 9.9 s,
before the scale-out; then `unknown`, strict_stickiness "one stable point")."""
import json
from pathlib import Path

from histbuild import assigned, drained, effective, fault_end, fault_start, history, join, member_start, revoked, \
    run_end, run_start, settings, started

from harness.invariants import causes, judge, stickiness, timeline
from harness.invariants.stable_points import stable_points
from harness.record.history import History

TOPICS = (("t", 4),)
KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "explore-race-commit-2.16.1-pass"


def late(t0: float, t1: float, *, api: str = "Heartbeat", kind: str = "delay_request", outcome: str = "forwarded",
         fid: str = "kx1") -> list[dict]:
    """a's `api` request held or delayed at the proxy (the explorer's perturbation x1) from t0 to t1."""
    return [{**fault_start(t0, fid, members=["a"], kind=kind), "api": api, "rule": "x1", "side": "request"},
            {**fault_end(t1, fid), "outcome": outcome}]


def scale_out(fault: list[dict], *, shuffle: bool = False) -> list[dict]:
    """a and b settle by 0.7 s; `fault` at 3 s; c joins at 5 s. Sticky: a gives t-1 to c. Shuffled: a gives up both
    of its own and takes b's t-2 (the fewest moves would have left a its own)."""
    eff = effective()
    evs = [run_start(0.0), *join("a", 0.1, [0, 1], subscription=["t"], effective=eff),
           *join("b", 0.2, [2, 3], subscription=["t"], effective=eff), *fault,
           member_start("c", 5.0), started("c", 5.1, subscription=["t"], effective=eff)]
    if shuffle:
        evs += [revoked("a", 6.0, [0, 1]), revoked("b", 6.0, [2]), assigned("c", 7.0, [0, 1]), assigned("a", 7.0, [2])]
    else:
        evs += [revoked("a", 6.0, [1]), assigned("c", 7.0, [1])]
    return [*evs, drained(19.0), run_end(20.0)]


def starts(evs) -> list[float]:
    return [round(p.start, 1) for p in stable_points(timeline.build(history(evs), settings(topics=TOPICS))).points]


def sticky(evs):
    return stickiness.check(history(evs), settings(topics=TOPICS))


def test_a_request_only_made_late_is_a_late_cause_and_one_that_was_not_sent_on_is_not():
    def cause(fault):
        tl = timeline.build(history(scale_out(fault)), settings(topics=TOPICS))
        (c,) = causes.build(tl).of("request")
        return c
    for outcome in ("forwarded", "seen", "event", "timeout", "lifted"):
        assert cause(late(3.0, 3.2, kind="hold_request", outcome=outcome)).late, outcome
    assert cause(late(3.0, 3.2)).late
    assert not cause(late(3.0, 3.2, outcome="closed")).late  # the connection closed under it: never went on
    assert not cause(late(3.0, 3.2, kind="error_response", outcome="answered")).late
    assert not cause(late(3.0, 3.2)[:1]).late  # never lifted: what became of it is not known


def test_a_late_request_keeps_its_moments_for_the_checkers_of_timing():
    """The disturbances (`convergence_balance`, `coverage_liveness`) still start and end at it; the stable points'
    cuts do not."""
    tl = timeline.build(history(scale_out(late(3.0, 3.2))), settings(topics=TOPICS))
    cs = causes.build(tl)
    assert {3.0, 3.2} <= {round(t, 1) for t, _ in cs.moments(20.0, changes=True)}
    assert not {3.0, 3.2} & {round(t, 1) for t, _ in cs.moments(20.0, changes=True, late=False)}


def test_a_perturbation_inside_the_settled_stretch_leaves_it_a_stable_point():
    """Cut at 3 s and 3.2 s, the stretch before c's join was two of 2.3 s and 1.8 s, neither a point (the explored
    runs' "one stable point"); a delay that went on is no cause of its own: the stretch from 0.7 s to 5 s is one."""
    assert starts(scale_out([])) == [0.7, 7.0]
    assert starts(scale_out(late(3.0, 3.2))) == [0.7, 7.0]
    assert starts(scale_out(late(3.0, 3.2, api="SyncGroup", kind="hold_request", outcome="timeout"))) == [0.7, 7.0]


def test_a_request_fault_that_answered_or_lost_its_connection_still_cuts_the_stretch():
    """The twins: an error answer, or a hold the connection's close ended, is still a cause: no point before c."""
    assert starts(scale_out(late(3.0, 3.2, kind="error_response", outcome="answered"))) == [7.0]
    assert starts(scale_out(late(3.0, 3.2, kind="hold_request", outcome="closed"))) == [7.0]


def test_a_late_request_still_on_at_the_next_cause_ends_the_stretch_where_it_began():
    """race-commit-across-revocation's own hold: a's OffsetCommit held from 4 s until after c's join. The point before
    the join ends where the hold began (the group's last stretch before it), as any fault's window."""
    evs = scale_out(late(4.0, 9.0, api="OffsetCommit", kind="hold_request", outcome="event"))
    got = stable_points(timeline.build(history(evs), settings(topics=TOPICS)))
    assert [(round(p.start, 1), round(p.end, 1)) for p in got.points] == [(0.7, 4.0), (7.0, 20.0)]


def test_stickiness_judges_the_transition_across_a_late_request_and_fails_a_real_violation_beside_it():
    v = sticky(scale_out(late(3.0, 3.2)))
    assert v.status == "valid" and v.measurements["judged"] == 1, v.message
    v = sticky(scale_out(late(3.0, 3.2), shuffle=True))
    assert v.status == "invalid", v.message
    assert v.message.startswith("between the stable points at 0.7s and 7.0s a gave up [0, 1] while it took [2]")


def test_stickiness_is_not_judged_across_a_request_fault_that_answered_with_an_error():
    """The error answer cut the settled stretch: one stable point, nothing judged (the shuffle excused)."""
    v = sticky(scale_out(late(3.0, 3.2, kind="error_response", outcome="answered"), shuffle=True))
    assert v.status == "skipped" and v.measurements["judged"] == 0, v.message
    assert "one stable point" in v.message


def test_the_kept_explored_run_on_a_correct_client_holds_every_verdict():
    """It ended `unknown` ("one stable point": the explorer's delay of m2's Heartbeat cut the stretch before the
    scale-out) before a late request stopped being a cause of its own."""
    explored = json.loads((KEPT / "explore.json").read_text())
    assert [(p["member"], p["api"], p["action"]) for p in explored["applied"]][:1] == [("m2", "Heartbeat", "delay")]
    v = judge(History.load(KEPT / "history"))
    assert all(x.status in ("valid", "skipped") for x in v.values()), \
        {n: x.message for n, x in v.items() if x.status not in ("valid", "skipped")}
    assert v["strict_stickiness"].status == "valid" and v["strict_stickiness"].measurements["judged"] == 1


def test_the_kept_explored_run_with_its_delay_ending_in_a_closed_connection_is_undecided():
    """The twin: the same history with the delay's end saying its connection closed (the request never went on):
    the stretch before the scale-out is cut again, and strict_stickiness has nothing to judge."""
    events = []
    for f in sorted((KEPT / "history").glob("*.jsonl")):
        for line in f.read_text().splitlines():
            e = json.loads(line)
            if e.get("type") == "header":
                continue
            events.append({**e, "outcome": "closed"} if e.get("type") == "fault_end" and e.get("fault_id") == "kx1"
                          else e)
    v = judge(History.from_events(events))
    assert v["strict_stickiness"].status == "unknown", v["strict_stickiness"].message
    assert "one stable point" in v["strict_stickiness"].message


def test_the_kept_explored_failure_on_the_buggy_client_still_fails():
    """The must-fail side: fixtures/histories/explore-race-commit-2.8.0-fail (`harness run
    race-commit-across-revocation --client-version 2.8.0 --explore 4 --until-fail --shrink-attempts 0 --seed 1`, run 2,
    2026-12-07; m3's OffsetCommit answer delayed 0.44 s before the scale-out, m4's LeaveGroup held at the end). Its
    perturbations only made requests late, and excuse none of the failures the race's bug made."""
    kept = KEPT.parent / "explore-race-commit-2.8.0-fail"
    explored = json.loads((kept / "explore.json").read_text())
    assert {p["outcome"] for p in explored["applied"]} <= causes.LATE_OUTCOMES
    v = judge(History.load(kept / "history"))
    failed = sorted(n for n, x in v.items() if x.status == "invalid")
    assert failed == ["bounded_migrations", "commit_progress", "convergence_balance"], {
        n: x.message for n, x in v.items() if x.status != "valid"}
    assert v["bounded_migrations"].message.startswith("at 20.1s 1 partitions moved where 0 would reach balance")
