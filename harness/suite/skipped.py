"""Suite tests and the kinds that were never judged: a session whose every test of a kind of group (consumer, share,
Streams, Connect: the kind of the scenario a test runs, its `scenario` parameter) was skipped judged nothing of that
kind, and a team that asked for it must not see green.

At the end of such a session the terminal summary says so, one line per kind (`harness: every share test was skipped
(2 of 2): nothing of the share kind was judged; first reason: ...`), and a session that would otherwise pass exits 1
(pytest's "tests failed"): a skip is never a pass, of a run or of a kind. A kind some of whose tests ran is judged by
those; a test that runs no scenario is no kind's. Registered as a plugin by harness/suite/plugin.py.
"""
from __future__ import annotations

import pytest

_KINDS = pytest.StashKey[dict]()  # kind -> {test id: (skipped, reason)} of the session


def kind_of(item) -> str | None:
    """The kind of group a test's scenario drives (its `scenario` parameter), or None for a test that runs none."""
    from harness.plan.scenarios import SCENARIOS
    name = getattr(getattr(item, "callspec", None), "params", {}).get("scenario")
    sc = SCENARIOS.get(name) if isinstance(name, str) else None
    return sc.kind if sc is not None else None


_CONFIG: dict = {}  # the session's config, for the report hook (which is given none)


def pytest_configure(config):
    _CONFIG["config"] = config


def pytest_collection_finish(session):
    """Each selected test's kind, before any runs (not in a pytest-xdist worker, which sees only its share)."""
    kinds = session.config.stash[_KINDS] = {}
    if hasattr(session.config, "workerinput"):
        return
    for item in session.items:
        if (kind := kind_of(item)) is not None:
            kinds.setdefault(kind, {})[item.nodeid] = None  # not reported yet


def pytest_runtest_logreport(report):
    """A test whose phase was skipped (not an xfail: that test ran and was judged) counts as skipped; one whose call
    ran, or whose phase failed, as judged."""
    config = _CONFIG.get("config")
    kinds = config.stash.get(_KINDS, {}) if config is not None else {}
    for tests in kinds.values():
        if report.nodeid not in tests:
            continue
        if report.skipped and not hasattr(report, "wasxfail"):
            if tests[report.nodeid] is None:
                tests[report.nodeid] = (True, _reason(report))
        elif report.when == "call" or report.failed:
            tests[report.nodeid] = (False, None)


def _reason(report) -> str:
    """A skip's reason, as pytest's summary gives it."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr or "")


def unjudged(config) -> list[tuple[str, int, str]]:
    """(kind, tests, first skip reason) of each kind whose every reported test was skipped."""
    out = []
    for kind, tests in sorted(config.stash.get(_KINDS, {}).items()):
        seen = [t for t in tests.values() if t is not None]
        if seen and all(skipped for skipped, _ in seen):
            out.append((kind, len(seen), seen[0][1]))
    return out


def lines(config) -> list[str]:
    """The summary's lines: one per kind of which nothing was judged."""
    return [f"harness: every {kind} test was skipped ({n} of {n}): nothing of the {kind} kind was judged, and the "
            f"session does not pass; first reason: {why}" for kind, n, why in unjudged(config)]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """A session that would pass exits 1 when a kind was never judged."""
    if unjudged(session.config) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The lines of `lines`, at the end of the session's summary."""
    for text in lines(config):
        terminalreporter.write_line(text, red=True)
