"""`group_settled`: one rule for every kind of group (harness/invariants/settled.py). The runner's stable wait that
timed out while the history shows the group never settled fails the run once the wait outlasted the protocol's
bound for the last disturbance, and is unknown before; a group not settled at the end likewise. Each kind gives the
rule its settled stretches (by its one balance rule) and its bound; here each kind has a history that must fail,
one that must pass and one the rule cannot decide.
"""
import connectbuild as cb
import streamsbuild as sb
from histbuild import drained, ev, history, join, member_exit, run_end, run_start, settings, steady
from test_invariant_share import base, consumed, verdicts as share_verdicts

from harness.invariants import judge, settled
from harness.invariants.connect import check_connect
from harness.invariants.streams import check_streams


def wait_timeout(t: float, timeout_s: float = 60.0, what: str = "after action") -> dict:
    return ev("wait_timeout", t, "harness", what=what, timeout_s=timeout_s)


# -- consumer groups
def test_a_consumer_group_the_runner_waited_for_in_vain_past_the_bound_fails():
    """b's partitions stay unowned while the runner waits 60 s (6 s session + 2 rounds of 5 s allowed), then the run
    moves on (c joins) and settles."""
    evs = [*steady(150.0), member_exit("b", 10.0, how="kill"), wait_timeout(70.0), *join("c", 71.0, [2, 3])]
    v = settled.check(history(evs), settings(max_poll_interval_s=5.0))
    assert v.status == "invalid", v.message
    assert "the runner waited 60s for a settled group (after action)" in v.message
    assert "the protocol allows 16.0s" in v.message and v.witnesses[0]["type"] == "wait_timeout"
    w = v.witnesses[0]  # it names what was not settled when the runner gave up: b's partitions, by nobody then
    assert w["partitions"] == [["t", 2], ["t", 3]] and "t-2 held by no live member" in w["why"], w


def test_a_consumer_groups_wait_within_the_bound_is_unknown():
    evs = [*steady(150.0), member_exit("b", 10.0, how="kill"), wait_timeout(25.0, timeout_s=15.0),
           *join("c", 26.0, [2, 3])]
    v = settled.check(history(evs), settings(max_poll_interval_s=100.0))
    assert v.status == "unknown", v.message
    assert "the runner waited 15s" in v.message and "the history cannot tell" in v.message


def test_a_wait_during_which_the_history_shows_the_group_settled_is_the_runners_view_not_the_group():
    evs = [*steady(150.0), wait_timeout(70.0)]
    v = settled.check(history(evs), settings(max_poll_interval_s=5.0))
    assert v.status == "valid", v.message
    assert v.measurements["waits_timed_out"] == 1 and v.measurements["waits_settled_in_history"] == 1


def test_a_consumer_group_not_settled_at_the_end_past_the_bound_fails():
    evs = [run_start(0.0), *join("a", 0.1, [0, 1]), *join("b", 0.2, [2]), drained(30.0), run_end(40.0)]
    v = settled.check(history(evs), settings(max_poll_interval_s=5.0))
    assert v.status == "invalid" and "not settled at the end" in v.message, v.message


def test_judge_runs_it_for_a_consumer_run():
    assert "group_settled" in judge(history(steady()))


# -- Kafka Streams
def _streams_churn(end: float = 400.0, until: float | None = None) -> list[dict]:
    """Two instances settle at 2, then m1 rebalances every 2 s until `until` (to near the end: a thread added and
    removed again); its bound after the start: 2 probing rounds of 60 s (4 tasks, 4 warmups at a time)."""
    evs = [*sb.group(end), ev("state_seeded", 0.05, "harness", changelog="c", changelog_partitions=4,
                              records_per_task=1000)]
    for k in range(5, int(until or end - 10), 2):
        evs += [sb.state("m1", k, "REBALANCING", "RUNNING"), sb.state("m1", k + 1.5, "RUNNING", "REBALANCING")]
    return evs


def test_a_streams_group_that_never_settles_fails_past_its_bound():
    evs = _streams_churn() + [wait_timeout(320.0, timeout_s=300.0, what="final"), drained(330.0),
                              ev("member_stop", 380.0, "harness", member="m1")]
    v = check_streams(sb.history(evs), sb.settings(max_warmup_replicas=4, probing_interval_s=60.0),
                      ["group_settled"])["group_settled"]
    assert v.status == "invalid", v.message
    assert "the runner waited 300s for a settled group (final)" in v.message
    assert "2 probing rebalances of 60s" in v.message


