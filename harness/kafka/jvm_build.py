"""The one builder of the harness's Java programs: the Java member, the Kafka Streams member, the Kafka Connect
worker and the config-names reader each say what differs (a `JvmProgram`: sources, main class, JVM options,
where the libraries come from, resources, a step after the build) and `build` does the rest the same way for
every one of them:

- the libraries: a generated pom's runtime dependencies from Maven Central (`maven_libs`), or a class path the
  caller gives (the Kafka distribution's jars, which `harness.kafka.dist` resolves);
- the sources: the program's own, the shared ones of `java_shared/` (KafkaVersion, HistoryHeader) and two
  generated here: `HistorySchema.java` from harness/record/history.schema.json, so that every Java history header
  names the schema version the Python reader takes (a schema bump cannot leave a Java program behind), and
  `Vocabulary.java` from harness/base/vocabulary.py, so that the Java members speak the harness's words (protocol
  -> group.protocol and assignor, the commit mode, the ways to change a subscription, the self-tests' names, the
  share members' own settings) as the plan, the Python members and the invariants do;
- one lock per program and version (one build at a time across processes), a stamp of everything the build
  depends on, javac for Java 17, one jar (its resources inside), then the program's own step (the Java
  member's class-data archive) before the stamp is written.

The cache is `<cache>/jvm/<program>/<version>/`: `COMPLETE` holds the stamp; a build whose stamp differs in any
input (a source, a generated constant, the JDK, a library jar, the JVM options) is made again.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness.base import vocabulary as vocab
from harness.base.errors import SetupError
from harness.record.schema import load_schema
from harness.kafka.maven_libs import resolve_libs
from harness.base.tools import cache_dir, require_tool

_log = logging.getLogger(__name__)

#: Java sources compiled into every Java program of the harness
SHARED_DIR = Path(__file__).resolve().parent / "java_shared"
GENERATED_CLASS = "HistorySchema"
VOCABULARY_CLASS = "Vocabulary"
#: the JVM options every program starts with (a program adds its own: heap, log levels)
BASE_JVM_OPTS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true")
SLF4J_OPTS = ("-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
              "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS")
POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>harness.local</groupId><artifactId>{name}</artifactId><version>{version}</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>{artifact}</artifactId><version>{version}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
"""


@dataclass(frozen=True)
class JvmProgram:
    """What differs between the harness's Java programs."""

    name: str  # its cache directory, <cache>/jvm/<name>/
    what: str  # in messages: "the Java member"
    main: str  # the main class
    sources: tuple[Path, ...]  # its own .java files (the shared ones are added)
    jvm_opts: tuple[str, ...]
    against: str  # what it is compiled against, in messages: "Kafka", "kafka-streams"
    artifact: str | None = None  # org.apache.kafka:<artifact>:<version> and its dependencies from Maven Central;
    #                              None: the caller gives the class path
    javac_options: tuple[str, ...] = ()
    resources: dict = field(default_factory=dict)  # path in the jar -> text
    after_build: Callable[["Built", Callable], None] | None = None  # run once per build, before the stamp

    def pom(self, version: str) -> str:
        return POM.format(name=self.name, artifact=self.artifact, version=version)


@dataclass(frozen=True)
class Built:
    """A built program: its jar and libraries, and the command that runs it."""

    program: JvmProgram
    java: str
    jar: Path
    classpath: str  # the libraries, without the jar
    base: Path

    def command(self, *jvm_opts: str, args: tuple[str, ...] = ()) -> tuple[str, ...]:
        return (self.java, *self.program.jvm_opts, *jvm_opts, "-cp", f"{self.jar}:{self.classpath}",
                self.program.main, *args)


def history_schema_java() -> str:
    """HistorySchema.java: the history schema's name and version, from harness/record/history.schema.json's header."""
    header = load_schema()["$defs"]["header"]["properties"]
    name, version = header["schema"]["const"], header["version"]["const"]
    if not isinstance(name, str) or not isinstance(version, int):
        raise SetupError("harness/record/history.schema.json: the header's schema and version must be constants")
    return (f"/** Generated from harness/record/history.schema.json by harness/kafka/jvm_build.py at build time. */\n"
            f"final class {GENERATED_CLASS} {{\n"
            f"    private {GENERATED_CLASS}() {{\n    }}\n\n"
            f"    /** The schema every history header names, and its version. */\n"
            f"    static final String NAME = {json.dumps(name)};\n"
            f"    static final int VERSION = {version};\n"
            f"}}\n")


