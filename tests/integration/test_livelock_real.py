"""Verify: librdkafka's consumer-protocol livelock (docs/findings.md, librdkafka-848-commit-starves-heartbeat) is
reproduced by its built-in scenario and recognised as the known finding, and the Python member's workaround
(`harness.lost.on.refused.commit`) gets the group through it.

Setup: `harness run livelock-commit-starves-heartbeat --protocol consumer` in a subprocess, on its own 3-broker local
cluster of the newest Kafka release with the request proxy in the client path, Python members on the bundled
confluent-kafka. Slot 0's ConsumerGroupHeartbeats are answered NOT_COORDINATOR for 8 s, past its 6 s session.
Then:
- as it is (with librdkafka's `debug=cgrp,protocol` lines): the run fails, and it fails as the known finding: the
  member's commits refused with UNKNOWN_MEMBER_ID for longer than its session without a word from the group (the
  finding's mark), every failing verdict's witnesses inside that mark (its rate over repeated runs:
  docs/findings.md), the coordinator's fencing in the brokers' lines, and in the client's own lines every refusal
  followed by "Expediting next heartbeat, with backoff 1000000" and no heartbeat sent until the member is closed;
- with `--client-set harness.lost.on.refused.commit=true`: m1 writes `lost` at its first refused commit (with the
  setting's name as its reason), is assigned again afterwards, no refusal outlasts the session, and no verdict fails
  or is undecided on anything from the fault on (a failure witnessed only before it, in the group's first assignment
  on a loaded host, is another matter: docs/findings.md).
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.base.vocabulary import LOST_ON_REFUSED_COMMIT
from harness.findings.evidence import commits_refused_unheard
from harness.findings.match import compared
from harness.findings.registry import known
from harness.record.history import History

pytestmark = [pytest.mark.integration, pytest.mark.nightly]
ROOT = Path(__file__).resolve().parents[2]
SCENARIO = "livelock-commit-starves-heartbeat"


def run(tmp_path, *args):
    r = subprocess.run([sys.executable, "-m", "harness", "run", SCENARIO, "--protocol", "consumer", "--seed", "1",
                        "--kafka-version", "latest", "--runs-root", str(tmp_path / "runs"), *args], cwd=ROOT,
                       capture_output=True, text=True, timeout=900)
    (d,) = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.name.startswith("cluster")]
    return r, d, History.load(d / "history"), json.loads((d / "verdicts.json").read_text())


def client_lines(run_dir: Path, member: str, lo: float, hi: float, text: str) -> list[str]:
    """The member's librdkafka debug lines (`%7|<wall>|...`) between two wall-clock times that contain `text`."""
    out = []
    for line in (run_dir / "logs" / f"member-{member}.log").read_text(errors="replace").splitlines():
        parts = line.split("|")
        try:
            wall = float(parts[1])
        except (IndexError, ValueError):
            continue
        if lo <= wall <= hi and text in line:
            out.append(line)
    return out


def test_the_scenario_fails_as_the_known_livelock(tmp_path):
    r, d, h, v = run(tmp_path, "--client-set", "debug=cgrp,protocol")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    (mark,) = commits_refused_unheard(d)
    assert mark.members == {"m1"} and "refused with UNKNOWN_MEMBER_ID" in mark.says, mark.says
    excuse = known(d, v)
    assert excuse is not None and excuse.finding.id == "librdkafka-848-commit-starves-heartbeat", \
        {n: x["message"] for n, x in v.items() if x["status"] == "invalid"}
    assert v["schedule_performed"]["status"] == "valid"
    fenced = [e for e in h.of_type("broker") if "fenced from the group because the member session expired"
              in e.get("message", "")]
    assert fenced, "the coordinator's fencing is not in the brokers' lines"
    # the client's own lines: from its first refused commit until its close (the last second left out), every refusal
    # pushes the next heartbeat a backoff away, and no heartbeat is sent
    refused = [e for e in h.of_type("committed") if e["member"] == "m1" and not e["ok"]
               and "UNKNOWN_MEMBER_ID" in str(e.get("error")) and e["mono"] >= mark.start]
    lo, hi = refused[0]["wall"], refused[-1]["wall"] - 1.0
    assert hi - lo > 6.0, (lo, hi)
    assert client_lines(d, "m1", lo, hi, "Expediting next heartbeat, with backoff 1000000: OffsetCommit error: Unknown")
    assert client_lines(d, "m1", lo, hi, "Sent ConsumerGroupHeartbeatRequest") == []


def test_the_member_that_takes_a_refused_commit_for_a_lost_assignment_gets_through(tmp_path):
    r, d, h, v = run(tmp_path, "--client-set", f"{LOST_ON_REFUSED_COMMIT}=true")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    refused = [e for e in h.of_type("committed") if e["member"] == "m1" and not e["ok"]
               and "UNKNOWN_MEMBER_ID" in str(e.get("error"))]
    lost = [e for e in h.of_type("lost") if e["member"] == "m1" and LOST_ON_REFUSED_COMMIT in str(e.get("reason"))]
    assert refused and lost and lost[0]["mono"] >= refused[0]["mono"], (refused[:1], lost)
    assert [e for e in h.of_type("assigned") if e["member"] == "m1" and e["mono"] > lost[0]["mono"] and e["partitions"]]
    assert commits_refused_unheard(d) == []
    assert not judged_after_the_fault(d, h, v), judged_after_the_fault(d, h, v)


def judged_after_the_fault(d: Path, h: History, v: dict) -> dict:
    """The failing or undecided verdicts that say something about the run from the fault on: none may. A failure whose
    witnesses all come before the fault (the group's first assignment on a loaded host: docs/findings.md) is not the
    workaround's to answer, and is left to the invariants' own tests."""
    start = min(e["mono"] for e in h.of_type("fault_start"))
    return {n: x["message"] for n, x in v.items() if x["status"] not in ("valid", "skipped")
            and (x["status"] != "invalid" or any(not isinstance(w.get("mono"), (int, float)) or w["mono"] >= start
                                                 for w in compared(x)))}
