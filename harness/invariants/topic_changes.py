"""`topic_changes`: the group's answer to topics that come and go and to subscriptions that change (issue 47).

Read from the history alone: the `create_topic` and `delete_topic` steps' `action_start`/`action_end` (their
result's `topic`, `partitions`, `records`), the members' subscriptions (`started`, subscription `control` events),
what they hold (`assigned`, `revoked`, `lost`) and the records they hand the application (`processed`).

- **takes**: a topic created while members whose subscription takes it (its name, or a regex matching it) are live
  is taken by the group (a member is assigned one of its partitions, or, when the step wrote records, processes
  one) within the bound of the protocol in force after the step ended: under a classic protocol the members'
  metadata refresh (the group's leader sees the topic only then: `topic.metadata.refresh.interval.ms` or
  `metadata.max.age.ms`, as given, else the client's default) plus the rebalance allowance; under the consumer
  protocol the coordinator sees the topic in its metadata image at once: the longest heartbeat interval, plus, for
  a regex, Kafka's least interval between two resolutions of a group's regexes (`GroupMetadataManager`'s
  REGEX_BATCH_REFRESH_MIN_INTERVAL_MS, 10 s), plus the rebalance allowance.
- **releases**: every partition of a deleted topic a member holds when the step ended is released (revoked, lost,
  or the member ended) within the same bound (under the consumer protocol without the regex term).
- **subscribed records**: a member never processes a record of a topic its subscription does not take, from the
  moment its `control` event says the change returned (the member writes it once `subscribe()` returned) or from
  its start.

`invalid` with the first breaches (the step, the member, the topic, the bound with its values and source);
`unknown` when a bound runs past the history's end before the group answered, or a topic was deleted again before
its bound; `skipped` when the history has no topic step and no subscription change; else `valid`. The bounds'
inputs are the recorded settings (`settings.member_refresh_s`, `rebalance_allowance`, `longest_heartbeat_s`).
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.base.steps import Step
from harness.invariants import timeline
from harness.invariants.core import CheckSettings, Verdict, empty, verdict, witness
from harness.invariants.settings import longest_heartbeat_s, member_refresh_s, rebalance_allowance
from harness.invariants.topics import matches, subscribed
from harness.record.history import History

NAME = "topic_changes"
#: Kafka's GroupMetadataManager.REGEX_BATCH_REFRESH_MIN_INTERVAL_MS: the least time between two resolutions of a
#: consumer-protocol group's regexes (a topic created or deleted asks for one; it comes no sooner than this after the
#: previous)
REGEX_REFRESH_MIN_S = 10.0


@dataclass(frozen=True)
class TopicStep:
    """A `create_topic` or `delete_topic` step that ended well: when it began and ended, its topic and result."""

    kind: str
    start: float
    end: float
    topic: str
    result: dict


def topic_steps(history: History) -> list[TopicStep]:
    """The topic steps of the history that ended with `ok`, in order."""
    starts, out = {}, []
    for _, e in history.control():
        if e.get("kind") not in (Step.CREATE_TOPIC, Step.DELETE_TOPIC):
            continue
        if e["type"] == "action_start":
            starts[e.get("action_id")] = e["mono"]
        elif e["type"] == "action_end" and e.get("ok") and isinstance(e.get("topic"), str):
            out.append(TopicStep(e["kind"], starts.get(e.get("action_id"), e["mono"]), e["mono"], e["topic"], e))
    return out


class _Members:
    """Each member's subscriptions over time, lives, holdings and processed records, from its events."""

    def __init__(self, history: History) -> None:
        self.subs: dict[str, list[tuple[float, list | None]]] = {}
        self.ends: dict[str, float] = {}
        self.starts: dict[str, float] = {}
        self.spans: list[tuple[str, str, int, float, float, dict]] = []  # (member, topic, partition, from, to, ev)
        self.processed: list[dict] = []
        open_: dict[tuple[str, str, int], tuple[float, dict]] = {}
        for e in history.events:
            m, t = e.get("member"), e.get("type")
            if t == "started" and m:
                self.starts.setdefault(m, e["mono"])
                self.subs.setdefault(m, []).append((e["mono"], e.get("subscription")))
            elif t == "control" and m and "subscription" in e:
                self.subs.setdefault(m, []).append((e["mono"], e["subscription"]))
            elif t == "assigned" and m:
                for tp in e.get("partitions") or ():
                    open_.setdefault((m, tp[0], tp[1]), (e["mono"], e))
            elif t in ("revoked", "lost") and m:
                for tp in e.get("partitions") or ():
                    if (got := open_.pop((m, tp[0], tp[1]), None)) is not None:
                        self.spans.append((m, tp[0], tp[1], got[0], e["mono"], got[1]))
            elif t in ("member_exit", "stopped") and m:
                self.ends[m] = min(self.ends.get(m, e["mono"]), e["mono"])
            elif t == "processed" and m:
                self.processed.append(e)
        for (m, topic, p), (t0, ev) in open_.items():
            self.spans.append((m, topic, p, t0, self.ends.get(m, float("inf")), ev))

    def subscription_at(self, member: str, t: float) -> list | None:
        """The member's subscription at t: its latest at or before t (its first before its first change)."""
        seen = self.subs.get(member) or [(0.0, None)]
        return next((s for at, s in reversed(seen) if at <= t), seen[0][1])

    def live_at(self, t: float) -> list[str]:
        return sorted(m for m, s in self.starts.items() if s <= t < self.ends.get(m, float("inf")))


