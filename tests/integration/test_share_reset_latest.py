"""Verify: under `share.auto.offset.reset=latest` a Kafka release that skips the first records of partitions added to
a topic a share group already consumes (KAFKA-20742: 4.3.1) fails `share_completion`, naming the skipped offsets of
an added partition, while a release with the fix (4.4.0) passes: the two are no longer judged alike.

Setup: `harness run share-partitions-added-latest --seed 1` in a subprocess, each on its own 3-broker local cluster,
the Python share member; the group's reset policy is the file's `latest`, read back by the `group_settings` event.
Then:
- on 4.3.1: the run fails (exit 1) on `share_completion` with every witness in an added partition (3-5), each naming
  its offset, the start offset after the run and when the partition was added; `lost_surely` counts them;
- on 4.4.0: the run passes; every record of the added partitions was completed, and the records the group skipped
  by its own policy (the original partitions' before it initialised them) are counted, not failed.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.nightly]
ROOT = Path(__file__).resolve().parents[2]
SCENARIO = "share-partitions-added-latest"


def run(tmp_path, kafka: str):
    r = subprocess.run([sys.executable, "-m", "harness", "run", SCENARIO, "--seed", "1", "--kafka-version", kafka,
                        "--runs-root", str(tmp_path / "runs")], cwd=ROOT, capture_output=True, text=True, timeout=900)
    (d,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.name.startswith("cluster")]
    return r, d, json.loads((d / "verdicts.json").read_text())


def test_a_release_that_skips_an_added_partitions_first_records_fails_with_the_offsets(tmp_path):
    r, d, v = run(tmp_path, "4.3.1")
    said = f"run {d}: {r.stdout[-3000:]}{r.stderr[-2000:]}"
    c = v["share_completion"]
    assert c["status"] == "invalid", said
    assert "share.auto.offset.reset=latest" in c["message"], c["message"]
    m = c["measurements"]
    assert m["lost_surely"] == m["lost"] > 0 and m["reset_policy"] == "latest"
    assert {w["partition"] for w in c["witnesses"]} <= {3, 4, 5}, c["witnesses"]
    for w in c["witnesses"]:
        assert f"partition {w['partition']} added at" in w["why"] and "start offset after the run" in w["why"]
        assert isinstance(w["offset"], int) and w["offset"] >= 0
    assert r.returncode == 1, said


def test_a_release_that_reads_an_added_partition_from_its_first_record_passes(tmp_path):
    r, d, v = run(tmp_path, "4.4.0")
    assert r.returncode == 0, f"run {d}: {r.stdout[-3000:]}{r.stderr[-2000:]}"
    m = v["share_completion"]["measurements"]
    assert m["lost"] == 0 and m["reset_policy"] == "latest"
    assert m["added_partition_records"] == m["added_partition_completed"] > 0
