"""commit_durability of Kafka Streams and Connect groups (harness/invariants/durability.py): the acknowledged commits
their members record (`group_commit`, each naming its group) judged by the reads of that group; exactly-once commits
(committed transactions) one transaction behind while their markers are written; hand-made histories, and the
verdict in each kind's judgment."""
from histbuild import TOPIC, ev, history, join, run_end, run_start, settings

from harness.invariants import judge
from harness.invariants.applies import PlanFacts, applicability, decide
from harness.invariants.durability import ACKED, NAME, check
from harness.record import schema as hs

KILL = [{"action_id": "a1", "kind": "kill_coordinator", "params": {"down_s": 2.0}}]
APP, SINK = "app", "connect-sink"


def gc(m: str, t: float, offsets: dict, *, group: str = APP, asked: float | None = None, via: str = "offset_commit") -> dict:
    """A `group_commit` acknowledged at t (asked 0.05 s before unless `asked`); `offsets`: partition -> offset."""
    return ev(ACKED, t, m, member=m, group_id=group, offsets=[[TOPIC, p, o] for p, o in sorted(offsets.items())],
              ok=True, requested_mono=t - 0.05 if asked is None else asked, via=via)


def read(t: float, offsets: dict | None, *, group: str = APP, after: str = "end", coordinator: int | None = None,
         step_kind: str | None = None, errors=()) -> dict:
    rows = None if offsets is None else [[TOPIC, p, o] for p, o in sorted(offsets.items())]
    return ev("offsets_read", t, "harness", group_id=group, after=after, step_kind=step_kind, asked_mono=t - 0.1,
              coordinator=coordinator, offsets=rows, partition_errors=[[TOPIC, p, "UNSTABLE_OFFSET_COMMIT"]
                                                                       for p in errors], tries=1, error=None)


def kill(t: float, end: float, broker: int = 2) -> list[dict]:
    return [ev("action_start", t, "harness", action_id="a1", kind="kill_coordinator", params={"down_s": 2.0}),
            ev("action_end", end, "harness", action_id="a1", kind="kill_coordinator", ok=True, error=None,
               broker=broker)]


def base(plan=()) -> list[dict]:
    return [run_start(0.0, plan=list(plan)), *join("s0", 0.5), *join("s1", 0.6)]


def judged(*items):
    return check(history(*items), settings())


def test_streams_commits_read_back_after_the_move_and_at_the_end_are_valid():
    v = judged(base(KILL), gc("s0", 2.0, {0: 10, 1: 7}), gc("s1", 2.1, {2: 3}), kill(4.0, 7.0),
               read(8.0, {0: 10, 1: 7, 2: 3}, after="a1", step_kind="kill_coordinator", coordinator=3),
               gc("s0", 9.0, {0: 15}), read(12.0, {0: 15, 1: 7, 2: 3}, coordinator=3), run_end(13.0))
    assert v.status == "valid", v.message
    assert v.measurements["judged"] == 6 and v.measurements["commits_acknowledged"] == 4


def test_a_streams_commit_rolled_back_after_the_move_is_invalid_naming_the_group():
    v = judged(base(KILL), gc("s0", 2.0, {0: 10}), gc("s0", 3.0, {0: 50}), kill(4.0, 7.0),
               read(8.0, {0: 10}, after="a1", step_kind="kill_coordinator", coordinator=3),
               read(12.0, {0: 10}, coordinator=3), run_end(13.0))
    assert v.status == "invalid"
    assert v.message.startswith("1 partition(s) lost an acknowledged commit: app: t-0: offset 50 acknowledged to s0 "
                                "at 3.000 s")
    assert "read as offset 10 (rolled back) at 8.000 s from coordinator broker 3" in v.message
    assert v.measurements["lost_partitions"] == ["app: t-0"]
    assert [w["type"] for w in v.witnesses] == [ACKED, "offsets_read"]


def test_another_groups_read_does_not_judge_a_commit():
    # a sink group's commit of partition 0, and the reads of two groups: only the sink group's read judges it
    v = judged(base(), gc("w0", 2.0, {0: 10}, group=SINK), read(12.0, {0: 3}, group="connect-other"),
               read(12.1, {0: 10}, group=SINK), run_end(13.0))
    assert v.status == "valid", v.message
    assert v.measurements["judged"] == 1
    lost = judged(base(), gc("w0", 2.0, {0: 10}, group=SINK), read(12.0, {0: 10}, group="connect-other"),
                  read(12.1, {0: 4}, group=SINK), run_end(13.0))
    assert lost.status == "invalid" and "connect-sink: t-0: offset 10" in lost.message


