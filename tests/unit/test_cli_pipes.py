"""Verify: the CLI keeps Unix manners when the reader of its output leaves early (`harness scenarios | head`).

Setup: `python -m harness` in a subprocess whose standard output is a pipe nobody reads (its read end closed
before the command starts, so every write meets a broken pipe), and once through a shell's `| head -3`.
Then: no traceback and nothing on stderr; the exit code is the command's own (0 for a listing, 2 for bad
input, the verdict's for `harness check`), not one the broken pipe made.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}


def _with_gone_reader(*args: str, stderr_too: bool = False) -> subprocess.CompletedProcess:
    r, w = os.pipe()
    os.close(r)  # the reader left before the first line
    try:
        return subprocess.run([sys.executable, "-m", "harness", *args], stdout=w, text=True, env=ENV, cwd=ROOT,
                              stderr=w if stderr_too else subprocess.PIPE, timeout=120)
    finally:
        os.close(w)


@pytest.mark.parametrize("args", [("scenarios",), ("--help",), ("run", "--help")])
def test_a_listing_whose_reader_left_ends_quietly_with_0(args):
    r = _with_gone_reader(*args)
    assert (r.returncode, r.stderr) == (0, "")


def test_bad_input_keeps_its_exit_code_and_its_line(tmp_path):
    r = _with_gone_reader("run", "no-such-scenario", "--runs-root", str(tmp_path))
    assert r.returncode == 2
    assert len(r.stderr.splitlines()) == 1 and "unknown scenario" in r.stderr and "Traceback" not in r.stderr


def test_bad_input_keeps_its_exit_code_when_stderr_is_gone_too(tmp_path):
    """`harness run ... 2>&1 | head`: the one line on stderr meets the broken pipe as well."""
    assert _with_gone_reader("run", "no-such-scenario", "--runs-root", str(tmp_path), stderr_too=True).returncode == 2


def test_check_keeps_its_verdicts_exit_code(tmp_path, capsys):
    from harness.analytics import synth
    from harness.cli import main
    from harness.record.rundir import RunDir
    synth.generate(str(tmp_path), 2, 500, seed=1)
    run = next(p for p in sorted(tmp_path.iterdir()) if RunDir.is_run_dir(p) and RunDir(p).status() in ("pass", "fail"))
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    expected = main(["check", str(run)])
    capsys.readouterr()
    r = _with_gone_reader("check", str(copy))
    assert (r.returncode, r.stderr) == (expected, "")


@pytest.mark.skipif(not shutil.which("bash") or not shutil.which("head"), reason="needs bash and head")
def test_scenarios_piped_into_head():
    """The README's case as a person types it (whether `head` leaves before the last write is up to timing:
    the tests above, with the reader gone from the start, are the ones that always meet the broken pipe)."""
    r = subprocess.run(["bash", "-c", f"set -o pipefail; {sys.executable} -m harness scenarios | head -3"],
                       capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=120)
    assert (r.returncode, r.stderr) == (0, "")
    assert len(r.stdout.splitlines()) == 3
