"""A run's context (harness/run/context.py) for the tests of kinds and of the nemesis, from hand-made parts.

`context(plan, ...)` makes one as the runner does; the fields set later in a run (cluster, pool, observer, waits)
are set when a test names them, and left unset otherwise (reading one is then the context's own error).
"""
from __future__ import annotations

import time

from harness.run.context import RunContext


def context(plan=None, *, run_id: str = "r", group_id: str = "g", topics=(), run_dir=None, say=lambda msg: None,
            event=lambda type_, **fields: None, clock=time.monotonic, **later) -> RunContext:
    ctx = RunContext(plan=plan, run_id=run_id, group_id=group_id, topics=list(topics), run_dir=run_dir, say=say,
                     event=event, clock=clock)
    for name, value in later.items():
        setattr(ctx, name, value)
    return ctx
