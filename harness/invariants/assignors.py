"""Which assignor decides a consumer group's assignment at a moment, from what the members and the brokers recorded then.

- **Consumer protocol** (KIP-848; any live member on it: the group is a consumer group, its classic members
  included, when the brokers' `group.consumer.migration.policy` lets a classic group become one): the brokers'
  assignor decides. The one the most members name in their `group.remote.assignor` (the group coordinator's
  `ConsumerGroup.computePreferredServerAssignor`), else the first of the brokers' `group.consumer.assignors` (its
  default assignor), as the `group_settings` event in force recorded it. A member's `group.remote.assignor` is its
  `started` event's `effective` one, else its `client_config` (the settings it was given: absent there, it named
  none, the clients' default).
- **Classic** (every live member on `group.protocol=classic`): the clients' assignor, the one the coordinator
  selects from the members' `partition.assignment.strategy` lists (each `started` event's `effective`): of the
  assignors every member offers, the one most members list first among them (Kafka's `ClassicGroup.selectProtocol`,
  `GroupMetadata.selectProtocol` before KIP-848). A tie between two is arbitrary there: every tied one is in
  force (a shape any of them could produce is one the group could have).

A fact the history does not hold (no `group_settings` naming `group.consumer.assignors`, members of both protocols
under an unrecorded migration policy) raises `MissingSetting`: the verdicts that need the assignor are `unknown`,
naming it, never judged with a default. A member whose `started` has no `effective` at all (a team's own program)
raises `Unrecorded`: the checkers then say `skipped`, and the plan decides (a team's program need not record it; the
harness's members do, so their runs are `unknown`).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from harness.base.vocabulary import ASSIGNOR_CLASSES, CLASSIC
from harness.invariants.core import MissingSetting
from harness.invariants.settings import group_settings_at, life_at, started_event

#: the brokers' setting whose first entry is the consumer protocol's default assignor
BROKER_ASSIGNORS = "group.consumer.assignors"
#: a member's choice of the brokers' assignor under the consumer protocol
REMOTE_ASSIGNOR = "group.remote.assignor"
#: the classic member's list of assignors, in its order of preference
STRATEGY = "partition.assignment.strategy"
#: the migration policies under which a classic group becomes a consumer group when a consumer member joins
UPGRADING_POLICIES = ("bidirectional", "upgrade")


class Unrecorded(MissingSetting):
    """A member's start recorded no settings of its own (a team's program that writes no `effective`): its assignor is
    not in the history. The checkers say `skipped` for it, and the plan's word decides (`applies`): a run of the
    harness's members, which record them, is `unknown`."""


@dataclass(frozen=True)
class InForce:
    """The assignor (or the tied ones) in force at a moment; `server`: the brokers' (consumer protocol)."""

    assignors: tuple[str, ...]
    server: bool
    source: str

    def show(self) -> str:
        return " or ".join(self.assignors) + (" (server side)" if self.server else "")


def assignor_name(entry) -> str:
    """An assignor's protocol name from a librdkafka name or a Java class name (`ASSIGNOR_CLASSES`)."""
    text = str(entry).strip()
    return ASSIGNOR_CLASSES.get(text.rsplit(".", 1)[-1], text)


def names(value) -> list[str]:
    """The assignor names of a comma-separated list (or a list), in order."""
    items = value if isinstance(value, (list, tuple)) else str(value or "").split(",")
    return [assignor_name(x) for x in items if str(x).strip()]


def in_force(tl, members, t: float) -> InForce:
    """The assignor deciding the assignment of `members` (the live ones) at t (module docstring)."""
    members = sorted(members)
    if not members:
        raise MissingSetting("no live member: no assignor to read")
    key = ("assignor_in_force", tuple(members), _key_of(tl, members, t))
    return tl.history.derived(key, lambda: _in_force(tl, members, t))


def _key_of(tl, members, t: float) -> tuple:
    gev = group_settings_at(tl, t)
    lives = tuple((lf.start if lf else None) for lf in (life_at(tl, m, t) for m in members))
    return lives, gev["mono"] if gev else None


def _started(tl, member: str, t: float) -> dict:
    life = life_at(tl, member, t)
    st = started_event(tl, life) if life is not None else None
    if not st or not isinstance(st.get("effective"), dict):
        raise Unrecorded(f"{member}'s start recorded no effective settings: the assignor it ran is unknown")
    return st


