"""The fewest moves summed over the consumer-protocol coordinator's targets between two stable assignments.

Under the consumer protocol (KIP-848) the coordinator's assignor (`uniform`: Kafka's group-coordinator
`UniformHomogeneousAssignmentBuilder`) is sticky to its previous *target* assignment: each new target keeps, of
each member's previous target, up to its new quota, and hands out the rest. When members join one after another,
each join bumps the group epoch and a new target is computed from the one before; the net moves from the first
stable assignment to the last can then exceed the fewest moves for the net change (a survivor's extra partition
kept at one target and given away at the next, while another survivor gave one away before). What the protocol
promises is the fewest moves at each target, so the bound is their sum over the targets the coordinator computed
in the transition, read from its own lines (`brokers.jsonl`): `Bumped group epoch to N` with the joins logged
before it, and `Computed a new target assignment for epoch N` (the epochs it computed a target for; a bump with no
such line is folded into the next computed target; where the coordinator logs none, every bump is a target).

Applies only to the case it was read from: every epoch bumped in the transition bumped by joins alone (no leave,
expiry, fence, subscription or metadata change), the same partitions in both snapshots, one subscription, no
phantoms, and the member count the joins give consistent with the snapshots. Anything else: None (the net bound
stands).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from harness.invariants import brokers
from harness.invariants.coordinator_log import bumps

COMPUTED = re.compile(r"\[GroupId (?P<group>[^\]]+)\] Computed a new target assignment for epoch (?P<epoch>\d+) ")


@dataclass(frozen=True)
class Chain:
    """The fewest moves summed over the coordinator's targets (`bound`), their member counts, and the epochs read."""

    bound: int
    members: tuple[int, ...]
    epochs: tuple[int, ...]

    def show(self) -> str:
        """How the bound was read, for a verdict's message."""
        sizes = " -> ".join(map(str, self.members))
        return (f"{self.bound} summed over {len(self.members) - 1} targets of the coordinator ({sizes} members, "
                f"epochs {self.epochs[0]}..{self.epochs[-1]} joined one after another, the coordinator's lines)")


def targets(history, lo: float, hi: float) -> list[tuple[int, int]] | None:
    """(epoch of the target, joins it took in) for each target the coordinator computed for epochs bumped in (lo, hi],
    or None when some bump there had a cause other than a join, or no lines say."""
    lines = brokers.said(history)
    group = brokers.group_of(history) or next((e.get("group_id") for _, e in history.control()
                                                if e.get("type") == "started" and e.get("group_id")), None)
    if not group or not lines:
        return None
    seen = [b for b in bumps(lines, group) if b.deposed is None and b.protocol == "consumer" and lo < b.mono <= hi]
    if not seen or any(c.kind != "join" for b in seen for c in b.causes):
        return None
    computed = {int(m["epoch"]) for e in lines
                if (m := COMPUTED.search(e.get("message") or "")) and m["group"] == group}
    out: list[tuple[int, int]] = []
    pending = 0
    for b in seen:
        pending += len(b.causes)
        if not computed or b.number in computed:
            out.append((b.number, pending))
            pending = 0
    if pending:
        out.append((seen[-1].number, pending))
    return out


def chain(history, lo: float, hi: float, *, partitions: int, members: int, kept: dict[str, int]) -> Chain | None:
    """The fewest moves summed over the targets computed for epochs bumped in (lo, hi], from `kept` (member -> the
    partitions it held at the start and kept), to `members` members over `partitions` partitions; None when it does
    not apply (module docstring)."""
    steps = targets(history, lo, hi)
    if not steps or len(steps) < 2:
        return None
    start = members - sum(j for _, j in steps)
    if start < max(1, len(kept)):
        return None
    counts = sorted(kept.values(), reverse=True) + [0] * (start - len(kept))
    sizes, total = [start], 0
    for _, joined in steps:
        moves, counts = _step(partitions, counts, joined)
        total += moves
        sizes.append(len(counts))
    return Chain(total, tuple(sizes), tuple(e for e, _ in steps))


def _step(partitions: int, counts: list[int], joined: int) -> tuple[int, list[int]]:
    """One target sticky to the one before: (the fewest moves, the new counts) when `joined` members join."""
    n = len(counts) + joined
    q, r = divmod(partitions, n)
    held = sorted(counts, reverse=True) + [0] * joined
    quota = [q + (1 if i < r else 0) for i in range(n)]  # the larger quotas to those holding the most
    return sum(max(0, h - k) for h, k in zip(held, quota)), quota
