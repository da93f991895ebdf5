"""Verify: a real run whose scenario's steps cannot happen ends `unknown` with each such step named, never `pass`.

Setup: `harness run FILE` as a user runs it, on its own 3-broker local cluster of the newest Kafka release (with the
request proxy: the schedule puts a fault on requests), classic-cooperative, two members: slot 0 the team's own
program (tests/integration/team_member.py, which lists no stall control), slot 1 the harness's Python member.
The steps:
1. a `poll_stall` of slot 0 with `if_supported = true` (the issue's opening example: it used to end `pass`, exit 0);
2. an `error_response` on ConsumerGroupHeartbeat from slot 1, an API a classic-protocol member never sends;
3. a `wait_request_fault` of 3 s for it.
Then: exit 1, STATUS unknown; the run's `action_end` of step 1 says `ok: false` with the reason; the verdict
`schedule_performed` is unknown and names step 1 (its reason, and `if_supported`), step 2 (applied to 0 requests,
not 1) and step 3 (not reached); every other invariant judged the run and held (valid, or skipped where the
plan said it does not apply: `applies` in run_start).
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.record.history import History

pytestmark = pytest.mark.integration
TEAM = Path(__file__).with_name("team_member.py")
ROOT = Path(__file__).resolve().parents[2]

CANNOT_HAPPEN = """
name = "cannot-happen"
protocols = ["classic-cooperative"]
[members]
count = 2
[[steps]]
action = "poll_stall"
slot = 0
duration_s = 2.0
if_supported = true
wait_stable = false
[[steps]]
action = "error_response"
api = "ConsumerGroupHeartbeat"
slot = 1
error = "FENCED_MEMBER_EPOCH"
[[steps]]
action = "wait_request_fault"
timeout_s = 3.0
"""


def test_a_run_whose_steps_cannot_happen_is_unknown_with_each_step_named(tmp_path):
    f = tmp_path / "cannot-happen.toml"
    f.write_text(CANNOT_HAPPEN)
    r = subprocess.run([sys.executable, "-m", "harness", "run", str(f), "--seed", "1", "--kafka-version", "latest",
                        "--runs-root", str(tmp_path / "runs"), "--member-command", f"slot0={sys.executable} {TEAM}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    (d,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    assert r.returncode == 1, out[-4000:]
    assert (d / "STATUS").read_text().splitlines()[0] == "unknown"
    assert "schedule_performed" in out and "unknown" in out

    h = History.load(d / "history")
    start = next(e for e in h.events if e["type"] == "run_start")
    assert start["applies"]["static_membership"]["applies"] is False
    ends = [e for e in h.events if e["type"] == "action_end"]
    assert (ends[0]["kind"], ends[0]["ok"]) == ("poll_stall", False)
    assert ends[0]["skipped"].endswith("takes no stall control")
    assert (ends[1]["kind"], ends[1]["ok"], ends[1]["count"]) == ("error_response", True, 1)
    assert (ends[2]["kind"], ends[2]["reached"], ends[2]["applied"]) == ("wait_request_fault", False, 0)
    assert not [e for e in h.events if e["type"] == "fault_start"]  # nothing happened to any member

    verdicts = json.loads((d / "verdicts.json").read_text())
    v = verdicts["schedule_performed"]
    assert v["status"] == "unknown" and v["measurements"]["not_performed"] == [1, 2, 3], v["message"]
    assert "step 1 (a1) poll_stall" in v["message"] and "takes no stall control (if_supported" in v["message"]
    assert "step 2 (a2) error_response" in v["message"] and "to 0 requests, not 1 (its count)" in v["message"]
    assert "step 3 (a3) wait_request_fault" in v["message"]
    others = {n: x["status"] for n, x in verdicts.items() if n != "schedule_performed"}
    assert set(others.values()) <= {"valid", "skipped"}, {n: verdicts[n]["message"] for n in others}
    assert "valid" in others.values()
