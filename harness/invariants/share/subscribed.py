"""Share groups: a member is handed records of the topics it subscribes to, and of no other (`share_subscribed_only`).

A share member's subscription is what its `started` event says (`subscription`: the topics' names on the cluster,
HARNESS_TOPICS), until a `control` event of it says another (a `change_subscription` step: the member writes the
event once its client's `subscribe()` returned, docs/member-contract.md "Controls"). Each `share_acquired` is judged
by the subscription the member had recorded when poll handed the record over: a record of a topic it does not name
is a violation (one the change dropped, only past the bound below), its witnesses the delivery and the event that set
the subscription it broke. A record
handed over before the change returned may be of either subscription: the member records the change after its
`subscribe()` call returned and polls only after that, so every delivery recorded after the `control` event is
under the new subscription. The rule is KIP-932's: a share consumer is assigned partitions of the topics it
subscribes to (`ShareGroupHeartbeat`'s `SubscribedTopicNames`), and KafkaShareConsumer#subscribe "replaces the
current subscription"; the consumer-group twin of the rule is `subscribed_only` (harness/invariants/subscribed.py).

A share client changes its subscription on its way to the coordinator: its next `ShareGroupHeartbeat` carries the new
topics (KIP-932), and until the answer's new assignment it goes on fetching the share-partitions it was assigned.
A record of a topic the change dropped is therefore allowed for one heartbeat interval (the group's
`share.heartbeat.interval.ms` as the `group_settings` event read it) and the clock slack (`clock_slack_s`: the way back
from the broker's acquisition to poll) after the `control` event: `share-subscription-change` (Kafka 4.4.0,
confluent-kafka 2.16.1, seed 1) saw m1 handed 94 records of the topic it dropped in one poll 0.37 s after its
`subscribe()` returned, and m2 100 records 0.16 s after its own (heartbeat interval 0.5 s); none later. Measured:
`in_grace`, `longest_in_grace_s`. A record of a topic the member never named, or of a dropped one past that bound, is
a violation; without the heartbeat interval a dropped topic's record after the change is `unknown`.

A member whose `started` event names no subscription subscribes to every topic of the run (docs/history.md: the
run's `share_settings` topics); with those unknown too (a run recorded before they were) it is not judged until a
`control` event says one. A run in which no delivery could be judged is `unknown`, never valid.
Measured besides: `judged` (deliveries judged), `after_change` (of them, after a subscription change),
`changes`, `unjudged` (deliveries to members of no recorded subscription).
"""
from __future__ import annotations

from typing import NamedTuple

from harness.record.history import History
from harness.invariants.clock import run_s
from harness.invariants.core import Verdict, verdict, witness
from harness.invariants.share.view import ShareCheckSettings, group_setting

NAME = "share_subscribed_only"
#: the most violations named in the message (all are counted)
SHOWN = 3


class _Sub(NamedTuple):
    topics: frozenset  # what the member subscribes to
    setter: dict  # the `started` or `control` event that said it
    dropped: frozenset = frozenset()  # the topics that event's change dropped (a `control`'s)


def _deliveries(history: History, every: tuple):
    """Yield ("change", event, None) for each subscription change (a member's `control` event with one), and
    ("delivery", event, its member's _Sub then, or None) for each `share_acquired`, in history order; `every`: the
    run's topics, the subscription of a member whose `started` names none (none known: empty)."""
    subs: dict[str, _Sub] = {}
    for _, e in history.control():
        ty, m = e.get("type"), e.get("member")
        if ty == "started" and m is not None:  # a member's (re)start: the subscription it says, else every topic
            subs.pop(m, None)
            given = e.get("subscription") if e.get("subscription") is not None else every or None
            if given is not None:
                subs[m] = _Sub(frozenset(map(str, given)), e)
        elif ty == "control" and e.get("subscription") is not None:
            new = frozenset(map(str, e["subscription"]))
            subs[m] = _Sub(new, e, subs[m].topics - new if m in subs else frozenset())
            yield "change", e, None
        elif ty == "share_acquired":
            yield "delivery", e, subs.get(m)


def _said(history: History, e: dict, sub: _Sub) -> str:
    return (f"{e.get('member')} was handed {e.get('topic')}-{e.get('partition')}@{e.get('offset')} at "
            f"{run_s(history, e['mono'])}, its subscription {sorted(sub.topics)} since its {sub.setter.get('type')} "
            f"event at {run_s(history, sub.setter['mono'])}")


def _invalid(history: History, bad: list, judged: int, grace: str, ms: dict) -> Verdict:
    wits = []
    for e, sub in bad[:SHOWN]:
        wits += [witness(e, f"a record of {e.get('topic')}, which {e.get('member')}'s subscription "
                            f"{sorted(sub.topics)} does not name"),
                 witness(sub.setter, f"the {sub.setter.get('type')} event that set {e.get('member')}'s subscription")]
    said = "; ".join(_said(history, *b) for b in bad[:SHOWN])
    return verdict(NAME, "invalid", f"{len(bad)} of {judged} deliveries were of a topic the member's subscription "
                                    f"did not name ({grace}): {said}", wits, ms)


def check_subscribed_only(history: History, s: ShareCheckSettings) -> Verdict:
    """Every record a share member was handed is of a topic its recorded subscription named then (a dropped one within
    a heartbeat interval and the clock slack of the change)."""
    hb = group_setting(history, "heartbeat_ms")
    grace_s = None if hb.value is None else hb.value / 1000 + s.clock_slack_s
    grace = (f"a dropped topic's allowed for {grace_s:g}s after the change: {hb.says('heartbeat interval', ' ms')} + "
             f"clock slack {s.clock_slack_s:g}s" if grace_s is not None else hb.says("heartbeat interval"))
    ms = {"judged": 0, "after_change": 0, "changes": 0, "unjudged": 0, "in_grace": 0, "longest_in_grace_s": 0.0}
    changed: set = set()
    bad, unsure = [], []
    for what, e, sub in _deliveries(history, s.topics):
        if what == "change":
            ms["changes"] += 1
            changed.add(e.get("member"))
            continue
        if sub is None:
            ms["unjudged"] += 1
            continue
        ms["judged"] += 1
        ms["after_change"] += e.get("member") in changed
        topic, late = str(e.get("topic")), e["mono"] - sub.setter["mono"]
        if topic in sub.topics:
            continue
        if topic in sub.dropped and grace_s is None:
            unsure.append((e, sub))
        elif topic in sub.dropped and late <= grace_s:
            ms["in_grace"] += 1
            ms["longest_in_grace_s"] = max(ms["longest_in_grace_s"], round(late, 3))
        else:
            bad.append((e, sub))
    if bad:
        return _invalid(history, bad, ms["judged"], grace, ms)
    if unsure:
        return verdict(NAME, "unknown", f"{len(unsure)} deliveries of a topic dropped by a subscription change, and "
                                        f"the bound for them is unknown: {grace}", measurements=ms)
    if not ms["judged"]:
        why = (f"no member's subscription is known ({ms['unjudged']} deliveries to members whose `started` event "
               f"names none, in a run whose topics are not recorded)" if ms["unjudged"] else "no record was delivered")
        return verdict(NAME, "unknown", why, measurements=ms)
    n = ms["changes"]
    return verdict(NAME, "valid", f"all {ms['judged']} deliveries were of topics the member's recorded subscription "
                                  f"named ({ms['after_change']} after {n} subscription change{'s' * (n != 1)}; "
                                  f"{ms['in_grace']} of a dropped topic within the bound, the longest "
                                  f"{ms['longest_in_grace_s']:g}s after its change; {grace})", measurements=ms)
