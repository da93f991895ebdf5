"""exclusive_ownership: one owner in good standing per partition; zombies bounded; no processing without holding."""
from histbuild import (assigned, committed, effective, fault_end, fault_start, history, join, lost, member_exit, stopped,
                       processed, revoked, run_end, settings, started, steady)

from harness.invariants import exclusive


def check(h, **kw):
    return exclusive.check(h, settings(**kw))


def scale_out():
    """c joins; cooperative: a and b revoke one partition each, then c is assigned both."""
    return [*steady(30.0), *join("c", 10.0), revoked("a", 11.0, [1]), revoked("b", 11.0, [3]),
            assigned("c", 12.0, [1, 3]), processed("a", 5.0, 1, 0, 9), processed("c", 13.0, 1, 10, 19),
            processed("b", 10.5, 3, 0, 4)]


def test_cooperative_scale_out_is_valid():
    v = check(history(scale_out()))
    assert v.status == "valid", v.message
    assert v.measurements["double_assignments"] == 0


def test_assigned_while_another_holds_is_invalid():
    # the "claim-extra" member: b records partition 0, which a holds and never revoked
    h = history(steady(), assigned("b", 5.0, [0]))
    v = check(h)
    assert v.status == "invalid"
    assert "partition 0" in v.message
    whys = [(w["type"], w["member"]) for w in v.witnesses]
    assert whys == [("assigned", "a"), ("assigned", "b")]
    assert all("why" in w for w in v.witnesses)


def test_double_assignment_is_invalid_under_eager_too():
    v = check(history(steady(), assigned("b", 5.0, [0])), protocol="classic-eager")
    assert v.status == "invalid"


def test_revoke_before_assign_is_cooperative_only():
    # b is under a network fault when it is given partition 0; a (clean) never revoked it
    evs = [*steady(), fault_start(4.0, "f1", ["b"], kind="network_latency"), assigned("b", 5.0, [0]),
           revoked("a", 5.5, [0]), fault_end(8.0, "f1")]
    assert check(history(evs), protocol="classic-cooperative").status == "invalid"
    assert check(history(evs), protocol="consumer").status == "invalid"
    assert check(history(evs), protocol="classic-eager").status == "valid"


def test_processing_after_own_revoke_is_invalid():
    evs = [*scale_out(), processed("a", 14.0, 1, 10, 12)]
    v = check(history(evs))
    assert v.status == "invalid"
    assert "after its own revoked" in v.message
    assert {w["type"] for w in v.witnesses} == {"revoked", "processed"}
    assert v.measurements["processed_without_holding"] == 1


def test_processing_a_partition_never_assigned_is_invalid():
    v = check(history(steady(), processed("a", 5.0, 3, 0, 0)))
    assert v.status == "invalid"
    assert "without ever being assigned" in v.message


def test_the_verdict_says_how_many_witnesses_it_found_past_those_it_keeps():
    """A known finding is held against every witness (harness/findings/match.py): twelve processed events of a
    partition never assigned are twelve witnesses, all kept; fifteen are more than the verdict keeps, and it says so."""
    twelve = check(history(steady(), *[processed("a", 5.0 + i / 10, 3, i, i) for i in range(12)]))
    assert len(twelve.witnesses) == 12 and twelve.found == 12
    fifteen = check(history(steady(), *[processed("a", 5.0 + i / 10, 3, i, i) for i in range(15)]))
    assert len(fifteen.witnesses) == 12 and fifteen.found == 15
    assert fifteen.measurements["processed_without_holding"] == 15


def long_pause(zombie_extra=(), lost_at=15.5):
    """a is paused 5..15 (longer than the session timeout); b gets a's partitions at 12; a learns at lost_at."""
    return [*steady(30.0), processed("a", 4.0, 0, 0, 9), fault_start(5.0, "f1", ["a"]),
            assigned("b", 12.0, [0, 1]), fault_end(15.0, "f1"), *zombie_extra, lost("a", lost_at, [0, 1])]


def test_zombie_window_beyond_tolerance_is_invalid():
    """Paused 5..15, b has its partitions from 12; a holds on until 40: 28 s, past its 10 s of pause + twice the
    run's 6 s session timeout + a 0.5 s heartbeat (22.5 s)."""
    evs = [e for e in long_pause(lost_at=40.0) if e["type"] != "run_end"] + [run_end(60.0)]
    v = check(history(evs))
    assert v.status == "invalid"
    assert "zombie a" in v.message and "tolerance 22.5s" in v.message and "10.0s of faults on a" in v.message
    assert v.measurements["max_zombie_window_s"] == 28.0
    assert v.measurements["max_zombie_running_s"] == 25.0  # paused until 15, lost at 40
    assert {w["type"] for w in v.witnesses} == {"assigned", "lost"}


