"""Verify: `harness run --repeat N / --until-fail` (harness/drive/repeat.py) draws its seeds from one, stops at the first
failing run when asked, shares one cluster, prints its table and the failing seed's replay command, exits with the
right code, and leaves nothing behind on Ctrl-C.

Setup: the seed drawing and the table on hand-made values; the repeat loop with a stand-in run function (its
statuses chosen per run) and a cluster that only records start and stop; then the real runner on the fake backend
(harness/cluster/fake.py), a member breaking the rules under the third seed only.
Then: the seeds are distinct, deterministic, the base first; `--until-fail` stops at the failing run, shrinks it
and prints its replay command; the exit code is 0 / 1 / 2 / 130 as `harness run --help` says.
"""
from __future__ import annotations

import argparse
import io
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import harness
from harness.base.versions import is_release
from harness.kafka import dist as kafka_dist
from harness.base import procs
from harness.drive import repeat as rp
from harness.plan import scenarios
from harness.cluster.fake import FakeCluster, FakeWorkload
from harness.base.errors import BadInput
from harness.invariants import Verdict
from harness.record.rundir import RunDir, RunResult
from harness.run.runner import Run, RunConfig
from harness.plan.scenarios import Action, Scenario
from harness.drive.seeds import nth, seeds
from harness.run.waits import Waits

FAKE_MEMBER = (sys.executable, str(Path(harness.__file__).parent / "members" / "fake_member.py"))
PAUSE_S = 0.61


# -- seeds

def test_seeds_are_distinct_deterministic_and_start_with_the_base():
    twenty = list(seeds(1, 20))
    assert twenty[0] == 1 and len(set(twenty)) == 20
    assert twenty == list(seeds(1, 20)) and list(seeds(1, 5)) == twenty[:5]  # a longer repeat extends a shorter
    assert list(seeds(2, 5)) != twenty[:5] and list(seeds(7, 1)) == [7]
    assert all(0 <= s < 1 << 31 for s in twenty)
    assert [nth(1, k) for k in (1, 2, 20)] == [twenty[0], twenty[1], twenty[19]]
    endless = seeds(1)
    assert [next(endless) for _ in range(20)] == twenty


def test_seeds_skip_a_draw_equal_to_the_base(monkeypatch):
    class Rigged:  # draws the base first: it is not drawn twice
        def __init__(self, seed):
            self.values = iter([seed, 5, 5, 6])

        def randrange(self, _n):
            return next(self.values)
    monkeypatch.setattr("harness.drive.seeds.random.Random", Rigged)
    assert list(seeds(4, 3)) == [4, 5, 6]


# -- the table and the exit code

def _outcome(n, status, secs, failed=(), undecided=(), error=None, exercised=True):
    return rp.Outcome(n, 100 + n, status, secs, f"runs/r{n}", tuple(failed), tuple(undecided), error, exercised)


def test_the_table_counts_runs_failures_by_invariant_unknowns_and_time(tmp_path):
    rep = rp.Repeat("member-kill", "consumer", 1, 5, False, True, tmp_path, outcomes=[
        _outcome(1, "pass", 40.0), _outcome(2, "fail", 50.0, ["exclusive_ownership", "record_integrity"]),
        _outcome(3, "unknown", 41.0, undecided=["coverage"]), _outcome(4, "fail", 44.0, ["exclusive_ownership"]),
        _outcome(5, "error", 3.0, error="the cluster went away"),
        _outcome(6, "unknown", 30.0, undecided=["schedule_performed"], exercised=False)])
    assert rp.table(rep) == [
        " run  seed        status      time  invariants",
        "   1  101         pass       40.0s",
        "   2  102         fail       50.0s  exclusive_ownership, record_integrity",
        "   3  103         unknown    41.0s  undecided: coverage",
        "   4  104         fail       44.0s  exclusive_ownership",
        "   5  105         error       3.0s  error: the cluster went away",
        "   6  106         unknown    30.0s  did not exercise the scenario; undecided: schedule_performed",
        "runs: 6 (on one cluster); passed 1, failed 2, unknown 1, did not exercise 1, error 1",
        "failures by invariant: exclusive_ownership 2/6, record_integrity 1/6",
        "time per run: median 40.5s, max 50.0s",
    ]
    assert rep.first_failure().number == 2 and rep.exit_code == 1
    alone = replace(rep, shared=False, outcomes=rep.outcomes[:1])
    assert rp.table(alone)[2] == "runs: 1 (each on a cluster of its own (the scenario upgrades its brokers)); " \
                                 "passed 1, failed 0, unknown 0, did not exercise 0, error 0"
    assert rp.table(alone)[3] == "failures by invariant: none"


