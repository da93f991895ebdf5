"""Verify: under `--harness-concurrency 2` each suite test shows its own run's log lines and no other run's (in pytest's
report of it and in its Allure `log` attachment), each run's lines are in its run directory's logs/progress.log, the
console says whose each line is; JUnit testcase times are the runs' own durations (run.json), not pytest's time in
the test; Allure files a failed run as `failed`, an unknown one as `broken`, under the epic of its kind of group and
the story of its protocol.

Setup: a suite session on the fake backend (tests/unit/fakesuite.py): three tests, a passing, a failing (a member
claims a partition it was not given) and an unknown run (a step that did nothing), two at a time on the pool, each
test's own set-up taking 1.5 s; with --junitxml, --alluredir and pytest's live log.
Then: each run's progress.log holds its plan's and its schedule's lines; each test's captured log (pytest's report
of a failure, Allure's `log`) holds every line of its run's progress.log and no line only another run's has;
each live console line of a run says `[<its test id>]` before its message; each JUnit time is within 10 % of run.json's
`duration_s` (and pytest's own would not be: a test collects a run that ended before it, or waits on one while its
own set-up has gone by); Allure statuses passed / failed / broken, epic `consumer groups`, story the protocol.
"""
from __future__ import annotations

import json
import logging
import xml.etree.ElementTree as ET

import pytest

from harness.run import progress
from harness.suite.plugin import allure_status, kind_and_protocol
from tests.unit.fakesuite import PROTOCOL, SCENARIOS, SETUP_S, run_session


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    s = run_session(tmp_path_factory.mktemp("suite"))
    assert s.proc.returncode == 1, (s.proc.stdout + s.proc.stderr)[-4000:]
    assert sorted(s.runs) == sorted(SCENARIOS), s.runs
    return s


def _own(run_dir) -> list[str]:
    return (run_dir / "logs" / progress.PROGRESS_LOG).read_text().splitlines()


def _allure(session) -> dict[str, dict]:
    return {r["name"]: r for r in (json.loads(p.read_text()) for p in session.allure.glob("*-result.json"))}


def _log_attachment(session, result: dict) -> str:
    (a,) = [a for a in result.get("attachments", ()) if a["name"] == "log"]
    return (session.allure / a["source"]).read_text()


def test_each_run_keeps_its_own_lines_in_its_run_directory(session):
    for scenario, run in session.runs.items():
        lines = _own(run)
        assert any(f"t-{run.name}" in x for x in lines), lines  # its topic, named after its run
        assert any("stopping members" in x for x in lines), lines
        others = [r.name for s, r in session.runs.items() if s != scenario]
        assert not [x for x in lines if any(o in x for o in others)], lines
        assert not [x for x in lines if x.split(": ", 1)[-1].startswith("[")
                    and f"{PROTOCOL}-" in x.split("] ", 1)[0]], "a console prefix in the run's own file"


def test_each_test_shows_its_own_run_s_lines_only(session):
    results = _allure(session)
    own = {s: set(_own(r)) for s, r in session.runs.items()}
    for scenario in SCENARIOS:
        shown = _log_attachment(session, results[session.test_of(scenario)])
        got = set(shown.splitlines())
        assert own[scenario] <= got, (scenario, own[scenario] - got)
        for other, lines in own.items():  # another run's messages, in whatever format a line shows them
            if other != scenario:
                foreign = [m for m in _messages(lines) - _messages(own[scenario]) if m in shown]
                assert not foreign and session.runs[other].name not in shown, (scenario, other, foreign)
    # pytest's own report of a failed test (its "Captured log" sections): the same
    for scenario in ("fake-claim", "fake-idle"):
        out = _failure_report(session, scenario)
        assert "Captured log call" in out and own[scenario] <= set(out.splitlines()), out
        assert not [r.name for s, r in session.runs.items() if s != scenario and r.name in out], out


def _messages(lines) -> set[str]:
    """The messages of progress.log lines (`HH:MM:SS LEVEL logger: message`)."""
    return {x.split(": ", 1)[1] for x in lines}


def _failure_report(session, scenario: str) -> str:
    """What pytest printed of a failed test: from its header in FAILURES to the next header or the summary."""
    out = session.proc.stdout
    start = out.index(f" {session.test_of(scenario)} _")
    ends = [i for i in (out.find(" test_fake[", start + 10), out.find("short test summary", start)) if i > 0]
    return out[start:min(ends)]


def test_the_console_says_whose_each_line_is(session):
    for scenario, run in session.runs.items():
        live = [x for x in session.proc.stdout.splitlines() if x.startswith("INFO     harness.")]  # pytest's live log
        said = [x for x in live if run.name in x and "producing" in x]
        assert said and all(f"[{PROTOCOL}-{scenario}] " in x for x in said), said