def _java(value) -> str:
    """A Java expression of a string, an int, a list of strings or a map of strings to strings."""
    if isinstance(value, dict):
        return f"Map.of({', '.join(f'{_java(k)}, {_java(v)}' for k, v in value.items())})"
    if isinstance(value, (tuple, list)):
        return f"List.of({', '.join(map(_java, value))})"
    return json.dumps(value)


def vocabulary_java() -> str:
    """Vocabulary.java: the words of harness/base/vocabulary.py that the Java members speak."""
    a = vocab.ASSIGNMENT
    constants = [
        ("The consumer group's protocols, in order", "List<String> CONSUMER_PROTOCOLS", vocab.CONSUMER_PROTOCOLS),
        ("Each consumer-group protocol's group.protocol", "Map<String, String> GROUP_PROTOCOL",
         {p: x.group_protocol for p, x in a.items()}),
        ("Each classic protocol's partition.assignment.strategy, the Java client's class (the others: the brokers "
         "assign)", "Map<String, String> JAVA_ASSIGNOR", {p: x.java_class for p, x in a.items() if x.java_class}),
        ("Each classic protocol's assignor, by the name the group protocol knows it",
         "Map<String, String> ASSIGNOR_NAME", {p: x.assignor for p, x in a.items() if x.java_class}),
        ("The consumer-group protocols whose assignor revokes every partition before it assigns",
         "List<String> EAGER_PROTOCOLS", [p for p, x in a.items() if x.eager]),
        ("The group.protocol under which the client's own assignor assigns", "String CLASSIC", vocab.CLASSIC),
        ("A Kafka Streams instance's protocol when none is given", "String STREAMS_DEFAULT_PROTOCOL",
         vocab.STREAMS_PROTOCOLS[0]),
        ("The share group's protocol", "String SHARE_PROTOCOL", vocab.SHARE_PROTOCOLS[0]),
        ("How a consumer-group member commits (HARNESS_COMMIT_MODE)", "List<String> COMMIT_MODES", vocab.COMMIT_MODES),
        ("The commit mode when HARNESS_COMMIT_MODE is empty or unset", "String DEFAULT_COMMIT_MODE",
         vocab.DEFAULT_COMMIT_MODE),
        ("How a member changes its subscription when told to (the control file's subscribe_by)",
         "List<String> SUBSCRIBE_BY", vocab.SUBSCRIBE_BY),
        ("The way a subscription control takes when the control file names none", "String DEFAULT_SUBSCRIBE_BY",
         vocab.DEFAULT_SUBSCRIBE_BY),
        ("A share member's own settings: the setting -> the acknowledgement it always gives the records of the keys "
         "it names", "Map<String, String> SHARE_POISON", vocab.SHARE_POISON),
        ("A share member's own setting: the records (partition:offset of the first topic) whose delivery kills it",
         "String SHARE_CRASH_RECORDS", vocab.SHARE_CRASH_RECORDS),
        ("The exit code of a share member a poison record killed", "int SHARE_CRASH_EXIT", vocab.SHARE_CRASH_EXIT),
        ("The poll (of those that return records) on which a misbehaving share member breaks the rules",
         "int SHARE_MISBEHAVE_ON_POLL", vocab.SHARE_MISBEHAVE_ON_POLL),
        *((f"--misbehave {name} ({kind})", f"String MISBEHAVE_{name.upper().replace('-', '_')}", name)
          for kind, names in vocab.MISBEHAVIOURS.items() for name in names)]
    body = "".join(f"\n    /** {doc}. */\n    static final {decl} = {_java(value)};\n" for doc, decl, value in constants)
    return (f"import java.util.List;\nimport java.util.Map;\n\n"
            f"/** Generated from harness/base/vocabulary.py by harness/kafka/jvm_build.py at build time. */\n"
            f"final class {VOCABULARY_CLASS} {{\n"
            f"    private {VOCABULARY_CLASS}() {{\n    }}\n{body}}}\n")


