"""Every consumer checker reads the one model of causes (`harness.invariants.causes`): the timeline's disturbances and
the stable points' cuts are the view's moments, a fault reaches whom the view says (members started inside a
network fault too), and what explains a `lost` is read from it. Each port that changes what is excused has a
must-pass history (the cause present) and its buggy twin (the cause absent, the same moves), which still fails."""
from histbuild import (assigned, broker_event, effective, ev, fault_end, fault_start, history, join, lost, member_exit,
                       revoked, run_end, run_start, settings, steady, stopped)

from harness.invariants import causes, convergence, exclusive, timeline
from harness.invariants.stable_points import cut_times, stable_points


def tl_of(evs, **kw):
    return timeline.build(history(evs), settings(**kw))


def control(m: str, t: float, **kw) -> dict:
    return ev("control", t, "member", member=m, seq=1, **kw)


# -- the moments: one place says what a disturbance is
def a_bit_of_everything() -> list[dict]:
    """A join (c), a fault lifted (f1) and one never lifted (f2), a graceful stop (b, from its member_stop), a stall
    of a, a subscription control of c, a broker event."""
    return [*steady(30.0), *join("c", 5.0), fault_start(6.0, "f1", ["a"]), fault_end(7.0, "f1"),
            control("a", 8.0, stall=True), control("a", 9.0, stall=False), broker_event(10.0, 1, "killed"),
            control("c", 11.0, subscription=["t"]), ev("member_stop", 12.0, "harness", member="b"),
            revoked("b", 12.1, [2, 3]), member_exit("b", 13.0), fault_start(14.0, "f2", ["a"])]


def test_the_disturbances_are_the_causes_views_moments():
    tl = tl_of(a_bit_of_everything())
    got = [(t, e["type"]) for t, e in tl.disturbances(20.0)]
    assert got == [(0.1, "member_start"), (0.2, "member_start"), (5.0, "member_start"), (6.0, "fault_start"),
                   (7.0, "fault_end"), (10.0, "broker_event"), (13.0, "member_exit"), (14.0, "fault_start"),
                   (20.0, "fault_start")]  # f2, still active at 20: counts then, with its start event
    assert got == [(t, e["type"]) for t, e in causes.build(tl).moments(20.0)]
    assert [t for t, _ in tl.disturbances(13.0, before=True)][-1] == 10.0


def test_the_stable_points_cut_also_at_the_changes_members_make_on_their_own():
    """A stall's start and end, a subscription applied and a graceful stop's start are cuts of the stable points
    (the members make them), not disturbances of their own."""
    tl = tl_of(a_bit_of_everything())
    assert [t for t in cut_times(tl, 20.0) if t not in {t for t, _ in tl.disturbances(20.0)}] == [8.0, 9.0, 11.0, 12.0]


# -- a graceful stop is a cause from its shutdown's start, member_stop recorded or not
def stop_of_b(member_stop: bool) -> list[dict]:
    """a and b settled from 0.7 s; b stops gracefully: it revokes at 8 s, exits at 9 s; a takes t-2, t-3 at 9.5 s."""
    evs = [run_start(0.0), *join("a", 0.1, [0, 1], effective=effective()),
           *join("b", 0.2, [2, 3], effective=effective()), revoked("b", 8.0, [2, 3]), stopped("b", 8.1),
           member_exit("b", 9.0), assigned("a", 9.5, [2, 3]), run_end(20.0)]
    return evs + ([ev("member_stop", 7.9, "harness", member="b")] if member_stop else [])


def test_a_graceful_stop_without_its_member_stop_still_ends_the_assignment_before_it():
    """Its shutdown's start (its first trailing revoke, `Timeline.shutdown_start`) is the leave's start in the causes
    view, so the stretch before it, answered and quiet, is a stable point as when the member_stop was recorded (the
    stable points once cut only at a recorded member_stop, and judged nothing before b's stop)."""
    for recorded in (True, False):
        got = stable_points(tl_of(stop_of_b(recorded)))
        assert [round(p.start, 1) for p in got.points] == [0.7, 9.5], (recorded, got.why_none())


# -- a network fault reaches the members started inside it: they may be zombies
def started_inside_a_network_fault(network: bool) -> list[dict]:
    """c starts at 6 s and takes t-3 from b; a and b were reached by a network fault from 4 s to 20 s (listing them,
    the members then), when `network`. At 12 s the group gives t-3 to a while c, cut off, still holds it; c learns
    it lost it at 14 s."""
    evs = [*steady(30.0), *join("c", 6.0), revoked("b", 6.3, [3]), assigned("c", 6.5, [3]),
           assigned("a", 12.0, [3]), lost("c", 14.0, [3])]
    if network:
        evs += [fault_start(4.0, "f1", ["a", "b"], kind="network_latency"), fault_end(20.0, "f1")]
    return evs