def test_junit_times_are_the_runs_own_durations(session):
    cases = {c.get("name"): float(c.get("time")) for c in ET.parse(session.junit).getroot().iter("testcase")}
    for scenario, run in session.runs.items():
        want = json.loads((run / "run.json").read_text())["duration_s"]
        got = cases[session.test_of(scenario)]
        assert abs(got - want) <= 0.1 * want, (scenario, got, want)
        assert want > SETUP_S  # (each test's own set-up alone would be a tenth off a run as short as this)


def test_allure_statuses_and_behaviours(session):
    results = _allure(session)
    statuses = {s: results[session.test_of(s)]["status"] for s in SCENARIOS}
    assert statuses == {"fake-scale": "passed", "fake-claim": "failed", "fake-idle": "broken"}, statuses
    for scenario in SCENARIOS:
        labels = {(x["name"], x["value"]) for x in results[session.test_of(scenario)]["labels"]}
        assert {("epic", "consumer groups"), ("feature", scenario), ("story", PROTOCOL), ("kind", "consumer")} <= labels


@pytest.mark.parametrize("statuses,want", [
    (["pass"], None), (["fail"], "failed"), (["unknown"], "broken"), (["error"], "broken"), (["incomplete"], "broken"),
    (["unknown", "fail"], "failed"), (["pass", "unknown"], "broken"), ([], None)])
def test_allure_status_of_a_test_s_runs(statuses, want):
    assert allure_status(statuses) == want


def _suite_params():
    """(suite module, its test's parameters) for every case of every suite under suites/."""
    from suites import (test_chaos, test_connect_chaos, test_docker_chaos, test_share_chaos,  # noqa: F401
                        test_streams_chaos)
    out = []
    for mod in (test_chaos, test_connect_chaos, test_docker_chaos, test_share_chaos, test_streams_chaos):
        fn = next(v for k, v in vars(mod).items() if k.startswith("test_") and callable(v))
        (mark,) = [m for m in fn.pytestmark if m.name == "parametrize"]
        names = [n.strip() for n in mark.args[0].split(",")]
        for case in mark.args[1]:
            params = dict(zip(names, case.values))
            if mod is test_chaos:  # its protocol is the plugin's parameter (one its scenario runs with)
                from harness.plan.config import scenario_of
                params["protocol"] = scenario_of(params["scenario"]).protocols[-1]
            out.append((mod.__name__, params))
    return out


def test_every_suite_s_test_has_its_kind_and_protocol():
    from harness.plan.config import scenario_of
    seen = set()
    for mod, params in _suite_params():
        got = kind_and_protocol(params)
        sc = scenario_of(params["scenario"])
        assert got["kind"] == sc.kind and got["scenario"] == params["scenario"], (mod, params, got)
        assert got["protocol"] in sc.protocols, (mod, params, got)
        seen.add(got["kind"])
    assert seen == {"consumer", "streams", "connect", "share"}


def test_a_run_s_lines_are_its_own_and_the_console_prefix_only_when_runs_overlap(tmp_path):
    """progress.capture on its own: the thread's lines are the run's, the prefix is the console's only."""
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record)
    keep, log = Keep(), logging.getLogger("harness.test")
    logging.getLogger("harness").addHandler(keep)
    old = logging.getLogger("harness").level
    logging.getLogger("harness").setLevel(logging.INFO)
    try:
        a, b = progress.RunLog("a-run", prefix=True), progress.RunLog("b-run")
        log.info("before")
        with progress.capture(a):
            log.info("one %s", "100%")
        with progress.capture(b):
            log.info("two")
        log.info("after")
        a.keep(tmp_path / "logs" / "progress.log")
        with progress.capture(a):
            logging.getLogger("harness.deeper").warning("three")
    finally:
        logging.getLogger("harness").removeHandler(keep)
        logging.getLogger("harness").setLevel(old)
    assert [r.getMessage() for r in seen] == ["before", "[a-run] one 100%", "two", "after", "[a-run] three"]
    assert [progress.run_of(r) for r in seen] == [None, "a-run", "b-run", None, "a-run"]
    assert [progress.not_a_runs(r) for r in seen] == [True, False, False, True, False]
    assert [x.split(": ", 1)[1] for x in a.lines()] == ["one 100%", "three"]
    assert [x.split(": ", 1)[1] for x in b.lines()] == ["two"]
    assert (tmp_path / "logs" / "progress.log").read_text().splitlines() == a.lines()
    assert "WARNING harness.deeper: three" in a.lines()[1]
