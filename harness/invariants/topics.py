"""The run's topics as one partition space, and what each member subscribes to.

**Partitions.** The checkers judge every partition of every topic of the run (`CheckSettings.topics`,
in run order; without it the one topic of `topic`/`partitions`, see `terms.resolve_topic`). A partition
is a plain int, its *global index*: partition p of the i-th topic is `base[i] + p`, where `base[0]` is 0
and `base[i + 1]` is `base[i]` plus the larger of topic i's partition count and the highest partition
of topic i the history names, plus one (so no two partitions share an index, even one above the
count). With one topic the global index is the partition number, so single-topic verdicts are what
they always were. `name(g)` gives a partition back as messages, witnesses and measurements show it:
the bare number with one topic, "topic-p" (e.g. "orders-3") with several.

**Subscriptions.** A member's `started` event may carry `subscription`: a list of topic names and
regexes. An entry that starts with `^` is a regex (as librdkafka reads it), matched with Python's
`re.match` against each topic name of the run (`matches`: the one matcher, the runner's too): anchored at the start of the name, not at its end (add
`$` to anchor both); an entry that is no valid regex matches nothing. Any other entry is a topic name.
A member that changes its subscription while it runs writes the new one in a `control` event's
`subscription`. At a moment t a member subscribes to what its latest `started` or `control` with a
subscription at or before t says, else its first `started` (its subscription is known from its first life on); a `started` without `subscription`, or
no `started` at all, subscribes it to every topic of the run.

**Partitions added** while the run goes on (`Growth`): an `add_partitions` action's `action_end` (its `topic`,
`before`, `count`) raises the topic's count from then on; its new partitions exist, and must be owned, only from
then (`Timeline.required`, `Timeline.counts_at`), and their first unowned stretch begins there. The layout's counts
are the final ones. A topic created while the run goes on (`create_topic`, its result's `partitions`) has
no partition before its first such step and all of them from its end; a `delete_topic` takes its count back to 0
(none of its partitions exists, or must be owned, until a later `create_topic`).
"""
from __future__ import annotations

import re
from bisect import bisect_right

import numpy as np

from harness.record.history import History
from harness.base.steps import Step


