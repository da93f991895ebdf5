"""streams_rebalance_cause: each generation or streams group epoch of a Streams group has a cause in the history within
its reach, and no cause sets off a storm (more rebalances than the group's recorded settings allow)."""
from histbuild import broker_said, fault_end, fault_start
from streamsbuild import T, group, history, join, run, run_end, run_start, settings, started

from harness.invariants import applies
from harness.invariants.streams import STREAMS_CHECKERS, check_streams
from harness.invariants.streams.cause import NAME, check_streams_rebalance_cause, rebalances

#: tasks=4, max.warmup.replicas 2, probing 60 s: (ceil(4 / 2) + 1) = 3 rounds, a cause reaches 180 s past its end;
#: one thread: a budget of 1 x 2 x 3 = 6 rebalances per cause
REACH_S = 180.0


def judged(*evs, collected: bool = True, **kw):
    h = history(*evs)
    if collected:
        h.headers = [{"source": "broker-log", "group_id": "g"}]
    return check_streams_rebalance_cause(h, settings(**kw))


def preparing(t: float, gen: int, reason: str = "Adding new member x with group instance id null; client reason: "
                                                 "not provided") -> dict:
    """The classic coordinator starting generation gen + 1."""
    return broker_said(t, f"[GroupCoordinator id=1 topic=__consumer_offsets partition=5] Preparing to rebalance group g "
                          f"in state Stable with old generation {gen} (reason: {reason}).")


def bumped(t: float, epoch: int, member: str = "abc") -> dict:
    """The streams protocol's coordinator bumping the group epoch (Kafka 4.1 on)."""
    return broker_said(t, f"[GroupCoordinator id=1 topic=__consumer_offsets partition=5] [GroupId g][MemberId {member}] "
                          f"Bumped streams group epoch to {epoch} with metadata hash 123 and validated topic epoch 0.")


def test_the_joins_of_started_instances_cause_the_first_generations():
    v = judged(group(end=30.0), preparing(0.5, 0), preparing(2.5, 1))
    assert v.status == "valid", v.message
    assert v.measurements["rebalances"] == {"classic": 2} and v.measurements["budget"] == 6, v.measurements


def test_a_generation_past_every_causes_reach_is_invalid_and_named():
    v = judged(group(end=400.0), preparing(0.5, 0), preparing(300.0, 1))
    assert v.status == "invalid", v.message
    assert "300.0s" in v.message and "generation 2" in v.message, v.message
    assert "reached until 180.2s" in v.message and "probing rebalances" in v.message, v.message
    assert v.witnesses[0]["type"] == "broker" and v.measurements["uncaused"] == 1


def test_a_fault_on_a_member_causes_a_later_generation():
    pause = [fault_start(295.0, "f1", members=["m1"]), fault_end(297.0, "f1")]
    v = judged(group(end=400.0), preparing(0.5, 0), *pause, preparing(300.0, 1))
    assert v.status == "valid", v.message


def test_a_member_joining_later_causes_its_generation():
    v = judged(group(end=400.0), preparing(0.5, 0), *join("m3", 290.0), *run("m3", 292.0, T[4:5]),
               preparing(291.0, 1), tasks=5)
    assert v.status == "valid", v.message


def test_a_storm_of_generations_with_no_new_cause_is_invalid_and_names_the_budget():
    storm = [preparing(3.0 + i, i) for i in range(20)]
    v = judged(group(end=60.0), *storm)
    assert v.status == "invalid", v.message
    assert "storm" in v.message and "20 from 3.0s to 22.0s" in v.message, v.message
    assert "at most 6 each" in v.message and "2 cause(s) were in effect" in v.message, v.message
    assert "1 stream thread(s)" in v.message and "ceil(4 tasks / max.warmup.replicas=2" in v.message, v.message
    assert v.measurements["storms"] == 1 and v.measurements["uncaused"] == 0, v.measurements


def test_as_many_generations_as_the_budget_allows_are_no_storm():
    v = judged(group(end=60.0), *[preparing(3.0 + i, i) for i in range(12)])
    assert v.status == "valid", v.message


def test_more_threads_recorded_allow_more_rebalances():
    """Two threads an instance (its start's `threads`): each thread is a member, a budget of 2 x 2 x 3 = 12."""
    evs = [e for e in group(end=60.0) if e["type"] != "started"] + [started("m1", 0.2, threads=2),
                                                                   started("m2", 0.3, threads=2)]
    storm = [preparing(3.0 + i, i) for i in range(20)]
    assert judged(evs, *storm).status == "valid"
    assert judged(evs, *storm, *[preparing(23.0 + i, 20 + i) for i in range(10)]).status == "invalid"


def test_streams_protocol_epochs_are_read_and_judged():
    v = judged(group(end=400.0), bumped(0.5, 1), bumped(0.6, 2), bumped(2.5, 3))
    assert v.status == "valid" and v.measurements["rebalances"] == {"streams": 3}, v.message
    bad = judged(group(end=400.0), bumped(0.5, 1), bumped(350.0, 2, member="zzz"))
    assert bad.status == "invalid" and "group epoch 2" in bad.message and "350.0s" in bad.message, bad.message


