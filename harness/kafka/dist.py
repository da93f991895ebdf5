"""Apache Kafka from Maven Central: resolve a version to a classpath, cached and reused.

Kafka publishes no server tarball to Maven Central, but its server (`kafka_2.13`), tools
(`kafka-tools`, for the feature command of an upgrade) and all their dependencies are there, so a
tiny generated pom and `mvn dependency:copy-dependencies` give the same jars the distribution's
`libs/` holds. `slf4j-simple` is added so broker logs land on stderr, the same way for every version.
"""
from __future__ import annotations

import logging

import fcntl
import hashlib
import re
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from harness.base.errors import BadInput, SetupError
from harness.base.tools import cache_dir, require_tool
from harness.base.versions import ALIASES, is_prefix, is_release, version_key
from harness.kafka.maven_libs import local_repository, mvn_command

_log = logging.getLogger(__name__)

GROUP = "org.apache.kafka"
SCALA_ARTIFACT = "kafka_2.13"
ALIAS_RECHECK_S = 24 * 3600  # how long 'latest' (or '3.9', ...) keeps the release it was last resolved to

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>harness.local</groupId><artifactId>kafka-dist</artifactId><version>{version}</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>{version}</version>
      <exclusions>{slf4j_bindings}</exclusions>
    </dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>{version}</version>
      <exclusions><exclusion><groupId>org.apache.kafka</groupId><artifactId>connect-runtime</artifactId></exclusion>{slf4j_bindings}</exclusions>
    </dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
