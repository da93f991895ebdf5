"""A share group's start offsets after the run, in the brokers' words (KIP-932): the share-partition start offset
(SPSO) of each partition, below which every record is done (accepted, rejected or archived).

The history cannot always say how a delivery ended: a member killed right after it asked for an accept leaves no
answer, and the record may never come back because the broker took the accept. The brokers' start offsets settle
it (harness/invariants/share/records.py, `share_completion`). Read through the Admin API's ListShareGroupOffsets
by harness/kinds/java/ShareOffsets.java (confluent-kafka's Admin has no share-group calls), built against the brokers'
own jars and cached like the harness's other Java programs; one `share_start_offsets` event in harness.jsonl.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from harness.kafka import dist as kafka_dist
from harness.base.errors import SetupError
from harness.kafka.jvm_build import BASE_JVM_OPTS, JvmProgram, build

PROGRAM = JvmProgram(name="share-offsets", what="the share start-offsets reader", main="ShareOffsets",
                     against="Kafka", sources=(Path(__file__).resolve().parent / "java" / "ShareOffsets.java",),
                     jvm_opts=("-Xmx128m", *BASE_JVM_OPTS, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"))
RUN_TIMEOUT_S = 90


def parse(text: str) -> list[list]:
    """ShareOffsets' output as [topic, partition, start offset] rows, sorted."""
    rows = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[1].isdigit() and parts[2].lstrip("-").isdigit():
            rows.append([parts[0], int(parts[1]), int(parts[2])])
    return sorted(rows)


def read(ctx, kafka_version: str) -> dict:
    """The `share_start_offsets` event's fields: `start_offsets` ([topic, partition, start offset] rows) and
    `error` (null, or why they could not be read: `start_offsets` is then null)."""
    if not (shutil.which("java") and shutil.which("javac")):
        return {"start_offsets": None, "error": "no JDK (java and javac) here"}
    try:
        dist = kafka_dist.resolve(kafka_version, progress=ctx.say)
        built = build(PROGRAM, dist.version, classpath=dist.classpath, progress=ctx.say)
        done = subprocess.run(built.command(args=(ctx.cluster.bootstrap(), ctx.group_id)), capture_output=True,
                              text=True, timeout=RUN_TIMEOUT_S)
    except (SetupError, OSError, subprocess.TimeoutExpired) as e:  # the event says why, the checker is then unsure
        return {"start_offsets": None, "error": f"{type(e).__name__}: {e}"[:500]}
    if done.returncode != 0:
        return {"start_offsets": None, "error": (done.stderr.strip().splitlines() or ["exit code %d" % done.returncode])[-1][:500]}
    return {"start_offsets": parse(done.stdout), "error": None}
