"""A run's topics and its members' subscriptions: names as a scenario writes them, names on the cluster.

A run without named topics has one topic, `t-<run id>`, that every member subscribes to. A run with named
topics (a scenario file's `[[topics]]`) creates `t-<run id>-<name>` for each, so that runs sharing a cluster
never see each other's topics. A subscription is a list of entries, each a topic's name or a regular
expression: an entry that starts with `^` is a regex (librdkafka's rule), written against the names the
scenario uses. The harness anchors it inside the run's own names (`^orders.*` becomes `^t-<run id>-orders.*`),
so a regex can never reach another run's topics. Write a regex to match the whole name (end it with `.*` or
`$`): the classic protocol matches it in the client, the consumer protocol on the broker. Which topics a
subscription takes is decided in one place, `harness.invariants.topics.matches` (re-exported here), the
rule the checkers judge with too.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from harness.base.errors import BadInput
from harness.invariants.topics import matches, subscribed, subscribed_topics  # noqa: F401 - the one matcher

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Topic:
    name: str  # as the scenario names it ("" for the one topic of a run without named topics)
    real: str  # on the cluster
    partitions: int


def check(topics: tuple[tuple[str, int], ...], subscriptions: dict) -> None:
    """BadInput when a topic or a subscription cannot work (before anything starts)."""
    names = [n for n, _ in topics]
    for n, p in topics:
        if not NAME_RE.match(n) or len(n) > 100:
            raise BadInput(f"bad topic name {n!r}: letters, digits, '.', '_', '-'")
        if not isinstance(p, int) or p < 1:
            raise BadInput(f"topic {n} needs at least one partition (got {p!r})")
    if len(set(names)) != len(names):
        raise BadInput(f"a topic is named twice: {', '.join(names)}")
    for who, entries in subscriptions.items():
        if not entries:
            raise BadInput(f"the subscription of {who} is empty")
        for e in entries:
            if "," in e:
                raise BadInput(f"the subscription of {who}: {e!r} holds a comma (members get the subscription "
                               "as a comma-separated list, HARNESS_TOPICS)")
            if e.startswith("^"):
                try:
                    re.compile(e)
                except re.error as err:
                    raise BadInput(f"the subscription of {who}: bad regex {e!r}: {err}") from None
            elif e not in names:
                known = ", ".join(names) if names else "none: name the run's topics to subscribe by name"
                raise BadInput(f"the subscription of {who} names topic {e!r}, not one of the run's ({known})")


def run_topics(run_id: str, topics: tuple[tuple[str, int], ...], partitions: int) -> list[Topic]:
    """The run's topics on the cluster: the named ones, else the one default topic."""
    if not topics:
        return [Topic("", f"t-{run_id}", partitions)]
    return [Topic(n, f"t-{run_id}-{n}", p) for n, p in topics]


def prefix(run_id: str) -> str:
    return f"t-{run_id}-"


def real_subscription(run_id: str, topics: list[Topic], entries: tuple[str, ...] | None) -> tuple[str, ...]:
    """A member's subscription as its client says it: topics' real names, regexes anchored in the run's
    names. No entries: every topic of the run."""
    if not entries:
        return tuple(t.real for t in topics)
    by_name = {t.name: t.real for t in topics}
    # a run id holds letters, digits, '-', '_', '.' (the scenario's name): only '.' needs quoting, and `[.]`
    # means a dot to every regex dialect on the way (Python, librdkafka's, the broker's RE2/J)
    anchored = "^" + prefix(run_id).replace(".", "[.]")
    return tuple(anchored + e[1:] if e.startswith("^") else by_name[e] for e in entries)
