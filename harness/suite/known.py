"""Suite tests and the known findings (harness/findings/registry.py): a run that fails only as a known client or Kafka
bug fails its test all the same, and its message names the finding and the marks in the history that cover every
failing witness (`--harness-known-findings fail`, the default: a team's gate must see its client's bugs). With
`xfail` such a test is reported xfailed: for a gate of the harness's own code (`.ci/run`, README), which a client
bug that shows one run in several must not block. Any other failure fails either way, and its message says why
a finding whose scenario it ran did not match (a witness outside the bug's marks, say).

A test settled as a known finding carries its id: the xfail reason begins `known finding: <id>` (JUnit's
`skipped` message; Allure's status message, which the report's categories read), the JUnit test case has the
property `known_finding` = id, and its Allure result the label `known_finding` (failed or excused alike). The
session's terminal summary ends with how many tests were excused (or failed as known findings) and which, each
with its finding. Registered as a plugin by harness/suite/plugin.py.
"""
from __future__ import annotations

import os

import pytest

MODES = ("fail", "xfail")
#: the JUnit property and the Allure label that carry a settled test's finding id
PROPERTY = "known_finding"
_PENDING = pytest.StashKey[list]()  # the findings settle() met in the test being run
_SETTLED = pytest.StashKey[list]()  # (test id, finding ids, excused) of the session
_XFAILED = pytest.StashKey[set]()  # the tests whose call was reported xfailed
_CONFIG: dict = {}  # the session's config, for the report hook (which is given none)


def add_option(group) -> None:
    group.addoption("--harness-known-findings", dest="harness_known_findings", choices=MODES,
                    default=os.environ.get("HARNESS_KNOWN_FINDINGS", "fail"),
                    help="a run that fails only as a known finding (harness/findings/registry.py, docs/findings.md) whose marks "
                         "in the history cover every failing witness: fail its test (default), or xfail it")


def mode(config) -> str:
    """--harness-known-findings (or HARNESS_KNOWN_FINDINGS); the session ends with one line and exit 2 otherwise."""
    got = config.getoption("harness_known_findings")
    if got not in MODES:
        pytest.exit(f"harness: --harness-known-findings {got!r}: one of {', '.join(MODES)}", returncode=2)
    return got


def known_finding(result):
    """The Excuse (harness/findings/registry.py) of a failed run that is a known finding, else None."""
    from harness.findings import registry as findings
    return findings.known(result.run_dir, result.verdicts) if result.status == "fail" else None


def misses(result) -> list[str]:
    """Why each known finding whose scenario a failed run ran does not excuse it."""
    from harness.findings import registry as findings
    return findings.near_misses(result.run_dir, result.verdicts) if result.status == "fail" else []


def line(known) -> str:
    f = known.finding
    return f"  {known.reason()}; this run: {known.says}; seen before: {f.expected_rate}; {f.doc}"


def settle(config, message: str, known) -> None:
    """End a failed test: xfail when it is a known finding and the session says so, else fail."""
    if known is not None:
        from harness.findings.registry import REASON
        _note(config, known)
        if config is not None and mode(config) == "xfail":
            pytest.xfail(f"{REASON}{known.finding.id}\n{message}")
    pytest.fail(message, pytrace=False)


def _note(config, known) -> None:
    """Keep the finding for the test's report (JUnit property, summary) and label its Allure result."""
    stash = getattr(config, "stash", None)
    if stash is not None:
        stash.setdefault(_PENDING, []).append(known.finding.id)
    try:
        import allure
    except ImportError:
        return
    allure.dynamic.label(PROPERTY, known.finding.id)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """The findings a test was settled with: JUnit properties of its test case (and so of its teardown report, which
    the summary reads)."""
    outcome = yield
    outcome.get_result()
    pending = item.config.stash.get(_PENDING, [])
    if not pending:
        return
    item.user_properties.extend((PROPERTY, i) for i in pending)  # junitxml writes them from the teardown report
    pending.clear()


def pytest_runtest_logreport(report):
    """Collect the settled tests from the reports, where the session's summary is written: in the controller too
    when pytest-xdist runs the tests in workers (a worker's stash is not the controller's; the summary said
    "0 tests excused" under `./dev test`'s two workers although one was)."""
    config = _CONFIG.get("config")
    if config is None:
        return
    xfailed = config.stash.setdefault(_XFAILED, set())
    if report.when == "call" and hasattr(report, "wasxfail"):
        xfailed.add(report.nodeid)
    ids = [v for k, v in getattr(report, "user_properties", ()) if k == PROPERTY]
    if report.when == "teardown" and ids:
        config.stash.setdefault(_SETTLED, []).append((report.nodeid, ids, report.nodeid in xfailed))


def pytest_configure(config):
    _CONFIG["config"] = config


def summary(config) -> list[str]:
    """The terminal summary's lines: how many tests were excused as known findings and which, each with its id
    (always under xfail); those that failed as one (under fail, when any did)."""
    settled = config.stash.get(_SETTLED, [])
    excused = [(n, ids) for n, ids, x in settled if x]
    failed = [(n, ids) for n, ids, x in settled if not x]
    if mode(config) != "xfail" and not settled:
        return []
    out = [f"harness known findings: {len(excused)} test{'' if len(excused) == 1 else 's'} excused "
           f"(--harness-known-findings {mode(config)})"
           + (f", {len(failed)} failed as known findings" if failed else "")]
    out += [f"  excused {n}: {', '.join(ids)}" for n, ids in excused]
    out += [f"  failed {n}: {', '.join(ids)}" for n, ids in failed]
    return out


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for text in summary(config):
        terminalreporter.write_line(text)
