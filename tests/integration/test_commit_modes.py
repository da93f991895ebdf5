"""Verify: a member that never commits fails commit_progress in a real run, and only that invariant.

Setup: the chaos suite run by pytest in a subprocess, scenario member-kill under classic-cooperative, with
`--harness-commit-mode never`: every member (the Python member on confluent-kafka) processes and never commits.
Then: the suite exits 1 and names commit_progress as invalid, with a witness and the replay command; the
other invariants hold (the new owners re-process from the start of each partition: duplicates, all allowed).
"""
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_a_member_that_never_commits_fails_commit_progress(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pytest", "suites/test_chaos.py", "-p", "no:cacheprovider", "-q",
                        "-k", "test_scenario and member-kill", "--harness-protocol", "classic-cooperative",
                        "--harness-commit-mode", "never", "--harness-runs-root", str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-4000:]
    assert "1 failed" in out, out[-4000:]
    assert "commit_progress: invalid" in out and "commits nothing (commit_mode never" in out, out[-4000:]
    for other in ("exclusive_ownership", "coverage_liveness", "record_integrity"):
        assert f"{other}: invalid" not in out, out[-4000:]
    assert "witness:" in out and "harness replay" in out, out[-4000:]


@pytest.mark.nightly
@pytest.mark.parametrize("mode", ["async", "auto"])
def test_async_and_auto_commits_pass_on_the_consumer_protocol(tmp_path, mode):
    """The same suite test on the consumer protocol (KIP-848) with commits made asynchronously or by the
    client's auto-commit: every invariant holds, commit_progress judged valid."""
    r = subprocess.run([sys.executable, "-m", "pytest", "suites/test_chaos.py", "-p", "no:cacheprovider", "-q",
                        "-k", "test_scenario and member-kill", "--harness-protocol", "consumer",
                        "--harness-commit-mode", mode, "--harness-runs-root", str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "1 passed" in out, out[-4000:]
    import json
    (verdicts,) = [json.loads(p.read_text()) for p in tmp_path.glob("*member-kill*/verdicts.json")]
    assert verdicts["commit_progress"]["status"] == "valid", verdicts["commit_progress"]