def test_a_run_whose_step_did_not_happen_did_not_exercise_its_scenario(tmp_path):
    idle = {"schedule_performed": Verdict("schedule_performed", "unknown", "step 1 (a1) kill_member did not happen"),
            "exclusive_ownership": Verdict("exclusive_ownership", "valid", "x")}
    assert not rp.Outcome.of(1, 1, RunResult(tmp_path, "unknown", idle), 3.0).exercised
    other = {**idle, "schedule_performed": Verdict("schedule_performed", "valid", "x"),
             "coverage_liveness": Verdict("coverage_liveness", "unknown", "never settled")}
    assert rp.Outcome.of(2, 2, RunResult(tmp_path, "unknown", other), 3.0).exercised
    failed = {**idle, "exclusive_ownership": Verdict("exclusive_ownership", "invalid", "x")}
    assert rp.Outcome.of(3, 3, RunResult(tmp_path, "fail", failed), 3.0).exercised  # a failure is a failure


def test_a_schedule_that_did_not_shrink_is_said_so(tmp_path):
    rep = rp.Repeat("member-kill", "consumer", 1, 5, True, True, tmp_path, outcomes=[
        _outcome(1, "fail", 28.0, ["exclusive_ownership"])], shrunk={
        "from_actions": 5, "to_actions": 5, "attempts": 5, "schedule": [], "replay": "harness replay runs/r1"})
    out = io.StringIO()
    rp.report(rep, out=out)
    text = out.getvalue()
    assert "first failure: run 1, seed 101: exclusive_ownership\nreplay: harness replay runs/r1\n" in text
    assert "not shrunk: every shorter schedule of the 5 attempts passed" in text and "replay the shrunk" not in text


@pytest.mark.parametrize("statuses, interrupted, code", [
    (["pass", "pass"], False, 0),
    (["pass", "fail"], False, 1),
    (["pass", "unknown"], False, 1),  # undecided is never a pass
    (["pass", "error"], False, 2),  # a run that could not be set up
    (["error", "fail", "unknown"], False, 1),  # a failure found is the news
    (["pass"], True, 130),
    ([], True, 130),
    ([], False, 2),
])
def test_exit_codes(statuses, interrupted, code):
    assert rp.exit_code(statuses, interrupted=interrupted) == code


# -- the loop, with a stand-in run

class RecordingCluster:
    """A shared cluster that only says it was started and stopped."""

    backend, version = "fake", "4.3.1"

    def __init__(self, backend, **kw):
        self.kw, self.calls = kw, []

    def start(self):
        self.calls.append("start")

    def stop(self):
        self.calls.append("stop")


@pytest.fixture
def own_kafka(monkeypatch, tmp_path):
    """The repeat resolves the Kafka version before it starts its cluster; the fake needs no jars."""
    monkeypatch.setattr(kafka_dist, "resolve", lambda v, progress=None: kafka_dist.KafkaDist(
        v if is_release(v) else "4.3.1", tmp_path))


def _scale_out(rng, ctx):
    return [Action("scale_out", {}), Action("wait_stable", {})]


def _pause(rng, ctx):
    return [Action("pause_member", {"slot": 0, "duration_s": PAUSE_S}), Action("wait_stable", {})]


FAST = dict(members=2, check_overrides=lambda ctx, sched: {"static_grace_s": 1.5})