"""
#: the SLF4J 1.x bindings Kafka 3.x ships (reload4j from 3.2, log4j12 before): with slf4j-simple beside them SLF4J
#: takes the first on the sorted classpath, reload4j, which has no appender, and a 3.x broker wrote no log line at
#: all (its broker.log held only SLF4J's "multiple bindings" notice), so no checker could read the coordinator's
#: words on 3.x; left out, slf4j-simple is the one binding on every version (4.x ships none of them)
SLF4J_BINDINGS = "".join(f"<exclusion><groupId>org.slf4j</groupId><artifactId>{a}</artifactId></exclusion>"
                         for a in ("slf4j-reload4j", "slf4j-log4j12"))


@dataclass(frozen=True)
class KafkaDist:
    """A resolved Kafka version: its jars on disk."""

    version: str
    libs: Path

    @property
    def classpath(self) -> str:
        return ":".join(str(p) for p in sorted(self.libs.glob("*.jar")))


def _mvn(args: list[str], *, cwd: Path, log: Path) -> subprocess.CompletedProcess:
    mvn = mvn_command(why="resolve Apache Kafka from Maven Central")
    require_tool("java", why="run the Kafka brokers")
    with open(log, "w") as out:
        return subprocess.run([*mvn, *args], cwd=cwd, stdout=out, stderr=subprocess.STDOUT)


def published_versions(artifact: str = SCALA_ARTIFACT, *, refresh: bool = False) -> list[str]:
    """The release versions Maven Central lists for org.apache.kafka:`artifact` (its metadata, fetched through Maven).

    Maven keeps the list in ~/.m2; `refresh` fetches it again. A release reaches Maven Central one
    artifact at a time, so the lists of kafka_2.13 and kafka-streams can differ for a while.
    """
    work = cache_dir() / "kafka"
    work.mkdir(parents=True, exist_ok=True)
    meta = local_repository() / "org" / "apache" / "kafka" / artifact / "maven-metadata-central.xml"
    if refresh or not meta.exists():
        r = _mvn(["-U", "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:get",
                  f"-Dartifact={GROUP}:{artifact}:RELEASE:pom", "-Dtransitive=false"],
                 cwd=work, log=work / "metadata.log")
        if r.returncode != 0 or not meta.exists():
            raise SetupError(f"could not read the version list of {artifact} from Maven Central "
                             f"(see {work / 'metadata.log'})")
    root = ET.parse(meta).getroot()
    vs = [v.text for v in root.iter("version") if v.text and is_release(v.text)]
    return sorted(set(vs), key=version_key)


def _pom_stamp(version: str) -> str:
    """What a cached classpath was resolved from: a changed pom template means resolving again."""
    return hashlib.sha256(POM.format(version=version, slf4j_bindings=SLF4J_BINDINGS).encode()).hexdigest()[:16]


def _cached(version: str) -> KafkaDist | None:
    d = cache_dir() / "kafka" / version
    done = d / "COMPLETE"
    if done.exists() and done.read_text().strip() == _pom_stamp(version):
        return KafkaDist(version, d / "libs")
    return None


def remembered(version: str) -> str | None:
    """The release `version` names without a lookup: itself when it is one (x.y.z), else the release an alias or a
    prefix was last resolved to on this machine, whose jars are cached; None when it never was."""
    if version not in ALIASES and not is_prefix(version):
        return version
    f = cache_dir() / "kafka" / f"alias-{ALIASES.get(version, version)}"
    known = _cached(f.read_text().strip()) if f.exists() else None
    return known.version if known else None


def resolve(version: str = "latest", *, progress=_log.info) -> KafkaDist:
    """A Kafka version (x.y.z, 'latest' = newest 4.x that resolves, 'latest-3', or a prefix like '3.9') on disk."""
    if version in ALIASES or is_prefix(version):
        prefix = ALIASES.get(version, version)
        remembered = cache_dir() / "kafka" / f"alias-{prefix}"
        known = _cached(remembered.read_text().strip()) if remembered.exists() else None
        if known and time.time() - remembered.stat().st_mtime < ALIAS_RECHECK_S:
            return known
        try:  # a day on, Maven Central's list is read again, so a new release is taken up
            listed = published_versions(refresh=known is not None)
        except SetupError:
            if known:
                progress(f"Maven Central's Kafka versions could not be read again; {version!r} stays {known.version}")
                return known
            raise
        candidates = [v for v in reversed(listed) if v == prefix or v.startswith(prefix + ".")]
        if not candidates:
            raise BadInput(f"no Apache Kafka release matches {version!r} on Maven Central")
        errors = []
        for v in candidates[:4]:  # a release whose jars are not all mirrored yet is skipped
            try:
                dist = resolve(v, progress=progress)
            except BadInput as e:
                errors.append(str(e))
                progress(f"Kafka {v} skipped for {version!r}: {e}")
                continue
            remembered.write_text(v)  # also when unchanged: its time says when the list was last read
            return dist
        raise SetupError(f"no recent Kafka {prefix}.x release resolved completely: {'; '.join(errors)}")
    if not is_release(version):
        raise BadInput(f"bad Kafka version {version!r}: expected x.y.z, x.y, 'latest' or 'latest-3'")
    dist = _cached(version)
    if dist:
        return dist
    d = cache_dir() / "kafka" / version
    d.mkdir(parents=True, exist_ok=True)
    with open(d / ".lock", "w") as lock:  # two runs resolving at once: the second waits, then reuses
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _cached(version) or _resolve_locked(version, d, progress)


def _resolve_locked(version: str, d: Path, progress) -> KafkaDist:
    (d / "COMPLETE").unlink(missing_ok=True)
    shutil.rmtree(d / "libs", ignore_errors=True)
    (d / "pom.xml").write_text(POM.format(version=version, slf4j_bindings=SLF4J_BINDINGS))
    progress(f"resolving Apache Kafka {version} from Maven Central ...")
    r = _mvn(["dependency:copy-dependencies", "-DoutputDirectory=libs", "-DincludeScope=runtime"],
             cwd=d, log=d / "resolve.log")
    if r.returncode != 0:
        text = (d / "resolve.log").read_text(errors="replace")
        if "Could not find artifact" in text or "Could not resolve dependencies" in text:
            if version not in published_versions():
                raise BadInput(f"Kafka version {version} does not exist on Maven Central")
            missing = re.search(r"Could not find artifact (\S+)", text) or re.search(r"(\S+:jar:\S+) was not found", text)
            raise BadInput(f"Kafka {version} cannot be resolved from Maven Central: "
                           f"{missing.group(1) + ' is missing' if missing else 'a dependency is missing'} "
                           f"(see {d / 'resolve.log'})")
        raise SetupError(f"Maven failed to resolve Kafka {version} (see {d / 'resolve.log'})")
    (d / "COMPLETE").write_text(_pom_stamp(version))
    return KafkaDist(version, d / "libs")
