"""Verify: the Streams invariants fail real runs whose instances misbehave: defeated warmups (KIP-441) fail
warmup-before-active, exactly-once claimed but not kept fails output-integrity, a group kept from settling (an
instance churning its stream threads) fails group-settled (nightly).

Setup: the Streams suite run by pytest in a subprocess, the streams-scale-out scenario (two instances
with 3 s of state per task, a third added), with `--harness-misbehave defeat-warmup`: every instance runs with
an acceptable.recovery.lag so large that Streams counts every instance as caught up, while each
records the intended lag in its `started` event (the checkers judge by the recorded settings).
Then: the new instance (or another) takes tasks active with a full restore while a caught-up copy was
running elsewhere; the suite exits 1 naming warmup_before_active with witnesses.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.record.history import History
from harness.record.schema import validate_dir

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

#: two instances on two tasks of small state, nothing done to them for 130 s (past the group's bound after its start:
#: two probing rounds of 60 s and the restore): a group that settles at once, and is judged at the end past its bound
QUIET = """
name = "streams-quiet"
doc = "Kafka Streams: two instances on two tasks of small state, nothing done to them for 130 s."

[members]
kind = "streams"
count = 2

[workload]
partitions = 2

[streams]
settings = { "harness.records.per.task" = 100 }

[[steps]]
action = "sleep"
s = 130.0
"""


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


@pytest.mark.nightly  # over two minutes; the defeated-warmups self-test above stays in ./dev test
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


def _run_file(tmp_path, *args):
    f = tmp_path / "streams-quiet.toml"
    f.write_text(QUIET)
    root = tmp_path / "runs"
    r = subprocess.run([sys.executable, "-m", "harness", "run", str(f), "--seed", "1", "--runs-root", str(root), *args],
                       cwd=ROOT, capture_output=True, text=True, timeout=1500)
    (d,) = [p for p in root.iterdir() if p.is_dir()]
    return r, d, json.loads((d / "verdicts.json").read_text())


@pytest.mark.nightly
def test_a_streams_group_that_never_settles_fails_group_settled_as_a_consumer_group_would(tmp_path):
    """Verify: a real Streams run whose group never settles within its bound fails `group_settled`, the rule every
    kind is judged by (harness/invariants/settled.py).

    Setup: a scenario file of two instances on two tasks with 100 records of state each (probing every 60 s, two
    warmups at a time: the group's bound after its start is 2 probing rounds, 120 s, and the restore), left alone
    for 130 s, with `--misbehave thread-churn`: slot 0's instance adds a stream thread and removes it again every
    second once it runs, each a consumer joining or leaving the group, so every instance rebalances all the time.
    Then: `group_settled` is invalid: the group was not settled at the end, past its bound (or a wait of the runner's,
    150 s, the bound and 30 s more, timed out past it), the message naming the bound and its parts; the instances
    went through tens of rebalances. The runner's own stable rule may catch a two-second lull between the churns
    (a real run did, 90 s into its final wait): the verdict does not depend on it. (Five to six minutes: nightly.)"""
    r, d, verdicts = _run_file(tmp_path, "--misbehave", "thread-churn")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-4000:]
    v = verdicts["group_settled"]
    assert v["status"] == "invalid", v
    assert "the history shows it never settled" in v["message"] or "not settled at the end" in v["message"], v
    assert "the history cannot tell" not in v["message"], v
    assert "probing rebalances of 60s" in v["message"], v
    h = History.load(d / "history")
    rebalancing = [e for e in h.of_type("stream_state") if e.get("to") == "REBALANCING"]
    assert len(rebalancing) > 20, len(rebalancing)
    assert validate_dir(d / "history") == []
