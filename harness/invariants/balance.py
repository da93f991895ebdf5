"""The assignment rule of each kind of group: when a snapshot of who holds what is *complete and balanced*.

One function per kind, pure, over one moment's assignment among the live members. The runner's "stable"
wait (`harness/kinds/`, over what it has read of the history so far) and the checkers (`convergence`,
`streams.placement`, `connect.balance`, over the whole history) both call it, so a group the runner calls
stable is one the checker judges balanced, and the other way round. What each side adds is its own: the
runner waits until the snapshot has not changed for a while and every member is running; the checkers judge
when that must happen and for how long it lasts.

- **Consumer group** (`consumer`): *complete* when every partition of every topic some live member
  subscribes to has exactly one live owner, and every partition a live member holds is of a topic it
  subscribes to (a subscription change not yet carried out is not complete). *Balanced* when no live member A holds two or
  more partitions more than a live member B that subscribes to the topic of one of A's partitions (B could
  take one: the sticky assignors' notion, counted over all topics together); with one subscription, the
  counts differ by at most one. Subscriptions are the topic names each member's subscription takes
  (`topics.subscribed_topics`, the one matcher); a member that wrote none takes every topic.
- **Kafka Streams** (`streams`): *complete* when every task of the topology is active on exactly one live
  instance and no other task is; *balanced* when active counts per instance differ by at most the active
  slack and active + standby counts by at most the stateful slack; *settled* besides when every task has
  exactly min(standby replicas, live instances - 1) standbys, none on the instance running it active: no
  standby missing and no warmup left (KIP-441 is done probing).
- **Kafka Connect** (`connect`): *complete* when every configured connector and task runs on exactly one
  live worker and nothing else runs; *balanced* when connectors per worker and tasks per worker each differ
  by at most the slack.
- **Share group** (`share`): *complete* when every live member has been delivered records since it started (a
  share group gives a partition to several members; neither client reports an assignment); no balance rule
  over counts (records per member follow the partitions' rates).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Collection, Iterable, Mapping


@dataclass(frozen=True)
class GroupBalance:
    """A consumer group's assignment judged by `consumer`."""

    complete: bool
    balanced: bool
    counts: dict = field(default_factory=dict)  # member -> partitions held
    pair: tuple | None = None  # (A, B): A holds two or more more than B, who could take one; None when balanced
    missing: tuple = ()  # required (topic, partition)s no live member holds
    doubled: tuple = ()  # (topic, partition)s two or more live members hold
    misplaced: tuple = ()  # held (topic, partition)s of a topic their holder does not subscribe to

    @property
    def ok(self) -> bool:
        return self.complete and self.balanced


def consumer(held: Mapping[str, Iterable[tuple[str, int]]], subscriptions: Mapping[str, Collection[str]],
             partitions: Mapping[str, int]) -> GroupBalance:
    """The consumer group's rule (module docstring). `held`: every live member (those holding nothing too) ->
    the (topic, partition)s it holds; `subscriptions`: member -> the names of the topics it subscribes to (a
    member missing here takes every topic); `partitions`: each topic of the run -> its partition count."""
    held = {m: sorted(set(ps)) for m, ps in held.items()}
    every = frozenset(partitions)
    subs = {m: frozenset(subscriptions.get(m, every)) for m in held}
    wanted = frozenset().union(*subs.values()) if subs else frozenset()
    owners = Counter(tp for ps in held.values() for tp in ps)
    required = [(t, p) for t in partitions if t in wanted for p in range(int(partitions[t]))]
    missing = tuple(tp for tp in required if owners[tp] == 0)
    doubled = tuple(sorted(tp for tp, n in owners.items() if n > 1))
    misplaced = tuple(sorted({tp for m, ps in held.items() for tp in ps
                              if tp[0] not in subs[m] or not 0 <= tp[1] < partitions.get(tp[0], 0)}))
    counts = {m: len(ps) for m, ps in held.items()}
    pair = unbalanced_pair(held, subs)
    complete = bool(held) and not missing and not doubled and not misplaced
    return GroupBalance(complete, bool(held) and pair is None, counts, pair, missing, doubled, misplaced)


def unbalanced_pair(held: dict[str, list[tuple[str, int]]], subs: dict[str, frozenset]) -> tuple | None:
    """(A, B): A holds at least two partitions more than B and B subscribes to the topic of one of A's
    partitions (the most loaded such A, the least loaded such B); None when there is none."""
    by_load = sorted(held, key=lambda x: (-len(held[x]), x))
    for a in by_load:
        topics = {t for t, _ in held[a]}
        for b in reversed(by_load):
            if len(held[a]) - len(held[b]) < 2:
                break
            if topics & subs[b]:
                return a, b
    return None


