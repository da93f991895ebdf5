"""Streams invariant 7 (`state_kept`); see the package docstring."""
from __future__ import annotations

from collections import defaultdict

from harness.record.history import History
from harness.invariants.core import Verdict, verdict, witness
from harness.invariants.streams.view import StreamsCheckSettings, _empty, _outcome


def check_state_kept(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge that no task starts on less state than it had: its store, once restored, holds at least the keys
    seeded into its changelog and at least the keys it held at any earlier start (the counter's store only
    grows), whichever instance, protocol or restart it starts on."""
    name = "state_kept"
    if (v := _empty(name, history)) is not None:
        return v
    starts = sorted(((e["mono"], e) for _, e in history.control()
                     if e["type"] == "task_active" and isinstance(e.get("store_keys"), int)), key=lambda x: x[0])
    if not starts:
        return verdict(name, "skipped", "no instance said how many keys its tasks' stores held (task_active "
                       "without store_keys)")
    best: dict[str, tuple[int, dict | None]] = defaultdict(lambda: (settings.seeded_keys, None))
    problems, wits, short = [], [], 0
    for _, e in starts:
        task, keys = e["task"], e["store_keys"]
        had, where = best[task]
        if keys < had:
            short += 1
            since = (f"it held at its start on {where.get('member')}" if where is not None
                     else "written into its changelog before the run")
            problems.append(f"task {task} started on {e.get('member')} with {keys} keys in its store, fewer "
                            f"than the {had} {since}")
            if len(wits) < 6:
                wits.append(witness(e, f"task {task}: {keys} keys, {had} expected"))
                if where is not None:
                    wits.append(witness(where, f"task {task}: {had} keys at this earlier start"))
        if keys >= had:
            best[task] = (keys, e)
    m = {"starts": len(starts), "tasks": len(best), "short_starts": short, "seeded_keys": settings.seeded_keys,
         "fewest_keys": min(e["store_keys"] for _, e in starts)}
    return _outcome(name, problems, wits, m, f"all {len(starts)} task starts on at least the state their task "
                    f"had (seeded: {settings.seeded_keys} keys per task)")
