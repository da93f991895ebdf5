"""The Streams checkers judge warmups, standbys and task moves by the assignor settings the instances and the brokers
recorded at the moment judged (`harness/invariants/streams/assignor.py`), not by the run's: each history here gets
the opposite verdict from the run's settings, and one changes its settings half way."""
from streamsbuild import T, ev, group, history, join, move, restore, run, settings, state, tasks

from harness.invariants import streams
from harness.invariants.streams.assignor import assignors_at
from harness.invariants.streams.view import view


def recorded(evs: list[dict], effective: dict, members=None) -> list[dict]:
    """The history with the `started` events of `members` (all by default) recording `effective` settings."""
    return [dict(e, effective={k: str(v) for k, v in effective.items()})
            if e["type"] == "started" and (members is None or e["member"] in members) else e for e in evs]


def cold_move():
    """m3 joins and gets 0_1 active at once, restoring 50000 records, while m1 ran it caught up (lag 0)."""
    return [*group(40.0), *join("m3", 10.0), *move("m1", 10.5, T[:2], [T[0]]), *move("m2", 10.5, T[2:4], T[2:4]),
            restore("m3", 11.6, T[1], 50000), *run("m3", 12.0, [T[1]])]


def warm(evs, **kw):
    return streams.check_warmup_before_active(history(evs), settings(**kw))


def test_a_restore_within_the_instances_recovery_lag_is_warm_whatever_the_runs():
    assert warm(cold_move(), acceptable_recovery_lag=1000).status == "invalid"
    v = warm(recorded(cold_move(), {"acceptable.recovery.lag": 100000}), acceptable_recovery_lag=1000)
    assert v.status == "valid", v.message
    assert v.measurements["warm"] == 1


def test_a_cold_restore_beyond_the_instances_recovery_lag_fails_where_the_runs_would_pass():
    assert warm(cold_move(), acceptable_recovery_lag=100000).status == "valid"
    v = warm(recorded(cold_move(), {"acceptable.recovery.lag": 1000}), acceptable_recovery_lag=100000)
    assert v.status == "invalid"
    assert "lag 0 <= acceptable.recovery.lag=1000 (m1, m2, m3: the Streams settings at its start" in v.message


def test_instances_that_disagree_break_the_rule_only_when_every_one_would():
    """Half a settings roll: m1 and m2 run a lag of 100000, the new m3 one of 1000; the leader is not recorded, so
    a restore that one of them allows is not held against the run. Once all three run 1000, it is."""
    half = recorded(recorded(cold_move(), {"acceptable.recovery.lag": 100000}, {"m1", "m2"}),
                    {"acceptable.recovery.lag": 1000}, {"m3"})
    v = warm(half, acceptable_recovery_lag=100000)
    assert v.status == "valid", v.message
    vw = view(history(half))
    cands = assignors_at(vw, settings(), 11.6)
    assert sorted(a.acceptable_recovery_lag for a in cands) == [1000, 100000]
    assert all("the leader unknown" in a.source for a in cands)
    done = recorded(cold_move(), {"acceptable.recovery.lag": 1000})
    assert warm(done, acceptable_recovery_lag=100000).status == "invalid"


def standby(evs, **kw):
    return streams.check_standby_placement(history(evs), settings(**kw))


def missing_standby():
    return [*group(standby=True), tasks("m2", 10.0, T[2:4], [T[0]])]


def test_standbys_are_wanted_by_the_instances_num_standby_replicas():
    assert standby(missing_standby(), standby_replicas=0, max_warmup_replicas=4).status == "valid"
    v = standby(recorded(missing_standby(), {"num.standby.replicas": 1}), standby_replicas=0, max_warmup_replicas=4)
    assert v.status == "invalid"
    assert "task 0_1 has 0 standbys (none), want 1 (of num.standby.replicas=1 (m1, m2: the Streams settings" in v.message


def test_under_the_streams_protocol_standbys_are_the_groups():
    """The instances' own num.standby.replicas says 0; the group config the brokers reported says 1 (KIP-1071)."""
    evs = [dict(e, protocol="streams") if e["type"] == "started" else e
           for e in recorded(missing_standby(), {"num.standby.replicas": 0})]
    evs.append(ev("group_settings", 0.05, "harness", group={"streams.num.standby.replicas": "1"},
                  broker={"group.streams.num.standby.replicas": "0"}))
    v = standby(evs, standby_replicas=0, max_warmup_replicas=4)
    assert v.status == "invalid"
    assert "group config streams.num.standby.replicas=1" in v.message


