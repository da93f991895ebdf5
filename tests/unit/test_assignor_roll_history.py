"""Verify: a static member's return that changes the assignor in force is a cause of the moves it brings.

Setup: the kept run fixtures/histories/static-assignor-roll (Kafka 4.4.0, three static consumer-protocol members on
two topics of three partitions, `group.remote.assignor` rolled from uniform to range one member at a time; the
coordinator logged "Computed a new target assignment for epoch 5 with 'range' assignor" at the second member's
return). Then: every verdict holds (bounded_migrations and static_membership failed it before, "3 partitions moved
where 1 would reach balance", "got [a-1, b-1] back, held [b-0, b-1]"); its twin, every member's start recording
uniform (the cause absent, the moves the same), fails both.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.invariants import judge
from harness.record.history import History

KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "static-assignor-roll"


def test_the_kept_assignor_roll_holds_every_verdict():
    v = judge(History.load(KEPT / "history"))
    assert all(x.status in ("valid", "skipped") for x in v.values()), \
        {n: x.message for n, x in v.items() if x.status not in ("valid", "skipped")}
    assert v["static_membership"].measurements["assignor_changed"] == 1
    assert "uniform (server side) -> range (server side)" in v["static_membership"].message
    assert v["bounded_migrations"].measurements["assignor_changed"] == 1


def test_the_same_moves_with_no_assignor_change_fail(tmp_path):
    copy = tmp_path / "history"
    shutil.copytree(KEPT / "history", copy)
    for f in copy.glob("member-*.jsonl"):
        lines = []
        for line in f.read_text().splitlines():
            e = json.loads(line)
            if e.get("type") == "started":
                e["effective"]["group.remote.assignor"] = "uniform"
                e.get("client_config", {})["group.remote.assignor"] = "uniform"
            lines.append(json.dumps(e))
        f.write_text("\n".join(lines) + "\n")
    v = judge(History.load(copy))
    assert v["static_membership"].status == "invalid" and "back, held" in v["static_membership"].message
    assert v["bounded_migrations"].status == "invalid" and "would reach balance" in v["bounded_migrations"].message
