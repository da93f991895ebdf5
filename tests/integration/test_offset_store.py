"""Verify: the Python member commits through each of librdkafka's offset store paths (`harness.offset.store`,
docs/member-contract.md) in a real run, and the run is judged by each member life's own path and bound.

Setup: `harness run member-kill --seed 1` in a subprocess (its own 3-broker local cluster, the bundled confluent-kafka),
under the consumer protocol with each store path, and under classic-cooperative with the store by message.
Then: the run passes (every invariant that applies judged it and held); every member's `started` names the path and
enable.auto.offset.store as its client was made with; commit_progress is valid and names the path; every successful
commit carries, per partition, an offset the member had processed up to (the offset after one of its `processed`
events: what it stored, or named); no store was refused (the member stores after processing, between polls, while
the partitions are its own).
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.base.vocabulary import MANUAL_OFFSET_STORES, OFFSET_STORE, OFFSET_STORES
from harness.record.history import History

pytestmark = [pytest.mark.integration, pytest.mark.nightly]
ROOT = Path(__file__).resolve().parents[2]


def run(tmp_path, protocol: str, store: str):
    r = subprocess.run([sys.executable, "-m", "harness", "run", "member-kill", "--protocol", protocol, "--seed", "1",
                        "--client-set", f"{OFFSET_STORE}={store}", "--runs-root", str(tmp_path / "runs")], cwd=ROOT,
                       capture_output=True, text=True, timeout=900)
    (d,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.name.startswith("cluster")]
    return r, History.load(d / "history"), json.loads((d / "verdicts.json").read_text())


@pytest.mark.parametrize("proto, store", [*[("consumer", s) for s in OFFSET_STORES], ("classic-cooperative", "message")])
def test_member_kill_passes_on_each_store_path(tmp_path, proto, store):
    r, h, v = run(tmp_path, proto, store)
    assert r.returncode == 0 and "status: pass" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
    starts = h.of_type("started")
    assert len(starts) >= 4  # three members and the killed one's replacement
    for s in starts:
        assert s["effective"]["offset_store"] == store, s["effective"]
        assert s["effective"]["enable.auto.offset.store"] is (store not in MANUAL_OFFSET_STORES), s["effective"]
    cp = v["commit_progress"]
    assert cp["status"] == "valid" and f"offset_store {store}" in cp["message"], cp["message"]
    reached = {(e["member"], e["topic"], e["partition"], e["last_offset"] + 1) for e in h.of_type("processed")}
    commits = [(e["member"], t, p, o) for e in h.of_type("committed") if e["ok"] for t, p, o in e["offsets"]]
    assert commits and all(c in reached for c in commits), sorted(set(commits) - reached)[:5]
    assert [e for e in h.of_type("error") if "store_offsets" in e["error"]] == []