def scale_out_swapping():
    """m3 joins m1 (0_0, 0_1) and m2 (0_2, 0_3): 3 active tasks move where 1 would balance."""
    return [*group(200.0), *join("m3", 10.0), *run("m3", 10.5), *move("m1", 70.0, T[:2], [T[0]]),
            *move("m3", 70.0, [], [T[1]]), *move("m1", 71.0, [T[0]], [T[2]]), *move("m2", 71.0, T[2:4], [T[0], T[3]])]


def test_task_moves_are_bounded_by_the_instances_max_warmup_replicas():
    moves = streams.check_bounded_task_moves
    assert moves(history(scale_out_swapping()), settings(max_warmup_replicas=1)).status == "valid"  # 3 <= 2 + 1
    v = moves(history(recorded(scale_out_swapping(), {"max.warmup.replicas": 0})), settings(max_warmup_replicas=1))
    assert v.status == "invalid"
    assert "bound 2: 2 x 1 + max.warmup.replicas; assignor: max.warmup.replicas=0 (m1, m2, m3: the Streams" in v.message
    assert moves(history(recorded(scale_out_swapping(), {"max.warmup.replicas": 1})),
                 settings(max_warmup_replicas=0)).status == "valid"


def busy_scale_out():
    """The scale-out above with three more rebalances of m1's own on the way: 5 rebalances for 3 moves."""
    return [*scale_out_swapping(), *[state("m1", t, "REBALANCING", "RUNNING") for t in (30.0, 40.0, 50.0)],
            *[state("m1", t + 0.5, "RUNNING", "REBALANCING") for t in (30.0, 40.0, 50.0)]]


def test_probing_rebalances_are_bounded_by_the_instances_max_warmup_replicas():
    """3 moves take ceil(3 / max.warmup.replicas) probing rounds, two rebalances per round with the change's own:
    5 rebalances fit a warmup limit of 1 (bound 8) or 2 (6), not 3 (4)."""
    probe = streams.check_probing_convergence
    assert probe(history(busy_scale_out()), settings(max_warmup_replicas=1)).status == "valid"
    v = probe(history(recorded(busy_scale_out(), {"max.warmup.replicas": 3})), settings(max_warmup_replicas=1))
    assert v.status == "invalid"
    assert "5 rebalances until the assignment settled at 71.6s, bound 4 for 3 moves (2 per round" in v.message
    assert "(assignor: max.warmup.replicas=3 (m1, m2, m3: the Streams settings at its start" in v.message
    assert probe(history(recorded(busy_scale_out(), {"max.warmup.replicas": 1})),
                 settings(max_warmup_replicas=3)).status == "valid"


def test_probing_judged_by_the_loosest_while_a_roll_is_half_done():
    """m1 and m2 run max.warmup.replicas=3, the joining m3 runs 1: either may lead, so the bound is 2 x (3 + 1)."""
    half = recorded(recorded(busy_scale_out(), {"max.warmup.replicas": 3}, {"m1", "m2"}),
                    {"max.warmup.replicas": 1}, {"m3"})
    v = streams.check_probing_convergence(history(half), settings(max_warmup_replicas=3))
    assert v.status == "valid", v.message


def test_standbys_wanted_until_a_roll_turns_them_off():
    """m1 and m2 run one standby and 0_1 has none at 10: invalid. The same gap once m3 joins with none configured
    (half a roll that turns standbys off): the leader may be m3, so it is not held against the run."""
    before = recorded(missing_standby(), {"num.standby.replicas": 1})
    assert standby(before, standby_replicas=0, max_warmup_replicas=4).status == "invalid"
    evs = recorded([*group(60.0, standby=True), *join("m3", 5.0), *run("m3", 5.5), tasks("m2", 10.0, T[2:4], [T[0]])],
                   {"num.standby.replicas": 1}, {"m1", "m2"})
    evs = recorded(evs, {"num.standby.replicas": 0}, {"m3"})
    v = standby(evs, standby_replicas=1, max_warmup_replicas=4)
    assert v.status == "valid", v.message


def test_task_moves_judged_by_the_loosest_while_a_roll_is_half_done():
    """m1 and m2 run max.warmup.replicas=1, the joining m3 runs 0... in a roll from 0 to 1: either may lead, so 3
    moves for 1 fewest fit 2 x 1 + 1; once every instance runs 0 they do not."""
    moves = streams.check_bounded_task_moves
    half = recorded(recorded(scale_out_swapping(), {"max.warmup.replicas": 1}, {"m1", "m2"}),
                    {"max.warmup.replicas": 0}, {"m3"})
    v = moves(history(half), settings(max_warmup_replicas=0))
    assert v.status == "valid", v.message
    assert moves(history(recorded(scale_out_swapping(), {"max.warmup.replicas": 0})),
                 settings(max_warmup_replicas=1)).status == "invalid"