def _bound(tl, ms: _Members, step: TopicStep, takers: list[str]) -> tuple[float, str]:
    """How long after the step's end the group may take to answer it (seconds, the values and their source)."""
    allow, awhy = rebalance_allowance(tl, step.end)
    if tl.settings.protocol != "consumer":
        refresh = max((member_refresh_s(tl, m, step.end) + (m,) for m in takers or ms.live_at(step.end)),
                      default=None)
        if refresh is None:
            return allow, awhy
        return refresh[0] + allow, f"{refresh[2]}'s metadata refresh {refresh[0]:g}s ({refresh[1]}); then {awhy}"
    hb = longest_heartbeat_s(tl, step.end)
    regex = step.kind == Step.CREATE_TOPIC and any(
        not any(e == step.topic for e in (ms.subscription_at(m, step.end) or ())) for m in takers)
    extra = REGEX_REFRESH_MIN_S if regex else 0.0
    why = (f"the longest heartbeat interval {hb:g}s" + (f", the coordinator's least interval between regex "
           f"resolutions {REGEX_REFRESH_MIN_S:g}s (GroupMetadataManager.REGEX_BATCH_REFRESH_MIN_INTERVAL_MS)"
           if regex else "") + f"; then {awhy}")
    return hb + extra + allow, why


def _next_same(steps: list[TopicStep], step: TopicStep) -> float:
    """When the next step on the same topic began (the bound of this one is cut there), or infinity."""
    return next((s.start for s in steps if s.topic == step.topic and s.start > step.start), float("inf"))


def _takes(tl, ms: _Members, steps, step: TopicStep, last: float) -> tuple[str, str | None, dict | None]:
    """('judged' | 'none' | 'unknown', why, witness event) for a created topic."""
    takers = [m for m in ms.live_at(step.end)
              if (s := ms.subscription_at(m, step.end)) is None or subscribed(s, step.topic)]
    if not takers:
        return "none", None, None
    bound, why = _bound(tl, ms, step, takers)
    due, cut = step.end + bound, _next_same(steps, step)
    if step.result.get("records"):
        firsts = [e["mono"] for e in ms.processed if e.get("topic") == step.topic and step.start <= e["mono"] < cut]
        what = "processed a record of it"
    else:
        firsts = [s[3] for s in ms.spans if s[1] == step.topic and step.start <= s[3] < cut]
        what = "was assigned one of its partitions"
    at = f"{step.kind} of {step.topic} ended at {step.end - tl.start:.1f}s"
    if firsts and min(firsts) <= due:
        return "judged", None, None
    if min(due, cut) > last or cut < due:
        return "unknown", (f"{at}: no member {what} and the history ends (or the topic changes again) before the "
                           f"bound {bound:g}s ({why})"), None
    return "judged", (f"{at}: no member of {', '.join(takers)} (subscribed to it) {what} within {bound:g}s ({why})"
                      + (f"; the first at {min(firsts) - tl.start:.1f}s" if firsts else "")), step.result


