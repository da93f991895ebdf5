"""The Kafka Streams member: harness/members/streams/StreamsMember.java on the real kafka-streams library.

`streams_member_command(version)` resolves kafka-streams `version` (and its dependencies: kafka-clients,
RocksDB, Jackson) from Maven Central into the cache with a generated pom, the same way
`harness/kafka_dist.py` resolves the brokers, compiles the member against it once per version and
source revision, and returns the command that runs it through the member contract.
"""
from __future__ import annotations

import logging

import fcntl
import re
import shutil
from pathlib import Path

from harness import kafka_dist
from harness.errors import BadInput, SetupError
from harness.members.maven_libs import resolve_libs
from harness.members.java_member import SHARED, _jar, _stamp_text, compile_java
from harness.tools import cache_dir, require_tool

_log = logging.getLogger(__name__)

SOURCE = Path(__file__).resolve().parent / "streams" / "StreamsMember.java"
MAIN_CLASS = "StreamsMember"
ARTIFACT = "kafka-streams"
JVM_OPTS = ("-Xmx384m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
            "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients=warn")

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>harness.local</groupId><artifactId>streams-member</artifactId><version>{version}</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-streams</artifactId><version>{version}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
"""


def _resolve_libs(version: str, base: Path, progress) -> Path:
    """kafka-streams `version` and its runtime dependencies in base/libs (resolved once)."""
    return resolve_libs(POM.format(version=version), base, artifact=ARTIFACT, version=version, progress=progress)


def newest_up_to(version: str, published: list[str]) -> str | None:
    """The newest of `published` that is not newer than `version` (x.y.z), or None."""
    fits = [v for v in published if kafka_dist.version_key(v) <= kafka_dist.version_key(version)]
    return max(fits, key=kafka_dist.version_key) if fits else None


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
    """The command that runs the Streams member on kafka-streams `version` (x.y.z), compiled and cached."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        version = version_for_brokers(kafka_dist.resolve(version, progress=progress).version, progress=progress)
    elif version not in _published(version):
        raise BadInput(f"kafka-streams version {version} does not exist on Maven Central")
    java = require_tool("java", why="run the Kafka Streams member")
    javac = shutil.which("javac")
    if not javac:
        raise SetupError("'javac' was not found on PATH; it is needed to compile the Streams member (install a JDK)")
    base = cache_dir() / "streams-member" / version
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "w") as lock:  # one build at a time across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        libs = _resolve_libs(version, base, progress)
        classpath = ":".join(str(p) for p in sorted(libs.glob("*.jar")))
        jar = base / "member.jar"
        stamp = base / "COMPLETE"
        want = _stamp_text(java, classpath, SOURCE)
        if not (stamp.exists() and stamp.read_text().strip() == want and jar.exists()):
            progress(f"compiling the Streams member against kafka-streams {version} ...")
            stamp.unlink(missing_ok=True)
            classes = base / "classes"
            compile_java(javac, (SOURCE, SHARED), classpath, classes, base / "javac.log", main=MAIN_CLASS,
                         what="the Streams member")
            _jar(classes, jar, MAIN_CLASS)
            stamp.write_text(want + "\n")
    return (java, *JVM_OPTS, "-cp", f"{jar}:{classpath}", MAIN_CLASS)