def _in_force(tl, members: list[str], t: float) -> InForce:
    starts = {m: _started(tl, m, t) for m in members}
    protocols = {m: st["effective"].get("group.protocol") or CLASSIC for m, st in starts.items()}
    consumer = sorted(m for m, p in protocols.items() if p == "consumer")
    if not consumer:
        return _classic(starts)
    if len(consumer) < len(members):
        policy = _broker_value(tl, t, "group.consumer.migration.policy")
        if policy not in UPGRADING_POLICIES:
            raise MissingSetting(f"members of both protocols ({', '.join(consumer)} on consumer) under the brokers' "
                                 f"group.consumer.migration.policy={policy or 'unrecorded'}: which protocol the group "
                                 f"ran cannot be told")
    return _server(tl, {m: starts[m] for m in consumer}, t)


def _classic(starts: dict[str, dict]) -> InForce:
    lists = {m: names(st["effective"].get(STRATEGY)) for m, st in starts.items()}
    if any(not ls for ls in lists.values()):
        bare = sorted(m for m, ls in lists.items() if not ls)
        raise MissingSetting(f"{', '.join(bare)}'s start recorded no {STRATEGY}")
    common = set.intersection(*(set(ls) for ls in lists.values()))
    shown = "; ".join(f"{m}: {','.join(ls)}" for m, ls in sorted(lists.items()))
    if not common:
        raise MissingSetting(f"no assignor every member offers ({shown}): the coordinator refuses such a member "
                             f"(INCONSISTENT_GROUP_PROTOCOL), which members formed the group cannot be told")
    votes = Counter(next(a for a in ls if a in common) for ls in lists.values())
    top = max(votes.values())
    won = tuple(sorted(a for a, n in votes.items() if n == top))
    return InForce(won, False, f"the coordinator's choice among the members' {STRATEGY} ({shown}; their started "
                               f"events)")


def _server(tl, starts: dict[str, dict], t: float) -> InForce:
    """The brokers' assignor; `starts`: the consumer-protocol members' `started` events (a classic member names none)."""
    named: dict[str, str | None] = {}
    for m, st in starts.items():
        eff = st["effective"]
        if REMOTE_ASSIGNOR in eff:
            named[m] = eff.get(REMOTE_ASSIGNOR)
        elif isinstance(st.get("client_config"), dict):
            named[m] = st["client_config"].get(REMOTE_ASSIGNOR)
        else:
            raise MissingSetting(f"{m}'s start recorded neither its {REMOTE_ASSIGNOR} nor the settings it was given")
    votes = Counter(assignor_name(a) for a in named.values() if a)
    if votes:
        top = max(votes.values())
        won = tuple(sorted(a for a, n in votes.items() if n == top))
        shown = ", ".join(f"{m}: {a}" for m, a in sorted(named.items()) if a)
        return InForce(won, True, f"the most members' {REMOTE_ASSIGNOR} ({shown}; their started events)")
    value = _broker_value(tl, t, BROKER_ASSIGNORS)
    if not value:
        gev = group_settings_at(tl, t)
        at = f"the group_settings at {gev['mono'] - tl.start:.1f}s" if gev else "no group_settings event"
        raise MissingSetting(f"no member named a {REMOTE_ASSIGNOR} and the brokers' {BROKER_ASSIGNORS} was not "
                             f"recorded ({at}): the brokers' default assignor is unknown")
    first = names(value)[0]
    return InForce((first,), True, f"no member named a {REMOTE_ASSIGNOR}: the first of the brokers' "
                                   f"{BROKER_ASSIGNORS}={value} (DescribeConfigs)")


def _broker_value(tl, t: float, key: str) -> str | None:
    """A brokers' setting as the group_settings event in force at t recorded it (None: not recorded)."""
    gev = group_settings_at(tl, t)
    got = ((gev or {}).get("broker") or {}).get(key)
    return str(got) if got not in (None, "") else None


def change(tl, before, t1: float, after, t2: float) -> str | None:
    """How the assignor in force changed from the `before` members at t1 to the `after` members at t2 ("uniform -> range
    (server side)"), or None: the same, or not to be told from the history (then the checkers judge as if the same)."""
    try:
        a, b = in_force(tl, before, t1), in_force(tl, after, t2)
    except MissingSetting:
        return None
    return None if a.assignors == b.assignors else f"{a.show()} -> {b.show()}"

