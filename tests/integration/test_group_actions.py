"""Verify: the actions on how members run (harness/nemesis/group.py) against a real cluster, on the classic
and the consumer protocol: a poll stall past max.poll.interval.ms, a subscription change to a second topic
by regex, a member leaving while another joins, a rolling settings change; and the consumer protocol's
example of docs/scenarios.md (poll stall, group config at run time, roll to static members), replayed.

Setup: scenario files run by `harness run FILE` in a subprocess, each on its own 3-broker cluster.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.verdict_text import not_held, settle_known

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]

ACTIONS = """
name = "group-actions"
protocols = ["classic-cooperative", "consumer"]

[[topics]]
name = "orders"
partitions = 4

[[topics]]
name = "payments"
partitions = 2

[members]
count = 3
subscription = ["orders"]
client_settings = {{ "max.poll.interval.ms" = 12000 }}

[[steps]]
action = "poll_stall"
slot = 0
duration_s = 15.0

[[steps]]
action = "change_subscription"
slot = 1
subscription = ["orders", "^pay.*"]

[[steps]]
action = "leave_during_join"
slot = 2

[[steps]]
action = "settings_roll"
{roll}
"""
ROLL = {"classic-cooperative": 'client_settings = { "session.timeout.ms" = 10000 }', "consumer": "static = true"}


def harness(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]


@pytest.mark.parametrize("proto", [pytest.param("classic-cooperative", marks=pytest.mark.nightly), "consumer"])
def test_group_actions_on_a_real_cluster(tmp_path, proto, pytestconfig):
    protocol = proto
    f = tmp_path / "actions.toml"
    f.write_text(ACTIONS.format(roll=ROLL[protocol]))
    r = harness("run", str(f), "--seed", "1", "--protocol", protocol, "--quiet", "--runs-root", str(tmp_path))
    run_dir = next(tmp_path.glob(f"*-group-actions-{protocol}-1"))
    verdicts = json.loads((run_dir / "verdicts.json").read_text())
    settle_known(pytestconfig, r.returncode, run_dir, verdicts)  # a client finding at the first joins, say
    assert r.returncode == 0, not_held(verdicts) + "\n" + r.stderr[-2000:]
    hist = run_dir / "history"
    faults = [e["kind"] for e in events(hist / "harness.jsonl") if e["type"] == "fault_start"]
    assert faults == ["poll_stall", "subscription_change", "leave_during_join"], faults
    m1 = events(hist / "member-m1.jsonl")
    # the stalled member: asked to stall and to resume, it learnt on its return that it had left the group
    assert [e.get("stall") for e in m1 if e["type"] == "control"] == [True, False]
    back = next(i for i, e in enumerate(m1) if e["type"] == "control" and e["stall"] is False)
    assert any(e["type"] == "lost" for e in m1[back:]), [e["type"] for e in m1[back:]][:10]
    assert "exceeded" in (run_dir / "logs" / "member-m1.log").read_text()  # librdkafka's MAXPOLL line
    # the resubscribed member took payments' partitions; nobody did before
    m2 = events(hist / "member-m2.jsonl")
    change = next(i for i, e in enumerate(m2) if e["type"] == "control")
    assert m2[change]["subscription"][1].startswith("^t-")
    topics = lambda evs: {t.rsplit("-", 1)[1] for e in evs if e["type"] == "assigned" for t, _ in e["partitions"]}
    assert "payments" not in topics(m2[:change]) and "payments" in topics(m2[change:])
    # the leave during a join: m3 left gracefully while m4 was joining
    start = {e["member"]: e for e in events(hist / "harness.jsonl") if e["type"] == "member_start"}
    exits = {e["member"]: e for e in events(hist / "harness.jsonl") if e["type"] == "member_exit"}
    assert exits["m3"]["how"] == "graceful" and start["m4"]["mono"] < exits["m3"]["mono"]
    # the roll restarted every live member once (m1, m2, m4 -> m5, m6, m7), each with the new setting
    rolled = [f"m{i}" for i in (5, 6, 7)]
    assert sorted(start) == [f"m{i}" for i in range(1, 8)] and all(exits[m]["how"] == "graceful" for m in ("m1", "m2", "m4"))
    for m in ("m1", "m2", "m4", *rolled):
        started = next(e for e in events(hist / f"member-{m}.jsonl") if e["type"] == "started")
        if protocol == "consumer":
            assert bool(started["instance_id"]) == (m in rolled), (m, started["instance_id"])
        else:
            assert (started["client_config"].get("session.timeout.ms") == "10000") == (m in rolled), started


@pytest.mark.nightly  # ~105 s; the poll stall and the roll run in CI in test_group_actions_on_a_real_cluster
def test_poll_stall_then_roll_example_and_replay(tmp_path):
    example = ROOT / "docs" / "examples" / "poll-stall-then-roll.toml"
    r = harness("run", str(example), "--seed", "1", "--quiet", "--runs-root", str(tmp_path))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    run_dir = next(tmp_path.glob("*-poll-stall-then-roll-consumer-1"))
    hist = events(run_dir / "history" / "harness.jsonl")
    assert [e["config"] for e in hist if e["type"] == "group_config"] == [
        {"consumer.session.timeout.ms": "10000"}, {"consumer.session.timeout.ms": "45000"}]
    assert {e["kind"] for e in hist if e["type"] == "fault_start"} == {"poll_stall", "group_config"}
    again = harness("replay", str(run_dir), "--quiet", "--runs-root", str(tmp_path / "replay"))
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    meta = json.loads((run_dir / "run.json").read_text())
    rmeta = json.loads((next((tmp_path / "replay").iterdir()) / "run.json").read_text())
    assert rmeta["schedule"] == meta["schedule"]
