"""Verify: the Connect self-test `connect-rejoin-storm` (a worker that leaves and rejoins its group on its own, which
`connect_rebalance_cause` must fail: tests/integration/test_connect_misbehaving.py) is asked of Connect runs only and
reaches slot 0's worker alone.

Setup: RunConfig.validate for a Connect and a consumer-group scenario, the CLI's `main` in-process with every way to
start something made to fail the test (`nothing_starts`), the Connect kind with a context of test values
(tests/unit/runctx.py), the worker's Java source.
Then: a consumer-group, Streams or share run asked for it is one line, exit 2, no run directory; a Connect run takes
it; slot 0's worker is handed it (HARNESS_MISBEHAVE), slots 1 and 2 not (zombie-task: every slot); the worker
compares with the generated Vocabulary's name, and leaves its group through WorkerGroupMember.maybeLeaveGroup.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.base.errors import BadInput
from harness.cli import main
from harness.kinds.connect import ConnectCluster
from harness.plan.config import RunConfig
from harness.plan.kinds.connect import connect_settings
from harness.plan.scenarios import SCENARIOS
from harness.plan.topics import Topic
from harness.record.rundir import RunDir
from runctx import context

NAME = "connect-rejoin-storm"
WORKER = Path(__file__).resolve().parents[2] / "harness" / "members" / "connect" / "HarnessWorker.java"


@pytest.mark.parametrize("scenario", ["member-kill", "streams-scale-out", "share-member-kill"])
def test_a_run_of_another_kind_is_refused(scenario):
    with pytest.raises(BadInput, match=f"unknown misbehaviour '{NAME}'"):
        RunConfig.for_scenario(scenario, seed=1, misbehave=NAME).validate()


def test_the_cli_refuses_it_for_a_consumer_group_in_one_line_before_anything_starts(tmp_path, capsys, nothing_starts):
    try:
        code = main(["run", "member-kill", "--misbehave", NAME, "--runs-root", str(tmp_path / "runs")])
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and NAME in err[0] and "a consumer group" in err[0], err
    assert not (tmp_path / "runs").exists()


def test_a_connect_run_takes_it():
    assert RunConfig.for_scenario("connect-worker-kill-short", seed=1, misbehave=NAME).validate().kind == "connect"


def _kind(tmp_path: Path, misbehave: str) -> ConnectCluster:
    cfg = RunConfig.for_scenario("connect-worker-kill-short", seed=1, misbehave=misbehave)
    sc = SCENARIOS["connect-worker-kill-short"]
    plan = SimpleNamespace(cfg=cfg, scenario=sc, settings=connect_settings(cfg, sc), racks=("r0",),
                           kafka_version="4.4.0")
    ctx = context(plan, group_id="g-run", topics=[Topic("", "t-run", cfg.partitions)], run_dir=RunDir(tmp_path),
                  clock=lambda: 0.0, cluster=SimpleNamespace(bootstrap=lambda: "127.0.0.1:9092"))
    kind = ConnectCluster(ctx)
    kind.command = ("java", "HarnessWorker")
    return kind


@pytest.mark.parametrize("misbehave, slots", [(NAME, [0]), ("zombie-task", [0, 1, 2]), ("wrong-delay", [])])
def test_it_reaches_slot_0s_worker_alone(tmp_path, misbehave, slots):
    kind = _kind(tmp_path, misbehave)
    assert [s for s in range(3) if kind.member_spec(s).misbehave == misbehave] == slots
    assert all(kind.member_spec(s).misbehave in (None, misbehave) for s in range(3))


def test_the_worker_leaves_its_group_when_told_by_the_vocabularys_name():
    text = WORKER.read_text()
    assert "Vocabulary.MISBEHAVE_CONNECT_REJOIN_STORM.equals(HarnessHistory.MISBEHAVE)" in text
    assert 'getMethod("maybeLeaveGroup", String.class)' in text and 'getDeclaredField("member")' in text