@pytest.fixture(autouse=True)
def fake_scenarios(monkeypatch):
    monkeypatch.setitem(scenarios.SCENARIOS, "fake-scale", Scenario("fake-scale", "test only", _scale_out, **FAST))
    monkeypatch.setitem(scenarios.SCENARIOS, "fake-pause", Scenario("fake-pause", "test only", _pause, **FAST))
    monkeypatch.setitem(scenarios.SCENARIOS, "fake-upgrade", Scenario("fake-upgrade", "test only", _scale_out,
                                                                      initial_kafka="3.9.1", **FAST))


def config(tmp_path, scenario="fake-scale", **kw) -> RunConfig:
    base = dict(scenario=scenario, seed=1, protocol="classic-cooperative", kafka_version="4.3.1",
                runs_root=str(tmp_path / "runs"), partitions=6, rate_per_s=40.0, session_timeout_s=2.0,
                heartbeat_interval_s=0.2, stable_s=0.5, stable_timeout_s=10.0, drain_timeout_s=5.0,
                quiet_period_s=0.5, member_command=FAKE_MEMBER)
    return RunConfig(**{**base, **kw})


def stand_in(statuses, ran):
    """A run function whose n-th run ends with statuses[n] (a failure violates exclusive_ownership)."""
    def run(cfg, *, cluster, progress):
        ran.append((cfg.seed, cluster))
        d = Path(cfg.runs_root) / f"run-{len(ran)}"
        d.mkdir()
        status = statuses[len(ran) - 1]
        verdicts = {"exclusive_ownership": Verdict("exclusive_ownership", "invalid" if status == "fail" else "valid",
                                                   "x")}
        return RunResult(d, status, verdicts, error="no cluster" if status == "error" else None)
    return run


def test_until_fail_stops_at_the_first_failure_on_one_cluster(tmp_path, own_kafka):
    clusters, ran = [], []
    rep = rp.repeat(config(tmp_path), count=5, until_fail=True, shrink_attempts=0, progress=lambda *_: None,
                    make_cluster=lambda b, **kw: clusters.append(RecordingCluster(b, **kw)) or clusters[-1],
                    run=stand_in(["pass", "pass", "fail", "pass", "pass"], ran))
    assert [o.status for o in rep.outcomes] == ["pass", "pass", "fail"] and rep.exit_code == 1
    assert [s for s, _ in ran] == list(seeds(1, 3))
    assert len(clusters) == 1 and clusters[0].calls == ["start", "stop"] and all(c is clusters[0] for _, c in ran)
    assert clusters[0].kw["work_dir"] == rep.out_dir / "cluster" and rep.shared
    saved = json.loads((rep.out_dir / "repeat.json").read_text())
    assert [o["seed"] for o in saved["outcomes"]] == list(seeds(1, 3))
    assert saved["failures_by_invariant"] == {"exclusive_ownership": 1}


def test_the_shared_cluster_starts_with_the_broker_settings_a_single_runs_cluster_gets(tmp_path, own_kafka, monkeypatch):
    """A kind's settings that the brokers take in their own config (a share group's on Kafka 4.2) are the plan's
    broker settings: the repeat's cluster starts with them, as a single run's own cluster does (runner.py), beside
    the run's --broker-set; it was started with --broker-set alone, and every run was refused ("cannot apply to a
    run on a shared cluster (started with group.share.delivery.count.limit=(unset))")."""
    real = rp.resolve

    def resolve(cfg, **kw):
        return replace(real(cfg, **kw), broker_settings={"group.share.delivery.count.limit": "3"})
    monkeypatch.setattr(rp, "resolve", resolve)
    clusters, ran = [], []
    rp.repeat(config(tmp_path, broker_settings=(("num.io.threads", "4"),)), count=1, shrink_attempts=0,
              progress=lambda *_: None, run=stand_in(["pass"], ran),
              make_cluster=lambda b, **kw: clusters.append(RecordingCluster(b, **kw)) or clusters[-1])
    props = clusters[0].kw["settings"].properties()
    assert props["group.share.delivery.count.limit"] == "3" and props["num.io.threads"] == "4"


