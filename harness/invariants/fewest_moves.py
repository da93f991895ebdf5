"""The fewest moves from one assignment to a balanced one when members subscribe to different topics.

*Balanced* is the sticky assignors' notion, the one `balance.consumer` judges with (runner and checker): no member A
holds two or more partitions more than a member B that subscribes to the topic of one of A's partitions (B
could take it). Each partition goes to a member that subscribes to its topic. A *move* is a partition held
before by a member that kept its membership (`kept`) and given to another member; the partitions of
members that left cost nothing.

**Exact, by classes.** Members with the same subscription form a class. In a balanced assignment the
counts within a class differ by at most one (two members of one class could take each other's
partitions), so a class k of s_k members holding n_k partitions in all gives q_k = n_k // s_k to each and
one more to r_k = n_k mod s_k of them. For every split (n_k) of the P partitions over the classes, the
balance condition becomes a restriction on topics alone: a member of class k with q_k (resp. q_k + 1)
partitions may hold no partition of a topic of a class j with q_j <= q_k - 2 (resp. q_j <= q_k - 1), since
class j always has a member at q_j. With those restrictions, the cheapest assignment with exactly those
counts is a min-cost flow (partitions -> members -> the sink; a class's extra partitions through a node of
capacity r_k; where the +1 changes what a member may hold, which r_k members get it is enumerated). The
fewest moves are the cheapest over every split. The harness's groups are small (3-7 members, 6-12
partitions, one to three classes), so this is at most a few hundred flows of a few dozen nodes.

**Phantoms** (members gone between the snapshots that the broker balanced against: see `migrations`) hold
their partitions in the broker's view and count in the balance: the broker then moves as few partitions
as it can in all, and among its equally cheap choices it may take from a kept member rather than a
phantom. So with phantoms the result is the most kept moves among the assignments with the fewest moves in
all (a phantom's move costs K, a kept member's K - 1, K > P).
"""
from __future__ import annotations

from collections import deque
from itertools import combinations, product


def fewest_moves(topic_of: dict[int, int], members: dict[str, frozenset], kept: dict[str, set[int]], *,
                 phantoms: dict[str, tuple[frozenset, set[int]]] | None = None) -> int | None:
    """The fewest moves of kept partitions to a balanced assignment of the partitions `topic_of` (partition ->
    its topic) over `members` (member -> the topics it subscribes to), from `kept` (member -> the partitions
    it held and kept its membership with). With `phantoms` (member -> (subscription, partitions held)): the
    balance is over them too, and the result is the kept moves of the broker's cheapest choice that takes
    most from kept members. None when no member may take some partition."""
    phantoms = phantoms or {}
    subs = {**{m: frozenset(s) for m, s in members.items()}, **{m: frozenset(s) for m, (s, _) in phantoms.items()}}
    if not subs:
        return 0 if not topic_of else None
    parts = sorted(topic_of)
    if any(not any(topic_of[p] in s for s in subs.values()) for p in parts):
        return None
    owner: dict[int, str] = {}
    for m, ps in kept.items():
        owner.update({p: m for p in ps if p in topic_of})
    for m, (_, ps) in phantoms.items():
        owner.update({p: m for p in ps if p in topic_of})
    big = len(parts) + 1
    weight = {m: (big if m in phantoms else big - 1) if phantoms else 1 for m in set(owner.values())}
    classes: dict[frozenset, list[str]] = {}
    for m in sorted(subs):
        classes.setdefault(subs[m], []).append(m)
    keys = list(classes)
    eligible = [sum(1 for p in parts if topic_of[p] in k) for k in keys]
    best: tuple[int, int] | None = None  # (cost, kept moves)
    for split in _splits(len(parts), [min(e, len(parts)) for e in eligible]):
        got = _cheapest(parts, topic_of, keys, classes, split, owner, weight, kept, subs,
                        None if best is None else best[0])
        if got is not None and (best is None or got[0] < best[0] or (got[0] == best[0] and got[1] > best[1])):
            best = got
    return None if best is None else best[1]


def _splits(total: int, caps: list[int]):
    """Every way to write total as a sum of len(caps) parts, part i at most caps[i]."""
    if not caps:
        if total == 0:
            yield ()
        return
    for n in range(min(total, caps[0]), -1, -1):
        if total - n <= sum(caps[1:]):
            for rest in _splits(total - n, caps[1:]):
                yield (n, *rest)