def test_another_groups_lines_and_a_consumer_groups_epochs_are_not_read():
    lines = [broker_said(1.0, "[GroupCoordinator id=1] [GroupId other][MemberId x] Bumped streams group epoch to 4 "
                              "with metadata hash 1 and validated topic epoch 0."),
             broker_said(1.0, "[GroupCoordinator id=1] [GroupId g] Bumped group epoch to 4 with metadata hash 1."),
             bumped(2.0, 7)]
    assert [(r.protocol, r.number) for r in rebalances(lines, "g")] == [("streams", 7)]


def test_a_rebalance_before_any_cause_is_invalid():
    v = judged(run_start(0.0), preparing(0.02, 0), group(end=30.0)[1:])
    assert v.status == "invalid" and "no cause began before it" in v.message, v.message


def test_without_the_facts_it_skips_and_the_plan_decides():
    v = judged(group(end=30.0), collected=False)
    assert v.status == "skipped" and "not collected" in v.message, v.message
    named = applies.decide(v, {NAME: {"applies": True, "why": "the coordinator logs"}})
    assert named.status == "unknown", named.message
    older = applies.decide(v, {"state_kept": {"applies": True, "why": "x"}})
    assert older.status == "skipped", older.message
    none = judged(group(end=30.0))  # collected, but no line of the group's rebalances
    assert none.status == "skipped" and "hold no rebalance of group g" in none.message, none.message


def test_an_unread_broker_log_is_unknown():
    from histbuild import ev
    v = judged(group(end=30.0), preparing(0.5, 0), ev("broker_log_unread", 31.0, "harness", broker=2, error="gone"))
    assert v.status == "unknown" and "broker 2" in v.message, v.message


def test_a_stream_thread_count_not_recorded_is_unknown():
    evs = [e for e in group(end=30.0) if e["type"] != "started"]
    evs += [{**started("m1", 0.2), "threads": None}, {**started("m2", 0.3), "threads": None}]
    h = history(evs, preparing(0.5, 0))
    h.headers = [{"source": "broker-log", "group_id": "g"}]
    v = check_streams(h, settings(), [NAME])[NAME]
    assert v.status == "unknown" and "started.threads" in v.message, v.message


def test_it_is_registered_for_streams_runs_and_applies_off_the_fake_backend():
    assert STREAMS_CHECKERS[NAME] is check_streams_rebalance_cause
    assert NAME in applies.RULES["streams"] and NAME in applies.FACTS_RECORDED_LATER
    on = applies.applicability(applies.PlanFacts(kind="streams", protocol="classic", members=2))
    off = applies.applicability(applies.PlanFacts(kind="streams", protocol="streams", members=2, backend="fake"))
    assert on[NAME]["applies"] is True and off[NAME]["applies"] is False


def test_the_first_violation_in_time_leads_the_message():
    """A storm at the start and a generation past every reach later: the storm is named first, the other counted."""
    v = judged(group(end=400.0), *[preparing(3.0 + i, i) for i in range(20)], preparing(300.0, 20))
    assert v.status == "invalid" and v.message.startswith("a storm of rebalances"), v.message
    assert v.message.endswith("(and 1 more)") and v.measurements == {**v.measurements, "uncaused": 1, "storms": 1}
    assert [w["mono"] for w in v.witnesses] == sorted(w["mono"] for w in v.witnesses)


def test_a_rebalance_after_the_end_is_not_read():
    v = judged(group(end=30.0), preparing(40.0, 0))
    assert v.status == "skipped" and "by the end of the run (30.0s)" in v.message, v.message


def kept(name: str):
    """The verdict of the kept real run fixtures/streams-histories/<name>.jsonl: its history's events in one file,
    without the bulk ones (processed, acked) and the output read back, which this checker does not read. Not under
    fixtures/histories, whose kept runs are judged whole by other tests (`harness check` of a Streams history reads
    a restore's `start` offset as a time there)."""
    import json
    from pathlib import Path

    from harness.invariants import run_settings
    from harness.record.history import History
    f = Path(__file__).resolve().parents[2] / "fixtures" / "streams-histories" / f"{name}.jsonl"
    h = History.from_events(json.loads(x) for x in f.read_text().splitlines() if x.strip())
    return check_streams_rebalance_cause(h, run_settings(h)[2])


def test_the_kept_clean_streams_run_has_a_cause_for_each_generation():
    # a real run (Kafka 4.4.0, classic, two instances on two tasks left alone for 130 s): the instances' starts made
    # generations 1 and 2, their final stops 3
    v = kept("streams-quiet-classic-clean")
    assert v.status == "valid", v.message
    assert v.measurements["rebalances"] == {"classic": 3} and v.measurements["budget"] == 4, v.measurements


def test_the_kept_thread_churn_run_is_a_storm_and_past_its_reach_uncaused():
    # the same scenario with --misbehave thread-churn (Kafka 4.4.0): m1 added and removed a stream thread every second
    # once it ran, 144 generations no step of the scenario caused
    v = kept("streams-thread-churn-storm")
    assert v.status == "invalid" and v.message.startswith("a storm of rebalances: 144 from 43.4s"), v.message
    assert "at most 4 each (1 stream thread(s)" in v.message and "ceil(2 tasks / max.warmup.replicas=2" in v.message
    assert v.measurements["storms"] == 1 and v.measurements["uncaused"] > 50, v.measurements