def test_without_until_fail_every_run_is_made(tmp_path, own_kafka):
    ran = []
    rep = rp.repeat(config(tmp_path), count=4, shrink_attempts=0, progress=lambda *_: None,
                    make_cluster=RecordingCluster, run=stand_in(["pass", "fail", "unknown", "fail"], ran))
    assert len(rep.outcomes) == 4 and rep.failures_by_invariant() == {"exclusive_ownership": 2}
    assert rep.count("unknown") == 1 and rep.exit_code == 1


def test_a_scenario_that_upgrades_its_brokers_starts_a_cluster_per_run_and_says_so(tmp_path, own_kafka):
    said, ran = [], []
    rep = rp.repeat(config(tmp_path, scenario="fake-upgrade"), count=2, progress=said.append,
                    make_cluster=lambda *a, **k: pytest.fail("no shared cluster"), run=stand_in(["pass", "pass"], ran))
    assert not rep.shared and [c for _, c in ran] == [None, None] and rep.exit_code == 0
    assert any("cannot share a cluster, so each run starts a cluster of its own" in s for s in said)


def test_ctrl_c_between_runs_stops_the_cluster_and_keeps_the_table(tmp_path, own_kafka):
    clusters, ran = [], []
    run = stand_in(["pass"], ran)

    def interrupted_second(cfg, **kw):
        if ran:
            raise KeyboardInterrupt
        return run(cfg, **kw)
    rep = rp.repeat(config(tmp_path), count=5, progress=lambda *_: None, run=interrupted_second,
                    make_cluster=lambda b, **kw: clusters.append(RecordingCluster(b, **kw)) or clusters[-1])
    assert rep.interrupted and rep.exit_code == 130 and clusters[0].calls == ["start", "stop"]
    assert rep.interrupted_during == f"the run of seed {nth(1, 2)}"
    out = io.StringIO()
    rp.report(rep, out=out)
    assert "runs: 1 (on one cluster); passed 1" in out.getvalue()
    assert f"interrupted after 1 of at most 5 runs, during the run of seed {nth(1, 2)}" in out.getvalue()


def test_bad_input_before_anything_starts(tmp_path, own_kafka):
    with pytest.raises(BadInput, match="unknown misbehaviour"):
        rp.repeat(config(tmp_path, misbehave="be-rude"), count=2, make_cluster=lambda *a, **k: pytest.fail("started"))
    assert not (tmp_path / "runs").exists()
    with pytest.raises(BadInput, match="--shrink-attempts applies to --repeat and --until-fail"):
        rp.run_repeated(config(tmp_path), argparse.Namespace(repeat=None, until_fail=False, shrink_attempts=3))


@pytest.mark.parametrize("argv, message", [
    (["--repeat", "0"], "argument --repeat: 0 is less than 1"),
    (["--repeat", "x"], "argument --repeat: 'x' is not a whole number"),
    (["--shrink-attempts", "-1"], "argument --shrink-attempts: -1 is less than 0"),
])
def test_bad_counts_are_one_line_and_exit_2(argv, message, capsys):
    from harness.cli import main
    with pytest.raises(SystemExit) as e:
        main(["run", "member-kill", *argv])
    err = capsys.readouterr().err
    assert e.value.code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_run_help_teaches_the_options(capsys):
    from harness.cli import main
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("--repeat N run the scenario N times, under distinct seeds drawn from --seed",
                  "--until-fail stop at the first failing run: at most --repeat N runs, or 100 without it",
                  "Exit code 0 when every run passed, 1 when one failed", "--shrink-attempts N"):
        assert words in text


# -- the real runner on the fake backend

@pytest.fixture(autouse=True)
def no_process_left():
    before = {p.pid for p in procs.live_children()}
    yield
    left = [p for p in procs.live_children() if p.pid not in before]
    for p in left:
        p.kill()
    assert not left, f"processes left alive: {[p.pid for p in left]}"