class Layout:
    """The run's topics, their partition counts and the global index of each (topic, partition)."""

    def __init__(self, history: History, names: list[str], spans: list[int]) -> None:
        self.history, self.names = history, list(names)
        self.multi = len(self.names) > 1
        self.index = {t: i for i, t in enumerate(self.names)}
        self.base = [0] * len(self.names)
        for i in range(1, len(self.names)):
            self.base[i] = self.base[i - 1] + max(0, spans[i - 1])
        self.counts = [0] * len(self.names)  # set by the timeline once the counts are known
        vals = history.values
        self._lut = np.full(max(1, len(vals)), -1, np.int64)  # column code -> base of its topic, -1: no run topic
        for t, i in self.index.items():
            c = history.code(t)
            if c is not None and c < len(self._lut):
                self._lut[c] = self.base[i]
        self._cols: dict[str, tuple] = {}

    # -- one partition
    def topic_of(self, g: int) -> int:
        """The index of the topic of a global partition."""
        return max(0, bisect_right(self.base, g) - 1) if self.multi else 0

    def tp(self, g: int) -> tuple[str, int]:
        """A global partition as (topic, partition)."""
        i = self.topic_of(g)
        return self.names[i], g - self.base[i]

    def name(self, g: int):
        """A global partition as shown to people: the number with one topic, "topic-p" with several."""
        if not self.multi:
            return g
        t, p = self.tp(g)
        return f"{t}-{p}"

    def names_of(self, gs) -> list:
        """Sorted global partitions as shown to people."""
        return [self.name(g) for g in sorted(gs)]

    def event_name(self, e: dict):
        """The partition a bulk event (processed, acked) names, as shown to people."""
        return f"{e.get('topic')}-{e.get('partition')}" if self.multi else e.get("partition")

    def of(self, topic: str, p: int) -> int | None:
        """The global index of partition p of a topic; None when the topic is not the run's."""
        i = self.index.get(topic)
        if i is None or (self.multi and int(p) < 0):
            return None
        return self.base[i] + int(p)

    def of_event(self, ev: dict) -> list[int]:
        """The global partitions of the run's topics that an assigned/revoked/lost event names."""
        out = []
        for t, p in (ev.get("partitions") or ()):
            g = self.of(t, p)
            if g is not None:
                out.append(g)
        return out

    def describe(self) -> str:
        """"topic 't'" or "topics 'a', 'b'", for messages."""
        if not self.multi:
            return f"topic {self.names[0]!r}" if self.names else "topic ''"
        return "topics " + ", ".join(map(repr, self.names))

    def partitions(self, topics=None) -> list[int]:
        """Every global partition (below its topic's count) of the given topic indices (all by default)."""
        idx = range(len(self.names)) if topics is None else sorted(topics)
        return [self.base[i] + p for i in idx for p in range(self.counts[i])]

    # -- bulk columns
    def code_base(self, code: int) -> int:
        """The base of the topic a column code names; -1 when it names no topic of the run."""
        return int(self._lut[code]) if 0 <= code < len(self._lut) else -1

    def code_bases(self, codes: np.ndarray) -> np.ndarray:
        """`code_base` of every code of an array at once."""
        b = self._lut[np.clip(codes, 0, len(self._lut) - 1)]
        b[(codes < 0) | (codes >= len(self._lut))] = -1
        return b

    def columns(self, bulk) -> tuple[np.ndarray, np.ndarray]:
        """(rows of the run's topics, the global partition of every row) of a bulk type's columns."""
        got = self._cols.get(bulk.type)
        if got is None:
            if not len(bulk.topic):
                got = (np.zeros(0, np.int64), np.zeros(0, np.int64))
            else:
                b = self._lut[np.clip(bulk.topic, 0, len(self._lut) - 1)]
                b[bulk.topic >= len(self._lut)] = -1
                rows = np.flatnonzero(b >= 0)
                if self.multi:
                    rows = rows[bulk.partition[rows] >= 0]
                got = (rows, bulk.partition + np.maximum(b, 0) if self.multi else bulk.partition)
            self._cols[bulk.type] = got
        return got


class Growth:
    """Each topic's partition count over the run, from the `add_partitions` actions' results, and from the
    `create_topic` (0 to its partitions) and `delete_topic` (its partitions to 0) steps' (module docstring)."""

    def __init__(self, control, names: list[str]) -> None:
        idx = {n: i for i, n in enumerate(names)}
        #: topic index -> [(when, count before, count after)] in time order
        self.steps: dict[int, list[tuple[float, int, int]]] = {}
        #: the topics whose first step created them: none of their partitions exist before it
        self.later: set[int] = set()
        for _, e in control:
            if e["type"] != "action_end" or e.get("topic") not in idx or not e.get("ok", True):
                continue
            i = idx[e["topic"]]
            if e.get("kind") == Step.ADD_PARTITIONS and isinstance(e.get("count"), int):
                self.steps.setdefault(i, []).append((e["mono"], int(e.get("before") or 0), e["count"]))
            elif e.get("kind") in (Step.CREATE_TOPIC, Step.DELETE_TOPIC) and isinstance(e.get("partitions"), int):
                if i not in self.steps and e["kind"] == Step.CREATE_TOPIC:
                    self.later.add(i)
                made = e["kind"] == Step.CREATE_TOPIC
                self.steps.setdefault(i, []).append((e["mono"], 0 if made else e["partitions"],
                                                     e["partitions"] if made else 0))
        self.times = sorted(t for st in self.steps.values() for t, _, _ in st)

    def final(self, i: int, declared: int) -> int:
        """Topic i's count at the end: the largest of the declared one and every count it was raised to."""
        return max([declared] + [c for _, _, c in self.steps.get(i, ())])

    def count_at(self, i: int, t: float, final: int, before: bool = False) -> int:
        """Topic i's partition count at t (just before t when `before`); `final` when it never grew."""
        st = self.steps.get(i)
        if not st:
            return final
        cur = 0 if i in self.later else (st[0][1] or final)
        for when, _, c in st:
            if when < t or (when == t and not before):
                cur = c
        return cur

    def born(self, i: int, p: int) -> float:
        """When partition p (local) of topic i came to exist: -inf for one there from the start."""
        for when, before, c in self.steps.get(i, ()):
            if before <= p < c:
                return when
        return float("-inf")


