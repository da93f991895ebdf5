"""share_rebalance_cause: each bump of a share group's epoch (the group watch's answers) has a cause in the history,
and no cause bumps it past its allowance (a storm); judged by hand-made histories and the kept share runs."""
from __future__ import annotations

from pathlib import Path

import pytest
from histbuild import broker_event, ev, fault_end, fault_start, group_settings, history, member_exit, member_start, \
    run_end, run_start

from harness.invariants import applies, judge
from harness.invariants.share import SHARE_CHECKERS, ShareCheckSettings
from harness.invariants.share.cause import NAME, check
from harness.record.history import History

KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories"
GROUP = {"share.session.timeout.ms": "6000", "share.heartbeat.interval.ms": "500",
         "share.record.lock.duration.ms": "15000"}


def answer(t: float, epoch: int, members=("m1", "m2"), parts=()) -> dict:
    """The watch's answer at t (asked 0.01 s before) with the group's epoch; `parts` the first member's partitions."""
    return ev("share_assignment", t, "harness", asked_mono=t - 0.01, interval_s=0.5, error=None, group_epoch=epoch,
              assignment_epoch=epoch, state="Stable",
              members=[{"member": m, "consumer_id": f"id-{m}", "epoch": epoch,
                        "partitions": [["t", p] for p in parts] if i == 0 else []} for i, m in enumerate(members)])


def started(m: str, t: float) -> dict:
    return ev("started", t, "member", member=m, pid=1, group_id="g", topic="t")


def base(*items, end: float = 60.0) -> list:
    """Two members started at 1 s; the watch says epoch 2 (their joins) at 3 s and again at 20 s; the run ends."""
    return [run_start(0.0, kind="share", settings={"topic": "t"}), group_settings(0.5, group=GROUP),
            member_start("m1", 1.0), started("m1", 1.5), member_start("m2", 1.0), started("m2", 1.6),
            answer(3.0, 2), answer(20.0, 2, ("m2", "m1")), *items, run_end(end)]


def judged(*items, **kw):
    return check(history(*base(*items, **kw)), ShareCheckSettings())


def test_registered_as_a_share_checker():
    assert SHARE_CHECKERS[NAME] is check


def test_joins_explain_the_first_epochs():
    v = judged()
    assert v.status == "valid", v.message
    assert v.measurements["bumps"] == 2 and v.measurements["causes"] == {"join": 2}
    assert "share.session.timeout.ms=6000 ms" in v.message and "share.heartbeat.interval.ms=500 ms" in v.message


def test_a_kill_explains_the_bump_when_its_session_expires():
    v = judged(member_exit("m1", 25.0, how="kill"), answer(31.5, 3, ("m2",)))
    assert v.status == "valid", v.message
    assert v.measurements["causes"] == {"join": 2, "killed": 1}


def test_a_broker_event_while_members_run_explains_two_bumps_a_member():
    v = judged(broker_event(25.0, 1, "kill"), answer(27.0, 6))
    assert v.status == "valid", v.message
    assert v.measurements["causes"]["broker"] == 4


def test_a_fault_on_a_member_explains_its_fence_and_rejoin():
    v = judged(fault_start(25.0, "f1", ["m1"]), fault_end(30.0, "f1"), answer(33.0, 4))
    assert v.status == "valid", v.message


def test_partitions_first_assigned_explain_one_late_bump_their_state_initialized():
    """The coordinator assigns share-partitions once their state is initialized, and bumps the epoch then, however
    long after the join (seen at 20 s on a loaded host): one bump, once per partitions never assigned before."""
    v = judged(answer(40.0, 3, parts=(0, 1)))
    assert v.status == "valid", v.message
    assert v.measurements["causes"] == {"join": 2, "initialized": 1}
    again = judged(answer(40.0, 3, parts=(0, 1)), answer(41.0, 4, parts=(0, 1)))
    assert again.status == "invalid" and again.message.startswith("a storm: group epochs 4-4 (1 bumps past the "
                                                                  "allowance of every cause in reach) were bumped "
                                                                  "between 40.0s and 41.0s")
    two = judged(answer(40.0, 4, parts=(0, 1)))
    assert two.status == "invalid" and "a storm: group epochs 4-4" in two.message
    assert "initialized (2 partitions first assigned) at 20.0-40.0s (1)" in two.message


def test_a_bump_with_nothing_in_reach_is_a_violation_naming_epoch_and_times():
    v = judged(answer(40.0, 3))
    assert v.status == "invalid"
    assert v.message.startswith("group epoch 3 was bumped between 20.0s and 40.0s with no cause in reach")
    assert "share.session.timeout.ms=6000 ms" in v.message
    assert v.measurements["uncaused"] == 1 and v.witnesses[0]["type"] == "share_assignment"


