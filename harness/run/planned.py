"""The planned steps as the history holds them: `run_start`'s `plan`, and each step's `action_id`, which its
`action_start` and `action_end` carry (`schedule_performed` matches the two, harness/invariants/performed.py)."""
from __future__ import annotations


def action_id(i: int) -> str:
    """The `action_id` of the schedule's step i (from 0): a1, a2, ..."""
    return f"a{i + 1}"


def planned_steps(schedule) -> list[dict]:
    """The run_start event's `plan`: each step of the schedule (its Actions), in order, as its action_start will
    name it."""
    return [{"action_id": action_id(i), "kind": a.kind, "params": a.params} for i, a in enumerate(schedule)]
