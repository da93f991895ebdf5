"""Verify: librdkafka #4059 (a commit refused with ILLEGAL_GENERATION during a cooperative rebalance, the
assignment then dropped as lost) is recognised where an empty assignment comes between the refusal and the loss,
and the rebalance it raced began with a revoke.

Setup: the kept run fixtures/histories/librdkafka-2.4-commit-race-lost (`harness matrix`, member-kill, Kafka
4.4.0, classic-cooperative, confluent-kafka 2.4.0, 2026-12-07): m3 revoked partition 1 (the first round), was
given nothing (an empty `assigned`), its commit was refused with ILLEGAL_GENERATION and it lost 2 and 5 at once;
convergence_balance failed on the storm. Then: the run's failure is the known finding, its mark holding the
revoke; with the refusal's error changed to another (the same events otherwise), it is not.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.findings import registry
from harness.invariants import judge
from harness.record.history import History

KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "librdkafka-2.4-commit-race-lost"
ID = "librdkafka-4059-commit-during-cooperative-rebalance"


def test_the_kept_run_is_the_known_commit_race():
    v = judge(History.load(KEPT / "history"))
    assert v["convergence_balance"].status == "invalid", v["convergence_balance"].message
    excuse = registry.known(KEPT, v)
    assert excuse is not None and excuse.finding.id == ID, registry.near_misses(KEPT, v)


def test_with_no_illegal_generation_the_same_loss_is_no_known_finding(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(KEPT, run)
    for f in (run / "history").glob("member-*.jsonl"):
        out = []
        for line in f.read_text().splitlines():
            e = json.loads(line)
            if e.get("type") == "committed" and "ILLEGAL_GENERATION" in str(e.get("error")):
                e["error"] = "KafkaError{code=REQUEST_TIMED_OUT,val=7}"
            out.append(json.dumps(e))
        f.write_text("\n".join(out) + "\n")
    v = judge(History.load(run / "history"))
    assert v["convergence_balance"].status == "invalid"
    assert registry.known(run, v) is None
