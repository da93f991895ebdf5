"""Verify: verdicts judge each member by the settings it ran with, and a storm fails the run.

Setup: the shipped examples run by `harness run FILE` in a subprocess, each on its own 3-broker cluster of the
newest Kafka release:
- docs/examples/static-roll-long-absence.toml: three static members start on a 10 s session timeout, a settings
  roll takes them to 60 s, then slot 0 is away for 30 s;
- docs/examples/leave-during-join-each-slot.toml: a member leaves while another joins, on each slot in turn.
Then:
- the static run passes, `static_membership` counting the 30 s absence as kept within the member's own 60 s;
  the same history judged as if the members had kept the old 10 s (their recorded `effective` rewritten, as a
  coordinator that kept the old timeout would have had to behave) fails `static_membership`, naming 10 s;
- the leave-during-join example with `--misbehave rejoin-storm` (slot 0 closes and rejoins as a new member
  every second for 20 s while it stays up) fails, `rebalance_cause` naming the leaves nobody asked for (the
  coordinator's own lines as witnesses).
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.record.history import History
from harness.invariants import judge

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def harness(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def run_dir(root: Path) -> Path:
    (d,) = [p for p in root.iterdir() if p.is_dir()]
    return d


def verdicts(d: Path) -> dict:
    return json.loads((d / "verdicts.json").read_text())


@pytest.mark.nightly  # two runs, near two minutes; judged by the member's own timeout in unit tests too
def test_a_static_member_away_within_its_rolled_timeout_keeps_its_partitions(tmp_path):
    r = harness("run", "docs/examples/static-roll-long-absence.toml", "--seed", "1", "--runs-root", str(tmp_path))
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    d = run_dir(tmp_path)
    static = verdicts(d)["static_membership"]
    assert static["status"] == "valid", static
    assert static["measurements"]["restarts"] == 4  # the roll's three and the 30 s bounce
    assert max(static["measurements"]["session_timeouts_s"].values()) == 60.0
    absence = float(static["message"].split("longest absence ")[1].split("s ")[0])
    assert 29.0 < absence < 40.0, static["message"]
    assert "session timeout 60s" in static["message"] and "session.timeout.ms=60000 given" in static["message"]
    assert verdicts(d)["coverage_liveness"]["measurements"]["static_absences"], "the absence is reported as such"

    # judged as if the coordinator had kept the old 10 s: the 30 s absence should then have been an expulsion
    wrong = tmp_path / "as-if-10s"
    shutil.copytree(d, wrong)
    for f in (wrong / "history").glob("member-*.jsonl"):
        lines = []
        for line in f.read_text().splitlines():
            ev = json.loads(line)
            if ev.get("type") == "started" and isinstance(ev.get("effective"), dict):
                ev["effective"]["session.timeout.ms"] = 10000
            lines.append(json.dumps(ev))
        f.write_text("\n".join(lines) + "\n")
    r = harness("check", str(wrong), timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-4000:]
    row = next(line for line in r.stdout.splitlines() if line.startswith("static_membership"))
    assert row.split()[1] == "invalid", out[-4000:]
    static = judge(History.load(wrong / "history"))["static_membership"]
    assert "session timeout 10s" in static.message and "were not given to another member" in static.message


def test_the_leave_during_join_example_passes_and_a_member_driving_a_storm_fails_it(tmp_path):
    good, bad = tmp_path / "good", tmp_path / "storm"
    r = harness("run", "docs/examples/leave-during-join-each-slot.toml", "--seed", "1", "--runs-root", str(good))
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    conv = verdicts(run_dir(good))["convergence_balance"]
    assert conv["status"] == "valid" and conv["measurements"]["windows_judged"] >= 4, conv
    cause = verdicts(run_dir(good))["rebalance_cause"]
    assert cause["status"] == "valid" and cause["measurements"]["causes"].get("leave", 0) >= 1, cause

    r = harness("run", "docs/examples/leave-during-join-each-slot.toml", "--seed", "1", "--misbehave",
                "rejoin-storm", "--runs-root", str(bad))
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-4000:]
    # convergence_balance counts a storm only outside the scenario's own disturbance windows; under load the storm can
    # fall inside them (a clean clone's ./dev test, 2026-11-27: 4 rebalances at most, 1 undriven, valid), so the
    # real run is held to the coordinator's own account; the storm rule has its must-fail histories in unit tests
    cause = verdicts(run_dir(bad))["rebalance_cause"]  # the coordinator's own account: a leave nobody asked for
    assert cause["status"] == "invalid" and "left the group while it ran on" in cause["message"], cause
    assert cause["witnesses"][0]["type"] == "broker", cause
    assert "harness replay" in out
