"""The Kafka Connect worker: connect-runtime from Maven Central, with the harness's own connectors.

`connect_worker_command(version)` resolves `org.apache.kafka:connect-runtime:<version>` (with connect-api,
connect-json, kafka-clients, Jetty, ... as its pom says) into the cache through a generated pom, the way
`harness/kafka_dist.py` resolves the brokers and `streams_member.py` kafka-streams, compiles the sources of
`harness/members/connect/` against it once per version and source revision (the worker wrapper, the
HarnessSource and HarnessSink connectors and the history writer they share), and returns the command that
runs a distributed worker: `HarnessWorker <worker.properties>`, which starts connect-runtime's own
`org.apache.kafka.connect.cli.ConnectDistributed` (docs/connect.md).
"""
from __future__ import annotations

import logging

import fcntl
import hashlib
import os
import re
import shutil
from pathlib import Path

from harness import kafka_dist
from harness.errors import BadInput, SetupError
from harness.members.maven_libs import resolve_libs
from harness.members.java_member import SHARED, _jar, compile_java
from harness.tools import cache_dir, require_tool

_log = logging.getLogger(__name__)

SOURCES = Path(__file__).resolve().parent / "connect"
MAIN_CLASS = "HarnessWorker"
ARTIFACT = "connect-runtime"
JVM_OPTS = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
            "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients=warn",
            "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.common=warn",
            "-Dorg.slf4j.simpleLogger.log.org.eclipse.jetty=warn",
            "-Dorg.slf4j.simpleLogger.log.org.reflections=warn")

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>harness.local</groupId><artifactId>connect-worker</artifactId><version>{version}</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>connect-runtime</artifactId><version>{version}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
"""


def _resolve_libs(version: str, base: Path, progress) -> Path:
    """connect-runtime `version` and its runtime dependencies in base/libs (resolved once)."""
    return resolve_libs(POM.format(version=version), base, artifact=ARTIFACT, version=version, progress=progress)


def _published(version: str) -> list[str]:
    published = kafka_dist.published_versions(ARTIFACT)
    return published if version in published else kafka_dist.published_versions(ARTIFACT, refresh=True)


def version_for_brokers(broker_version: str, *, progress=_log.info) -> str:
    """The connect-runtime version a run uses by default: the brokers' own, or the newest release before it
    while that one is still reaching Maven Central or cannot be resolved with its dependencies from the
    repository this machine reaches (connect-runtime 4.4.0 needs a Jetty release some mirrors lack)."""
    fits = sorted((v for v in _published(broker_version)
                   if kafka_dist.version_key(v) <= kafka_dist.version_key(broker_version)),
                  key=kafka_dist.version_key, reverse=True)
    if not fits:
        raise BadInput(f"no connect-runtime release up to {broker_version} is on Maven Central")
    for chosen in fits[:3]:
        try:
            connect_worker_command(chosen, progress=progress)  # resolved and built once, cached
        except BadInput as e:
            progress(f"{e}; trying the release before it")
            continue
        if chosen != broker_version:
            progress(f"connect-runtime {broker_version} is not usable here; the workers run {chosen}")
        return chosen
    raise BadInput(f"none of connect-runtime {', '.join(fits[:3])} resolves from Maven Central here")


def check_version(version: str) -> str:
    """`version` (x.y.z) if connect-runtime has that release, else BadInput."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise BadInput(f"Connect worker version {version!r}: give a release, x.y.z")
    if version not in _published(version):
        raise BadInput(f"connect-runtime {version} does not exist on Maven Central")
    return version


def _stamp(java: str, classpath: str) -> str:
    h = hashlib.sha256()
    for src in [*sorted(SOURCES.glob("*.java")), SHARED]:
        h.update(src.name.encode() + b"\0" + src.read_bytes())
    real_java = os.path.realpath(java)
    h.update(f"\0{real_java}\0{os.stat(real_java).st_mtime_ns}\0{classpath}".encode())
    return h.hexdigest()[:20]


def _service_manifests(root: Path) -> Path:
    """ServiceLoader manifests of the connectors (KIP-898), so that workers from 3.6 on find them with
    `plugin.discovery=service_load` instead of scanning the whole class path by reflection (15 s on a busy host)."""
    services = root / "META-INF" / "services"
    services.mkdir(parents=True, exist_ok=True)
    (services / "org.apache.kafka.connect.source.SourceConnector").write_text("HarnessSource\n")
    (services / "org.apache.kafka.connect.sink.SinkConnector").write_text("HarnessSink\n")
    return root


def connect_worker_command(version: str, *, progress=_log.info) -> tuple[str, ...]:
    """The command that runs a Connect worker on connect-runtime `version` (x.y.z), compiled and cached; the
    worker properties file is its one argument."""
    java = require_tool("java", why="run Kafka Connect workers")
    javac = shutil.which("javac")
    if not javac:
        raise SetupError("'javac' was not found on PATH; it is needed to compile the Connect connectors (install a JDK)")
    base = cache_dir() / "connect-worker" / version
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "w") as lock:  # one build at a time across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        libs = _resolve_libs(version, base, progress)
        classpath = ":".join(str(p) for p in sorted(libs.glob("*.jar")))
        jar, stamp = base / "worker.jar", base / "COMPLETE"
        want = _stamp(java, classpath)
        if not (stamp.exists() and stamp.read_text().strip() == want and jar.exists()):
            progress(f"compiling the Connect worker and connectors against connect-runtime {version} ...")
            stamp.unlink(missing_ok=True)
            classes = base / "classes"
            compile_java(javac, (*sorted(SOURCES.glob("*.java")), SHARED), classpath, classes, base / "javac.log",
                         main=MAIN_CLASS, what="the Connect worker", options=("-XDignore.symbol.file",))
            _jar(classes, jar, MAIN_CLASS)
            stamp.write_text(want + "\n")
        services = _service_manifests(base / "services")
    return (java, *JVM_OPTS, "-cp", f"{jar}:{services}:{classpath}", MAIN_CLASS)
