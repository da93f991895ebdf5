"""Suite tests and the known findings (harness/findings.py): a run that fails only as a known client or Kafka
bug fails its test all the same, and its message names the finding and what in the history shows it
(`--harness-known-findings fail`, the default: a team's gate must see its client's bugs). With `xfail` such a
test is reported xfailed, its reason the same message: for a gate of the harness's own code (`.ci/run`), which a
client bug that shows one run in several must not block. Any other failure fails either way."""
from __future__ import annotations

import json
import os

import pytest

MODES = ("fail", "xfail")


def add_option(group) -> None:
    group.addoption("--harness-known-findings", dest="harness_known_findings", choices=MODES,
                    default=os.environ.get("HARNESS_KNOWN_FINDINGS", "fail"),
                    help="a run that fails only as a known finding (harness/findings.py, docs/findings.md) and whose "
                         "history shows it: fail its test (default), or xfail it with the finding as the reason")


def mode(config) -> str:
    """--harness-known-findings (or HARNESS_KNOWN_FINDINGS); the session ends with one line and exit 2 otherwise."""
    got = config.getoption("harness_known_findings")
    if got not in MODES:
        pytest.exit(f"harness: --harness-known-findings {got!r}: one of {', '.join(MODES)}", returncode=2)
    return got


def known_finding(result) -> tuple[object, str] | None:
    """(the known finding a failed run matches, what its history shows of it), else None."""
    from harness import findings
    from harness.rundir import RUN_JSON
    try:
        meta = json.loads((result.run_dir / RUN_JSON).read_text())
    except (OSError, ValueError):
        return None
    cfg = meta.get("config") or {}
    failed = {n for n, v in result.verdicts.items() if v.status == "invalid"}
    unjudged = any(v.status == "unknown" for v in result.verdicts.values())  # never excused
    if result.status != "fail" or not cfg.get("scenario") or unjudged:
        return None
    f = findings.known(scenario=cfg["scenario"], protocol=cfg.get("protocol"),
                       client_version=meta.get("client_version") or cfg.get("client_version"),
                       member=cfg.get("member"), failed=failed, run_dir=result.run_dir)
    if f is None:
        return None
    return f, (f.evidence(result.run_dir) if f.evidence else None) or "the failed invariants"


def line(known: tuple[object, str]) -> str:
    f, seen = known
    return f"  known finding {f.id}: {f.title}; this run: {seen}; seen before: {f.expected_rate}; {f.doc}"


def settle(config, message: str, known: tuple[object, str] | None) -> None:
    """End a failed test: xfail when it is a known finding and the session says so, else fail."""
    if known is not None and config is not None and mode(config) == "xfail":
        pytest.xfail(message)
    pytest.fail(message, pytrace=False)
