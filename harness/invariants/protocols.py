"""What each group protocol promises: the one place the checkers ask which anomaly a protocol allows.

| protocol | assignor | sticky | revoke before assign | static membership |
|---|---|---|---|---|
| `classic-eager` | range, eager | no: every rebalance revokes all | not of a faulted new owner | yes (KIP-345) |
| `classic-cooperative` | cooperative-sticky | yes | yes (KIP-429: two rounds) | yes (KIP-345) |
| `consumer` | server-side uniform (KIP-848) | yes | yes: assigned after the revocation is acked | yes |

Under every protocol two members in good standing never hold one partition at once. "Revoke before
assign" is the stronger, cooperative promise: the moment a partition is given to a new owner, no old
owner in good standing may still hold it, whatever the new owner's own standing.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.base.vocabulary import ASSIGNMENT


@dataclass(frozen=True)
class ProtocolRules:
    """What one group protocol promises to the checkers."""

    name: str
    assignor: str
    sticky: bool
    revoke_before_assign: bool
    static_membership: bool
    eager_revocation: bool


def _rules(name: str, *, sticky: bool, revoke_before_assign: bool, static_membership: bool) -> ProtocolRules:
    """A protocol's rules; its assignor and whether it revokes eagerly are the vocabulary's (harness/base/vocabulary.py)."""
    a = ASSIGNMENT[name]
    return ProtocolRules(name, a.assignor if a.client_side else f"{a.assignor} (server side)", sticky=sticky,
                         revoke_before_assign=revoke_before_assign, static_membership=static_membership,
                         eager_revocation=a.eager)


PROTOCOLS: dict[str, ProtocolRules] = {r.name: r for r in [
    _rules("classic-eager", sticky=False, revoke_before_assign=False, static_membership=True),
    _rules("classic-cooperative", sticky=True, revoke_before_assign=True, static_membership=True),
    _rules("consumer", sticky=True, revoke_before_assign=True, static_membership=True),
]}


def rebalance_rounds(protocol: str) -> int:
    """How many rounds a rebalance takes: one under eager (revoke all and assign in one round), two under the
    cooperative protocols (KIP-429: revoke in one round, assign in the next) and the consumer protocol (a
    partition is assigned once its previous owner acknowledged the revocation)."""
    rules = PROTOCOLS.get(protocol)
    return 1 if rules is not None and rules.eager_revocation else 2


def rules_for(protocol: str) -> ProtocolRules:
    """The rules of a protocol by name; ValueError for a protocol the checkers do not know."""
    try:
        return PROTOCOLS[protocol]
    except KeyError:
        raise ValueError(f"unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}") from None
