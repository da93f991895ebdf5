"""A suite session on the fake backend (harness/cluster/fake.py): pytest in a subprocess, with the harness's plugin,
on a `suites/` directory of its own whose conftest registers three test-only scenarios (a pass, a run whose member
claims a partition it was not given: a fail, and a run whose first step does nothing: unknown; optionally a test
excused as a known finding), puts the session
cluster's place to a FakeCluster, and makes each run's config one of fake members with short waits. The plugin, the
pool (`--harness-concurrency 2`), JUnit and Allure run as they do in `./dev smoke`; only Kafka is not there. A
session takes some 20-40 s.

    r = run_session(tmp_path)   # r.proc (the CompletedProcess), r.junit, r.allure, r.runs (scenario -> run dir)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
ENV.pop("HARNESS_KNOWN_FINDINGS", None)
ENV.pop("HARNESS_CONCURRENCY", None)
PROTOCOL = "classic-cooperative"
#: each scenario's test, and the status its run ends with
SCENARIOS = {"fake-scale": "pass", "fake-claim": "fail", "fake-idle": "unknown"}
#: how long each test's own set-up takes (so that pytest's own time of a test is not its run's)
SETUP_S = 1.5

CONFTEST = f'''
import dataclasses
import sys
import time
from pathlib import Path

import pytest

import harness
from harness.cluster.fake import FakeCluster, FakeWorkload
from harness.plan import scenarios
from harness.plan.scenarios import Action, Scenario
from harness.run import runner
from harness.suite import plugin

FAKE_MEMBER = (sys.executable, str(Path(harness.__file__).parent / "members" / "fake_member.py"))
FAST = dict(members=2, check_overrides=lambda ctx, sched: {{"static_grace_s": 1.5}})


def _scale(rng, ctx):
    return [Action("scale_out", {{}}), Action("wait_stable", {{}})]


def _idle(rng, ctx):  # a replacement in a slot whose member runs: the step does nothing, the run is unknown
    return [Action("replace_member", {{"slot": 0}}), Action("scale_out", {{}}), Action("wait_stable", {{}})]


for name, steps in (("fake-scale", _scale), ("fake-claim", _scale), ("fake-idle", _idle)):
    scenarios.SCENARIOS[name] = Scenario(name, "test only", steps, **FAST)

_config = plugin.run_config


def _fake_config(*args, **kwargs):
    cfg = _config(*args, **kwargs)
    return dataclasses.replace(cfg, backend="local", kafka_version="4.3.1", partitions=6, rate_per_s=40.0, session_timeout_s=2.0,
                               heartbeat_interval_s=0.2, stable_s=0.5, stable_timeout_s=10.0, drain_timeout_s=5.0,
                               quiet_period_s=0.5, member_command=FAKE_MEMBER,
                               misbehave="claim-extra" if cfg.scenario == "fake-claim" else None)


plugin.run_config = _fake_config
runner.run_scenario = lambda cfg, cluster=None, progress=None: runner.Run(
    cfg, cluster=cluster, make_workload=FakeWorkload, progress=progress).execute()


@pytest.fixture(scope="session")
def kafka_cluster(runs_root):
    with FakeCluster(work_dir=runs_root / "fake-cluster", version="4.3.1") as c:
        yield c


@pytest.fixture(autouse=True)
def slow_setup():
    time.sleep({SETUP_S})
'''

TESTS = '''
import pytest

from harness.suite.plugin import assert_run_passes


@pytest.mark.parametrize("scenario", ["fake-scale", "fake-claim", "fake-idle"])
def test_fake(scenario, protocol, run_scenario):
    assert_run_passes(run_scenario(scenario, protocol=protocol))
'''

#: with `excused=True`: a test whose run (hand-made: tests/unit/livelock_history.py) fails only as a known finding
EXCUSED = '''
from harness.record.rundir import RunResult
from harness.suite.plugin import assert_run_passes
from tests.unit.livelock_history import livelock_verdicts, write_run


def test_known(tmp_path):
    run = write_run(tmp_path / "run", refused_s=8.0)
    assert_run_passes(RunResult(run, "fail", livelock_verdicts(run)))
'''
#: the known finding that excuses it
EXCUSED_BY = "librdkafka-848-commit-starves-heartbeat"


@dataclass
class Session:
    proc: subprocess.CompletedProcess
    junit: Path
    allure: Path
    runs: dict[str, Path]  # scenario -> its run directory

    def test_of(self, scenario: str) -> str:
        """The test's name (JUnit's, Allure's) of a scenario's run."""
        return f"test_fake[{PROTOCOL}-{scenario}]"


def run_session(tmp_path: Path, *args: str, excused: bool = False) -> Session:
    """The session in `tmp_path` (its suites/, runs/, junit.xml, allure/), with pytest's live log on; `excused`: with
    the known finding's test too (pass `--harness-known-findings xfail` to have it excused)."""
    suites = tmp_path / "suites"
    suites.mkdir(parents=True)
    (suites / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (suites / "test_fake_chaos.py").write_text(textwrap.dedent(TESTS))
    if excused:
        (suites / "test_fake_known_chaos.py").write_text(EXCUSED)
    junit, allure, runs = tmp_path / "junit.xml", tmp_path / "allure", tmp_path / "runs"
    proc = subprocess.run([sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-p", "harness.suite.plugin",
                           "--harness-protocol", PROTOCOL, "--harness-kafka-version", "4.3.1",
                           "--harness-concurrency", "2", "--harness-runs-root", str(runs), f"--junitxml={junit}",
                           f"--alluredir={allure}", "-o", "log_cli=true", "--log-cli-level=INFO", *args],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=600)
    found = {}
    for d in runs.glob("*/run.json"):
        found[json.loads(d.read_text())["config"]["scenario"]] = d.parent
    return Session(proc, junit, allure, found)
