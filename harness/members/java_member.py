"""The second member implementation: harness/members/java/Member.java on the Apache Kafka Java client.

`java_member_command()` builds it once per Kafka version (and per source revision) through the one builder of
the harness's Java programs (`jvm_build`) and returns the command that runs it; pass that as
`RunConfig.member_command` (or `MemberSpec.command`). By default it runs on the brokers' own release (the Kafka
distribution's jars); given a `client_version` it runs on that kafka-clients release and its runtime dependencies
from Maven Central (`--client-version`: any client against any brokers), built and cached apart
(`<cache>/jvm/java-member-clients/<version>/`). Either way the member reads the version it loaded at run time
and records it in its `started` event (`client`). It speaks the same member contract
(docs/member-contract.md) as harness/members/python_member.py and shares no code with it, so a run through it
checks the contract and the checkers, not one implementation's habits.

Start-up time matters (a static member must be back within the session timeout, and members are
started one after another), so after each build a short training run leaves an AppCDS class-data archive
next to the jar: a member then starts in about half the CPU time. Without the archive (training failed, JVM
without CDS) the member runs the same, only slower to start.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

from harness.kafka import dist as kafka_dist
from dataclasses import replace

from harness.kafka.jvm_build import BASE_JVM_OPTS, SLF4J_OPTS, Built, JvmProgram, build
from harness.record.rundir import member_history

_log = logging.getLogger(__name__)

TRAIN_TIMEOUT_S = 120
ARCHIVE = "member.jsa"


def _train(built: Built, progress) -> None:
    """Run the member's training mode under -XX:ArchiveClassesAtExit, leaving ARCHIVE beside the jar (or none)."""
    base = built.base
    jsa, tmp = base / ARCHIVE, base / (ARCHIVE + ".tmp")
    jsa.unlink(missing_ok=True)
    tmp.unlink(missing_ok=True)
    work = base / "train"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env.update({"HARNESS_JAVA_MEMBER_TRAIN": "1", "HARNESS_BOOTSTRAP": "127.0.0.1:1", "HARNESS_GROUP_ID": "train",
                "HARNESS_TOPIC": "train", "HARNESS_MEMBER_ID": "train",
                "HARNESS_HISTORY": str(member_history(work, "train"))})
    progress("training the Java member's class-data archive ...")
    with open(base / "train.log", "w") as out:
        try:
            r = subprocess.run(built.command("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                                             f"-XX:ArchiveClassesAtExit={tmp}"),
                               env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               timeout=TRAIN_TIMEOUT_S)
            ok = r.returncode == 0
        except subprocess.TimeoutExpired:
            ok = False
    if ok and tmp.exists() and tmp.stat().st_size > 0:
        tmp.replace(jsa)
        return
    tmp.unlink(missing_ok=True)
    progress(f"the Java member runs without a class-data archive (see {base / 'train.log'})")


#: a member is small and short-lived: start fast, stay small
PROGRAM = JvmProgram(
    name="java-member", what="the Java member", main="Member", against="Kafka",
    sources=(Path(__file__).resolve().parent / "java" / "Member.java",),
    jvm_opts=("-Xmx256m", *BASE_JVM_OPTS, *SLF4J_OPTS), after_build=_train)


#: the Java member on a kafka-clients release of its own (and that release's dependencies) from Maven Central
CLIENTS_PROGRAM = replace(PROGRAM, name="java-member-clients", against="kafka-clients", artifact="kafka-clients")


def _built(program: JvmProgram, on_maven: JvmProgram, kafka_version: str, client_version: str | None,
           progress) -> Built:
    """`program` built against the brokers' release `kafka_version`, or `on_maven` against kafka-clients
    `client_version` (x.y.z) from Maven Central when one is given."""
    if client_version:
        return build(on_maven, client_version, progress=progress)
    dist = kafka_dist.resolve(kafka_version, progress=progress)
    return build(program, dist.version, classpath=dist.classpath, progress=progress)


def java_member_command(*, kafka_version: str = "latest", client_version: str | None = None,
                        progress=_log.info) -> tuple[str, ...]:
    """The command that runs the Java member on Kafka `kafka_version`'s client, or on kafka-clients
    `client_version` when given, built and cached."""
    built = _built(PROGRAM, CLIENTS_PROGRAM, kafka_version, client_version, progress)
    jsa = built.base / ARCHIVE
    return built.command(*((f"-XX:SharedArchiveFile={jsa}",) if jsa.exists() else ()))


#: the share-group member (KIP-932) on KafkaShareConsumer: same builder, no class-data archive (fewer starts)
SHARE_PROGRAM = JvmProgram(
    name="java-share-member", what="the Java share member", main="ShareMember", against="Kafka",
    sources=(Path(__file__).resolve().parent / "java" / "ShareMember.java",),
    jvm_opts=("-Xmx256m", *BASE_JVM_OPTS, *SLF4J_OPTS))


SHARE_CLIENTS_PROGRAM = replace(SHARE_PROGRAM, name="java-share-member-clients", against="kafka-clients",
                                artifact="kafka-clients")


def java_share_member_command(*, kafka_version: str = "latest", client_version: str | None = None,
                              progress=_log.info) -> tuple[str, ...]:
    """The command that runs the Java share member on Kafka `kafka_version`'s client, or on kafka-clients
    `client_version` when given, built and cached."""
    return _built(SHARE_PROGRAM, SHARE_CLIENTS_PROGRAM, kafka_version, client_version, progress).command()
