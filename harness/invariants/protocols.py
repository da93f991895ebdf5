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


@dataclass(frozen=True)
class ProtocolRules:
    """What one group protocol promises to the checkers."""

    name: str
    assignor: str
    sticky: bool
    revoke_before_assign: bool
    static_membership: bool
    eager_revocation: bool


PROTOCOLS: dict[str, ProtocolRules] = {r.name: r for r in [
    ProtocolRules("classic-eager", "range", sticky=False, revoke_before_assign=False, static_membership=True,
                  eager_revocation=True),
    ProtocolRules("classic-cooperative", "cooperative-sticky", sticky=True, revoke_before_assign=True,
                  static_membership=True, eager_revocation=False),
    ProtocolRules("consumer", "uniform (server side)", sticky=True, revoke_before_assign=True,
                  static_membership=True, eager_revocation=False),
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
