"""Verify: the suites' `--harness-repeat N` makes every test that runs a scenario N tests, each under its own seed.

Setup: pytest in a subprocess collecting a small test file (collection only: no cluster starts), and the
plugin's `seed_for` on test ids.
Then: a test using `run_scenario` (or asking for `harness_repeat`) is collected N times, the repeat's id last
(test_x[consumer-member-kill-r2of3]); a test that runs no scenario once; repeat 1 keeps the seed a test has
without repeat and repeat K takes the K-th seed drawn from it; a bad count is one line and exit 2.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from harness.suite.plugin import seed_for
from harness.drive.seeds import seeds

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}

TESTS = '''
import pytest

def test_a(protocol, run_scenario):
    pass

@pytest.mark.parametrize("scenario", ["member-kill"])
def test_b(scenario, protocol, run_scenario):
    pass

def test_c():
    pass
'''


def _collect(tmp_path, *args) -> subprocess.CompletedProcess:
    (tmp_path / "test_some.py").write_text(TESTS)
    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-p", "harness.suite.plugin", "--harness-protocol", "consumer", *args, "test_some.py"],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120)


def test_each_scenario_test_is_collected_n_times_with_the_repeat_last(tmp_path):
    r = _collect(tmp_path, "--harness-repeat", "3")
    ids = [line for line in r.stdout.splitlines() if "::" in line]
    assert ids == ["test_some.py::test_a[consumer-r1of3]", "test_some.py::test_a[consumer-r2of3]",
                   "test_some.py::test_a[consumer-r3of3]", "test_some.py::test_b[consumer-member-kill-r1of3]",
                   "test_some.py::test_b[consumer-member-kill-r2of3]", "test_some.py::test_b[consumer-member-kill-r3of3]",
                   "test_some.py::test_c"], r.stdout + r.stderr
    once = [line for line in _collect(tmp_path).stdout.splitlines() if "::" in line]
    assert once == ["test_some.py::test_a[consumer]", "test_some.py::test_b[consumer-member-kill]", "test_some.py::test_c"]


def test_a_bad_count_is_one_line_and_exit_2(tmp_path):
    r = _collect(tmp_path, "--harness-repeat", "0")
    assert r.returncode == 2 and "harness: --harness-repeat '0': a count of 1 or more" in r.stdout + r.stderr


def test_repeat_k_takes_the_kth_seed_drawn_from_the_tests_own():
    def config(n):
        return SimpleNamespace(getoption={"harness_repeat": str(n), "harness_seed": 1}.__getitem__)
    own = seed_for(config(1), "suites/test_chaos.py::test_scenario[consumer-member-kill]")
    repeated = [seed_for(config(3), f"suites/test_chaos.py::test_scenario[consumer-member-kill-r{k}of3]", k)
                for k in (1, 2, 3)]
    assert repeated == list(seeds(own, 3)) and repeated[0] == own
    bare = seed_for(config(1), "suites/test_x.py::test_y")
    assert seed_for(config(2), "suites/test_x.py::test_y[r2of2]", 2) == list(seeds(bare, 2))[1]