def _releases(tl, ms: _Members, steps, step: TopicStep, last: float) -> tuple[str, list[tuple[str, dict]]]:
    """('judged' | 'unknown', [(why, witness event)]) for a deleted topic."""
    held = [s for s in ms.spans if s[1] == step.topic and s[3] <= step.end < s[4]]
    if not held:
        return "judged", []
    bound, why = _bound(tl, ms, step, [])
    due = step.end + bound
    late = [s for s in held if s[4] > due]
    if late and due > last:
        return "unknown", []
    at = f"{step.topic} deleted by {step.end - tl.start:.1f}s"
    return "judged", [(f"{at}: {m} still held {topic}-{p} {bound:g}s later ({why})", ev)
                      for m, topic, p, _, _, ev in late]


def _stray_records(tl, ms: _Members) -> tuple[int, list[tuple[str, dict]]]:
    """(records judged, [(why, the processed event)]) of records a member processed outside its subscription."""
    judged, out = 0, []
    for e in ms.processed:
        m = e.get("member")
        if len(ms.subs.get(m) or ()) < 2:
            continue
        judged += 1
        sub = ms.subscription_at(m, e["mono"])
        if sub is not None and not any(matches(x, e.get("topic")) for x in sub):
            out.append((f"at {e['mono'] - tl.start:.1f}s {m} processed {e.get('topic')}-{e.get('partition')} "
                        f"offsets {e.get('first_offset')}..{e.get('last_offset')}, a topic its subscription {sub} "
                        f"(since its change returned) does not take", e))
    return judged, out


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge the group's answer to each topic step and to each subscription change (module docstring)."""
    if (v := empty(NAME, history)) is not None:
        return v
    tl, ms, steps = timeline.build(history, settings), _Members(history), topic_steps(history)
    changed = any(len(s) > 1 for s in ms.subs.values())
    if not steps and not changed:
        return verdict(NAME, "skipped", "no topic was created or deleted and no member changed its subscription")
    last, found, unknown, m = tl.end, [], [], {"created": 0, "deleted": 0, "records_judged": 0}
    for s in steps:
        if s.kind == Step.CREATE_TOPIC:
            m["created"] += 1
            status, why, ev = _takes(tl, ms, steps, s, last)
            (unknown if status == "unknown" else found).extend([(why, ev or s.result)] if why else [])
        else:
            m["deleted"] += 1
            status, late = _releases(tl, ms, steps, s, last)
            if status == "unknown":
                unknown.append((f"{s.topic} deleted at {s.end - tl.start:.1f}s: the history ends before the bound",
                                s.result))
            found += late
    m["records_judged"], stray = _stray_records(tl, ms)
    found += stray
    if found:
        return verdict(NAME, "invalid", f"{len(found)} breach(es): {found[0][0]}",
                       [witness(ev, why) for why, ev in found], measurements=m, found=len(found))
    if unknown:
        return verdict(NAME, "unknown", unknown[0][0], [witness(ev, why) for why, ev in unknown], measurements=m)
    return verdict(NAME, "valid", f"{m['created']} topic(s) created and taken in time, {m['deleted']} deleted and "
                                  f"released in time, {m['records_judged']} records of members that changed their "
                                  f"subscription all of topics it took", measurements=m)
