"""commit_durability (harness/invariants/durability.py): every acknowledged commit is what each later read of the
group's committed offsets returns, unless a later acknowledged commit replaced it; hand-made histories."""
from histbuild import TOPIC, committed, ev, history, join, run_end, run_start, settings

from harness.base import steps
from harness.invariants import CHECKERS
from harness.invariants.applies import PlanFacts, applicability, decide
from harness.invariants.durability import NAME, check, planned_reads, reads_after
from harness.record import schema as hs

KILL = [{"action_id": "a1", "kind": "kill_coordinator", "params": {"down_s": 2.0}}]


def read(t: float, offsets: dict | None, *, after: str = "end", coordinator: int | None = 2, asked: float | None = None,
         error: str | None = None, step_kind: str | None = None) -> dict:
    """An `offsets_read` event answered at t (asked 0.1 s before unless `asked`); `offsets`: partition -> offset."""
    rows = None if offsets is None else [[TOPIC, p, o] for p, o in sorted(offsets.items())]
    return ev("offsets_read", t, "harness", group_id="g", after=after, step_kind=step_kind,
              asked_mono=t - 0.1 if asked is None else asked, coordinator=coordinator, offsets=rows,
              partition_errors=[], tries=1, error=error)


def kill(t: float, end: float, broker: int = 2) -> list[dict]:
    return [ev("action_start", t, "harness", action_id="a1", kind="kill_coordinator", params={"down_s": 2.0}),
            ev("action_end", end, "harness", action_id="a1", kind="kill_coordinator", ok=True, error=None,
               broker=broker)]


def base(plan=(), start: float = 0.0) -> list[dict]:
    return [run_start(start, plan=list(plan)), *join("a", 0.5, [0, 1]), *join("b", 0.6, [2, 3])]


def judge(*items):
    return check(history(*items), settings())


def test_registered_after_commit_progress():
    names = list(CHECKERS)
    assert names.index(NAME) == names.index("commit_progress") + 1


def test_a_commit_kept_is_valid():
    v = judge(base(), committed("a", 2.0, {0: 10, 1: 7}), committed("b", 2.1, {2: 3}),
              read(10.0, {0: 10, 1: 7, 2: 3}), run_end(11.0))
    assert v.status == "valid", v.message
    assert v.measurements["judged"] == 3 and v.measurements["lost"] == 0


def test_a_commit_replaced_by_a_later_one_is_valid_even_lower():
    # b took partition 0 over and committed a lower offset later: the coordinator keeps the last one it took
    v = judge(base(), committed("a", 2.0, {0: 10}), committed("b", 4.0, {0: 8}), read(10.0, {0: 8}), run_end(11.0))
    assert v.status == "valid", v.message


def test_the_replaced_offset_read_back_is_a_lost_commit():
    v = judge(base(), committed("a", 2.0, {0: 12}), committed("b", 4.0, {0: 10}), read(10.0, {0: 12}), run_end(11.0))
    assert v.status == "invalid"
    assert "offset 10 acknowledged to b" in v.message and "offset 12 (an earlier commit's)" in v.message


def test_a_commit_in_flight_while_read_may_show_either_way():
    commit = {**committed("a", 10.3, {0: 20}), "requested_mono": 9.95}  # asked before the read's answer, acked after
    for shown in (10, 20):
        v = judge(base(), committed("a", 2.0, {0: 10}), commit, read(10.1, {0: shown}, asked=10.0), run_end(11.0))
        assert v.status == "valid", (shown, v.message)
    assert v.measurements["kept_in_flight"] == 1


def test_a_commit_asked_after_the_read_answered_does_not_excuse_a_lower_offset():
    late = {**committed("a", 10.5, {0: 5}), "requested_mono": 10.4}
    v = judge(base(), committed("a", 2.0, {0: 10}), late, read(10.1, {0: 5}, asked=10.0), read(12.0, {0: 5}),
              run_end(13.0))
    assert v.status == "invalid"
    assert "read as offset 5 (rolled back) at 10.100 s" in v.message


def test_an_offset_above_every_recorded_commit_is_kept():
    v = judge(base(), committed("a", 2.0, {0: 10}), read(10.0, {0: 15}), run_end(11.0))
    assert v.status == "valid", v.message
    assert v.measurements["above_recorded"] == 1


