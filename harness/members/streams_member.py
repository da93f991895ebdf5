"""The Kafka Streams member: harness/members/streams/StreamsMember.java on the real kafka-streams library.

`streams_member_command(version)` builds it through the one builder of the harness's Java programs
(`jvm_build`: kafka-streams `version` and its dependencies, kafka-clients, RocksDB, Jackson, from Maven Central
through a generated pom, compiled once per version and source revision) and returns the command that runs it
through the member contract. What is its own here: which kafka-streams release a run takes.
"""
from __future__ import annotations

import logging
from pathlib import Path

from harness.kafka import dist as kafka_dist
from harness.base.errors import BadInput
from harness.base.versions import is_release, version_key
from harness.kafka.jvm_build import BASE_JVM_OPTS, SLF4J_OPTS, JvmProgram, build

_log = logging.getLogger(__name__)

ARTIFACT = "kafka-streams"
PROGRAM = JvmProgram(
    name="streams-member", what="the Streams member", main="StreamsMember", against=ARTIFACT, artifact=ARTIFACT,
    sources=tuple(Path(__file__).resolve().parent / "streams" / f for f in ("StreamsMember.java", "StreamsCommits.java")),
    jvm_opts=("-Xmx384m", *BASE_JVM_OPTS, *SLF4J_OPTS, "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients=warn"))


def newest_up_to(version: str, published: list[str]) -> str | None:
    """The newest of `published` that is not newer than `version` (x.y.z), or None."""
    fits = [v for v in published if version_key(v) <= version_key(version)]
    return max(fits, key=version_key) if fits else None


def _published(version: str) -> list[str]:
    """kafka-streams releases on Maven Central, fetched again when `version` is not among the kept list."""
    published = kafka_dist.published_versions(ARTIFACT)
    return published if version in published else kafka_dist.published_versions(ARTIFACT, refresh=True)


def version_for_brokers(broker_version: str, *, progress=_log.info) -> str:
    """The kafka-streams version a run uses by default: the brokers' own, or while that release is still
    reaching Maven Central (its artifacts arrive one by one, kafka-streams among the last), the newest
    kafka-streams release before it."""
    chosen = newest_up_to(broker_version, _published(broker_version))
    if chosen is None:
        raise BadInput(f"no kafka-streams release up to {broker_version} is on Maven Central")
    if chosen != broker_version:
        progress(f"kafka-streams {broker_version} is not on Maven Central (yet); "
                 f"the Streams instances run kafka-streams {chosen}")
    return chosen


def streams_member_command(version: str, *, progress=_log.info) -> tuple[str, ...]:
    """The command that runs the Streams member on kafka-streams `version` (x.y.z), built and cached."""
    if not is_release(version):
        version = version_for_brokers(kafka_dist.resolve(version, progress=progress).version, progress=progress)
    elif version not in _published(version):
        raise BadInput(f"kafka-streams version {version} does not exist on Maven Central")
    return build(PROGRAM, version, progress=progress).command()