def raw_spans(history: History, names: list[str], control) -> list[int]:
    """Per topic, one more than the highest partition the history names (ownership, bulk events), or 0."""
    hi = {t: -1 for t in names}
    for _, e in control:
        if e.get("type") in ("assigned", "revoked", "lost"):
            for t, p in (e.get("partitions") or ()):
                if t in hi and int(p) > hi[t]:
                    hi[t] = int(p)
    for ty in ("processed", "acked"):
        b = history.bulk(ty)
        for t in names:
            c = history.code(t)
            if c is not None and len(b.topic):
                sel = b.partition[b.topic == c]
                if len(sel):
                    hi[t] = max(hi[t], int(sel.max()))
    c = history.bulk("committed")
    for t in names:
        code = history.code(t)
        if code is not None and len(c.c_topic):
            sel = c.c_partition[c.c_topic == code]
            if len(sel):
                hi[t] = max(hi[t], int(sel.max()))
    return [hi[t] + 1 for t in names]


def matches(entry, topic: str) -> bool:
    """Whether one subscription entry takes the topic: a `^` regex by `re.match` (anchored at the start of the
    name only), any other string by equality; an entry that is no valid regex, or no string, takes nothing."""
    if not isinstance(entry, str):
        return False
    if not entry.startswith("^"):
        return entry == topic
    try:
        return re.match(entry, topic) is not None
    except re.error:
        return False


def subscribed(subscription, topic: str) -> bool:
    """Whether a subscription (topic names and `^` regexes) takes the topic."""
    return any(matches(e, topic) for e in subscription)


def subscribed_topics(subscription, names) -> frozenset:
    """The names among `names` a subscription takes; None (a member that did not say) takes every one."""
    return frozenset(names) if subscription is None else frozenset(t for t in names if subscribed(subscription, t))


class Subscriptions:
    """What each member subscribes to over time, from its `started` and subscription-changing `control` events
    (see the module docstring)."""

    def __init__(self, control, names: list[str], end: float) -> None:
        self.names = list(names)
        self.all = frozenset(range(len(self.names)))
        self.by_member: dict[str, list[tuple[float, frozenset]]] = {}
        self.declared = False  # whether any member wrote a subscription
        for _, e in control:
            ty = e.get("type")
            if ty not in ("started", "control") or not e.get("member") or e["mono"] > end:
                continue
            sub = e.get("subscription")
            if ty == "control" and sub is None:
                continue  # a control that changed something else
            if isinstance(sub, (list, tuple)):
                self.declared = True
                topics = self.resolve(sub)
            else:
                topics = self.all
            self.by_member.setdefault(e["member"], []).append((e["mono"], topics))
        #: every subscription any member wrote takes every topic (a one-topic run): who subscribes to what never matters
        self.all_take_all = all(ts == self.all for subs in self.by_member.values() for _, ts in subs)

    def resolve(self, entries) -> frozenset:
        """The indices of the run's topics a subscription names."""
        return frozenset(i for i, t in enumerate(self.names) if subscribed(entries, t))

    def of(self, member: str, t: float, before: bool = False) -> frozenset:
        """The topic indices a member subscribes to at t (just before t when `before`)."""
        subs = self.by_member.get(member)
        if not subs:
            return self.all
        got = subs[0][1]
        for mono, topics in subs:
            if mono < t or (not before and mono == t):
                got = topics
            else:
                break
        return got

    def distinct(self, members) -> dict[frozenset, list[str]]:
        """Every subscription any `started` of these members wrote (no `started`: every topic) -> its members."""
        out: dict[frozenset, list[str]] = {}
        for m in sorted(members):
            for topics in {s for _, s in self.by_member.get(m, ())} or {self.all}:
                out.setdefault(topics, []).append(m)
        return out

    def ever(self, members) -> frozenset:
        """The topic indices some of these members subscribes to at some time."""
        return frozenset().union(*self.distinct(members)) if members else self.all

    def show(self, topics: frozenset) -> list[str]:
        return [self.names[i] for i in sorted(topics)]
