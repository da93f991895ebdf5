"""Verify: the suites fail, with witnesses, when a member breaks the rules in a real run.

Setup: the chaos suite run by pytest in a subprocess, one scenario and protocol, with `--harness-misbehave`
making one member (a) keep processing partitions after they were revoked from it, or (b) claim a
partition the group never gave it.
Then: the suite exits 1 and names the violated invariant and a witness in its output.
"""
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("kind, scenario", [("process-after-revoke", "scale-out-in"),
                                                pytest.param("claim-extra", "member-kill", marks=pytest.mark.nightly)])
def test_misbehaving_member_fails_the_suite(kind, scenario, tmp_path):
    r = subprocess.run([sys.executable, "-m", "pytest", "suites/test_chaos.py", "-p", "no:cacheprovider", "-q",
                        "-k", f"test_scenario and {scenario}", "--harness-protocol", "classic-cooperative",
                        "--harness-misbehave", kind, "--harness-runs-root", str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-4000:]
    assert "1 failed" in out, out[-4000:]
    assert "exclusive_ownership: invalid" in out, out[-4000:]
    assert "witness:" in out and "harness replay" in out, out[-4000:]
