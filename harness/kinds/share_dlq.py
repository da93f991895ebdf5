"""A share group's dead-letter topic (KIP-1191, Kafka 4.4): made before the first member joins, read back after
the members stopped.

The brokers write a record onto the group's dead-letter topic (the group config
`errors.deadletterqueue.topic.name`) when a member rejects it or its delivery count limit archives it, only if
the topic allows it (the topic config `errors.deadletterqueue.group.enable=true`; the brokers do not create the
topic unless `errors.deadletterqueue.auto.create.topics.enable`, false by default). Each record they write has
headers naming its origin: `__dlq.errors.group`, `.topic`, `.partition`, `.offset`, `.delivery.count` and
`.message` (UTF-8 text); its value is the original's only with `errors.deadletterqueue.copy.record.enable`.

The read-back writes a `share_dlq_record` per record of the run's group into history/output.jsonl, then
`share_dlq_read`. The brokers write asynchronously: the read ends when the topic's end offsets stayed put for
`settle_s` after the reader reached them.
"""
from __future__ import annotations

import time

from harness.record.history import HistoryWriter
from harness.record.rundir import OUTPUT_HISTORY

#: the topic config that lets share groups write onto a topic as their dead-letter topic
DLQ_ENABLE = "errors.deadletterqueue.group.enable"
#: the brokers' headers on a dead-letter record -> the share_dlq_record field
HEADERS = {"__dlq.errors.group": "group", "__dlq.errors.topic": "topic", "__dlq.errors.partition": "partition",
           "__dlq.errors.offset": "offset", "__dlq.errors.delivery.count": "delivery_count",
           "__dlq.errors.message": "message"}
INTS = ("partition", "offset", "delivery_count")


def create(ctx, topic: str, replication: int) -> None:
    """The dead-letter topic, one partition, open to share groups (kept when it exists: a shared cluster's earlier
    runs made it the same way)."""
    ctx.cluster.create_topic(topic, partitions=1, replication=replication, config={DLQ_ENABLE: "true"})


def record_fields(headers) -> dict:
    """A dead-letter record's headers of HEADERS as share_dlq_record fields (a number that is none is left out:
    the checker then says the record's origin is unknown)."""
    out = {}
    for k, v in headers or ():
        text = v.decode("utf-8", errors="replace") if isinstance(v, (bytes, bytearray)) else str(v)
        if k not in HEADERS:
            continue
        if HEADERS[k] not in INTS:
            out[HEADERS[k]] = text
        elif text.isdigit():
            out[HEADERS[k]] = int(text)
    return out


def read_back(ctx, topic: str, *, settle_s: float = 3.0, timeout_s: float = 60.0) -> tuple[int, bool]:
    """Read the dead-letter topic from its start: a `share_dlq_record` per record the run's group had written,
    then `share_dlq_read` (records of other groups counted, not kept). Returns (records kept, complete)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    ctx.say(f"reading the dead-letter topic {topic} back")
    c = Consumer({"bootstrap.servers": ctx.cluster.bootstrap(), "group.id": f"{ctx.group_id}-dlq-reader",
                  "enable.auto.commit": False, "log_level": 3})
    out = HistoryWriter(ctx.run_dir.history_file(OUTPUT_HISTORY), source="harness-output", member=None)
    kept = others = 0
    complete = False
    try:
        md = c.list_topics(topic, timeout=10).topics.get(topic)
        parts = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(md.partitions if md else ())]
        c.assign(parts)
        deadline, still_since, last_high = time.monotonic() + timeout_s, None, None
        while parts and time.monotonic() < deadline:
            for msg in c.consume(500, timeout=0.5):
                if msg.error():
                    continue
                f = record_fields(msg.headers())
                if f.get("group") != ctx.group_id:
                    others += 1
                    continue
                out.event("share_dlq_record", dlq_topic=topic, dlq_partition=msg.partition(),
                          dlq_offset=msg.offset(), **f)
                kept += 1
            high = {p.partition: c.get_watermark_offsets(p, timeout=10, cached=False)[1] for p in parts}
            pos = {tp.partition: tp.offset for tp in c.position(parts)}
            caught_up = all(h == 0 or pos.get(p, -1) >= h for p, h in high.items())
            if not caught_up or high != last_high:
                still_since, last_high = (time.monotonic() if caught_up else None), high
            elif time.monotonic() - still_since >= settle_s:
                complete = True
                break
        out.event("share_dlq_read", dlq_topic=topic, records=kept, other_groups=others, complete=complete,
                  dlq_partitions=len(parts))
    finally:
        out.close()
        c.close()
    ctx.say(f"dead-letter topic: {kept} records of the group" + ("" if complete else
                                                                   f", incomplete after {timeout_s:.0f}s"))
    return kept, complete
