"""A poison record that kills its holder: `share_poison`; the terms are those of `view`.

A share member started with `crash_records` (its `started` event's `effective`: the client setting
`harness.share.crash.records`) dies whenever poll hands it one of them: it writes a fatal `error` naming the record
and exits without acknowledging it; the harness starts it again (`restart_crashed`). KIP-932: a delivery that ends
without an acknowledgement (the lock runs out, or the holder leaves) makes the record available again, and the next
acquisition raises its delivery count by one; a record whose delivery count has reached `share.delivery.count.limit`
is archived instead, never delivered again.

It holds, for each such record R, when:
- every delivery of R ended with its holder's death (a `member_exit` of a crash), before any acknowledgement of R
  the broker took (a member that takes R and lives on did not do what the run set it to);
- no delivery of R has a count past the limit L, and none follows one with count L (archived, never back);
- the last delivery of R has count L: R reached the limit. The limit is the one the brokers ran with: the group's
  `share.delivery.count.limit`, or on a release without that group config the brokers' own
  `group.share.delivery.count.limit` (`view.group_setting`, from the run's `group_settings` event).

Unknown when L could not be read, when R was never delivered, or when its last delivery is below L (the run ended
before R reached the limit: it cannot say whether R would have been archived). `skipped` when no member was given a
poison record. Measured: each delivery (member, delivery count, when), the deaths, L and where it was read.
"""
from __future__ import annotations

from harness.record.history import History
from harness.invariants.core import Verdict, verdict, witness
from harness.invariants.share.view import ShareCheckSettings, build, group_setting

NAME = "share_poison"


def poison_records(history: History) -> list[tuple]:
    """The records some member was started to die on: (topic, partition, offset), in order."""
    out = set()
    for _, e in history.control():
        if e.get("type") == "started":
            for r in (e.get("effective") or {}).get("crash_records") or ():
                out.add((str(r[0]), int(r[1]), int(r[2])))
    return sorted(out)


def _judge(history: History, r: tuple, ds: list, lives: dict, limit: int) -> tuple[list, str | None]:
    """The witnesses against record r's deliveries, and why it cannot be judged (None: it can)."""
    seq_event = dict(history.control())
    ws = []
    for i, d in enumerate(ds):
        how = lives.get(d.member, (0, 0, "open"))[2]
        e = seq_event.get(d.seq, {})
        if d.ended_by != "exit" or how != "crash":
            ws.append(witness(e, f"{d.member} was delivered {r} (count {d.count}) and did not die on it: its "
                                 f"delivery ended by {d.ended_by}, its life by {how}"))
        if d.count > limit:
            ws.append(witness(e, f"{r} delivered with count {d.count}, past the delivery count limit {limit}"))
        if i and ds[i - 1].count >= limit:
            ws.append(witness(e, f"{r} delivered again (count {d.count}, {d.member}) after a delivery with count "
                                 f"{ds[i - 1].count} at the limit {limit}: it was not archived"))
    if not ws and ds[-1].count < limit:
        return ws, f"{r}'s last delivery had count {ds[-1].count}, below the limit {limit}: the run ended before it " \
                   "reached it"
    return ws, None


def check_poison(history: History, s: ShareCheckSettings) -> Verdict:
    records = poison_records(history)
    if not records:
        return verdict(NAME, "skipped", "no member was given a poison record (crash_records)")
    limit = group_setting(history, "delivery_limit")
    if limit.value is None:
        return verdict(NAME, "unknown", f"the delivery count limit is unknown: {limit.source}")
    v = build(history, s)
    if isinstance(v, str):
        return verdict(NAME, "unknown", v)
    ws, unsure, meas = [], [], {"delivery_limit": limit.value, "records": {}}
    for r in records:
        ds = v.deliveries.get(r, [])
        meas["records"][f"{r[0]}-{r[1]}@{r[2]}"] = [{"member": d.member, "delivery_count": d.count,
                                                   "mono": round(d.acq, 3), "ended_by": d.ended_by} for d in ds]
        if not ds:
            unsure.append(f"{r} was never delivered")
            continue
        w, why = _judge(history, r, ds, v.lives, int(limit.value))
        ws += w
        if why:
            unsure.append(why)
    meas["deaths"] = sum(len(x) for x in meas["records"].values())
    said = limit.says("delivery count limit")
    if ws:
        return verdict(NAME, "invalid", f"{len(ws)} breach(es) of a poison record's deliveries ({said})", ws, meas)
    if unsure:
        return verdict(NAME, "unknown", f"{'; '.join(unsure)} ({said})", measurements=meas)
    counts = "; ".join(f"{k}: counts {', '.join(str(d['delivery_count']) for d in x)}"
                       for k, x in meas["records"].items())
    return verdict(NAME, "valid", f"each poison record killed every member it was delivered to and was archived at "
                                  f"the limit, never delivered again ({counts}; {said})", measurements=meas)
