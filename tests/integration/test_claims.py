"""Verify: coordinator_claims fails a member that claims a partition the coordinator never gave it, on real brokers.

Setup: `harness run member-kill` (Kafka latest, the installed confluent-kafka) under the consumer protocol and
classic-cooperative, once with `--misbehave claim-extra` (slot 0 records as assigned, and reads, a partition it does
not hold once its assignment has been quiet for a second: often one passing between two owners, which no other
member holds at that moment) and once without.
Then: with the misbehaviour `coordinator_claims` is invalid and names the claimed partition against the
coordinator's answer; without it, it is valid (the coordinator's answers, `group_assignment`, were recorded).
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.nightly]


def verdicts(root: Path) -> dict:
    (run,) = [p for p in root.iterdir() if (p / "verdicts.json").exists()]
    return json.loads((run / "verdicts.json").read_text())


@pytest.mark.parametrize("group_protocol", ["consumer", "classic-cooperative"])
@pytest.mark.parametrize("misbehave", ["claim-extra", None])
def test_a_claim_the_coordinator_never_made_fails(group_protocol, misbehave, tmp_path):
    cmd = [sys.executable, "-m", "harness", "run", "member-kill", "--seed", "1", "--protocol", group_protocol,
           "--runs-root", str(tmp_path), "--quiet"] + (["--misbehave", misbehave] if misbehave else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    v = verdicts(tmp_path)["coordinator_claims"]
    if misbehave:
        assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
        assert v["status"] == "invalid", v
        assert re.search(r"m\d+ held partition \S+ from [\d.]+ to [\d.]+ but the coordinator never gave it to m\d+",
                         v["message"]), v["message"]
    else:
        assert v["status"] == "valid", v
        assert v["measurements"]["answers"] > 0