def test_an_epoch_bumped_at_every_heartbeat_is_a_storm():
    beats = [answer(2.0 + 0.5 * i, 3 + i) for i in range(1, 12)]
    v = check(history(*base(end=60.0)[:6], answer(2.0, 2), *beats, run_end(60.0)), ShareCheckSettings())
    assert v.status == "invalid"
    assert v.message.startswith("a storm: group epochs 5-14 (10 bumps past the allowance of every cause in reach)")
    assert "one per 0.5" in v.message and "share.heartbeat.interval.ms=500 ms" in v.message
    assert "join on m1 at 1.0s (2)" in v.message and "explain at most 4 bumps" in v.message
    assert v.measurements["storm"] == 10


def test_a_broker_event_before_any_member_runs_explains_nothing():
    evs = base()
    v = check(history(*evs[:2], broker_event(0.6, 1, "ready"), *evs[2:6], answer(3.0, 5), run_end(60.0)),
              ShareCheckSettings())
    assert v.status == "invalid" and "storm" in v.message and "broker" not in v.message


def test_no_epoch_in_the_history_is_skipped_and_an_older_run_is_not_failed_by_it():
    evs = [e for e in base() if e["type"] != "share_assignment"]
    v = check(history(*evs), ShareCheckSettings())
    assert v.status == "skipped" and "share_assignment" in v.message
    assert NAME in applies.FACTS_RECORDED_LATER
    older = applies.decide(v, {"share_served": {"applies": True, "why": "x"}})
    assert older.status == "skipped"
    now = applies.decide(v, {NAME: {"applies": True, "why": "the group watch records the group's epoch"}})
    assert now.status == "unknown" and "share_assignment" in now.message


def test_an_unknown_session_timeout_is_unknown_naming_it():
    evs = [group_settings(0.5, group={"share.record.lock.duration.ms": "15000"}) if e["type"] == "group_settings"
           else e for e in base()]
    v = check(history(*evs), ShareCheckSettings())
    assert v.status == "unknown" and "share.session.timeout.ms" in v.message


@pytest.mark.parametrize("kept", ["share-member-kill-assignment.jsonl", "share-leader-move-kept-count.jsonl",
                                  "share-count-kept-after-reconnect", "share-poison-chain",
                                  "share-rejoin-storm-clean.jsonl"])
def test_the_kept_share_runs_are_caused(kept):
    path = KEPT / kept
    h = History.load(path / "history") if path.is_dir() else History.from_events(
        [__import__("json").loads(x) for x in path.read_text().splitlines() if x.strip()])
    v = judge(h)[NAME]
    assert v.status == "valid", v.message
    assert v.measurements["uncaused"] == 0 and v.measurements["storm"] == 0 and v.measurements["bumps"] >= 7


def test_the_real_rejoin_storm_fails_as_a_storm_past_the_joins_allowance():
    """`harness run share-member-kill --seed 2 --misbehave share-rejoin-storm` (Kafka 4.4.0, confluent-kafka 2.16.1,
    local backend, the first version of the self-test, whose member then crashed acknowledging a record of a client
    it had closed): m1 (slot 0) was killed while working its first poll; its replacement m4 made its client anew
    every second from its first records, a leave and a join each that its history does not show. Trimmed to the
    harness's events, the members' starts, stops and errors, the coordinator's lines of the group and the record
    events of offsets 0-2. The epoch bump at 34.4 s (the partitions' share state initialized, 20 s after the
    members started on a loaded host) is explained by the partitions first assigned."""
    evs = [__import__("json").loads(x) for x in (KEPT / "share-rejoin-storm.jsonl").read_text().splitlines() if x]
    v = judge(History.from_events(evs))[NAME]
    assert v.status == "invalid"
    assert v.message.startswith("a storm: group epochs 9-19 (11 bumps past the allowance of every cause in reach) "
                                "were bumped between 56.7s and 61.5s, one per 0.43s")
    assert "explain at most 2 bumps: join on m4 at 53.0s (2)" in v.message
    assert v.measurements["uncaused"] == 0 and v.measurements["causes"]["initialized"] == 1


def test_the_clean_twin_of_the_storm_is_caused_its_late_initialization_too():
    """The same run without the self-test (`harness run share-member-kill --seed 2`), trimmed the same way: valid."""
    evs = [__import__("json").loads(x) for x in (KEPT / "share-rejoin-storm-clean.jsonl").read_text().splitlines()
           if x]
    v = judge(History.from_events(evs))[NAME]
    assert v.status == "valid", v.message
    assert v.measurements["causes"] == {"initialized": 1, "join": 6, "killed": 1, "leave": 2}