def test_a_group_committed_to_but_never_read_is_unknown_naming_it():
    v = judged(base(), gc("w0", 2.0, {0: 10}, group=SINK), gc("w0", 2.0, {1: 4}, group="connect-b"),
               read(12.1, {0: 10}, group=SINK), run_end(13.0))
    assert v.status == "unknown"
    assert "the read at the end of group connect-b of the group's committed offsets is missing" in v.message


def test_a_partition_the_answer_refused_is_not_judged_by_that_read():
    v = judged(base(), gc("s0", 2.0, {0: 10, 1: 4}), read(12.0, {1: 4}, errors=[0]), run_end(13.0))
    assert v.status == "valid", v.message
    assert v.measurements["refused"] == 1 and v.measurements["judged"] == 1


def test_a_transaction_one_behind_is_its_markers_pending_two_behind_is_lost():
    txns = [gc("s0", 2.0, {0: 10}, via="transaction"), gc("s0", 2.2, {0: 20}, via="transaction"),
            gc("s0", 2.4, {0: 30}, via="transaction")]
    one = judged(base(KILL), txns, kill(3.0, 5.0), read(5.5, {0: 20}, after="a1", step_kind="kill_coordinator"),
                 read(12.0, {0: 30}), run_end(13.0))
    assert one.status == "valid", one.message
    assert one.measurements["markers_pending"] == 1
    two = judged(base(KILL), txns, kill(3.0, 5.0), read(5.5, {0: 10}, after="a1", step_kind="kill_coordinator"),
                 read(12.0, {0: 30}), run_end(13.0))
    assert two.status == "invalid" and "offset 30 acknowledged to s0" in two.message


def test_a_consumer_commit_one_behind_is_lost():
    # at-least-once: the consumer's commit is acknowledged once its offsets are written: no markers to wait for
    v = judged(base(), gc("s0", 2.0, {0: 10}), gc("s0", 2.2, {0: 20}), read(12.0, {0: 10}), run_end(13.0))
    assert v.status == "invalid"


def _run_start(kind: str, applies: dict | None, **extra) -> dict:
    return run_start(0.0, kind=kind, plan=[], settings={"topic": TOPIC, "partitions": 4}, **extra,
                     **({} if applies is None else {"applies": applies}))


def test_each_kind_judges_it_and_an_older_run_skips():
    streams = {"tasks": 4, "standby_replicas": 0}
    for kind, extra in (("streams", {"streams_settings": streams}), ("connect", {"connect_settings": {}})):
        facts = PlanFacts(kind=kind, protocol="classic", members=2, sink_connectors=1)
        evs = [_run_start(kind, applicability(facts), **extra), *join("s0", 0.5), gc("s0", 2.0, {0: 10}),
               read(12.0, {0: 10}), run_end(13.0)]
        assert judge(history(evs))[NAME].status == "valid", kind
        older = [_run_start(kind, {"state_kept": {"applies": True, "why": "x"}}, **extra), *join("s0", 0.5),
                 run_end(13.0)]  # recorded before its plan made the reads: skipped, not unknown
        v = judge(history(older))[NAME]
        assert v.status == "skipped" and "recorded before its plan made" in v.message, kind


def test_the_plan_decides_where_it_applies():
    def rule(kind, **kw):
        return applicability(PlanFacts(kind=kind, protocol="classic", members=2, **kw))[NAME]["applies"]
    assert rule("streams") and rule("connect", sink_connectors=1)
    assert not rule("streams", backend="fake") and not rule("streams", team_slots="all")
    assert not rule("connect") and not rule("connect", sink_connectors=1, backend="fake")
    no_read = judged(base(), gc("s0", 2.0, {0: 10}), run_end(13.0))
    assert no_read.status == "skipped"
    assert decide(no_read, applicability(PlanFacts(kind="streams", protocol="classic", members=2))).status == "unknown"


def test_the_event_is_valid_against_the_schema(tmp_path):
    from harness.record.history import HistoryWriter
    w = HistoryWriter(tmp_path / "member-s0.jsonl", source="member", member="s0")
    for via in ("offset_commit", "transaction"):
        e = gc("s0", 2.0, {0: 10}, via=via)
        w.event(ACKED, **{k: v for k, v in e.items() if k not in ("type", "mono", "wall", "source")},
                thread="StreamThread-1-consumer")
    w.close()
    assert hs.validate_file(tmp_path / "member-s0.jsonl") == []
