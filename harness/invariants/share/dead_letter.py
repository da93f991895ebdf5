"""Share groups with a dead-letter topic (KIP-1191, Kafka 4.4): `share_dead_letter`; the terms are those of `view`.

The group's dead-letter topic is its config `errors.deadletterqueue.topic.name` as the run's `group_settings`
event read it back (none there: the checker is `skipped`, the group has no dead-letter topic; `unknown` when the
history cannot tell: no such event, or the group's configs could not be read). After the run the
harness reads the topic back (`share_dlq_record` per record of the run's group, from the brokers' own
`__dlq.errors.*` headers naming the record's origin; then `share_dlq_read`).

It holds when the dead-letter topic has exactly the records the group gave up on:
- every record whose last delivery ended rejected (a reject the broker took), or archived at the delivery count
  limit (`share.delivery.count.limit` from the same event: its last delivery had that count and was released,
  or its lock expired, or its holder left) is on the topic (none missing);
- no record the group accepted is on it, nor one whose history shows no reason to be there (never delivered, or
  its last delivery below the limit and not rejected). A record whose last delivery ended with its holder's exit
  may be on it (a reject in flight when the member was killed leaves no answer): counted
  (`holder_left_before_answer`), not judged.

Unknown when the topic was not read back, or its read did not complete, or the run did not drain (records still
held at the end have not reached their last delivery). A record written twice (the brokers retry their writes) is
counted (`duplicates`), not judged; the header's delivery count and message are measured against the history
(`count_mismatches`, `messages`).
"""
from __future__ import annotations

from collections import Counter

from harness.record.history import History
from harness.invariants.core import Verdict, verdict, witness
from harness.invariants.settings import unread_of
from harness.invariants.share.view import ShareCheckSettings, build, group_setting
from harness.invariants.clock import run_s

NAME = "share_dead_letter"
DLQ_TOPIC = "errors.deadletterqueue.topic.name"


def dlq_setting(history: History) -> tuple[str | None, str, str | None]:
    """(the group's dead-letter topic or None, where that was read, the group id the event names). The source starts
    with "unread: " when the history cannot tell whether the group has one (no event, or its configs unread)."""
    ev = next((e for _, e in reversed(history.control()) if e.get("type") == "group_settings"), None)
    if ev is None:
        return None, "unread: no group_settings event", None
    name = str((ev.get("group") or {}).get(DLQ_TOPIC) or "").strip() or None
    if name is None and "group" in (unread := unread_of(ev)):
        return None, f"unread: the group's configs could not be read at {run_s(history, ev['mono'])} ({unread['group']})", \
            ev.get("group_id")
    return name, f"{DLQ_TOPIC}, the group's config read at {run_s(history, ev['mono'])}", ev.get("group_id")


def _fate(last, limit: float | None) -> str:
    if last.ended_by in ("accept", "reject"):
        return last.ended_by
    if limit is not None and last.count >= limit and last.ended_by in ("release", "expiry", "exit"):
        return "archived"
    return "unfinished"


def check_dead_letter(history: History, s: ShareCheckSettings) -> Verdict:
    topic, source, group = dlq_setting(history)
    if topic is None and source.startswith("unread: "):
        return verdict(NAME, "unknown", f"whether the group has a dead-letter topic is unknown: {source[8:]}")
    if topic is None:
        return verdict(NAME, "skipped", f"the group has no dead-letter topic ({source}: unset)")
    v = build(history, s)
    if isinstance(v, str):
        return verdict(NAME, "unknown", v)
    control = [e for _, e in history.control()]
    reads = [e for e in control if e.get("type") == "share_dlq_read"]
    if not reads:
        return verdict(NAME, "unknown", f"the dead-letter topic {topic} was not read back (no share_dlq_read event)")
    if not reads[-1].get("complete"):
        return verdict(NAME, "unknown", f"the read of the dead-letter topic {topic} did not complete "
                                        f"({reads[-1].get('records')} records)")
    drained = next((e for e in control if e.get("type") == "drained"), None)
    limit = group_setting(history, "delivery_limit")
    if limit.value is None:  # what was archived at the limit cannot be told
        return verdict(NAME, "unknown", f"the delivery count limit is unknown: {limit.source}")
    dlq: dict[tuple, list[dict]] = {}
    for e in control:
        if e.get("type") == "share_dlq_record" and (group is None or e.get("group") == group):
            try:
                r = (e["topic"], int(e["partition"]), int(e["offset"]))
            except (KeyError, TypeError, ValueError):
                return verdict(NAME, "unknown", f"a dead-letter record without its origin in its headers: {e}")
            dlq.setdefault(r, []).append(e)
    fates = {r: _fate(ds[-1], limit.value) for r, ds in v.deliveries.items() if ds}
    ws, missing, wrong = [], 0, 0
    for r, fate in sorted(fates.items()):
        if fate in ("reject", "archived") and r not in dlq:
            missing += 1
            last = v.deliveries[r][-1]
            ws.append(witness(history.events_at([last.seq])[last.seq],
                              f"{r} {'rejected' if fate == 'reject' else 'archived at the limit'} (delivery count "
                              f"{last.count}, {last.member}), not on the dead-letter topic {topic}"))
    unseen = 0
    for r, es in sorted(dlq.items()):
        fate = fates.get(r, "never delivered")
        if fate in ("reject", "archived"):
            continue
        if fate == "unfinished" and v.deliveries[r][-1].ended_by == "exit":
            unseen += 1  # its holder left before the answer: a reject may have been in flight (not judged)
            continue
        wrong += 1
        why = {"accept": "accepted by the group", "never delivered": "never delivered to the group",
               "unfinished": f"its last delivery (count {v.deliveries[r][-1].count if r in v.deliveries else 0}) "
                             f"neither rejected nor at the limit"}[fate]
        ws.append(witness(es[0], f"{r} on the dead-letter topic {topic} but {why}"))
    counts = Counter(fates.values())
    mism = sum(1 for r, es in dlq.items() if r in v.deliveries and fates.get(r) in ("reject", "archived")
               and es[0].get("delivery_count") != v.deliveries[r][-1].count)
    meas = {"dlq_topic": topic, "rejected": counts["reject"], "archived": counts["archived"],
            "in_dlq": len(dlq), "missing": missing, "unexpected": wrong, "holder_left_before_answer": unseen,
            "duplicates": sum(len(es) - 1 for es in dlq.values()), "count_mismatches": mism,
            "messages": dict(Counter(str(es[0].get("message")) for es in dlq.values())),
            "delivery_limit": limit.value}
    said = f"{topic} ({source}); {limit.says('delivery count limit')}"
    if missing or wrong:
        if missing and not wrong and not (drained and drained.get("ok") is not False):
            return verdict(NAME, "unknown", f"{missing} rejected or archived record(s) not on {said}; the run did "
                                            f"not drain", ws, meas)
        return verdict(NAME, "invalid", f"{missing} rejected or archived record(s) missing from, {wrong} that should "
                                        f"not be on the dead-letter topic {said}", ws, meas)
    if not counts["reject"] and not counts["archived"]:
        return verdict(NAME, "unknown", f"no record was rejected or archived: nothing to find on {said}",
                       measurements=meas)
    return verdict(NAME, "valid", f"all {counts['reject']} rejected and {counts['archived']} archived records, and "
                                  f"no other, on the dead-letter topic {said}", measurements=meas)
