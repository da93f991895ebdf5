"""Verify: a team's own member program takes part beside the harness's members, with settings given on the
command line.

Setup: `harness run member-kill` as a user runs it, with `--member-command slot1="python team_member.py"`
(tests/integration/team_member.py, written from the contract alone), a client setting and a group setting.
Then: the run passes; slot 1's members are the team's program and the others the harness's Python member;
run.json's config and the history's run_start carry the slot command and the settings, and the group setting
was set before the first member started.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.record.history import History

pytestmark = pytest.mark.integration
TEAM = Path(__file__).with_name("team_member.py")


def test_team_member_beside_the_harness_members(tmp_path):
    cmd = [sys.executable, "-m", "harness.cli", "run", "member-kill", "--seed", "3", "--quiet",
           "--runs-root", str(tmp_path), "--protocol", "classic-cooperative",
           "--member-command", f"slot1={sys.executable} {TEAM}",
           "--client-set", "fetch.wait.max.ms=100", "--group-set", "consumer.heartbeat.interval.ms=500"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=dict(os.environ))
    run_dir = next(tmp_path.glob("*-member-kill-*"))
    assert r.returncode == 0, f"{run_dir}: exit {r.returncode}\n{r.stdout[-3000:]}{r.stderr[-2000:]}"

    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["config"]["slot_commands"] == [[1, [sys.executable, str(TEAM)]]]
    assert meta["config"]["client_settings"] == [["fetch.wait.max.ms", "100"]]
    assert meta["client_settings"]["fetch.wait.max.ms"] == "100"
    assert meta["group_settings"] == {"consumer.heartbeat.interval.ms": "500"}

    events = list(History.load(run_dir / "history"))
    start = next(e for e in events if e["type"] == "run_start")
    assert start["client_settings"] == {"fetch.wait.max.ms": "100"}
    assert start["group_settings"] == {"consumer.heartbeat.interval.ms": "500"}
    assert start["broker_settings"] == {}
    order = [e["type"] for e in events if e["type"] in ("group_config", "member_start")]
    assert order[0] == "group_config", order

    clients = {e["member"]: e["client"] for e in events if e["type"] == "started"}
    team = {m for m, c in clients.items() if c.startswith("team-app")}
    ours = {m for m, c in clients.items() if c.startswith("confluent-kafka")}
    assert team and ours, clients
    assert any(e["type"] == "processed" and e["member"] in team for e in events), "the team's member consumed"