def test_a_commit_rolled_back_after_a_coordinator_move_is_invalid_naming_everything():
    evs = [base(KILL, start=1.0), committed("a", 3.0, {0: 50}), committed("a", 3.5, {1: 9}), kill(4.0, 7.0, broker=2),
           read(8.0, {0: 40, 1: 9}, after="a1", coordinator=3, step_kind="kill_coordinator"),
           read(12.0, {0: 40, 1: 9}, coordinator=3), run_end(13.0)]
    v = judge(evs)
    assert v.status == "invalid"
    m = v.message
    assert m.startswith("1 partition(s) lost an acknowledged commit: t-0: offset 50 acknowledged to a at 2.000 s")
    assert "coordinator broker 2 (the one kill_coordinator acted on at 6.000 s)" in m
    assert "read as offset 40 (rolled back) at 7.000 s from coordinator broker 3" in m
    assert "(the read after step a1 (kill_coordinator))" in m
    assert v.measurements["lost_partitions"] == ["t-0"] and v.measurements["lost"] == 2  # both reads show it lost
    assert [w["type"] for w in v.witnesses] == ["committed", "offsets_read"]


def test_the_coordinator_before_is_the_last_read_answered_before_the_commit():
    evs = [base(KILL), read(2.5, {}, after="a1", coordinator=1), committed("a", 3.0, {0: 50}),
           read(9.0, {}, coordinator=3), run_end(10.0)]
    v = judge(evs)
    assert v.status == "invalid"
    assert "(coordinator broker 1 (read at 2.500 s)), then read as nothing at 9.000 s from coordinator broker 3" \
        in v.message


def test_a_partition_read_empty_is_a_lost_commit():
    v = judge(base(), committed("a", 2.0, {0: 10, 1: 4}), read(10.0, {1: 4}), run_end(11.0))
    assert v.status == "invalid"
    assert "t-0: offset 10 acknowledged to a" in v.message and "read as nothing" in v.message


def test_a_failed_commit_is_not_acknowledged():
    v = judge(base(), committed("a", 2.0, {0: 10}), committed("a", 3.0, {0: 30}, ok=False), read(10.0, {0: 10}),
              run_end(11.0))
    assert v.status == "valid", v.message


def test_a_read_missing_where_the_plan_put_one_is_unknown_naming_it():
    v = judge(base(KILL), committed("a", 2.0, {0: 10}), kill(4.0, 7.0), read(12.0, {0: 10}), run_end(13.0))
    assert v.status == "unknown"
    assert "the read after step a1 (kill_coordinator) of the group's committed offsets is missing" in v.message


def test_a_read_with_no_answer_is_unknown_naming_the_error():
    v = judge(base(), committed("a", 2.0, {0: 10}), read(12.0, None, coordinator=None, error="COORDINATOR_NOT_AVAILABLE"),
              run_end(13.0))
    assert v.status == "unknown"
    assert "the read at the end had no answer from the coordinator at 12.000 s: COORDINATOR_NOT_AVAILABLE" in v.message


def test_a_lost_commit_is_invalid_even_when_another_read_is_missing():
    v = judge(base(KILL), committed("a", 2.0, {0: 10}), kill(4.0, 7.0), read(12.0, {0: 3}), run_end(13.0))
    assert v.status == "invalid"


def test_no_read_after_any_commit_is_unknown():
    v = judge(base(), read(1.5, {}), committed("a", 2.0, {0: 10}), run_end(13.0))
    assert v.status == "unknown" and "no read of the group's offsets came after an acknowledged commit" in v.message


def test_no_read_or_no_commit_is_skipped_and_the_plan_decides():
    no_read = judge(base(), committed("a", 2.0, {0: 10}), run_end(13.0))
    no_commit = judge(base(), read(12.0, {}), run_end(13.0))
    assert (no_read.status, no_commit.status) == ("skipped", "skipped")
    assert "no read of the group's committed offsets" in no_read.message
    real = applicability(PlanFacts(kind="consumer", protocol="consumer", members=2))
    fake = applicability(PlanFacts(kind="consumer", protocol="consumer", members=2, backend="fake"))
    assert real[NAME]["applies"] and not fake[NAME]["applies"]
    assert decide(no_read, real).status == "unknown"
    assert decide(no_read, fake).status == "skipped"


def test_reads_are_planned_after_steps_on_brokers_and_at_the_end():
    assert reads_after(steps.Step.KILL_COORDINATOR) and reads_after(steps.Step.WAIT_OFFSETS_COMPACTED)
    assert not reads_after(steps.Step.KILL_MEMBER) and not reads_after(steps.Step.SLEEP)
    plan = [*KILL, {"action_id": "a2", "kind": "sleep", "params": {}},
            {"action_id": "a3", "kind": "broker_bounce", "params": {"broker": 1}}]
    assert planned_reads(history(run_start(0.0, plan=plan))) == [("a1", "kill_coordinator"),
                                                                 ("a3", "broker_bounce"), ("end", None)]


