"""The Kafka Connect worker: connect-runtime from Maven Central, with the harness's own connectors.

`connect_worker_command(version)` builds the sources of `harness/members/connect/` (the worker wrapper, the
HarnessSource and HarnessSink connectors and the history writer they share) through the one builder of the
harness's Java programs (`jvm_build`: `org.apache.kafka:connect-runtime:<version>` with connect-api,
connect-json, kafka-clients, Jetty, ... from Maven Central through a generated pom, compiled once per version
and source revision, the connectors' ServiceLoader manifests in the jar) and returns the command that
runs a distributed worker: `HarnessWorker <worker.properties>`, which starts connect-runtime's own
`org.apache.kafka.connect.cli.ConnectDistributed` (docs/connect.md).
"""
from __future__ import annotations

import logging
from pathlib import Path

from harness.kafka import dist as kafka_dist
from harness.base.errors import BadInput
from harness.base.versions import is_release, version_key
from harness.kafka.jvm_build import BASE_JVM_OPTS, SLF4J_OPTS, JvmProgram, build

_log = logging.getLogger(__name__)

ARTIFACT = "connect-runtime"
PROGRAM = JvmProgram(
    name="connect-worker", what="the Connect worker and connectors", main="HarnessWorker", against=ARTIFACT,
    artifact=ARTIFACT, sources=tuple(sorted((Path(__file__).resolve().parent / "connect").glob("*.java"))),
    jvm_opts=("-Xmx256m", *BASE_JVM_OPTS, *SLF4J_OPTS,
              *(f"-Dorg.slf4j.simpleLogger.log.{p}=warn"
                for p in ("org.apache.kafka.clients", "org.apache.kafka.common", "org.eclipse.jetty", "org.reflections"))),
    javac_options=("-XDignore.symbol.file",),
    # ServiceLoader manifests of the connectors (KIP-898), so that workers from 3.6 on find them with
    # `plugin.discovery=service_load` instead of scanning the whole class path by reflection (15 s on a busy host)
    resources={"META-INF/services/org.apache.kafka.connect.source.SourceConnector": "HarnessSource\n",
               "META-INF/services/org.apache.kafka.connect.sink.SinkConnector": "HarnessSink\n"})


def _published(version: str) -> list[str]:
    published = kafka_dist.published_versions(ARTIFACT)
    return published if version in published else kafka_dist.published_versions(ARTIFACT, refresh=True)


def version_for_brokers(broker_version: str, *, progress=_log.info) -> str:
    """The connect-runtime version a run uses by default: the brokers' own, or the newest release before it
    while that one is still reaching Maven Central or cannot be resolved with its dependencies from the
    repository this machine reaches (connect-runtime 4.4.0 needs a Jetty release some mirrors lack)."""
    fits = sorted((v for v in _published(broker_version)
                   if version_key(v) <= version_key(broker_version)),
                  key=version_key, reverse=True)
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
    if not is_release(version):
        raise BadInput(f"Connect worker version {version!r}: give a release, x.y.z")
    if version not in _published(version):
        raise BadInput(f"connect-runtime {version} does not exist on Maven Central")
    return version


def connect_worker_command(version: str, *, progress=_log.info) -> tuple[str, ...]:
    """The command that runs a Connect worker on connect-runtime `version` (x.y.z), built and cached; the
    worker properties file is its one argument."""
    return build(PROGRAM, version, progress=progress).command()
