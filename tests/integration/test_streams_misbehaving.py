"""Verify: warmup-before-active fails a real Streams run whose instances defeat warmups (KIP-441).

Setup: the Streams suite run by pytest in a subprocess, the streams-scale-out scenario (two instances
with 10 s of state per task, a third added), with `--misbehave defeat-warmup`: every instance runs with
an acceptable.recovery.lag so large that Streams counts every instance as caught up, while the run
judges with the intended lag.
Then: the new instance (or another) takes tasks active with a full restore while a caught-up copy was
running elsewhere; the suite exits 1 naming warmup_before_active with witnesses.
"""
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_defeated_warmups_fail_the_suite(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pytest", "suites/test_streams_chaos.py", "-p", "no:cacheprovider", "-q",
                        "-k", "streams-scale-out-classic", "--misbehave", "defeat-warmup",
                        "--runs-root", str(tmp_path)], capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-4000:]
    assert "1 failed" in out, out[-4000:]
    assert "warmup_before_active: invalid" in out, out[-4000:]
    assert "while m" in out and "held a caught-up copy" in out, out[-4000:]
    assert "witness:" in out and "harness replay" in out, out[-4000:]
