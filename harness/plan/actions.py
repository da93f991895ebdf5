"""The plan's face of the one table of steps (harness/base/steps.py), which every part reads: the plan, the nemesis
and the invariants. The table lives below both `plan/` and `invariants/` so that `schedule_performed` reads the same
rows the plan checks a schedule against; this module only re-exports it for the plan's readers.
"""
from __future__ import annotations

from harness.base.steps import (ACTIONS, ALL_KINDS, CONSUMER, KAFKA_REFUSES, MIX_CHOICES, NEEDS, ONE_PROCESS, REQ,
                                REQUEST_STEPS, REQUIRED, Ability, ActionSpec, Bound, Param, Proof, Setting, Slots, Step,
                                SubscribeBy, kind_refusal, missing, needs_requests, performs, refusal, spec)

__all__ = ["ACTIONS", "ALL_KINDS", "CONSUMER", "KAFKA_REFUSES", "MIX_CHOICES", "NEEDS", "ONE_PROCESS", "REQ",
           "REQUEST_STEPS", "REQUIRED", "Ability", "ActionSpec", "Bound", "Param", "Proof", "Setting", "Slots", "Step",
           "SubscribeBy", "kind_refusal", "missing", "needs_requests", "performs", "refusal", "spec"]