def _cheapest(parts, topic_of, keys, classes, split, owner, weight, kept, subs, bar) -> tuple[int, int] | None:
    """(cost, kept moves) of the cheapest balanced assignment with these class totals, or None; None too when
    it cannot cost less than `bar`."""
    q = [n // len(classes[k]) for n, k in zip(split, keys)]
    r = [n % len(classes[k]) for n, k in zip(split, keys)]
    allow0, allow1 = [], []
    for i, k in enumerate(keys):
        f0 = frozenset().union(*(keys[j] for j in range(len(keys)) if j != i and q[i] - q[j] >= 2))
        f1 = frozenset().union(*(keys[j] for j in range(len(keys)) if j != i and q[i] - q[j] >= 1))
        allow0.append(k - f0)
        allow1.append(k - f1)
        if split[i] > sum(1 for p in parts if topic_of[p] in allow0[i]):
            return None  # the class cannot hold that many partitions of the topics left to it
    # a lower bound of the cost: each holder keeps at most its count, and only partitions its class may hold
    index = {k: i for i, k in enumerate(keys)}
    low = 0
    for h in set(owner.values()):
        if h not in subs:
            continue
        i = index[subs[h]]
        mine = [p for p, x in owner.items() if x == h]
        can = sum(1 for p in mine if topic_of[p] in allow0[i])
        low += weight[h] * (len(mine) - min(can, q[i] + (1 if r[i] else 0)))
    if bar is not None and low > bar:
        return None
    # classes whose +1 changes what a member may hold: which members get it is enumerated
    fixed = [i for i in range(len(keys)) if r[i] and allow1[i] != allow0[i]]
    choices = [list(combinations(classes[keys[i]], r[i])) for i in fixed]
    best = None
    for pick in product(*choices):
        plus = {m for group in pick for m in group}
        got = _flow(parts, topic_of, keys, classes, q, r, allow0, allow1, set(fixed), plus, owner, weight, kept)
        if got is not None and (best is None or got[0] < best[0] or (got[0] == best[0] and got[1] > best[1])):
            best = got
    return best


def _flow(parts, topic_of, keys, classes, q, r, allow0, allow1, fixed, plus, owner, weight, kept):
    """Min-cost flow of one partition each to members with exact counts; (cost, kept moves) or None."""
    members = [(m, i) for i, k in enumerate(keys) for m in classes[k]]
    n_p, n_m = len(parts), len(members)
    src, sink = 0, 1 + n_p + n_m + len(keys)
    graph = _Graph(sink + 1)
    for a, p in enumerate(parts):
        graph.add(src, 1 + a, 1, 0)
    for b, (m, i) in enumerate(members):
        node = 1 + n_p + b
        one = m in plus
        allowed = allow1[i] if one else allow0[i]
        for a, p in enumerate(parts):
            if topic_of[p] in allowed:
                h = owner.get(p)
                graph.add(1 + a, node, 1, weight[h] if h is not None and h != m else 0)
        if i in fixed or not r[i]:
            cap = q[i] + (1 if one else 0)
            if cap:
                graph.add(node, sink, cap, 0)
        else:  # who gets a class's extra partitions is the flow's choice: they go through the class's node
            if q[i]:
                graph.add(node, sink, q[i], 0)
            if r[i]:
                graph.add(node, 1 + n_p + n_m + i, 1, 0)
    for i in range(len(keys)):
        if r[i] and i not in fixed:
            graph.add(1 + n_p + n_m + i, sink, r[i], 0)
    flow, cost = graph.min_cost_flow(src, sink, n_p)
    if flow < n_p:
        return None
    moved = 0
    for a, p in enumerate(parts):
        h = owner.get(p)
        if h is None or h not in kept:
            continue
        for e in graph.adj[1 + a]:
            to, cap, _, _ = graph.edges[e]
            if 1 + n_p <= to < 1 + n_p + n_m and cap == 0 and members[to - 1 - n_p][0] != h:
                moved += 1
    return cost, moved


class _Graph:
    """A small flow network: successive shortest paths (SPFA, as the residual costs may be negative)."""

    def __init__(self, n: int) -> None:
        self.n, self.adj, self.edges = n, [[] for _ in range(n)], []

    def add(self, u: int, v: int, cap: int, cost: int) -> None:
        self.adj[u].append(len(self.edges))
        self.edges.append([v, cap, cost, len(self.edges) + 1])
        self.adj[v].append(len(self.edges))
        self.edges.append([u, 0, -cost, len(self.edges) - 1])

    def min_cost_flow(self, s: int, t: int, want: int) -> tuple[int, int]:
        flow = cost = 0
        inf = float("inf")
        while flow < want:
            dist, prev, queued = [inf] * self.n, [-1] * self.n, [False] * self.n
            dist[s], todo = 0, deque([s])
            while todo:
                u = todo.popleft()
                queued[u] = False
                for e in self.adj[u]:
                    v, cap, c, _ = self.edges[e]
                    if cap > 0 and dist[u] + c < dist[v]:
                        dist[v], prev[v] = dist[u] + c, e
                        if not queued[v]:
                            queued[v] = True
                            todo.append(v)
            if dist[t] == inf:
                break
            v = t
            while v != s:
                e = prev[v]
                self.edges[e][1] -= 1
                self.edges[self.edges[e][3]][1] += 1
                v = self.edges[self.edges[e][3]][0]
            flow += 1
            cost += dist[t]
        return flow, cost
