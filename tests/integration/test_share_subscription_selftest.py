"""Verify: `share_subscribed_only` fails a real run whose share member keeps a topic it dropped, and passes the same
scenario run correctly.

Setup: `harness run share-subscription-change` in a subprocess on its own 3-broker local cluster of the newest Kafka
release (`latest`), three Python share members (the newest confluent-kafka installed) on orders and payments; slot 0,
then slot 1, drops payments. With `--misbehave keep-dropped-share-topic` slot 0's `control` event records the new
subscription while its client keeps the old one, so the group goes on handing it payments records.
Then:
- without the misbehaviour the run passes and `share_subscribed_only` judged it valid, after two subscription changes;
- with it the run fails, and `share_subscribed_only` says so, naming m1 and a payments record handed to it past the
  bound (a heartbeat interval and the clock slack after its change), its witnesses that delivery and m1's `control`
  event.
A self-test's run is never excused by a known finding (docs/findings.md).
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.record.history import History

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def run(tmp_path, name: str, *args):
    """`harness run share-subscription-change`; (exit code, output, history, verdicts)."""
    root = tmp_path / name
    r = subprocess.run([sys.executable, "-m", "harness", "run", "share-subscription-change", "--seed", "1",
                        "--kafka-version", "latest", "--runs-root", str(root), *args], cwd=ROOT, capture_output=True,
                       text=True, timeout=900)
    (d,) = [p for p in root.iterdir() if p.is_dir()]
    return r.returncode, r.stdout + r.stderr, History.load(d / "history"), json.loads((d / "verdicts.json").read_text())


@pytest.mark.nightly  # two runs, about five minutes; the must-fail histories are unit tests (test_share_subscribed.py)
def test_a_share_member_that_keeps_a_dropped_topic_fails_share_subscribed_only(tmp_path):
    rc, out, h, v = run(tmp_path, "clean")
    assert rc == 0, out[-4000:]
    ok = v["share_subscribed_only"]
    assert ok["status"] == "valid" and ok["measurements"]["changes"] == 2, ok

    rc, out, h, v = run(tmp_path, "keep-dropped", "--misbehave", "keep-dropped-share-topic")
    assert rc == 1, out[-4000:]
    bad = v["share_subscribed_only"]
    assert bad["status"] == "invalid", bad
    payments = next(t for t in h.run_start()["share_settings"]["topics"] if t.endswith("-payments"))
    (control,) = [e for e in h.of_type("control") if e.get("member") == "m1"]
    assert payments not in control["subscription"]
    hit, setter = bad["witnesses"][:2]
    assert (hit["member"], hit["topic"]) == ("m1", payments) and hit["mono"] > control["mono"] + 1.5
    assert setter["type"] == "control" and setter["member"] == "m1"
