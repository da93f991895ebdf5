"""Verify: `connect_rebalance_cause` fails a real Connect run whose worker leaves and rejoins its group on its own,
and passes the same run without it (docs/invariants.md, "connect_rebalance_cause").

Setup: the shared cluster of the session, three workers under `sessioned` (HarnessSource with 4 tasks and
HarnessSink with 3), each test's own seed: the misbehaving run on its own scenario (`QUIET`: the workers left alone
for 50 s), its clean twin on connect-worker-kill-short (slot 1 or 2 SIGKILLed and started again within the scheduled
delay). With `--misbehave connect-rejoin-storm` slot 0's worker, from 20 s after it started, leaves the
group every 2 s for 40 s (WorkerGroupMember.maybeLeaveGroup, HarnessWorker.java) and its herder rejoins at its next
poll as a new member: rounds of the group that no event of the history shows (no `started`, `stopped`, step or
configuration written).
Then: the misbehaving run fails with `connect_rebalance_cause` invalid, its witnesses the workers' reports
(`connect_rebalance`) of generations with no cause in reach or past every allowance, the coordinator's lines of the
time beside them (its other Connect checkers may fail too: m1 keeps running the units the group gives others after it
left); its clean twin passes, every generation caused.
"""
from __future__ import annotations

import pytest

from harness.record.history import History
from harness.suite.plugin import assert_run_passes, failure_message

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCENARIO = "connect-worker-kill-short"


def _run(run_scenario, **kw):
    return run_scenario(SCENARIO, protocol="sessioned", **kw)


#: the self-test's own scenario: the three workers left alone while slot 0's worker leaves and rejoins (from 20 s
#: after its start, every 2 s for 40 s). On connect-worker-kill-short a clean clone's run stopped its members 34 s in,
#: the storm's first leaves beside the kill's rounds, and every round fell within an allowance.
QUIET = """
name = "connect-rejoin-storm-quiet"
doc = "Kafka Connect workers left alone for 50 s (the rejoin storm's self-test)."

[members]
kind = "connect"

[[steps]]
action = "sleep"
s = 50.0
"""


def test_a_worker_that_leaves_and_rejoins_on_its_own_fails_connect_rebalance_cause(run_scenario, tmp_path):
    path = tmp_path / "connect-rejoin-storm-quiet.toml"
    path.write_text(QUIET)
    r = run_scenario(str(path), protocol="sessioned", misbehave="connect-rejoin-storm")
    v = r.verdicts["connect_rebalance_cause"]
    assert r.status == "fail" and v.status == "invalid", failure_message(r)
    assert "with no cause in reach" in v.message or "a storm: generations" in v.message, v.message
    # the workers' reports of the generations, first; the coordinator's lines of the time beside them
    assert v.witnesses and v.witnesses[0]["type"] == "connect_rebalance", v.witnesses
    assert {w["type"] for w in v.witnesses} <= {"connect_rebalance", "broker"}, v.witnesses
    assert v.measurements["uncaused"] + v.measurements["storm"] >= 1, v.measurements
    h = History.load(r.run_dir / "history")
    m1 = [e for e in h if e.get("member") == "m1"]
    assert not [e for e in m1 if e["type"] == "error"], "slot 0's worker could not leave its group"
    assert len([e for e in m1 if e["type"] == "started"]) == 1  # one life: the rejoins are not joins of a new worker


def test_the_same_run_without_it_passes_with_every_generation_caused(run_scenario):
    r = _run(run_scenario)
    assert_run_passes(r)
    v = r.verdicts["connect_rebalance_cause"]
    assert v.status == "valid" and v.measurements["uncaused"] == v.measurements["storm"] == 0, v.message
