"""Verify: a run that shows librdkafka-848-first-assignment-not-reconciled is the known finding even where the
coordinator's handing over of the fenced member's partition fell between two samples of the coordinator
(coordinator_claims undecided, its witness the holding inside the finding's mark); an undecided verdict whose
witness lies outside the mark, or that names none, still keeps the run unexcused.

Setup: the kept run fixtures/histories/kafka-4.2-rolling-bounce-fence-between-samples (`harness matrix`,
rolling-bounce, Kafka 4.2, consumer protocol, 2026-12-07, load average near 30): m1 kept its first assignment
(partitions 3, 4, 5) unchanged, was fenced at 26.3 s for not moving off epoch 2 within its 20 s rebalance timeout;
m2 held partition 3 from 26.5 s to 26.8 s, between two answers of the coordinator (5.1 s and 26.9 s).
Then: rebalance_cause invalid, coordinator_claims unknown naming m2's holding; the finding matches.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.findings import registry
from harness.invariants import judge
from harness.record.history import History

KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "kafka-4.2-rolling-bounce-fence-between-samples"
ID = "librdkafka-848-first-assignment-not-reconciled"


def _verdicts():
    return judge(History.load(KEPT / "history"))


def test_the_kept_run_is_the_known_finding_with_the_holding_between_samples_inside_its_mark():
    v = _verdicts()
    assert v["rebalance_cause"].status == "invalid", v["rebalance_cause"].message
    claims = v["coordinator_claims"]
    assert claims.status == "unknown" and "m2 held partition 3 from 26.5s to 26.8s" in claims.message
    assert [w["member"] for w in claims.witnesses if w.get("source") != "broker-log"] == ["m2"]
    excuse = registry.known(KEPT, v)
    assert excuse is not None and excuse.finding.id == ID, registry.near_misses(KEPT, v)


def test_an_undecided_holding_outside_the_mark_keeps_the_run_unexcused():
    v = _verdicts()
    w = dict(v["coordinator_claims"].witnesses[0])
    w["partitions"] = [[t, 0] for t, _ in w["partitions"]]  # the same holding, of a partition m1 never held
    v["coordinator_claims"] = dataclasses.replace(v["coordinator_claims"], witnesses=(w,))
    assert registry.known(KEPT, v) is None
    assert any("coordinator_claims's witness" in m for m in registry.near_misses(KEPT, v))


def test_an_undecided_verdict_without_witnesses_keeps_the_run_unexcused():
    v = _verdicts()
    v["coordinator_claims"] = dataclasses.replace(v["coordinator_claims"], witnesses=())
    assert registry.known(KEPT, v) is None
    assert any("coordinator_claims has no witness" in m for m in registry.near_misses(KEPT, v))


def test_an_undecided_invariant_outside_the_finding_keeps_the_run_out_of_its_scope():
    v = _verdicts()
    v["record_integrity"] = dataclasses.replace(v["record_integrity"], status="unknown")
    assert registry.known(KEPT, v) is None and registry.near_misses(KEPT, v) == []
