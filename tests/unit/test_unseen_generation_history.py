"""Verify: a generation the group watch never sampled is no claim the coordinator never made.

Setup: the kept run fixtures/histories/kafka-3.6-rolling-bounce-unseen-generation (`harness matrix`, Kafka 3.6,
classic-eager, rolling-bounce, seed 266290, 2026-12-07). The watch's samples, 0.5 s apart: stable {m1: 0-5};
preparing_rebalance listing m1, m2, m3; stable {m1: 0,1; m2: 2,3; m3: 4,5}. Between the first two, m2's return
completed a generation of its own, {m1: 0-2; m2: 3-5} (m2 `assigned` [3, 4, 5]), which no sample saw; reading the
rebalancing answer as the union of the stable answers around it judged m2's 4 and 5 "never given". Then: every
verdict holds: the rebalancing answer that lists a member the stable one before did not, which recorded an
assignment since, is blind; with those members left out of it (no sign of their join) m2's holding is a
violation again.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.invariants import judge
from harness.record.history import History

KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "kafka-3.6-rolling-bounce-unseen-generation"


def test_the_kept_rolling_bounce_holds_every_verdict():
    v = judge(History.load(KEPT / "history"))
    assert all(x.status in ("valid", "skipped") for x in v.values()), \
        {n: x.message for n, x in v.items() if x.status not in ("valid", "skipped")}
    assert v["coordinator_claims"].status == "valid", v["coordinator_claims"].message


def test_without_the_sign_of_a_join_the_same_holding_is_a_violation(tmp_path):
    copy = tmp_path / "history"
    shutil.copytree(KEPT / "history", copy)
    lines, stable_before, cut = [], None, 0
    for line in (copy / "harness.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e.get("type") == "group_assignment" and isinstance(e.get("members"), list):
            state = str(e.get("state") or "").lower()
            names = {m.get("member") for m in e["members"] if isinstance(m, dict)}
            if state == "stable":
                stable_before = names
            elif stable_before is not None and names - stable_before:  # the rebalancing answer naming newcomers
                e["members"] = [m for m in e["members"] if m.get("member") in stable_before]
                cut += 1
        lines.append(json.dumps(e))
    (copy / "harness.jsonl").write_text("\n".join(lines) + "\n")
    assert cut, "the kept run has no rebalancing answer naming a member the stable one before did not"
    v = judge(History.load(copy))
    assert v["coordinator_claims"].status == "invalid", v["coordinator_claims"].message
