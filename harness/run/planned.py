"""The planned steps as the history holds them: `run_start`'s `plan`, and each step's `action_id`, which its
`action_start` and `action_end` carry (`schedule_performed` matches the two, harness/invariants/performed.py). Both
are the table of steps' (harness/base/steps.py), which the run directory's reader uses too for a run recorded before
run_start carried its plan."""
from __future__ import annotations

from harness.base.steps import action_id, planned as planned_steps

__all__ = ["action_id", "planned_steps"]