def test_a_streams_group_settled_through_its_run_passes():
    evs = [*sb.group(60.0), drained(40.0), ev("member_stop", 45.0, "harness", member="m1")]
    v = check_streams(sb.history(evs), sb.settings(), ["group_settled"])["group_settled"]
    assert v.status == "valid", v.message


def test_a_streams_wait_shorter_than_its_bound_is_unknown():
    evs = _streams_churn(200.0, until=100.0) + [wait_timeout(70.0, timeout_s=60.0), drained(180.0),
                                   ev("member_stop", 185.0, "harness", member="m1")]
    v = check_streams(sb.history(evs), sb.settings(max_warmup_replicas=4), ["group_settled"])["group_settled"]
    assert v.status == "unknown" and "the history cannot tell" in v.message, v.message


# -- Kafka Connect
def test_a_connect_cluster_with_a_task_never_started_fails_past_its_bound():
    evs = [e for e in cb.cluster(200.0) if not (e["type"] == "connect_task_started" and e.get("task") == 3)]
    evs += [wait_timeout(100.0), drained(150.0), cb.member_stop("m1", 160.0)]
    v = check_connect(cb.history(evs), cb.settings(rebalance_timeout_s=10.0), ["group_settled"])["group_settled"]
    assert v.status == "invalid", v.message
    assert "2 rebalance rounds of 10s (the run's rebalance_timeout_s=10s: m1's start recorded no " \
           "rebalance.timeout.ms)" in v.message


def test_a_connect_cluster_is_judged_by_the_rebalance_timeout_its_workers_recorded():
    """The workers ran with 60 s (not the run's 10 s): the wait 99 s after the start is within 2 rounds of it
    (unknown); the end, 159 s after, is not (invalid)."""
    cfg = {"rebalance.timeout.ms": "60000", "session.timeout.ms": "6000"}
    evs = [e for e in cb.cluster(200.0) if not (e["type"] == "connect_task_started" and e.get("task") == 3)
           and e["type"] not in ("member_start", "started")]
    evs += [x for m, p in (("m1", 1), ("m2", 2), ("m3", 3)) for x in cb.worker(m, 1.0, p, config=cfg)]
    wait = [wait_timeout(100.0)]
    v = check_connect(cb.history(evs + wait + [drained(105.0), cb.member_stop("m1", 110.0)]),
                      cb.settings(rebalance_timeout_s=10.0), ["group_settled"])["group_settled"]
    assert v.status == "unknown", v.message
    assert "the runner waited 60s" in v.message
    assert "the protocol allows 120.0s there (2 rebalance rounds of 60s (m1's rebalance.timeout.ms=60000))" in v.message
    v = check_connect(cb.history(evs + [drained(150.0), cb.member_stop("m1", 160.0)]),
                      cb.settings(rebalance_timeout_s=10.0), ["group_settled"])["group_settled"]
    assert v.status == "invalid" and "not settled at the end" in v.message, v.message


def test_a_balanced_connect_cluster_passes():
    evs = [*cb.cluster(200.0), drained(150.0), cb.member_stop("m1", 160.0)]
    v = check_connect(cb.history(evs), cb.settings(), ["group_settled"])["group_settled"]
    assert v.status == "valid", v.message


# -- share groups
def test_a_share_member_never_delivered_fails_past_the_bound():
    """m2 joins and is never delivered a record while the runner waits 60 s (the bound: heartbeat 0.5 s + lock 5 s)."""
    h = [base(), consumed("m1", 2.0, 0), wait_timeout(62.0), ev("member_stop", 56.0, "harness", member="m1")]
    v = share_verdicts(h, names=["group_settled"])["group_settled"]
    assert v.status == "invalid", v.message
    assert "heartbeat interval=500 ms" in v.message and "record lock=5000 ms" in v.message


def test_a_share_group_whose_members_were_all_delivered_passes():
    h = [base(), consumed("m1", 2.0, 0), consumed("m2", 2.5, 1), ev("member_stop", 56.0, "harness", member="m1")]
    v = share_verdicts(h, names=["group_settled"])["group_settled"]
    assert v.status == "valid", v.message
