"""Invariant 11, the group survives its coordinator (harness/invariants/coordinator.py): must-pass and
must-fail histories, one per way to fail (a member fenced, a rebalance beyond the one the failover
explains, an offset lost)."""
from __future__ import annotations

from histbuild import (assigned, committed, drained, ev, history, join, lost, member_exit, processed, revoked,
                       run_end, run_start)

from harness.invariants import CHECKERS, CheckSettings, check_all
from harness.invariants.coordinator import NAME, check, failovers

S = CheckSettings(topic="t", partitions=4, max_poll_interval_s=12.0)


def _action(t0: float, t1: float, kind: str = "restart_coordinator", aid: str = "a1") -> list[dict]:
    return [ev("action_start", t0, "harness", action_id=aid, kind=kind, params={}),
            ev("action_end", t1, "harness", action_id=aid, kind=kind, ok=True, error=None, broker=2)]


def _group(*extra, failover=None) -> list[dict]:
    """a:[0,1], b:[2,3], both commit; the coordinator restarts 10..13; both keep reading and committing."""
    return [run_start(0.0), *join("a", 1.0, [0, 1]), *join("b", 1.0, [2, 3]),
            processed("a", 2.0, 0, 0, 9), processed("b", 2.0, 2, 0, 9), committed("a", 2.1, {0: 10}),
            committed("b", 2.1, {2: 10}), *(failover or _action(10.0, 13.0)),
            processed("a", 15.0, 0, 10, 19), committed("a", 15.1, {0: 20}), *extra,
            drained(59.0), member_exit("a", 60.0), member_exit("b", 60.0), run_end(61.0)]


def test_registered_and_skipped_without_a_failover():
    assert CHECKERS[NAME] is check
    h = history([run_start(0.0), *join("a", 1.0, [0, 1, 2, 3]), member_exit("a", 5.0), run_end(6.0)])
    assert check(h, S).status == "skipped"


def test_valid_when_the_group_comes_back_whole():
    v = check(history(_group()), S)
    assert v.status == "valid", v.message
    assert v.measurements == {"failovers": 1, "fenced": 0, "fenced_explained": 0, "extra_rebalances": 0,
                              "offsets_lost": 0, "unserved_s": [3.0]}


def test_one_rebalance_and_a_reassignment_from_the_commit_are_explained():
    """b leaves after the aftermath; a takes 2 and 3 and starts partition 2 at b's commit: no offset lost."""
    h = history(_group(revoked("a", 14.0, [0, 1]), assigned("a", 14.5, [0, 1]),
                       *_action(50.0, 50.1, kind="scale_in", aid="a2"), revoked("b", 50.2, [2, 3]),
                       assigned("a", 51.0, [2, 3]), processed("a", 52.0, 2, 10, 12)))
    assert check(h, S).status == "valid"


def test_invalid_when_a_member_is_fenced():
    v = check(history(_group(lost("b", 14.0, [2, 3]))), S)
    assert v.status == "invalid" and "fenced" in v.message
    assert v.witnesses[0]["type"] == "lost" and v.witnesses[0]["member"] == "b"


def test_invalid_when_a_member_crashes_with_a_fatal_error():
    h = history(_group(ev("error", 14.0, "member", member="b", fatal=True, error="FENCED_MEMBER_EPOCH"),
                       member_exit("b", 14.1, how="crash", code=1)))
    v = check(h, S)
    assert v.status == "invalid" and v.measurements["fenced"] == 2


def test_invalid_when_the_group_rebalances_again_and_again():
    h = history(_group(revoked("a", 14.0, [1]), assigned("a", 15.0, [1]), revoked("a", 20.0, [1]),
                       assigned("a", 21.0, [1])))
    v = check(h, S)
    assert v.status == "invalid" and v.measurements["extra_rebalances"] == 1
    assert v.witnesses[0]["mono"] == 20.0


def test_invalid_when_a_reassigned_partition_is_read_from_below_its_last_commit():
    """The coordinator rebuilt from a compacted topic that lost b's commit (or a forgot it): a reads 2 from 0."""
    h = history(_group(*_action(50.0, 50.1, kind="scale_in", aid="a2"), revoked("b", 50.2, [2, 3]),
                       assigned("a", 51.0, [2, 3]), processed("a", 52.0, 2, 0, 12)))
    v = check(h, S)
    assert v.status == "invalid" and v.measurements["offsets_lost"] == 1
    assert [w["type"] for w in v.witnesses] == ["assigned", "processed"]
    assert "below the group's last successful commit 10" in v.witnesses[1]["why"]


def test_a_failed_commit_does_not_count_and_a_later_commit_does_not_count():
    h = history(_group(committed("b", 40.0, {3: 50}, ok=False), *_action(50.0, 50.1, kind="scale_in", aid="a2"),
                       revoked("b", 50.2, [2, 3]), assigned("a", 51.0, [2, 3]), processed("a", 52.0, 3, 0, 4),
                       committed("b", 53.0, {3: 90})))
    assert check(h, S).status == "valid"


def test_the_aftermath_ends_at_the_next_disturbance():
    """A bounce right after the failover explains the rebalances that follow it."""
    h = history(_group(*_action(14.0, 16.0, kind="bounce", aid="a2"), revoked("a", 16.5, [1]),
                       revoked("a", 20.0, [0])))
    assert check(h, S).status == "valid"
    fo = failovers(history(_group(*_action(14.0, 16.0, kind="bounce", aid="a2"))))
    assert [(a["kind"], end, nxt) for a, end, nxt in fo] == [("restart_coordinator", 13.0, 14.0)]


def test_unknown_without_member_events_and_check_all_runs_it():
    h = history([run_start(0.0), *_action(1.0, 2.0), run_end(3.0)])
    assert check(h, S).status == "unknown"
    assert check_all(history(_group()), S)[NAME].status == "valid"


