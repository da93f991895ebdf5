"""Verify: the matrix cell newest-rack-partition-consumer (rack r1, broker 2, cut off 7.4 s to 23.0 s; Kafka 4.4.0,
consumer protocol, confluent-kafka 2.16.1, commit_mode sync) shows kafka-848-heartbeat-behind-stalled-commit: its
two failing verdicts' witnesses all lie inside the finding's marks, and a run without the marks, or with a witness
outside them, is not excused.

Setup: the kept run fixtures/histories/rack-partition-consumer-heartbeats-behind-commit (`harness matrix`,
2026-12-08, seed 1170108724; docs/findings.md, "Kafka 4.x (consumer protocol): heartbeats held behind a commit the
cut broker stalled"): broker 3 coordinated the group; each member's log says its ConsumerGroupHeartbeat timed out
"possibly held back by preceeding OffsetCommitRequest" after the cut began; broker 3 expired m1 (31.4 s), m3
(35.2 s) and m2 (41.8 s) though they were polling, and gave m2's partitions 4 and 5 to m1 (42.0 s) before m2
learnt it (its `lost`, 44.3 s).
Then: exclusive_ownership and rebalance_cause are invalid, each witness inside a mark; convergence_balance and
group_settled end undecided naming no witness of their own (only the brokers' lines as context), so the run as
judged now is not excused (an undecided verdict without witnesses never is): the near miss says so.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from harness.findings import registry
from harness.findings.evidence import expired_behind_stalled_commit, member_ids
from harness.findings.match import outside
from harness.invariants import judge
from harness.invariants.brokers import BROKER_CONTEXT
from harness.record.history import History

KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "rack-partition-consumer-heartbeats-behind-commit"
ID = "kafka-848-heartbeat-behind-stalled-commit"
FAILED = ("exclusive_ownership", "rebalance_cause")
UNDECIDED = ("convergence_balance", "group_settled")


@pytest.fixture(scope="module")
def verdicts():
    return judge(History.load(KEPT / "history"))


def _copy(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(KEPT, run)
    return run


def test_the_kept_run_fails_as_the_matrix_recorded_it(verdicts):
    assert [n for n, v in verdicts.items() if v.status == "invalid"] == list(FAILED)
    assert sorted(n for n, v in verdicts.items() if v.status == "unknown") == sorted(UNDECIDED)
    assert "m1 was alive, untouched by any fault and polling" in verdicts["rebalance_cause"].message


def test_the_mark_is_the_three_expired_members_each_after_a_held_back_heartbeat():
    (mark,) = expired_behind_stalled_commit(KEPT)  # one stall: the three members' windows overlap
    assert sorted(mark.members) == ["m1", "m2", "m3"] and {p for _, p in mark.partitions} == set(range(6))
    assert "the coordinator expired it at 41.8 s holding" in mark.says and mark.says.count("expired it at") == 3


def test_every_witness_of_the_failing_verdicts_lies_inside_the_marks(verdicts):
    marks, ids = expired_behind_stalled_commit(KEPT), member_ids(KEPT)
    for name in FAILED:
        assert outside(verdicts[name], marks, ids) is None, name


def test_as_judged_now_the_undecided_verdicts_without_witnesses_keep_it_unexcused(verdicts):
    assert registry.known(KEPT, verdicts) is None
    assert any(m.startswith(f"not {ID}: ") and "has no witness to compare" in m
               for m in registry.near_misses(KEPT, verdicts))


def test_with_the_expiries_as_the_undecided_verdicts_witnesses_the_run_is_the_known_finding(verdicts):
    expiries = tuple(w for w in verdicts["rebalance_cause"].witnesses if w.get("why") != BROKER_CONTEXT)
    assert len(expiries) == 3
    v = dict(verdicts)
    for name in UNDECIDED:
        v[name] = dataclasses.replace(v[name], witnesses=expiries)
    excuse = registry.known(KEPT, v)
    assert excuse is not None and excuse.finding.id == ID, registry.near_misses(KEPT, v)


def test_without_the_held_back_heartbeats_in_the_members_logs_there_is_no_mark(tmp_path, verdicts):
    run = _copy(tmp_path)
    for log in (run / "logs").glob("member-*.log"):
        log.write_text("".join(line for line in log.read_text().splitlines(keepends=True)
                               if "possibly held back" not in line))
    assert expired_behind_stalled_commit(run) == []
    assert any(m == f"not {ID}: its mark is not in the history" for m in registry.near_misses(run, verdicts))


def test_a_member_that_heard_from_the_group_after_its_held_back_heartbeat_gets_no_mark(tmp_path):
    run = _copy(tmp_path)
    path = run / "history" / "member-m2.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    # m2 told of a new assignment at 40 s, between its last held-back heartbeat (35.3 s) and its expiry (41.8 s)
    start = next(e for line in (run / "history" / "harness.jsonl").read_text().splitlines()
                 if (e := json.loads(line)).get("type") == "run_start")
    heard = {"type": "assigned", "mono": start["mono"] + 40.0, "wall": start["wall"] + 40.0, "member": "m2",
             "partitions": []}
    at = next(i for i, line in enumerate(lines) if i and json.loads(line).get("mono", 0) > heard["mono"])
    path.write_text("".join(lines[:at] + [json.dumps(heard) + "\n"] + lines[at:]))
    assert [sorted(k.members) for k in expired_behind_stalled_commit(run)] == [["m1", "m3"]]


def test_a_handing_over_after_the_expired_members_learnt_it_lies_outside(verdicts):
    v = verdicts["exclusive_ownership"]
    (mark,) = expired_behind_stalled_commit(KEPT)
    later = [dict(w, mono=mark.end + 5.0) if w.get("member") == "m1" else w for w in v.witnesses]
    why = outside(dataclasses.replace(v, witnesses=tuple(later)), [mark], member_ids(KEPT))
    assert why is not None and "lies outside every mark" in why
