"""Topics created or deleted that the members' subscriptions match, and how long each member may take to notice.

A classic member rejoins when its metadata shows its subscribed topic set changed (librdkafka: "Updating metadata",
`rd_kafka_cgrp_metadata_update_check`; the Java client: its matched topics changed): a topic created or deleted
that its list names or its regex matches. Each member notices at its own metadata refresh
(`topic.metadata.refresh.interval.ms`, as its start recorded it: `settings.member_refresh_s`), so for a while the
members' JoinGroup subscriptions name different topic sets, and the sticky assignors run their general
(non-homogeneous) algorithm, which puts balance across what each subscribes first and may move partitions of the
topics they all had; later rounds bring them in line. The history records the subscription each member asked for,
not the topic set its client sent at each join, so it cannot show the sets were the same at each rebalance of
that window: a transition that meets such a window is promised neither stickiness nor fewest moves.

Read from the one causes view (`causes`, kind `topic`: a `create_topic` or `delete_topic` step that ended well, from
its start to its end). A topic change that no member running then subscribes to (by name or regex) is no cause of
a rejoin here.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.invariants import causes
from harness.invariants.settings import member_refresh_s

#: how far a broker line's time may fall before the harness event that caused it (rebalance_cause's slack)
CLOCK_SLACK_S = 0.05


@dataclass(frozen=True)
class Noticed:
    """One topic cause that some member's subscription matched, with the window in which members may notice it:
    from the step's start to its end plus the longest metadata refresh of the members that match it."""

    cause: causes.Cause
    until: float
    refresh_s: float
    members: frozenset

    def show(self, t0: float) -> str:
        return (f"{self.cause.detail} at {self.cause.start - t0:.1f}-{self.cause.end - t0:.1f}s, matched by "
                f"{', '.join(sorted(self.members))}, noticed within their metadata refresh ({self.refresh_s:g}s)")


def _matching(tl, c: causes.Cause) -> frozenset:
    """The members running during the step whose subscriptions match its topic."""
    i = tl.layout.index.get(c.event.get("topic"))
    if i is None:
        return frozenset()
    t = c.end
    return frozenset(x for x in tl.alive_members(t) if i in tl.subscribed(x, t))


def noticed(tl) -> list[Noticed]:
    """Every topic created or deleted that a running member's subscription matched, with its noticing window."""
    def build() -> list[Noticed]:
        out = []
        for c in causes.build(tl).all:
            if c.kind != "topic" or not (who := _matching(tl, c)):
                continue
            refresh = max(member_refresh_s(tl, x, c.end)[0] for x in who)
            out.append(Noticed(c, c.end + refresh + CLOCK_SLACK_S, refresh, who))
        return out
    return tl.history.derived(("topics_noticed", tl.end), build)


def rejoin_cause(tl, member: str, t: float) -> Noticed | None:
    """The topic change that `member`'s subscription matched and that it may have noticed by t: the step started by
    t (plus the clock slack) and ended within the member's own metadata refresh before t."""
    refresh = member_refresh_s(tl, member, t)[0]
    for n in noticed(tl):
        if member in n.members and n.cause.start <= t + CLOCK_SLACK_S and n.cause.end >= t - refresh - CLOCK_SLACK_S:
            return n
    return None


def unsettled(tl, lo: float, hi: float) -> Noticed | None:
    """The first topic change whose noticing window meets the transition (lo, hi]: the members' subscriptions may
    have differed at a rebalance between, so no stickiness and no fewest moves are promised."""
    return next((n for n in noticed(tl) if n.cause.start < hi and n.until > lo), None)


def not_judged(tl, lo: float, hi: float) -> tuple[str, list[str]] | None:
    """`bounded_migrations`' reason not to judge the transition (lo, hi]: ("topic_changed", [the change]) when a topic
    change's noticing window meets it, else None."""
    n = unsettled(tl, lo, hi)
    return None if n is None else ("topic_changed", [n.show(tl.start)])
