"""The rebalance and downtime derivations of the analytics job, on hand-made ownership events (no Spark)."""
import pytest

from harness.analytics.derive import derive

T = "t"


def ev(mono, typ, member, *parts, seq=0):
    return (mono, seq, typ, member, [[T, p] for p in parts])


def test_cooperative_move_is_one_rebalance_with_its_moves_and_gap():
    evs = [ev(10.0, "assigned", "m1", 0, 1, 2, 3),
           ev(20.0, "revoked", "m1", 2, 3), ev(20.001, "assigned", "m1"), ev(20.4, "assigned", "m2", 2, 3)]
    rebs, down = derive(evs, end_mono=30.0)
    assert len(rebs) == 2
    first, second = rebs
    assert first["moves"] == 0 and first["duration_s"] == 0.0
    assert second["moves"] == 2
    assert second["duration_s"] == pytest.approx(0.4)
    assert second["longest_unowned_s"] == pytest.approx(0.4)
    assert second["members"] == 2 and second["revoked"] == 2 and second["assigned"] == 2
    by_p = {d["partition"]: d for d in down}
    assert by_p[0]["unowned_s"] == 0.0 and by_p[2]["unowned_s"] == pytest.approx(0.4)
    assert by_p[3]["unowned_stretches"] == 1


def test_eager_revoke_all_then_assign_counts_only_changed_owners():
    evs = [ev(1.0, "assigned", "m1", 0, 1), ev(1.0, "assigned", "m2", 2, 3),
           ev(5.0, "revoked", "m1", 0, 1), ev(5.01, "revoked", "m2", 2, 3),
           ev(5.5, "assigned", "m1", 0), ev(5.51, "assigned", "m2", 1, 2, 3)]
    rebs, down = derive(evs, end_mono=9.0)
    assert [r["moves"] for r in rebs] == [0, 1]
    assert rebs[1]["duration_s"] == pytest.approx(0.51)
    assert rebs[1]["longest_unowned_s"] == pytest.approx(0.51)  # partition 1: revoked 5.0, assigned 5.51
    assert {d["partition"]: round(d["unowned_s"], 6) for d in down} == {0: 0.5, 1: 0.51, 2: 0.5, 3: 0.5}


def test_quiet_gap_of_one_second_splits_bursts():
    near = [ev(1.0, "assigned", "m1", 0), ev(1.99, "assigned", "m2", 1)]
    far = [ev(1.0, "assigned", "m1", 0), ev(2.0, "assigned", "m2", 1)]
    assert len(derive(near)[0]) == 1
    assert len(derive(far)[0]) == 2


def test_killed_member_gap_counts_from_its_exit():
    evs = [ev(1.0, "assigned", "m1", 0), ev(1.0, "assigned", "m2", 1),
           ev(3.0, "member_exit", "m2"), ev(9.0, "assigned", "m1", 1)]
    rebs, down = derive(evs, end_mono=12.0)
    assert len(rebs) == 2
    assert rebs[1]["moves"] == 0  # nobody owned partition 1 just before the burst
    assert rebs[1]["longest_unowned_s"] == pytest.approx(6.0)
    assert rebs[1]["longest_unowned_partition"] == 1
    assert {d["partition"]: d["unowned_s"] for d in down} == {0: 0.0, 1: pytest.approx(6.0)}


def test_unowned_at_the_end_counts_to_the_end_and_lost_drops_ownership():
    evs = [ev(1.0, "assigned", "m1", 0, 1), ev(4.0, "lost", "m1", 1)]
    rebs, down = derive(evs, end_mono=10.0)
    assert len(rebs) == 2 and rebs[1]["lost"] == 1
    assert {d["partition"]: d["unowned_s"] for d in down} == {0: 0.0, 1: pytest.approx(6.0)}


def test_no_ownership_events_give_nothing():
    assert derive([(1.0, 0, "run_start", None, None)]) == ([], [])


def test_streams_task_hand_off_counts_as_a_move_with_its_restore_as_downtime():
    # m1 runs tasks 0_0 and 0_1; after a probing rebalance m2 takes 0_1 over once its warmup is done
    evs = [ev(1.0, "task_active", "m1", 0), ev(1.2, "task_active", "m1", 1),
           ev(70.0, "task_active_end", "m1", 1), ev(70.8, "task_active", "m2", 1)]
    rebs, down = derive(evs, end_mono=80.0)
    assert len(rebs) == 2
    assert rebs[1]["moves"] == 1 and rebs[1]["revoked"] == 1 and rebs[1]["assigned"] == 1
    assert rebs[1]["longest_unowned_s"] == pytest.approx(0.8)
    assert {d["partition"]: round(d["unowned_s"], 6) for d in down} == {0: 0.0, 1: 0.8}


def test_streams_instance_killed_leaves_its_partitions_unprocessed_until_restored_elsewhere():
    evs = [ev(1.0, "task_active", "m1", 0), ev(1.0, "task_active", "m2", 1),
           ev(10.0, "member_exit", "m2"), ev(25.0, "task_active", "m1", 1)]  # session timeout, then a cold restore
    rebs, down = derive(evs, end_mono=30.0)
    assert rebs[-1]["longest_unowned_s"] == pytest.approx(15.0)
    assert {d["partition"]: d["unowned_s"] for d in down} == {0: 0.0, 1: pytest.approx(15.0)}


def test_other_streams_events_are_not_ownership():
    evs = [ev(1.0, "task_active", "m1", 0), ev(5.0, "restore_start", "m2", 0), ev(6.0, "standby_start", "m2", 0)]
    rebs, down = derive(evs, end_mono=10.0)
    assert len(rebs) == 1 and rebs[0]["events"] == 1