def test_the_event_is_valid_against_the_schema(tmp_path):
    from harness.record.history import HistoryWriter
    w = HistoryWriter(tmp_path / "harness.jsonl", source="harness", member=None, backend="local")
    e = read(12.0, {0: 10}, after="a1", step_kind="kill_coordinator")
    w.event("offsets_read", **{k: v for k, v in e.items() if k not in ("type", "mono", "wall", "source")})
    w.event("offsets_read", **{**{k: v for k, v in read(13.0, None, error="x").items()
                                  if k not in ("type", "mono", "wall", "source")}, "coordinator": None})
    w.close()
    assert hs.validate_file(tmp_path / "harness.jsonl") == []


def test_a_run_recorded_before_the_reads_skips_but_one_that_planned_them_is_unknown():
    no_read = judge(base(), committed("a", 2.0, {0: 10}), run_end(13.0))
    older = {"coordinator_claims": {"applies": True, "why": "real brokers"}}  # recorded before commit_durability
    assert decide(no_read, older).status == "skipped"
    assert "recorded before its plan made this invariant's facts" in decide(no_read, older).message
    assert decide(no_read, None).status == "unknown"  # no applies at all: never a pass by skipping
    assert decide(no_read, {**older, NAME: {"applies": True, "why": "x"}}).status == "unknown"


def test_a_read_after_a_step_with_no_answer_is_judged_by_the_later_answered_read():
    """The coordinator restarted and loading: the read after the step had no answer; the read at the end still comes
    after the step, so what the step lost and nothing replaced shows there."""
    no_answer = read(8.0, None, after="a1", coordinator=None, step_kind="kill_coordinator", error="Local: Timed out")
    v = judge(base(KILL), committed("a", 2.0, {0: 10}), kill(4.0, 7.0), no_answer, read(12.0, {0: 10}), run_end(13.0))
    assert v.status == "valid", v.message
    assert "1 read(s) had no answer, a later answered read of the group came after each" in v.message
    lost = judge(base(KILL), committed("a", 2.0, {0: 10}), kill(4.0, 7.0), no_answer, read(12.0, {0: 3}),
                 run_end(13.0))
    assert lost.status == "invalid"  # the twin: the later read shows the commit rolled back


def _loads(h, *loads: tuple[float, int, int]):
    """The history with the brokers' finished loads of the group's partition of __consumer_offsets (t, broker, leader
    epoch) and the broker-log header naming that partition."""
    from histbuild import broker_said
    h2 = history(*h, *[broker_said(t, f"[GroupCoordinator id={b}] Finished loading of metadata from "
                                      f"__consumer_offsets-0 with epoch {e} in 10ms where 2ms was spent in the "
                                      f"scheduler.", broker=b) for t, b, e in loads])
    h2.headers = [{"source": "broker-log", "group_id": "g", "offsets_partition": 0}]
    return h2


def test_a_read_answered_by_a_deposed_coordinator_is_unanswered_and_the_later_read_judges():
    """A clean clone's docker broker-partition run: broker 3, cut off from the others, answered the read after the
    step with its stale record (offset 51) after broker 1 had loaded the group at a newer leader epoch; the end read
    from broker 1 showed the acknowledged commit. The deposed broker's answer says nothing; the later read judges."""
    plan = [{"action_id": "a1", "kind": "broker_partition", "params": {"broker": "coordinator", "duration_s": 5}}]
    cut = [ev("action_start", 3.0, "harness", action_id="a1", kind="broker_partition", params=plan[0]["params"]),
           ev("action_end", 9.0, "harness", action_id="a1", kind="broker_partition", ok=True, error=None, broker=3)]
    stale = read(9.5, {0: 51}, after="a1", coordinator=3, step_kind="broker_partition")
    evs = [base(plan), committed("a", 2.0, {0: 51}), cut, committed("a", 7.0, {0: 195}), stale]
    loads = [(0.2, 3, 0), (5.0, 1, 1)]
    v = check(_loads([evs, read(12.0, {0: 195}, coordinator=1), run_end(13.0)], *loads), settings())
    assert v.status == "valid", v.message
    assert v.measurements["reads_deposed"] == 1 and "1 read(s) had no answer (1 from a deposed coordinator)" in v.message
    lost = check(_loads([evs, read(12.0, {0: 51}, coordinator=1), run_end(13.0)], *loads), settings())
    assert lost.status == "invalid", lost.message  # the twin: the coordinator itself shows the commit rolled back
    alone = check(_loads([evs, run_end(13.0)], *loads), settings())
    assert alone.status == "unknown" and "answered by a deposed coordinator: broker 3 had loaded" in alone.message
    same = check(_loads([evs, read(12.0, {0: 195}, coordinator=1), run_end(13.0)], (0.2, 3, 0), (5.0, 3, 1)),
                 settings())
    assert same.status == "invalid", same.message  # broker 3 loaded it again itself: its answer is the coordinator's
