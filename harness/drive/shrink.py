"""Shrinking a failing schedule to a shorter one that still fails.

Contract (after Hypothesis's shrinker, in its simplest form):
- A schedule is cut into *units*: an action together with the waits (`sleep`, `wait_stable`) that
  follow it, so that every candidate is still a well-formed schedule.
- Passes are deterministic: first remove chunks of units, halving the chunk size (ddmin), then single
  units, then drop trailing waits. A candidate replaces the current schedule only when it still fails
  and is strictly shorter, so every pass makes progress or leaves the schedule as it was.
- Shrinking stops when a full round of passes removes nothing, or when the budget of attempts runs out
  (each attempt is a real run, so the budget is what keeps it bounded).
"""
from __future__ import annotations

import json

from dataclasses import dataclass, field
from typing import Callable

from harness.plan.scenarios import Action
from harness.base.steps import Step

WAITS = (Step.SLEEP, Step.WAIT_STABLE)


def units(schedule: list[Action]) -> list[list[Action]]:
    """Cut a schedule into units: leading waits, then each action with the waits after it."""
    out: list[list[Action]] = []
    for a in schedule:
        if a.kind in WAITS and out:
            out[-1].append(a)
        else:
            out.append([a])
    return out


def flatten(us: list[list[Action]]) -> list[Action]:
    return [a for u in us for a in u]


@dataclass
class ShrinkResult:
    schedule: list[Action]
    attempts: int
    log: list[str] = field(default_factory=list)


def shrink(schedule: list[Action], fails: Callable[[list[Action]], bool], *, max_attempts: int = 40) -> ShrinkResult:
    """The shortest schedule found that `fails` still holds for; `fails(schedule)` is assumed true."""
    cur = units(schedule)
    attempts = 0
    log: list[str] = []
    tried: set[tuple] = set()

    def attempt(cand: list[list[Action]], why: str) -> bool:
        nonlocal attempts, cur
        # parameters may be lists or tables (a subscription, settings): the key is their canonical JSON
        key = tuple((a.kind, json.dumps(a.params, sort_keys=True)) for a in flatten(cand))
        if key in tried or attempts >= max_attempts or len(flatten(cand)) >= len(flatten(cur)):
            return False
        tried.add(key)
        attempts += 1
        ok = fails(flatten(cand))
        log.append(f"{why}: {len(flatten(cand))} actions -> {'still fails' if ok else 'passes'}")
        if ok:
            cur = cand
        return ok

    progress = True
    while progress and attempts < max_attempts:
        progress = False
        # ddmin: remove chunks, halving the chunk size
        n = 2
        while len(cur) >= 2 and attempts < max_attempts:
            size = max(1, len(cur) // n)
            removed = False
            for start in range(0, len(cur), size):
                cand = cur[:start] + cur[start + size:]
                if cand and attempt(cand, f"drop units {start}..{start + size - 1}"):
                    removed = progress = True
                    break
            if removed:
                n = max(n - 1, 2)
            elif size == 1:
                break
            else:
                n = min(len(cur), n * 2)
        # drop the waits inside each unit
        for i, u in enumerate(list(cur)):
            if i < len(cur) and len(cur[i]) > 1:
                cand = cur[:i] + [cur[i][:1]] + cur[i + 1:]
                if attempt(cand, f"drop waits after unit {i}"):
                    progress = True
    return ShrinkResult(flatten(cur), attempts, log)
