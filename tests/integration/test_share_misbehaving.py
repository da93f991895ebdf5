"""Verify: a share-group run fails, with witnesses, when a share member acts on records it no longer holds.

Setup: the share suite run by pytest in a subprocess (the smoke share scenario, the Python member), with
`--harness-misbehave` making member slot 0 once wait past its records' locks and then (a) accept them
(`ack-unheld`: the broker refuses the acknowledgements) or (b) process them without acquiring them again
(`process-expired`).
Then: the suite exits 1 and names `share_held_when_acting` invalid with a witness.
"""
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("kind", ["ack-unheld", pytest.param("process-expired", marks=pytest.mark.nightly)])
def test_a_share_member_acting_on_records_it_no_longer_holds_fails_the_suite(kind, tmp_path):
    r = subprocess.run([sys.executable, "-m", "pytest", "suites/test_share_chaos.py", "-p", "no:cacheprovider", "-q",
                        "-k", "share-member-kill-python", "--harness-misbehave", kind,
                        "--harness-runs-root", str(tmp_path)], capture_output=True, text=True, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-4000:]
    assert "1 failed" in out, out[-4000:]
    assert "share_held_when_acting: invalid" in out, out[-4000:]
    assert "witness:" in out and "harness replay" in out, out[-4000:]
