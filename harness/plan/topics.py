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

**Topics created later.** A `[[topics]]` entry with `created = "later"` (here a third element, `LATER`) is not
created when the run starts: the members may subscribe to it (by name or by a regex that will match it) before it
exists, the workload never writes to it, and the checkers' settings leave it out; a `create_topic` step creates it
(with records of its own when asked), a `delete_topic` step deletes it, and a later `create_topic` may create it
again (`schedule_refusal` holds a schedule to that order before anything starts).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from harness.base.errors import BadInput
from harness.base.steps import Step
from harness.invariants.topics import matches, subscribed, subscribed_topics  # noqa: F401 - the one matcher

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: how a `[[topics]]` entry's `created` says a topic comes into being: with the run, or by a `create_topic` step
START, LATER = "start", "later"
CREATED = (START, LATER)


@dataclass(frozen=True)
class Topic:
    name: str  # as the scenario names it ("" for the one topic of a run without named topics)
    real: str  # on the cluster
    partitions: int
    later: bool = False  # created by a `create_topic` step, not with the run


def _entries(topics) -> list[tuple[str, int, str]]:
    """(name, partitions, created) of each declared topic: (name, partitions) or (name, partitions, created)."""
    return [(t[0], t[1], t[2] if len(t) > 2 else START) for t in topics]


def check(topics: tuple[tuple[str, int], ...], subscriptions: dict) -> None:
    """BadInput when a topic or a subscription cannot work (before anything starts)."""
    names = [n for n, _, _ in _entries(topics)]
    for n, p, created in _entries(topics):
        if not NAME_RE.match(n) or len(n) > 100:
            raise BadInput(f"bad topic name {n!r}: letters, digits, '.', '_', '-'")
        if not isinstance(p, int) or p < 1:
            raise BadInput(f"topic {n} needs at least one partition (got {p!r})")
        if created not in CREATED:
            raise BadInput(f"topic {n}: created is {' or '.join(map(repr, CREATED))}, not {created!r}")
    if topics and all(c == LATER for _, _, c in _entries(topics)):
        raise BadInput("every topic is created later: at least one of [[topics]] must exist when the run starts "
                       "(the workload writes to those)")
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


def run_topics(run_id: str, topics: tuple[tuple, ...], partitions: int) -> list[Topic]:
    """The run's topics on the cluster when it starts: the named ones (but those created later), else the one
    default topic."""
    if not topics:
        return [Topic("", f"t-{run_id}", partitions)]
    return [t for t in declared(run_id, topics) if not t.later]


def declared(run_id: str, topics: tuple[tuple, ...]) -> list[Topic]:
    """Every named topic of the run, those created later included (`Topic.later`)."""
    return [Topic(n, f"t-{run_id}-{n}", p, c == LATER) for n, p, c in _entries(topics)]


def schedule_refusal(topics: tuple[tuple, ...], schedule) -> str | None:
    """Why a schedule's `create_topic` or `delete_topic` step cannot work ('step i (kind): ...'), or None: each
    `create_topic` names a topic of `[[topics]]` with `created = "later"` that does not exist by then, each
    `delete_topic` one that a `create_topic` before it created and no step deleted since."""
    later = {n: p for n, p, c in _entries(topics) if c == LATER}
    present: set[str] = set()
    for i, a in enumerate(schedule):
        if a.kind not in (Step.CREATE_TOPIC, Step.DELETE_TOPIC):
            continue
        name = a.params.get("topic")
        if name not in later:
            known = ", ".join(sorted(later)) or "none: give a [[topics]] entry created = \"later\""
            return f"step {i} ({a.kind}): topic {name!r} is not one of the run's topics created later ({known})"
        if a.kind == Step.CREATE_TOPIC and name in present:
            return f"step {i} (create_topic): topic {name!r} exists by then (created by an earlier step)"
        if a.kind == Step.DELETE_TOPIC and name not in present:
            return f"step {i} (delete_topic): topic {name!r} does not exist by then (no create_topic before it)"
        (present.add if a.kind == Step.CREATE_TOPIC else present.discard)(name)
    return None


def prefix(run_id: str) -> str:
    return f"t-{run_id}-"


def real_subscription(run_id: str, topics: list[Topic], entries: tuple[str, ...] | None) -> tuple[str, ...]:
    """A member's subscription as its client says it: topics' real names, regexes anchored in the run's
    names. No entries: every topic of the run."""
    if not entries:
        return tuple(t.real for t in topics)
    by_name = {t.name: t.real for t in topics}
    by_name = {e: by_name.get(e) or prefix(run_id) + e for e in entries}  # a topic created later has its name too
    # a run id holds letters, digits, '-', '_', '.' (the scenario's name): only '.' needs quoting, and `[.]`
    # means a dot to every regex dialect on the way (Python, librdkafka's, the broker's RE2/J)
    anchored = "^" + prefix(run_id).replace(".", "[.]")
    return tuple(anchored + e[1:] if e.startswith("^") else by_name[e] for e in entries)
