"""Verify: a suite test excused as a known finding carries the finding's id in the JUnit XML and in Allure, and the
session's summary names it; a test whose failure lies outside the finding's marks fails, saying why.

Setup: pytest in a subprocess with the harness's plugin, on a small test file whose tests call `assert_run_passes`
on hand-made run directories (tests/unit/livelock_history.py): the livelock's mark on the zombie of the witnesses
(excusable), the mark on another member (not), and a passing test; with --junitxml and --alluredir.
Then: under `--harness-known-findings xfail` the first is xfailed, its JUnit `skipped` message begins
`known finding: <id>`, its test case has the property `known_finding` = id, its Allure result the label
`known_finding` and a status message with the same reason; the second fails naming the finding it is not and the
witness outside the mark; the terminal summary says 1 test excused and names it with its id. Under `fail` (the
default) the first fails, still with the property, and the summary names it as failed as a known finding.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
ENV.pop("HARNESS_KNOWN_FINDINGS", None)
LIVELOCK = "librdkafka-848-commit-starves-heartbeat"

TESTS = '''
from harness.suite.plugin import assert_run_passes
from harness.record.rundir import RunResult
from tests.unit.livelock_history import livelock_verdicts, write_run


def _check(run):
    assert_run_passes(RunResult(run, "fail", livelock_verdicts(run)))


def test_excused(tmp_path):
    _check(write_run(tmp_path / "run", refused_s=8.0))


def test_witnessed_elsewhere(tmp_path):
    _check(write_run(tmp_path / "run", refused_s=8.0, marked="m1"))


def test_passes():
    pass
'''


def _session(tmp_path, *args) -> tuple[subprocess.CompletedProcess, dict[str, ET.Element], Path]:
    (tmp_path / "test_some.py").write_text(TESTS)
    junit, allure = tmp_path / "junit.xml", tmp_path / "allure"
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "harness.suite.plugin",
                        f"--junitxml={junit}", f"--alluredir={allure}", *args, "test_some.py"],
                       cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    return r, cases, allure


def _props(case: ET.Element) -> list[tuple[str, str]]:
    return [(p.get("name"), p.get("value")) for p in case.iter("property")]


def test_an_excused_test_carries_its_finding_in_junit_allure_and_the_summary(tmp_path):
    r, cases, allure = _session(tmp_path, "--harness-known-findings", "xfail")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out  # the failure outside the mark fails the session
    skipped = cases["test_excused"].find("skipped")
    assert skipped is not None and skipped.get("type") == "pytest.xfail", out
    assert skipped.get("message").startswith(f"known finding: {LIVELOCK}\nexclusive_ownership: "), skipped.get("message")
    assert _props(cases["test_excused"]) == [("known_finding", LIVELOCK)]
    failure = cases["test_witnessed_elsewhere"].find("failure")
    assert failure is not None and f"not {LIVELOCK}: exclusive_ownership's witness" in failure.text
    assert _props(cases["test_witnessed_elsewhere"]) == [] and cases["test_passes"].find("skipped") is None
    assert f"harness known findings: 1 test excused (--harness-known-findings xfail)\n" \
           f"  excused test_some.py::test_excused: {LIVELOCK}\n" in r.stdout, out
    results = [json.loads(p.read_text()) for p in allure.glob("*-result.json")]
    excused = next(x for x in results if x["name"] == "test_excused")
    assert excused["status"] == "skipped" and {"name": "known_finding", "value": LIVELOCK} in excused["labels"]
    assert f"known finding: {LIVELOCK}" in excused["statusDetails"]["message"]
    other = next(x for x in results if x["name"] == "test_witnessed_elsewhere")
    assert other["status"] == "failed" and not [x for x in other["labels"] if x["name"] == "known_finding"]


def test_under_fail_the_known_finding_fails_and_the_summary_says_so(tmp_path):
    r, cases, _ = _session(tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    failure = cases["test_excused"].find("failure")
    assert failure is not None and f"known finding: {LIVELOCK}: librdkafka, consumer protocol" in failure.text
    assert _props(cases["test_excused"]) == [("known_finding", LIVELOCK)]
    assert f"harness known findings: 0 tests excused (--harness-known-findings fail), 1 failed as known findings\n" \
           f"  failed test_some.py::test_excused: {LIVELOCK}\n" in r.stdout, out


def test_the_summary_counts_the_tests_excused_in_pytest_xdist_workers(tmp_path):
    """./dev test runs two workers: the summary is written by the controller, from the workers' reports (it said
    "0 tests excused" there although a test was)."""
    r, cases, _ = _session(tmp_path, "--harness-known-findings", "xfail", "-n", "2")
    out = r.stdout + r.stderr
    assert cases["test_excused"].find("skipped") is not None, out
    assert f"harness known findings: 1 test excused (--harness-known-findings xfail)\n" \
           f"  excused test_some.py::test_excused: {LIVELOCK}\n" in r.stdout, out
