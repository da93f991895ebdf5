"""Verify: a read of the group's committed offsets answered by a coordinator already deposed (a broker cut off from
the others answering its stale record) is not a lost commit; the run passes.

Setup: the kept run fixtures/histories/docker-broker-partition-deposed-read (a clean clone's `.ci/run`, smoke
suite, docker backend, broker-partition, consumer protocol, seed 2133575392, 2026-12-08): broker 3 coordinated the
group (loaded __consumer_offsets-4 at leader epoch 0); the step cut it off at 6.8 s and broker 1 loaded the
partition at epoch 1 at 14.9 s; the read after the step asked broker 3 at 24.1 s, which answered offset 51 for
partition 0 where m2's commit of 195 had been acknowledged at 23.9 s; the read at the end, from broker 1, showed it.
Then: commit_durability valid, the read after the step counted unanswered (`reads_deposed` 1); every other
invariant holds or does not apply.
"""
from __future__ import annotations

from pathlib import Path

from harness.invariants import judge
from harness.record.history import History

KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "docker-broker-partition-deposed-read"


def test_the_deposed_coordinators_stale_answer_is_unanswered_and_the_run_passes():
    v = judge(History.load(KEPT / "history"))
    d = v["commit_durability"]
    assert d.status == "valid" and d.measurements["reads_deposed"] == 1, d.message
    assert "1 read(s) had no answer (1 from a deposed coordinator)" in d.message
    assert {n: x.status for n, x in v.items() if x.status not in ("valid", "skipped")} == {}