@dataclass(frozen=True)
class TaskBalance:
    """A Kafka Streams application's assignment judged by `streams`."""

    complete: bool
    balanced: bool
    active: dict = field(default_factory=dict)  # instance -> active tasks
    stateful: dict = field(default_factory=dict)  # instance -> active + standby tasks
    owners: dict = field(default_factory=dict)  # task -> the instances running it active (every task, and any other)
    unbalanced: tuple = ()  # ("active" | "active+standby", most loaded, least loaded) beyond the slack
    standby_problems: tuple = ()  # why the standbys are not as configured, one line each
    warmups: int = 0  # standbys beyond min(standby replicas, live instances - 1): warmups not yet done

    @property
    def ok(self) -> bool:
        """Complete and balanced."""
        return self.complete and self.balanced

    @property
    def settled(self) -> bool:
        """Complete, balanced, every standby in place and no warmup left."""
        return self.ok and not self.standby_problems and not self.warmups


def streams(active: Mapping[str, Collection[str]], standby: Mapping[str, Collection[str]], tasks: Collection[str],
            standby_replicas: int, active_slack: int = 1, stateful_slack: int = 2) -> TaskBalance:
    """The Kafka Streams rule (module docstring). `active`: every live instance -> the tasks it runs active;
    `standby`: instance -> its standby tasks; `tasks`: the topology's tasks."""
    members = sorted(set(active) | set(standby))
    act = {m: frozenset(active.get(m, ())) for m in members}
    stb = {m: frozenset(standby.get(m, ())) for m in members}
    owners: dict[str, list[str]] = {t: [] for t in sorted(tasks)}
    for m in members:
        for t in sorted(act[m]):
            owners.setdefault(t, []).append(m)
    complete = bool(members) and all(len(ms) == 1 for ms in owners.values()) and set(owners) == set(tasks)
    counts = {m: len(act[m]) for m in members}
    stateful = {m: len(act[m] | stb[m]) for m in members}
    unbalanced = tuple((what, max(c, key=c.get), min(c, key=c.get))
                       for what, c, slack in (("active", counts, active_slack), ("active+standby", stateful, stateful_slack))
                       if c and max(c.values()) - min(c.values()) > slack)
    need = min(standby_replicas, len(members) - 1)
    problems, warmups = [], 0
    for t in sorted(tasks):
        holders = [m for m in members if t in stb[m]]
        if both := [m for m in holders if t in act[m]]:
            problems.append(f"task {t} has a standby on {', '.join(both)}, which runs it active")
        if len(holders) < need:
            problems.append(f"task {t} has {len(holders)} standbys ({', '.join(holders) or 'none'}), want {need}")
        warmups += max(0, len(holders) - need)
    return TaskBalance(complete, bool(members) and not unbalanced, counts, stateful, owners, unbalanced,
                       tuple(problems), warmups)


@dataclass(frozen=True)
class UnitBalance:
    """A Kafka Connect cluster's assignment judged by `connect`."""

    complete: bool
    balanced: bool
    connectors: dict = field(default_factory=dict)  # worker -> connectors it runs
    tasks: dict = field(default_factory=dict)  # worker -> tasks it runs
    wrong: tuple = ()  # (unit, times it runs) of every unit not running exactly once (or not configured)
    unbalanced: tuple = ()  # ("connectors" | "tasks") whose counts per worker differ by more than the slack

    @property
    def ok(self) -> bool:
        return self.complete and self.balanced


def connect(runs: Mapping[str, Iterable[tuple]], connectors: Iterable[str], tasks: Mapping[str, int],
            slack: int = 1) -> UnitBalance:
    """The Kafka Connect rule (module docstring). `runs`: every live worker -> the units it runs, each
    ("connector", name, None) or ("task", connector, n); `connectors`: the configured connectors; `tasks`:
    connector -> its tasks.max."""
    runs = {m: list(us) for m, us in runs.items()}
    conns = {m: sum(1 for u in us if u[0] == "connector") for m, us in runs.items()}
    per = {m: sum(1 for u in us if u[0] == "task") for m, us in runs.items()}
    want = {("connector", c, None) for c in connectors} | {("task", c, i) for c, n in tasks.items() for i in range(int(n))}
    have = Counter(u for us in runs.values() for u in us)
    wrong = tuple((u, have.get(u, 0)) for u in sorted(want | set(have), key=str) if have.get(u, 0) != 1 or u not in want)
    unbalanced = tuple(what for what, c in (("connectors", conns), ("tasks", per))
                       if c and max(c.values()) - min(c.values()) > slack)
    return UnitBalance(bool(runs) and not wrong, bool(runs) and not unbalanced, conns, per, wrong, unbalanced)


@dataclass(frozen=True)
class ShareBalance:
    """A share group's state judged by `share`."""

    complete: bool
    waiting: tuple = ()  # live members delivered nothing since they started

    @property
    def ok(self) -> bool:
        return self.complete


def share(deliveries: Mapping[str, int]) -> ShareBalance:
    """The share-group rule (module docstring). `deliveries`: every live member -> records delivered to it since
    its start. A share group gives a partition to several members and spreads records among them; neither client
    reports an assignment, so a member is in the group's work when records reach it."""
    waiting = tuple(sorted(m for m, n in deliveries.items() if not n))
    return ShareBalance(bool(deliveries) and not waiting, waiting)
