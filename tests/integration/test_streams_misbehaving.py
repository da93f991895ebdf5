"""Verify: the Streams invariants fail real runs whose instances misbehave: defeated warmups (KIP-441) fail
warmup-before-active, exactly-once claimed but not kept fails output-integrity.

Setup: the Streams suite run by pytest in a subprocess, the streams-scale-out scenario (two instances
with 3 s of state per task, a third added), with `--harness-misbehave defeat-warmup`: every instance runs with
an acceptable.recovery.lag so large that Streams counts every instance as caught up, while each
records the intended lag in its `started` event (the checkers judge by the recorded settings).
Then: the new instance (or another) takes tasks active with a full restore while a caught-up copy was
running elsewhere; the suite exits 1 naming warmup_before_active with witnesses.
"""
import subprocess
import sys

import pytest

from harness.history_schema import validate_dir

pytestmark = pytest.mark.integration


def test_defeated_warmups_fail_the_suite(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pytest", "suites/test_streams_chaos.py", "-p", "no:cacheprovider", "-q",
                        "-k", "streams-scale-out-classic", "--harness-misbehave", "defeat-warmup",
                        "--harness-runs-root", str(tmp_path)], capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-4000:]
    assert "1 failed" in out, out[-4000:]
    assert "warmup_before_active: invalid" in out, out[-4000:]
    assert "while m" in out and "held a caught-up copy" in out, out[-4000:]
    assert "witness:" in out and "harness replay" in out, out[-4000:]


def test_exactly_once_claimed_but_not_kept_fails_output_integrity(run_scenario):
    """Instances run at_least_once while the run is judged as exactly_once_v2 (`fake-eos`); one is SIGKILLed
    before its first commit (the kill comes 2-4 s after the first stable point, the commit interval is 30 s),
    so its replacement writes all of its output again: the committed output holds records twice. With a
    short commit interval the kill could land just after a commit and leave nothing to repeat. Small state
    (no warmups needed) keeps the run short."""
    r = run_scenario("streams-eos-kill", protocol="classic", misbehave="fake-eos",
                     streams_settings=(("num.standby.replicas", 0), ("harness.records.per.task", 1000),
                                       ("commit.interval.ms", 30000)))
    v = r.verdicts["output_integrity"]
    assert r.status == "fail" and v.status == "invalid", (r.status, v.message)
    assert "more than once under processing.guarantee=exactly_once_v2" in v.message
    assert v.measurements["missing"] == 0 and v.measurements["duplicated"] > 0
    kinds = {w["type"] for w in v.witnesses}  # the duplicated output, and what the brokers said beside it
    assert "output" in kinds and kinds <= {"output", "broker"}
    assert validate_dir(r.run_dir / "history") == []
