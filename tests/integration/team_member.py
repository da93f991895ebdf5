"""A team's own consumer, written from docs/member-contract.md alone (not a copy of the harness's member).

It stands for an application a team points the harness at with `--member-command`: confluent-kafka, the
HARNESS_* environment, its own history writer (plain json, one os.write per line), its own loop. It
records `client` as "team-app ..." so a test can tell its histories from the harness's members'.
"""
import json
import os
import signal
import sys
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition

E = os.environ
ME = E["HARNESS_MEMBER_ID"]
FD = os.open(E["HARNESS_HISTORY"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)


def emit(kind, **fields):
    """One history line, written in one call (a SIGKILL leaves at most a torn last line)."""
    line = {"type": kind, "mono": time.monotonic(), "wall": time.time(), **fields}
    os.write(FD, (json.dumps(line, separators=(",", ":")) + "\n").encode())


def parts(tps):
    return [[tp.topic, tp.partition] for tp in tps]


emit_header = {"type": "header", "schema": "rebalance-history", "version": 1, "source": "member", "member": ME}
os.write(FD, (json.dumps(emit_header) + "\n").encode())

protocol = E["HARNESS_PROTOCOL"]
settings = {"bootstrap.servers": E["HARNESS_BOOTSTRAP"], "group.id": E["HARNESS_GROUP_ID"],
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "client.id": f"team-{ME}",
            **({"group.protocol": "consumer"} if protocol == "consumer" else
               {"partition.assignment.strategy": "range" if protocol == "classic-eager" else "cooperative-sticky"}),
            **json.loads(E.get("HARNESS_CLIENT_CONFIG") or "{}")}
if E.get("HARNESS_INSTANCE_ID"):
    settings["group.instance.id"] = E["HARNESS_INSTANCE_ID"]
if E.get("HARNESS_RACK"):
    settings["client.rack"] = E["HARNESS_RACK"]

owned = set()
uncommitted = {}  # (topic, partition) -> the next offset whose commit the group refused, owed until committed
consumer = Consumer(settings)
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))


def on_assign(c, tps):
    emit("assigned", member=ME, partitions=parts(tps))
    owned.update((tp.topic, tp.partition) for tp in tps)


def commit(offsets):
    asked = time.monotonic()
    try:
        consumer.commit(offsets=offsets, asynchronous=False)
        ok, why = True, None
    except KafkaException as exc:
        ok, why = False, str(exc)
    emit("committed", member=ME, ok=ok, error=why, requested_mono=asked,
         offsets=[[tp.topic, tp.partition, tp.offset] for tp in offsets])
    for tp in offsets:
        if ok:
            uncommitted.pop((tp.topic, tp.partition), None)
        else:
            uncommitted[(tp.topic, tp.partition)] = tp.offset


def on_revoke(c, tps):
    # what a refused commit left owed is committed before the partitions go (the member contract)
    owed = [TopicPartition(tp.topic, tp.partition, uncommitted[(tp.topic, tp.partition)]) for tp in tps
            if (tp.topic, tp.partition) in uncommitted]
    if owed:
        commit(owed)
    emit("revoked", member=ME, partitions=parts(tps))
    owned.difference_update((tp.topic, tp.partition) for tp in tps)


def on_lost(c, tps):
    emit("lost", member=ME, partitions=parts(tps))
    owned.difference_update((tp.topic, tp.partition) for tp in tps)


subscription = (E.get("HARNESS_TOPICS") or E["HARNESS_TOPIC"]).split(",")
consumer.subscribe(subscription, on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
emit("started", member=ME, pid=os.getpid(), protocol=protocol, group_id=E["HARNESS_GROUP_ID"],
     topic=E["HARNESS_TOPIC"], subscription=subscription, instance_id=E.get("HARNESS_INSTANCE_ID") or None, rack=E.get("HARNESS_RACK") or None,
     client="team-app on confluent-kafka")

while not stop:
    batch = consumer.consume(num_messages=200, timeout=0.25)
    nxt = {}
    for msg in batch:
        if msg.error():
            if msg.error().fatal():
                emit("error", member=ME, fatal=True, error=str(msg.error()))
                sys.exit(3)
            continue
        key = (msg.topic(), msg.partition())
        # one `processed` event per record: simple, and still a batch of consecutive records
        emit("processed", member=ME, topic=key[0], partition=key[1], first_offset=msg.offset(),
             last_offset=msg.offset(), count=1)
        nxt[key] = msg.offset() + 1
    # a held partition whose last commit the group refused (a rebalance was in progress) is committed again after
    # this poll even without records (the member contract's `sync` mode)
    due = {**{k: o for k, o in uncommitted.items() if k in owned}, **{k: o for k, o in nxt.items() if k in owned}}
    todo = [TopicPartition(t, p, o) for (t, p), o in due.items()]
    if todo:
        commit(todo)

consumer.close()
emit("stopped", member=ME, reason="sigterm")
sys.exit(0)
