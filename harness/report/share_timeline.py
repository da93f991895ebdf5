"""A share-group run drawn on the ownership timeline (harness/report/timeline.py): a row per partition, a bar
while a member holds records of it (its holds, as `harness.invariants.share.view` judges them, merged when
less than GAP_S apart), a mark per redelivery (a delivery count of 2 or more) on its partition's row, and one per
record put on the group's dead-letter topic (at its last acknowledgement: the reject, or the release at the
limit; KIP-1191)."""
from __future__ import annotations

from harness.record.history import History
from harness.invariants.share.view import ShareCheckSettings, build

#: an acknowledgement as a tooltip says it was given
DONE = {"accept": "accepted", "release": "released", "reject": "rejected"}
#: holds of a member on a partition less than this far apart are drawn as one bar
GAP_S = 1.0


def share_holds_as_ownership(history: History) -> History:
    """The run's history with each member's holds of a partition as `assigned` .. `revoked` of it (the records'
    own events left out); unchanged when the holds cannot be told (no lock duration recorded)."""
    view = build(history, ShareCheckSettings())
    if isinstance(view, str):
        return history
    bars: dict = {}
    for (topic, p, _), ds in view.deliveries.items():
        for d in ds:
            bars.setdefault((d.member, topic, p), []).append((d.acq, max(d.sure_end, d.acq + 0.05)))
    out = [e for e in history.events if not str(e.get("type", "")).startswith("share_")]
    for (m, topic, p), spans in bars.items():
        spans.sort()
        start, end = spans[0]
        for a, b in spans[1:] + [(float("inf"), float("inf"))]:
            if a - end > GAP_S:
                out += [{"type": "assigned", "mono": start, "wall": 0.0, "member": m, "partitions": [[topic, p]]},
                        {"type": "revoked", "mono": end, "wall": 0.0, "member": m, "partitions": [[topic, p]]}]
                start = a
            end = max(end, b)
    return History.from_events(out)


def redelivery_marks(history: History) -> list[tuple[float, str, int, str]]:
    """(mono, topic, partition, tooltip) of every delivery with a delivery count of 2 or more."""
    return [(e["mono"], e["topic"], int(e["partition"]),
             f"{e.get('member')} got offset {e.get('offset')} again: delivery count {e.get('delivery_count')}")
            for _, e in history.control() if e.get("type") == "share_acquired" and int(e.get("delivery_count", 1)) > 1]


def dead_letter_marks(history: History) -> list[tuple[float, str, int, str]]:
    """(mono, topic, partition, tooltip) of every record on the group's dead-letter topic (a `share_dlq_record`),
    at the last acknowledgement of it the broker took (none recorded: left out)."""
    last = {}
    for _, e in history.control():
        if e.get("type") == "share_acked" and e.get("ok"):
            last[(e["topic"], int(e["partition"]), int(e["offset"]))] = e
    out = []
    for _, d in history.control():
        if d.get("type") != "share_dlq_record" or not isinstance(d.get("partition"), int):
            continue
        a = last.get((d.get("topic"), d["partition"], d.get("offset")))
        if a is not None:
            out.append((a["mono"], a["topic"], int(a["partition"]),
                        f"offset {a['offset']} {DONE.get(a['ack'], a['ack'])} by {a.get('member')}, on the dead-letter topic "
                        f"{d.get('dlq_topic')} (delivery count {d.get('delivery_count')}: {d.get('message')})"))
    return out


def assignment_strips(history: History) -> list[tuple[float, float, str, int, str, float | None]]:
    """(from, to, topic, partition, member, gone) of each stretch the group coordinator had a partition assigned
    to a member (its `share_assignment` answers, harness/kinds/share_watch.py), to the next answer or the end of
    the history; `gone`: when the member exited, if it did (the coordinator keeps a member gone without leaving
    until its session expires)."""
    evs = [e for _, e in history.control() if e.get("type") == "share_assignment"]
    if not evs:
        return []
    end = max(e["mono"] for _, e in history.control())
    gone = {e["member"]: e["mono"] for _, e in history.control() if e.get("type") == "member_exit"}
    open_: dict = {}
    out = []
    for e, nxt in zip(evs, [*evs[1:], None]):
        now = {(m["member"], tp[0], int(tp[1])) for m in e.get("members") or () for tp in m["partitions"]}
        if e.get("members") is None:
            now = set()  # blind: nothing drawn until the next answer
        for key in list(open_):
            if key not in now:
                out.append((open_.pop(key), e["mono"], key[1], key[2], key[0], gone.get(key[0])))
        for key in now:
            open_.setdefault(key, e["mono"])
    out += [(a, end, k[1], k[2], k[0], gone.get(k[0])) for k, a in open_.items()]
    return sorted(out)