def test_fencing_is_explained_when_no_coordinator_served_the_group_for_longer_than_a_session():
    """A SIGKILLed coordinator: the partition had no leader for 9 s, the members' 6 s sessions ran out."""
    from histbuild import broker_said
    loaded = broker_said(19.0, "[GroupCoordinator id=2] Finished loading of metadata from __consumer_offsets-0 "
                               "with epoch 2 in 851ms")
    h = history(_group(lost("b", 18.0, [2, 3]), loaded, failover=_action(10.0, 29.0, kind="kill_coordinator")))
    v = check(h, S)
    assert v.status == "valid", v.message
    assert v.measurements["fenced_explained"] == 1 and v.measurements["unserved_s"] == [9.0]
    quick = broker_said(12.0, "[GroupCoordinator id=2] Finished loading of metadata from __consumer_offsets-0")
    h = history(_group(lost("b", 14.0, [2, 3]), quick))
    assert check(h, S).status == "invalid"  # served again after 2 s: the fencing is not explained


def test_a_load_the_broker_gives_up_again_does_not_end_the_gap():
    """Seen on Kafka 4.4.0: the SIGKILLed coordinator (broker 1) is back before the controller fenced it, loads
    the partition as its leader still (+3.2 s), unloads it when broker 3 takes over (+8.9 s), which loads it
    (+9.1 s); the members' 6 s sessions ran out meanwhile: explained, not a violation."""
    from histbuild import broker_said

    def said(t, broker, text):
        e = broker_said(t, f"[GroupCoordinator id={broker}] {text} __consumer_offsets-0 with epoch 1")
        e["broker"] = broker
        return e
    lines = [said(13.2, 1, "Finished loading of metadata from"), said(18.9, 1, "Started unloading metadata for"),
             said(19.1, 3, "Finished loading of metadata from")]
    h = history(_group(lost("b", 16.3, [2, 3]), *lines, failover=_action(10.0, 19.0, kind="kill_coordinator")))
    v = check(h, S)
    assert v.status == "valid", v.message
    assert v.measurements["unserved_s"] == [9.1] and v.measurements["fenced_explained"] == 1
    kept = [said(13.2, 1, "Finished loading of metadata from"), said(18.9, 3, "Started unloading metadata for")]
    h = history(_group(lost("b", 16.3, [2, 3]), *kept, failover=_action(10.0, 19.0, kind="kill_coordinator")))
    assert check(h, S).status == "invalid"  # broker 1 kept serving from +3.2 s: another broker's unload is not its


def test_fencing_is_explained_by_the_fenced_members_own_session_timeout():
    """The same 9 s without a coordinator, but b ran with a 30 s session timeout (recorded at its start): its
    session did not run out, so its fencing is a violation (the run-wide 6 s would have explained it); and with a
    recorded 4 s, the run-wide 30 s does not hide the explanation."""
    from histbuild import broker_said, effective, started
    loaded = broker_said(19.0, "[GroupCoordinator id=2] Finished loading of metadata from __consumer_offsets-0 "
                               "with epoch 2 in 851ms")

    def run(session_ms, run_wide_s):
        evs = [e for e in _group(lost("b", 18.0, [2, 3]), loaded, failover=_action(10.0, 29.0, kind="kill_coordinator"))
               if not (e["type"] == "started" and e["member"] == "b")]
        evs.append(started("b", 1.1, effective=effective(session_ms=session_ms)))
        return check(history(evs), CheckSettings(topic="t", partitions=4, max_poll_interval_s=12.0,
                                                  session_timeout_s=run_wide_s))

    v = run(30000, 6.0)
    assert v.status == "invalid", v.message
    assert "session.timeout.ms=30000 given" in v.witnesses[0]["why"]
    assert run(4000, 30.0).status == "valid"


def test_a_member_restarted_with_another_session_timeout_is_judged_by_it():
    """b is bounced into b2 with a 30 s session timeout before the coordinator is killed (b ran with 4 s): 9 s
    without a coordinator does not explain b2's fencing, though b's 4 s (and the run-wide 6 s) would have."""
    from histbuild import broker_said, effective, started, stopped
    loaded = broker_said(19.0, "[GroupCoordinator id=2] Finished loading of metadata from __consumer_offsets-0 "
                               "with epoch 2 in 851ms")
    evs = [e for e in _group(revoked("b", 4.8, [2, 3]), stopped("b", 4.9), member_exit("b", 5.0),
                             *join("b2", 5.5, [2, 3]), lost("b2", 18.0, [2, 3]), loaded,
                             failover=_action(10.0, 29.0, kind="kill_coordinator"))
           if not (e["type"] == "started" and e["member"] in ("b", "b2")) and e.get("member") != "b" or
           e["type"] in ("member_start", "revoked", "stopped", "member_exit")]
    evs = [e for e in evs if not (e["type"] == "member_exit" and e["member"] == "b" and e["mono"] == 60.0)]
    evs += [started("b", 1.1, effective=effective(session_ms=4000)),
            started("b2", 5.6, effective=effective(session_ms=30000))]
    v = check(history(evs), S)
    assert v.status == "invalid", v.message
    assert "b2's session timeout 30s" in v.witnesses[0]["why"]


def test_a_failover_no_member_went_through_in_good_standing_is_unknown_not_valid():
    """Both members paused across the whole aftermath: nobody's fencing or rebalances were judged."""
    from histbuild import fault_end, fault_start
    v = check(history(_group(fault_start(9.0, "p1", ["a", "b"]), fault_end(58.0, "p1"))), S)
    assert v.status == "unknown", v.message
    assert "no member was alive and in good standing through any of them" in v.message