def test_a_member_started_inside_a_network_fault_is_reached_by_it():
    tl = tl_of(started_inside_a_network_fault(True))
    assert [c.detail for c in tl.reaching("c")] == ["network_latency"]
    assert tl.affected("c", 10.0) and not tl.affected("c", 21.0)
    assert tl.taint(next(o for o in tl.by_partition[3] if o.member == "c")) == 6.5


def test_a_zombie_started_inside_a_network_fault_is_judged_by_its_tolerance():
    """Must pass: c, started inside the network fault, held t-3 2 s past a's assignment, within its tolerance (the
    faults on it, twice its session timeout, a heartbeat). Its twin without the fault, the same moves, still fails:
    c was in good standing when t-3 was given away. A pause of a and b (no network fault) does not reach c either."""
    v = exclusive.check(history(started_inside_a_network_fault(True)), settings(protocol="classic-cooperative"))
    assert v.status == "valid", v.message
    assert v.measurements["zombie_pairs"] == 1
    twin = exclusive.check(history(started_inside_a_network_fault(False)), settings(protocol="classic-cooperative"))
    assert twin.status == "invalid" and "assigned to a at 12.0s while c held it in good standing" in twin.message
    paused = [e if e["type"] != "fault_start" else {**e, "kind": "pause"} for e in started_inside_a_network_fault(True)]
    assert exclusive.check(history(paused), settings(protocol="classic-cooperative")).status == "invalid"


# -- what explains a lost is the view's
def lost_thrice(stalls: bool) -> list[dict]:
    """a loses its partitions twice and b once in one window, each after a stall of its own (controls recorded, no
    fault), when `stalls`; each gets them back a second later."""
    evs = [*steady(40.0)]
    for m, parts, s, t in (("a", [0, 1], 9.0, 12.0), ("b", [2, 3], 13.0, 16.0), ("a", [0, 1], 17.0, 20.0)):
        evs += [lost(m, t + 0.5, parts), assigned(m, t + 1.5, parts)]
        if stalls:
            evs += [control(m, s, stall=True), control(m, t, stall=False)]
    return evs


def test_a_members_own_stall_explains_its_lost():
    """Must pass: three `lost` in one window of two members are no storm when each member stalled just before (a
    `stalled` cause of the view, `convergence.EXPLAINS_LOST`). The twin without the stalls is a storm."""
    kw = {"max_poll_interval_s": 10.0}
    v = convergence.check(history(lost_thrice(True)), settings(**kw))
    assert "storm" not in v.message and v.measurements["lost_in_good_standing"] == 0, v.message
    twin = convergence.check(history(lost_thrice(False)), settings(**kw))
    assert twin.status == "invalid" and "rebalance storm: 3 partitions lost by members in good standing" in twin.message


# -- an undecided verdict names the missing fact
def test_a_fault_still_active_at_the_end_is_named_by_the_verdicts_it_leaves_undecided():
    """No settled state at the end while a fault is on: convergence_balance and coverage_liveness say which fault (the
    causes view's), not only that one is."""
    from harness.invariants import coverage
    h = history(steady(20.0), fault_start(15.0, "f1", ["a"], kind="pause"))
    for checker in (convergence, coverage):
        v = checker.check(h, settings(max_poll_interval_s=10.0))
        assert v.status == "unknown", (checker.NAME, v.message)
        assert "a fault is still active at the end (faulted (pause) on a at 15.0s on)" in v.message, v.message


# -- a graceful stop's gaps follow the stop
def stop_not_back(static: bool) -> list[dict]:
    """b (static with instance s1 when `static`: session 6 s, max.poll.interval.ms 3 s) stops gracefully at 7.9 s
    (revokes at 8 s, exits at 9 s) and never comes back; a gets t-2, t-3 at 15.5 s."""
    eff = {"session_ms": 6000, "max_poll_ms": 3000}
    iid = "s1" if static else None
    return [run_start(0.0), *join("a", 0.1, [0, 1], effective=effective(**eff)),
            *join("b", 0.2, [2, 3], instance_id=iid, effective=effective(instance_id=iid, **eff)),
            ev("member_stop", 7.9, "harness", member="b"), revoked("b", 8.0, [2, 3]), stopped("b", 8.1),
            member_exit("b", 9.0), assigned("a", 15.5, [2, 3]), run_end(30.0)]


def test_a_gap_opened_by_a_static_members_stop_is_bounded_by_its_session_timeout():
    """Must pass: a static member that stopped sends no leave; its partitions wait out its 6 s session, then a
    rebalance (2 rounds of 3 s): 7.5 s unowned is within 12 s. The gap opened at its revoke, before its exit: it once
    counted after the previous disturbance (b's join), whose bound has no session in it, and failed. The twin, a
    dynamic member (it leaves the group at once), still fails: 7.5 s is past the rebalance allowance alone (6 s)."""
    from harness.invariants import coverage
    v = coverage.check(history(stop_not_back(True)), settings())
    assert v.status == "valid", v.message
    twin = coverage.check(history(stop_not_back(False)), settings())
    assert twin.status == "invalid" and "partition 2 had no live owner for 7.500s from 8.0s" in twin.message, \
        twin.message
