"""`harness run` and `harness replay` keep a run's progress lines in its run directory (logs/progress.log), as the
suite does for its runs, and still print them."""
from __future__ import annotations

import logging

from harness import cli
from harness.record.rundir import RunDir, RunResult


def test_a_cli_run_keeps_its_progress_lines_in_its_run_directory(tmp_path, capsys):
    said = logging.getLogger("harness.run")

    def run():
        said.info("[    1.0s] starting a 3-broker Kafka 4.4.0 cluster")
        d = RunDir.create(tmp_path, "20261207T000000-member-kill-classic-cooperative-7")
        said.info("[    9.0s] stable (final): m1:3, m2:3")
        return RunResult(d.path, "pass")
    from harness.run.progress import PROGRESS_LOG, setup_cli_logging
    setup_cli_logging()
    result = cli._logged(run)
    kept = (RunDir(result.run_dir).logs_dir / PROGRESS_LOG).read_text()
    assert "starting a 3-broker Kafka 4.4.0 cluster" in kept and "stable (final): m1:3, m2:3" in kept, kept
    out = capsys.readouterr()
    assert "stable (final)" in out.out + out.err  # still on the console
