"""Verify: `harness aggregate` says each phase as it ends, also when its output is a pipe (`harness aggregate ... |
cat`), and says which runs are judged otherwise than recorded (harness/analytics/job.py).

Setup: the job's progress lines given to a list; `say` in a child process whose standard output is a pipe; and (marked
integration: it starts a JVM) `python -m harness aggregate` over the kept pass and its vacuous twin
(analytics_cases.py) with its standard output a pipe, its lines read as they come.
Then: each phase's line comes with the seconds since the start, in order; a said line reaches the pipe while the
process is still running, not when it ends; the CLI's phase lines (discovered, Spark session, loaded, judged,
histories scanned, tables written) are each read while the job is still running, the summary's after them, and
the judged line names the twin with its recorded and its re-judged status.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.analytics import meta
from harness.analytics.job import Progress

ROOT = Path(__file__).resolve().parents[2]
#: as an engineer's shell runs it: no PYTHONUNBUFFERED (a pipe's output is then block-buffered unless flushed)
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
       "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}


def test_each_phase_line_comes_with_the_seconds_since_the_start():
    said = []
    p = Progress(said.append)
    p.done("discovered_s", "discovered 3 run directories under 1 path")
    time.sleep(0.05)
    p.note("skipped x: STATUS missing")
    p.done("loaded_s", "loaded STATUS, run.json and verdicts.json of 2 runs")
    assert list(p.phases) == ["discovered_s", "loaded_s"] and 0 <= p.phases["discovered_s"] < p.phases["loaded_s"]
    assert said[0] == f"aggregate: discovered 3 run directories under 1 path ({p.phases['discovered_s']:.1f} s)"
    assert said[1] == "aggregate:   skipped x: STATUS missing"
    assert said[2].startswith("aggregate: loaded STATUS, run.json and verdicts.json of 2 runs (")


def test_a_said_line_reaches_a_pipe_while_the_process_still_runs():
    code = ("from harness.base.stdio import quiet_when_readers_leave; quiet_when_readers_leave(); "  # as the CLI
            "from harness.analytics.job import say; import time; say('aggregate: first'); time.sleep(60)")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)
    try:
        line = p.stdout.readline()  # block-buffered, it would come only when the process ends, 60 s from now
        assert line == "aggregate: first\n" and p.poll() is None
    finally:
        p.kill()
        p.wait()


def test_an_unflushed_print_does_not_reach_the_pipe_before_the_end():
    """The must-fail twin of the test above: the same line printed without a flush stays in the buffer until the
    process ends, 3 s later."""
    code = ("from harness.base.stdio import quiet_when_readers_leave; quiet_when_readers_leave(); "
            "import time; print('aggregate: first'); time.sleep(3)")
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=ENV, cwd=ROOT)
    line = p.stdout.readline()
    assert line == "aggregate: first\n" and time.monotonic() - t0 >= 2.9
    assert p.wait(10) == 0


def test_reading_and_judging_are_two_steps(tmp_path):
    from analytics_cases import vacuous_fault
    d = str(vacuous_fault(tmp_path))
    read = meta.read(d)
    assert read["reason"] is None and read["run"] is None and read["recorded"][0] == "pass" and read["files"]
    judged = meta.judge(read)
    assert (judged["run"][9], judged["run"][-2]) == ("unknown", "pass") and "recorded" not in judged
    unusable = meta.read(str(tmp_path))
    assert unusable["reason"] == "STATUS missing" and meta.judge(unusable) == meta.read(str(tmp_path))


PHASES = ("discovered ", "Spark session ", "loaded ", "judged ", "scanned ", "wrote 6 tables", "wrote summary.json")


@pytest.mark.integration
def test_aggregate_piped_prints_each_phase_as_it_ends(tmp_path):
    pytest.importorskip("pyspark")
    from analytics_cases import kept_pass, vacuous_fault
    runs = tmp_path / "runs"
    runs.mkdir()
    kept_pass(runs)
    vacuous_fault(runs)
    p = subprocess.Popen([sys.executable, "-m", "harness", "aggregate", str(runs), "--out", str(tmp_path / "out"),
                          "--master", "local[1]"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         env=ENV, cwd=ROOT)
    got = []  # (line, the process still running when it was read)
    try:
        for line in p.stdout:
            got.append((line.rstrip("\n"), p.poll() is None))
    finally:
        assert p.wait(600) == 0
    phase_lines = [(line, running) for line, running in got if not line.startswith("aggregate:   ")]
    assert [line.split(": ", 1)[1].startswith(w) for (line, _), w in zip(phase_lines, PHASES)] == [True] * 7, got
    assert all(running for _, running in phase_lines[:6]), got  # each read while the job still worked
    assert len(phase_lines) == 8 and phase_lines[7][0].startswith("aggregate: 2 runs; 0 failed (0.0%); "
                                                                   "1 unknown (50.0%)"), got
    judged = next(i for i, (line, _) in enumerate(got) if line.startswith("aggregate: judged "))
    assert got[judged][0].startswith("aggregate: judged 2 runs again by the run-level checks: 1 judged otherwise")
    assert got[judged + 1][0] == ("aggregate:   kept-vacuous-fault: recorded: pass, judged now: unknown "
                                  "(schedule_performed)")
