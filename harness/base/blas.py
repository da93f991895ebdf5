"""One OpenBLAS thread for the harness's own processes, set before numpy is imported.

The harness reads histories and judges them with numpy but multiplies no matrices, so OpenBLAS's thread pool, which
`import numpy` starts with a thread per core, only costs CPU: about 0.04 s of a 1,000,000-event judgment's 1 s
(docs/benchmarks.md, "Judging a long history"). `one_thread()` asks for one thread unless the environment already
says otherwise; it is called by the harness's command line (`harness.cli.main`) and by bench/judge.py's judging
process, not on import: a program that imports the harness keeps its own numpy settings. The setting is inherited by
the harness's child processes, none of which uses BLAS.
"""
from __future__ import annotations

import os

VARIABLE = "OPENBLAS_NUM_THREADS"


def one_thread() -> None:
    """OpenBLAS with one thread, unless the environment names a count (no effect once numpy is imported)."""
    os.environ.setdefault(VARIABLE, "1")