def test_zombie_learning_on_resume_is_within_its_tolerance():
    """a learns it lost the partitions 0.5 s after its pause ends: the protocol's own window, not a violation."""
    v = check(history(long_pause()))
    assert v.status == "valid", v.message
    assert v.measurements["max_zombie_window_s"] == 3.5


def zombie_with_settings(session_ms: int, lost_at: float = 27.0):
    """long_pause, where a's client runs with its own session timeout (recorded at its start)."""
    evs = [e for e in long_pause(lost_at=lost_at) if e["type"] not in ("run_end", "started") or e.get("member") == "b"]
    return history(evs, started("a", 0.2, effective=effective(session_ms=session_ms)), run_end(60.0))


def test_zombie_tolerance_follows_the_members_own_session_timeout():
    """a ran with a 2 s session timeout: 10 + 2 * 2 + 0.5 = 14.5 s of tolerance, and 15 s is past it; the run-wide
    6 s (22.5 s of tolerance) would have passed it."""
    v = check(zombie_with_settings(2000), session_timeout_s=6.0)
    assert v.status == "invalid", v.message
    assert "tolerance 14.5s" in v.message and "session.timeout.ms=2000 given" in v.message
    assert check(zombie_with_settings(6000), session_timeout_s=2.0).status == "valid"


def test_zombie_window_within_tolerance_is_valid():
    v = check(history(long_pause([processed("a", 15.2, 0, 10, 12)])))
    assert v.status == "valid", v.message
    assert v.measurements["zombie_pairs"] == 2
    assert v.measurements["zombie_batches_after_reassign"] == 1


def test_zombie_commit_after_new_owner_is_invalid_even_within_tolerance():
    v = check(history(long_pause([committed("a", 15.3, {0: 13})])))
    assert v.status == "invalid"
    assert "committed partition 0" in v.message
    assert v.measurements["zombie_commits_after_reassign"] == 1


def test_zombie_commit_asked_for_after_reassignment_is_invalid():
    c = {**committed("a", 15.3, {0: 13}), "requested_mono": 15.25}
    v = check(history(long_pause([c])))
    assert v.status == "invalid"
    assert v.measurements["zombie_commits_after_reassign"] == 1


def test_commit_in_flight_across_the_pause_is_not_judged():
    """Asked for at 4.9 (before the pause and b's assignment at 12), answered at 15.01 after the resume."""
    c = {**committed("a", 15.01, {0: 10}), "requested_mono": 4.9}
    v = check(history(long_pause([c])))
    assert v.status == "valid", v.message
    assert v.measurements["zombie_commits_in_flight"] == 1


def test_fenced_zombie_commit_is_fine():
    v = check(history(long_pause([committed("a", 15.3, {0: 13}, ok=False)])))
    assert v.status == "valid", v.message


def test_zombie_never_giving_up_is_measured_to_the_end():
    evs = [e for e in long_pause() if e["type"] not in ("lost", "run_end")] + [run_end(40.0)]
    v = check(history(evs))
    assert v.status == "invalid"
    assert v.measurements["max_zombie_window_s"] == 28.0  # 12 .. run_end 40


def test_killed_members_last_lines_are_not_ownership():
    # the kill is recorded just before SIGKILL: a's last lines may come after its exit
    evs = [*steady(), member_exit("a", 5.0, how="kill"), processed("a", 5.001, 0, 0, 3),
           assigned("a", 5.002, [3]), assigned("b", 12.0, [0, 1])]
    v = check(history(evs))
    assert v.status == "valid", v.message
    assert v.measurements["ignored_after_exit"] == 1


def test_nothing_assigned_is_unknown():
    v = check(history(join("a", 0.0), run_end(10.0)))
    assert v.status == "unknown"


def test_empty_history_is_unknown():
    assert check(history(run_end(3.0))).status == "unknown"


def test_a_zombie_restarted_with_other_settings_is_judged_by_the_new_ones():
    """a is bounced into a2 with a 2 s session timeout (a ran with 30 s); a2 is paused and holds on 15 s after b
    took its partitions: past 10 + 2 * 2 + 0.5 s, though a's 30 s (and the run-wide 30 s) would have allowed it."""
    def run(a2_session_ms):
        evs = [e for e in steady(60.0) if not (e["type"] == "started" and e["member"] == "a")]
        evs += [started("a", 0.2, effective=effective(session_ms=30000)), revoked("a", 1.8, [0, 1]), stopped("a", 1.9),
                member_exit("a", 2.0), *join("a2", 2.5, [0, 1], effective=effective(session_ms=a2_session_ms)),
                fault_start(5.0, "f1", ["a2"]), assigned("b", 12.0, [0, 1]), fault_end(15.0, "f1"),
                lost("a2", 27.0, [0, 1])]
        return check(history(evs), session_timeout_s=30.0)

    v = run(2000)
    assert v.status == "invalid" and "tolerance 14.5s" in v.message, v.message
    assert run(30000).status == "valid"
