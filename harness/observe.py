"""What the runner watches while a run goes on: current ownership and unprocessed records.

Read straight from the history files (small, append-only) with the same reader the checkers use.
"""
from __future__ import annotations

from pathlib import Path

from harness.history import History


def current_ownership(history_dir: Path, topic: str) -> dict[str, set[int]]:
    """Partitions of topic each live member holds now, by its own assigned/revoked/lost events."""
    held: dict[str, set[int]] = {}
    for e in History.load(history_dir):
        t = e["type"]
        if t in ("assigned", "revoked", "lost"):
            ps = {p for tp, p in e["partitions"] if tp == topic}
            cur = held.setdefault(e["member"], set())
            if t == "assigned":
                cur |= ps
            else:
                cur -= ps
        elif t == "member_exit":
            held.pop(e["member"], None)
        elif t == "member_start":
            held[e["member"]] = set()
    return held


def acked_unprocessed(history_dir: Path, topic: str) -> int:
    """How many acknowledged records of topic no member has processed yet."""
    acked: dict[int, set[int]] = {}
    ranges: dict[int, list[tuple[int, int]]] = {}
    for e in History.load(history_dir):
        if e["type"] == "acked" and e["topic"] == topic:
            acked.setdefault(e["partition"], set()).add(e["offset"])
        elif e["type"] == "processed" and e["topic"] == topic:
            ranges.setdefault(e["partition"], []).append((e["first_offset"], e["last_offset"]))
    missing = 0
    for p, offs in acked.items():
        seen = {o for a, b in ranges.get(p, []) for o in range(a, b + 1)}
        missing += len(offs - seen)
    return missing
