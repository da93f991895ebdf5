"""The stable points (harness/invariants/stable_points.py) as the assignment checkers find them: which last stretch
of a window counts as an assignment the group settled on, from what the history holds, without a wait of the
runner."""
from histbuild import assigned, effective, history, join, member_exit, member_start, revoked, run_end, run_start, \
    settings, started

from harness.invariants import subscribed
from harness.invariants.stable_points import stable_points
from harness.invariants import timeline

TOPICS = (("t", 4),)


def points(evs, **kw):
    kw.setdefault("topics", TOPICS)
    return stable_points(timeline.build(history(evs), settings(**kw)))


def two(eff=None, end: float = 20.0) -> list[dict]:
    """a (t-0, t-1) and b (t-2, t-3) from 0.6 s and 0.7 s on, nothing else until the end; no wait of the runner."""
    return [run_start(0.0), *join("a", 0.1, [0, 1], subscription=["t"], effective=eff),
            *join("b", 0.2, [2, 3], subscription=["t"], effective=eff), run_end(end)]


def test_an_answer_that_assigns_everything_and_lasts_the_quiet_period_is_a_point():
    """The members run with max.poll.interval.ms 300 s, so the rebalance allowance never confirms it: the group's
    answer (every partition owned by a live member) kept for the quiet period does."""
    got = points(two(effective()))
    assert [round(p.start, 1) for p in got.points] == [0.7], got.why_none()
    assert subscribed.check(history(two(effective())), settings(topics=TOPICS)).status == "valid"


def test_a_revoke_handler_that_waits_lengthens_the_quiet_period_it_needs():
    eff = {**effective(), "revoke_delay_ms": 30000}
    got = points(two(eff))
    assert not got.points and "ended within the protocol's rebalance allowance" in got.why_none(), got.why_none()
    assert points(two(eff, end=34.0)).points  # 33.3 s of quiet: more than 3 s plus the handler's 30 s


def test_an_answer_that_leaves_a_partition_unowned_is_no_point():
    """Between a cooperative rebalance's two rounds the revoked partitions are unowned: not a settled assignment."""
    evs = [run_start(0.0), *join("a", 0.1, [0, 1], subscription=["t"], effective=effective()),
           *join("b", 0.2, [2], subscription=["t"], effective=effective()), run_end(20.0)]
    assert not points(evs).points


def test_a_cause_the_group_has_not_answered_yet_is_no_point():
    """c starts at 5 s and nothing changes until the end: the stretch since its start is the group before its answer
    (the stretch before c, answered and quiet, is a point)."""
    evs = [*two(effective())[:-1], member_start("c", 5.0), started("c", 5.1, subscription=["t"]), run_end(20.0)]
    assert [round(p.end, 1) for p in points(evs).points] == [5.0]


def killed(at: float, took_over: float) -> list[dict]:
    """b (session 6 s, heartbeat 0.5 s) is killed at `at`; a takes t-2 and t-3 over at `took_over`."""
    return [*two(effective())[:-1], member_exit("b", at, how="kill"), assigned("a", took_over, [2, 3]), run_end(30.0)]


def test_a_killed_members_partitions_are_waited_for_from_its_last_heartbeat():
    """The coordinator's session timer runs from b's last heartbeat, at most its heartbeat interval before the kill:
    an answer 5.6 s after the kill (within 6 s, past 6 - 0.5) is the group settled; one at 5 s is not."""
    assert [round(p.start, 1) for p in points(killed(10.0, 15.6)).points] == [0.7, 15.6]
    got = points(killed(10.0, 15.0))
    assert [round(p.start, 1) for p in got.points] == [0.7]
    assert got.unestablished.get("began within a departed member's session timeout") == 1, got.unestablished


def test_a_static_member_taken_up_again_is_not_waited_for():
    """b (static, instance s1, session 60 s) stops at 8 s and b2 starts with s1 at once and gets its partitions back:
    the coordinator gave b's place to b2, so the group is settled without waiting out b's session."""
    eff = effective(session_ms=60000, instance_id="s1")
    evs = [run_start(0.0), *join("a", 0.1, [0, 1], subscription=["t"], effective=effective()),
           *join("b", 0.2, [2, 3], instance_id="s1", subscription=["t"], effective=eff), member_exit("b", 8.0),
           *join("b2", 8.5, [2, 3], instance_id="s1", subscription=["t"], effective=eff), run_end(20.0)]
    assert [round(p.start, 1) for p in points(evs).points] == [0.7, 9.0]


def test_an_answer_before_a_live_member_was_given_anything_is_no_point():
    """A Java member joins seconds after its process starts under load: a gets everything at 0.6 s while b, started
    at 0.2 s, has no assignment yet; c starts at 8 s. The stretch [0.6, 8) answered a's join, not b's: no point (a
    CI run judged m1:6, m2:0 there under uniform). Once b was given its share, the quiet stretch is a point."""
    eff = effective()
    evs = [run_start(0.0), *join("a", 0.1, [0, 1, 2, 3], subscription=["t"], effective=eff),
           member_start("b", 0.2), started("b", 0.3, subscription=["t"], effective=eff)]
    got = points([*evs, member_start("c", 8.0), started("c", 8.1, subscription=["t"], effective=eff),
                  run_end(9.0)])
    assert not [p for p in got.points if p.start < 8.0], got.points
    handed = [*evs, revoked("a", 4.0, [2, 3]), assigned("b", 4.1, [2, 3]), run_end(12.0)]
    assert [round(p.start, 1) for p in points(handed).points] == [4.1], points(handed).why_none()