def shared_sources(generated_dir: Path) -> tuple[Path, ...]:
    """The shared Java sources and the generated HistorySchema.java and Vocabulary.java (each written into
    generated_dir when it differs)."""
    generated_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for name, text in ((GENERATED_CLASS, history_schema_java()), (VOCABULARY_CLASS, vocabulary_java())):
        gen = generated_dir / f"{name}.java"
        if not gen.exists() or gen.read_text() != text:
            gen.write_text(text)
        out.append(gen)
    return (*sorted(SHARED_DIR.glob("*.java")), *out)


def stamp(program: JvmProgram, java: str, javac: str, sources, classpath: str) -> str:
    """What a build depends on: every source (name and text), the program's options and resources, the JDK,
    and every library jar as it is now (a re-resolved jar invalidates the build and its class-data archive)."""
    h = hashlib.sha256()
    for src in sources:
        h.update(Path(src).name.encode() + b"\0" + Path(src).read_bytes() + b"\0")
    h.update(json.dumps([program.main, program.jvm_opts, program.javac_options, sorted(program.resources.items())])
             .encode())
    for tool in (java, javac):
        real = os.path.realpath(tool)
        h.update(f"\0{real}\0{os.stat(real).st_mtime_ns}".encode())
    for jar in classpath.split(":"):
        try:
            h.update(f"\0{jar}\0{os.stat(jar).st_mtime_ns}".encode())
        except OSError:
            h.update(f"\0{jar}\0missing".encode())
    return h.hexdigest()[:20]


def compile_java(javac: str, sources, classpath: str, classes: Path, log: Path, *, main: str, what: str,
                 options: tuple[str, ...] = ()) -> None:
    """javac `sources` (for Java 17) against `classpath` into a fresh `classes`, its output in `log`; SetupError
    naming `what` when it fails or leaves no `main` class."""
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    with open(log, "w") as out:
        r = subprocess.run([javac, "--release", "17", *options, "-cp", classpath, "-d", str(classes), *map(str, sources)],
                           stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if r.returncode != 0 or not (classes / f"{main}.class").exists():
        raise SetupError(f"compiling {what} failed (see {log})")


def write_jar(classes: Path, jar: Path, main: str, resources: dict | None = None) -> None:
    """The classes and resources in one jar whose manifest names `main`, replaced atomically."""
    tmp = jar.with_suffix(".jar.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("META-INF/MANIFEST.MF", f"Manifest-Version: 1.0\r\nMain-Class: {main}\r\n\r\n")
        for name, text in sorted((resources or {}).items()):
            z.writestr(name, text)
        for f in sorted(classes.rglob("*.class")):
            z.write(f, f.relative_to(classes).as_posix())
    tmp.replace(jar)


def build(program: JvmProgram, version: str, *, classpath: str | None = None, progress=_log.info) -> Built:
    """`program` built against `version` (its Maven artifact's, or the given `classpath`), once per stamp."""
    java = require_tool("java", why=f"run {program.what}")
    javac = require_tool("javac", why=f"compile {program.what} (install a JDK)")
    if (classpath is None) == (program.artifact is None):
        raise ValueError(f"{program.name}: give a class path exactly when the program has no Maven artifact")
    base = cache_dir() / "jvm" / program.name / version
    base.mkdir(parents=True, exist_ok=True)
    jar, done = base / f"{program.name}.jar", base / "COMPLETE"
    with open(base / ".lock", "w") as lock:  # one build at a time across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        if program.artifact:
            libs = resolve_libs(program.pom(version), base, artifact=program.artifact, version=version,
                                progress=progress)
            classpath = ":".join(str(p) for p in sorted(libs.glob("*.jar")))
        if not classpath:
            raise SetupError(f"{program.what}: no libraries to compile against ({program.against} {version})")
        sources = (*program.sources, *shared_sources(base / "generated"))
        built = Built(program, java, jar, classpath, base)
        want = stamp(program, java, javac, sources, classpath)
        if not (done.exists() and done.read_text().strip() == want and jar.exists()):
            progress(f"compiling {program.what} against {program.against} {version} ...")
            done.unlink(missing_ok=True)
            compile_java(javac, sources, classpath, base / "classes", base / "javac.log", main=program.main,
                         what=program.what, options=program.javac_options)
            write_jar(base / "classes", jar, program.main, program.resources)
            if program.after_build:
                program.after_build(built, progress)
            done.write_text(want + "\n")
    return built
