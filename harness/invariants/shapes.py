"""The assignment shape each assignor promises, as pure rules over one stable point (docs/invariants.md, "Assignment
shapes", gives each rule's source in Kafka and librdkafka).

A point is given as `held` (every live member -> the (topic, partition) pairs it holds), `subs` (member -> the names
of the topics it subscribes to) and `counts` (topic -> its partition count then). Each rule returns the problems it
finds, one line each (none: the shape is one the assignor could produce).

- `range`, the clients' (`RangeAssignor`, `rdkafka_range_assignor.c`): per topic, the members subscribing to it in
  one order (member id order, the same for every topic) take contiguous blocks of partitions, the first P mod n of
  them one more than the rest (P partitions, n members). So every member's block of a topic is contiguous, the
  larger blocks come first, and one order of the members fits every topic: co-partitioning, a member gets the same
  partition numbers of topics with the same partition count and subscribers. With racks (`client.rack`, KIP-881)
  the blocks are matched to racks first: only the per-topic counts are promised then.
- `range`, the brokers' (KIP-848, the group coordinator's `RangeAssignor`): sticky per topic, so only the
  per-topic counts: each subscriber of a topic gets P // n or P // n + 1 of its partitions, P mod n of them the
  larger count.
- `roundrobin`, `uniform`, `sticky`, `cooperative-sticky`, when every member subscribes to the same topics:
  the counts differ by at most one. When subscriptions differ: `uniform` and the sticky ones promise the sticky
  balance (`balance.consumer`: no member holds two or more partitions more than a member that could take one of
  them), `roundrobin` nothing more than that each partition goes to a subscriber (it deals partitions in turn and
  skips members that do not subscribe: its counts may differ by more).
"""
from __future__ import annotations

from collections import defaultdict
from graphlib import CycleError, TopologicalSorter
from typing import Mapping

from harness.invariants.balance import unbalanced_pair

#: the assignors whose shape the harness knows (assignors.assignor_name's names)
KNOWN = ("range", "roundrobin", "uniform", "sticky", "cooperative-sticky")


def problems(assignor: str, server: bool, held: Mapping[str, set], subs: Mapping[str, frozenset],
             counts: Mapping[str, int], racks: bool = False) -> list[str]:
    """The ways the point breaks the assignor's shape (module docstring); ValueError for an assignor not KNOWN."""
    if assignor not in KNOWN:
        raise ValueError(f"the shape of assignor {assignor!r} is not known (known: {', '.join(KNOWN)})")
    if assignor == "range":
        out = per_topic_counts(held, subs, counts)
        return out if out or server or racks else range_blocks(held, subs, counts)
    if len(set(subs.values())) <= 1:
        sizes = {m: len(ps) for m, ps in held.items()}
        if sizes and max(sizes.values()) - min(sizes.values()) > 1:
            hi, lo = max(sizes, key=sizes.get), min(sizes, key=sizes.get)
            return [f"{hi} held {sizes[hi]} partitions and {lo} {sizes[lo]}, more than one apart, all subscribing "
                    f"to the same topics"]
        return []
    if assignor == "roundrobin":
        return []
    pair = unbalanced_pair({m: sorted(ps) for m, ps in held.items()}, dict(subs))
    if pair:
        a, b = pair
        return [f"{a} held {len(held[a])} partitions and {b} {len(held[b])}, though {b} subscribes to a topic of "
                f"{a}'s and could take one"]
    return []


def _by_topic(held: Mapping[str, set], subs: Mapping[str, frozenset], counts: Mapping[str, int]):
    """topic -> (its subscribers, sorted; member -> its partitions of the topic, sorted)."""
    for topic in sorted(counts):
        takers = sorted(m for m, s in subs.items() if topic in s)
        if takers:
            yield topic, takers, {m: sorted(p for t, p in held.get(m, ()) if t == topic) for m in takers}


def per_topic_counts(held, subs, counts) -> list[str]:
    """Each subscriber of a topic holds P // n or P // n + 1 of its partitions, exactly P mod n the larger count."""
    out = []
    for topic, takers, own in _by_topic(held, subs, counts):
        q, r = divmod(int(counts[topic]), len(takers))
        sizes = {m: len(ps) for m, ps in own.items()}
        bigger = sum(1 for n in sizes.values() if n == q + 1)
        if any(n not in (q, q + 1) for n in sizes.values()) or bigger != r:
            shown = ", ".join(f"{m}:{n}" for m, n in sorted(sizes.items()))
            out.append(f"topic {topic} ({counts[topic]} partitions, {len(takers)} subscribers) was split {shown}, "
                       f"where range gives {r} of them {q + 1} and the rest {q}")
    return out


def range_blocks(held, subs, counts) -> list[str]:
    """The clients' range: contiguous blocks per topic, larger ones first, one member order over every topic."""
    out, before = [], defaultdict(set)
    for topic, takers, own in _by_topic(held, subs, counts):
        for m, ps in own.items():
            if ps and ps[-1] - ps[0] + 1 != len(ps):
                out.append(f"{m}'s partitions {ps} of topic {topic} are not one contiguous range")
        order = sorted((m for m in takers if own[m]), key=lambda m: own[m][0])
        sizes = [len(own[m]) for m in order]
        if sizes != sorted(sizes, reverse=True):
            out.append(f"topic {topic}'s blocks in partition order ({', '.join(f'{m}:{len(own[m])}' for m in order)}) "
                       f"put a smaller block before a larger one: range gives the first members the larger ones")
        empty = [m for m in takers if not own[m]]
        for x, y in zip(order, order[1:]):
            before[x].add(y)
        for x in order:
            before[x].update(empty)
    if not out and (cycle := _cycle(before)):
        out.append(f"no one order of the members fits every topic's blocks ({' before '.join(cycle)} before "
                   f"{cycle[0]}): range orders members once, so topics with the same subscribers are co-partitioned")
    return out


def _cycle(after: dict[str, set]) -> list[str] | None:
    """A cycle of the relation (x -> the members after x), as a list of members each before the next, or None.
    The standard library's graphlib finds it: handed `after` as each member's predecessors, the cycle it reports
    runs backwards (each member of it is after the next), so it is turned round."""
    try:
        TopologicalSorter({x: sorted(ys) for x, ys in sorted(after.items())}).prepare()
    except CycleError as e:
        return list(reversed(e.args[1][:-1]))
    return None