def fake_run(bad_seed):
    """The runner on the fake backend; under `bad_seed` member slot 0 claims a partition it was not given."""
    def run(cfg, *, cluster, progress=None):
        if cfg.seed == bad_seed:
            cfg = replace(cfg, misbehave="claim-extra")
        return Run(cfg, cluster=cluster, make_workload=FakeWorkload, progress=progress).execute()
    return run


def test_until_fail_on_the_fake_backend_stops_at_the_third_seed_and_prints_its_replay(tmp_path, own_kafka,
                                                                                      monkeypatch, capsys):
    third = nth(1, 3)
    monkeypatch.setattr("harness.drive.nightly.run_scenario", fake_run(third))  # the shrinking runs, on the fake too
    clusters = []
    args = argparse.Namespace(repeat=5, until_fail=True, shrink_attempts=2)
    code = rp.run_repeated(config(tmp_path), args, progress=lambda *_: None, run=fake_run(third),
                           make_cluster=lambda b, **kw: clusters.append(FakeCluster(**kw)) or clusters[-1])
    out = capsys.readouterr().out
    assert code == 1
    rep = json.loads(next((tmp_path / "runs").glob("repeat-*/repeat.json")).read_text())
    assert [(o["seed"], o["status"]) for o in rep["outcomes"]] == [(1, "pass"), (nth(1, 2), "pass"), (third, "fail")]
    failing = rep["outcomes"][2]
    assert failing["failed"] == ["exclusive_ownership"] and RunDir.open(failing["run_dir"]).meta()["seed"] == third
    assert f"first failure: run 3, seed {third}: exclusive_ownership" in out
    assert f"replay: harness replay {failing['run_dir']}" in out
    assert "failures by invariant: exclusive_ownership 1/3" in out and "runs: 3 (on one cluster)" in out
    assert rep["shrunk"]["to_actions"] < rep["shrunk"]["from_actions"] and "replay the shrunk: harness replay" in out
    attempts = [m for p in Path(rep["out_dir"]).glob("*/run.json")
                if (m := json.loads(p.read_text()))["run_id"] not in {Path(o["run_dir"]).name for o in rep["outcomes"]}]
    assert len(attempts) == rep["shrunk"]["attempts"] > 0  # each shrink attempt says which run it shrinks
    assert {m["config"]["shrink_of"] for m in attempts} == {Path(failing["run_dir"]).name}
    assert all(RunDir.open(o["run_dir"]).meta()["config"]["shrink_of"] is None for o in rep["outcomes"])
    assert len(clusters) == 1 and clusters[0].call_names()[0] == "start" and clusters[0].call_names()[-1] == "stop"
    assert Path(failing["run_dir"]).parent == Path(rep["out_dir"])


def test_ctrl_c_mid_run_on_the_fake_backend_leaves_nothing_behind(tmp_path, own_kafka, monkeypatch, capsys):
    real = Waits.sleep
    calls = []

    def sleep(self, s):  # Ctrl-C in the second run's pause
        if s == PAUSE_S and calls.append(s) is None and len(calls) == 2:
            raise KeyboardInterrupt
        real(self, s)
    monkeypatch.setattr(Waits, "sleep", sleep)
    clusters = []
    code = rp.run_repeated(config(tmp_path, scenario="fake-pause"),
                           argparse.Namespace(repeat=4, until_fail=False, shrink_attempts=None), progress=lambda *_: None,
                           run=fake_run(None), make_cluster=lambda b, **kw: clusters.append(FakeCluster(**kw)) or clusters[-1])
    out = capsys.readouterr().out
    assert code == 130 and clusters[0].call_names()[-1] == "stop"
    assert "runs: 1 (on one cluster); passed 1" in out and f"during the run of seed {nth(1, 2)}" in out
    dirs = sorted(p for p in next((tmp_path / "runs").glob("repeat-*")).iterdir() if RunDir.is_run_dir(p))
    assert sorted((d / "STATUS").read_text().split()[0] for d in dirs) == ["incomplete", "pass"]
