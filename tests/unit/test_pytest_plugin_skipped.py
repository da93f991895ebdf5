"""Verify: a suite session whose every test of a kind of group was skipped says so in its summary and does not pass.

Setup: pytest in a subprocess on a small test file whose tests take a `scenario` parameter (a share scenario and a
consumer one) and skip or pass without running anything (no cluster starts: the `run_scenario` fixture is not
asked for).
Then: every share test skipped (as on a release without share groups: `suites -m smoke --harness-kafka-version
3.9.2`) is one summary line naming the kind, and exit 1 though nothing failed; one share test that ran, or an
xfail (a run judged and excused), keeps the session green; a test that runs no scenario is no kind's.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}

TESTS = '''
import pytest

SHARE = {share}

@pytest.mark.parametrize("scenario", ["share-member-pause", "share-member-kill"])
def test_share(scenario):
    if SHARE == "skip":
        pytest.skip("share groups need Kafka 4.2 or newer; the cluster runs 3.9.2")
    if SHARE == "xfail" and scenario == "share-member-pause":
        pytest.xfail("known finding: f1")
    if SHARE == "one" and scenario == "share-member-pause":
        pytest.skip("not this one")

@pytest.mark.parametrize("scenario", ["member-kill"])
def test_consumer(scenario):
    pass

def test_no_scenario():
    pytest.skip("runs no scenario")
'''


def _run(tmp_path, share: str) -> subprocess.CompletedProcess:
    from harness.plan.scenarios import SCENARIOS
    assert SCENARIOS["share-member-pause"].kind == SCENARIOS["share-member-kill"].kind == "share"
    assert SCENARIOS["member-kill"].kind == "consumer"
    (tmp_path / "test_kinds.py").write_text(TESTS.format(share=repr(share)))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "harness.suite.plugin",
                           "test_kinds.py"], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120)


def test_every_share_test_skipped_is_said_and_is_no_pass(tmp_path):
    r = _run(tmp_path, "skip")
    out = r.stdout + r.stderr
    said = [line for line in out.splitlines() if line.startswith("harness: every")]
    assert said == ["harness: every share test was skipped (2 of 2): nothing of the share kind was judged, and the "
                    "session does not pass; first reason: share groups need Kafka 4.2 or newer; the cluster runs "
                    "3.9.2"], out
    assert "failed" not in out.splitlines()[-1] and r.returncode == 1, out


def test_a_kind_with_one_test_judged_passes(tmp_path):
    for share in ("run", "one", "xfail"):
        r = _run(tmp_path, share)
        out = r.stdout + r.stderr
        assert r.returncode == 0 and "harness: every" not in out, (share, out)


def test_the_line_comes_with_a_failure_too_and_the_failure_keeps_its_code(tmp_path):
    (tmp_path / "test_kinds.py").write_text(TESTS.format(share=repr("skip")))
    (tmp_path / "test_more.py").write_text("def test_broken():\n    assert False\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "harness.suite.plugin",
                        "test_kinds.py", "test_more.py"], cwd=tmp_path, env=ENV, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1 and "harness: every share test was skipped (2 of 2)" in r.stdout, r.stdout
