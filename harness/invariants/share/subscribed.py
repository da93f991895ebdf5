"""Share groups: a member is handed records of the topics it subscribes to, and of no other (`share_subscribed_only`).

A share member's subscription is what its `started` event says (`subscription`: the topics' names on the cluster,
HARNESS_TOPICS), until a `control` event of it says another (a `change_subscription` step: the member writes the
event once its client's `subscribe()` returned, docs/member-contract.md "Controls"). Each `share_acquired` is judged
by the subscription the member had recorded when poll handed the record over: a record of a topic it no longer (or
never) named is a violation, its witnesses the delivery and the event that set the subscription it broke. A record
handed over before the change returned may be of either subscription: the member records the change after its
`subscribe()` call returned and polls only after that, so every delivery recorded after the `control` event is
under the new subscription. The rule is KIP-932's: a share consumer is assigned partitions of the topics it
subscribes to (`ShareGroupHeartbeat`'s `SubscribedTopicNames`), and KafkaShareConsumer#subscribe "replaces the
current subscription"; the consumer-group twin of the rule is `subscribed_only` (harness/invariants/subscribed.py).

A member whose `started` event names no subscription (a program of the team's own that does not say it) is not
judged until a `control` event says one; a run in which no delivery could be judged is `unknown`, never valid.
Measured: `judged` (deliveries judged), `after_change` (of them, after a subscription change), `changes`,
`unjudged` (deliveries to members of no recorded subscription).
"""
from __future__ import annotations

from harness.record.history import History
from harness.invariants.clock import run_s
from harness.invariants.core import Verdict, verdict, witness
from harness.invariants.share.view import ShareCheckSettings

NAME = "share_subscribed_only"
#: the most violations named in the message (all are counted)
SHOWN = 3


def _deliveries(history: History):
    """Yield ("change", event, None) for each subscription change (a member's `control` event with one), and
    ("delivery", event, (subscription, the event that set it) or None) for each `share_acquired`, in history order."""
    subs: dict[str, tuple[frozenset, dict]] = {}
    for _, e in history.control():
        ty, m = e.get("type"), e.get("member")
        if ty == "started" and m is not None:  # a member's (re)start: the subscription it says, or none known
            subs.pop(m, None)
            if e.get("subscription") is not None:
                subs[m] = (frozenset(map(str, e["subscription"])), e)
        elif ty == "control" and e.get("subscription") is not None:
            subs[m] = (frozenset(map(str, e["subscription"])), e)
            yield "change", e, None
        elif ty == "share_acquired":
            yield "delivery", e, subs.get(m)


def _said(history: History, e: dict, sub: frozenset, setter: dict) -> str:
    return (f"{e.get('member')} was handed {e.get('topic')}-{e.get('partition')}@{e.get('offset')} at "
            f"{run_s(history, e['mono'])}, its subscription {sorted(sub)} since its {setter.get('type')} event at "
            f"{run_s(history, setter['mono'])}")


def check_subscribed_only(history: History, s: ShareCheckSettings) -> Verdict:
    """Every record a share member was handed is of a topic its recorded subscription named then."""
    judged = after = changes = unjudged = 0
    changed: set = set()
    bad = []
    for what, e, known in _deliveries(history):
        if what == "change":
            changes += 1
            changed.add(e.get("member"))
        elif known is None:
            unjudged += 1
        else:
            judged += 1
            after += e.get("member") in changed
            if str(e.get("topic")) not in known[0]:
                bad.append((e, *known))
    ms = {"judged": judged, "after_change": after, "changes": changes, "unjudged": unjudged}
    if bad:
        wits = []
        for e, sub, setter in bad[:SHOWN]:
            wits += [witness(e, f"a record of {e.get('topic')}, which {e.get('member')}'s subscription {sorted(sub)} "
                                f"does not name"),
                     witness(setter, f"the {setter.get('type')} event that set {e.get('member')}'s subscription")]
        said = "; ".join(_said(history, *b) for b in bad[:SHOWN])
        return verdict(NAME, "invalid", f"{len(bad)} of {judged} deliveries were of a topic the member's subscription "
                                        f"did not name: {said}", wits, ms)
    if not judged:
        why = (f"no member recorded its subscription ({unjudged} deliveries to members whose `started` event names "
               f"none)" if unjudged else "no record was delivered")
        return verdict(NAME, "unknown", why, measurements=ms)
    return verdict(NAME, "valid", f"all {judged} deliveries were of topics the member's recorded subscription named "
                                  f"({after} after {changes} subscription change{'s' * (changes != 1)})",
                   measurements=ms)
