"""Verify: a member told to change its subscription by unsubscribe() then subscribe() (`change_subscription` with
`subscribe_by = "unsubscribe-subscribe"`) does so on a real cluster, and the run passes, judged truly: the Java member
on the consumer protocol and on classic-cooperative, and the Python member on the consumer protocol.

Setup: docs/examples/unsubscribe-subscribe.toml through `harness run` in a subprocess, on its own 3-broker cluster:
three members read orders; slot 1 (m2) moves to payments by leaving the group and joining afresh. Then: its history
holds the `control` event with the new subscription and the way; it revoked every orders partition it held and was
given payments' partitions after it; the coordinator's lines (history/brokers.jsonl) show it leaving and then joining;
`rebalance_cause`, `subscribed_only` and `schedule_performed` judged the run valid.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.verdict_text import not_held, settle_known

pytestmark = [pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "unsubscribe-subscribe.toml"
#: the coordinator's leave and join lines, by protocol (Kafka 4.x's GroupMetadataManager): a classic member that joins
#: a group already preparing a rebalance (the leave started it) is added with no rebalance line of its own
LEAVE = {"classic-cooperative": re.compile(r"Member (m2-[0-9a-f-]+) has left group through explicit `LeaveGroup`"),
         "consumer": re.compile(r"\] Member (\S+) left the consumer group")}
JOIN = {"classic-cooperative": re.compile(r"(?:Pending dynamic member with id|Adding new member) (m2-[0-9a-f-]+)"),
        "consumer": re.compile(r"\] Member (\S+) joins the consumer group")}


def harness(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]


def topics(evs: list[dict]) -> set[str]:
    return {t.rsplit("-", 1)[1] for e in evs if e["type"] == "assigned" for t, _ in e["partitions"]}


@pytest.mark.parametrize("program, proto", [
    ("java", "consumer"), ("java", "classic-cooperative"),
    # each about 40 s; the Python member's is nightly (its subscription control runs in CI in test_group_actions.py)
    pytest.param("python", "consumer", marks=pytest.mark.nightly)])
def test_unsubscribe_then_subscribe_on_a_real_cluster(tmp_path, program, proto, pytestconfig):
    member, protocol = program, proto
    r = harness("run", str(EXAMPLE), "--seed", "1", "--member", member, "--protocol", protocol, "--quiet",
                "--runs-root", str(tmp_path))
    run_dir = next(tmp_path.glob(f"*-unsubscribe-subscribe-{protocol}-1"))
    verdicts = json.loads((run_dir / "verdicts.json").read_text())
    settle_known(pytestconfig, r.returncode, run_dir, verdicts)
    assert r.returncode == 0, not_held(verdicts) + "\n" + r.stderr[-2000:]
    for name in ("rebalance_cause", "subscribed_only", "schedule_performed"):
        assert verdicts[name]["status"] == "valid", (name, verdicts[name]["message"])
    hist = run_dir / "history"
    m2 = events(hist / "member-m2.jsonl")
    assert next(e for e in m2 if e["type"] == "started")["client"].startswith(
        "apache-kafka-java" if member == "java" else "confluent-kafka")
    # its control event: the new subscription (the run's payments topic) and the way
    [change] = [i for i, e in enumerate(m2) if e["type"] == "control"]
    assert m2[change]["subscribe_by"] == "unsubscribe-subscribe"
    assert [t.rsplit("-", 1)[1] for t in m2[change]["subscription"]] == ["payments"]
    # it gave up every orders partition it held (the unsubscribe), and was given payments' after
    held = {tuple(p) for e in m2[:change] if e["type"] == "assigned" for p in e["partitions"]}
    gone = {tuple(p) for e in m2 if e["type"] in ("revoked", "lost") for p in e["partitions"]}
    assert held and held <= gone, (held, gone)
    assert topics(m2[:change]) == {"orders"} and topics(m2[change:]) == {"payments"}
    # the coordinator's own account: m2 left the group after the change was asked for, then joined again
    harness_evs = events(hist / "harness.jsonl")
    asked = next(e["mono"] for e in harness_evs if e["type"] == "fault_start" and e["kind"] == "subscription_change")
    ending = min(e["mono"] for e in harness_evs if e["type"] == "member_stop")  # the run's end stops every member
    said = [e for e in events(hist / "brokers.jsonl") if e["type"] == "broker" and asked - 0.1 <= e["mono"] < ending]
    left = [(e["mono"], m[1]) for e in said if (m := LEAVE[protocol].search(e.get("message") or ""))]
    joined = [(e["mono"], m[1]) for e in said if (m := JOIN[protocol].search(e.get("message") or ""))]
    assert len(left) == 1, [e["message"] for e in said]
    after = {mid for t, mid in joined if t >= left[0][0]}
    assert after, [e["message"] for e in said]
    if protocol == "classic-cooperative":  # the coordinator gives a member that left a new id when it joins again
        assert left[0][1] not in after, (left, after)
    elif member == "java":  # KIP-1082: the Java client keeps its member id for its life
        assert left[0][1] in after, (left, after)
