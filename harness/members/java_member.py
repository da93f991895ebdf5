"""The second member implementation: harness/members/java/Member.java on the Apache Kafka Java client.

`java_member_command()` compiles it once per Kafka version (and per source revision) into the cache and
returns the command that runs it; pass that as `RunConfig.member_command` (or `MemberSpec.command`).
It speaks the same member contract (docs/member-contract.md) as harness/members/python_member.py and shares no code
with it, so a run through it checks the contract and the checkers, not one implementation's habits.

Start-up time matters (a static member must be back within the session timeout, and members are
started one after another), so the compiled classes go into a jar and a short training run leaves an
AppCDS class-data archive next to it: a member then starts in about half the CPU time. Without the
archive (training failed, JVM without CDS) the member runs the same, only slower to start.
"""
from __future__ import annotations

import logging

import fcntl
import hashlib
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

from harness import kafka_dist
from harness.errors import SetupError
from harness.rundir import member_history
from harness.tools import cache_dir

_log = logging.getLogger(__name__)

SOURCE = Path(__file__).resolve().parent / "java" / "Member.java"
#: Java source compiled into every Java program of the harness (the Java, Streams and Connect members)
SHARED = Path(__file__).resolve().parent / "java_shared" / "KafkaVersion.java"
MAIN_CLASS = "Member"
# a member is small and short-lived: start fast, stay small
JVM_OPTS = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS")
TRAIN_TIMEOUT_S = 120


def _stamp_text(java: str, classpath: str, source: Path = SOURCE) -> str:
    """What the cached build depends on: the source (and the shared one), the JVM and the Kafka jars."""
    h = hashlib.sha256(source.read_bytes() + b"\0" + SHARED.read_bytes())
    real_java = os.path.realpath(java)
    h.update(f"\0{real_java}\0{os.stat(real_java).st_mtime_ns}\0{' '.join(JVM_OPTS)}".encode())
    for jar in classpath.split(":"):  # re-resolved jars invalidate the class-data archive: rebuild it
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


def _jar(classes: Path, jar: Path, main: str = MAIN_CLASS) -> None:
    tmp = jar.with_suffix(".jar.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("META-INF/MANIFEST.MF", f"Manifest-Version: 1.0\r\nMain-Class: {main}\r\n\r\n")
        for f in sorted(classes.rglob("*.class")):
            z.write(f, f.relative_to(classes).as_posix())
    tmp.replace(jar)


def _train(java: str, cp: str, base: Path, progress) -> Path | None:
    """Run the member's training mode under -XX:ArchiveClassesAtExit; the archive, or None."""
    jsa = base / "member.jsa"
    tmp = base / "member.jsa.tmp"
    tmp.unlink(missing_ok=True)
    work = base / "train"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env.update({"HARNESS_JAVA_MEMBER_TRAIN": "1", "HARNESS_BOOTSTRAP": "127.0.0.1:1", "HARNESS_GROUP_ID": "train",
                "HARNESS_TOPIC": "train", "HARNESS_MEMBER_ID": "train", "HARNESS_HISTORY": str(member_history(work, "train"))})
    progress("training the Java member's class-data archive ...")
    with open(base / "train.log", "w") as out:
        try:
            r = subprocess.run([java, *JVM_OPTS, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                                f"-XX:ArchiveClassesAtExit={tmp}", "-cp", cp, MAIN_CLASS],
                               env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               timeout=TRAIN_TIMEOUT_S)
            ok = r.returncode == 0
        except subprocess.TimeoutExpired:
            ok = False
    if ok and tmp.exists() and tmp.stat().st_size > 0:
        tmp.replace(jsa)
        return jsa
    tmp.unlink(missing_ok=True)
    progress(f"the Java member runs without a class-data archive (see {base / 'train.log'})")
    return None


def java_member_command(*, kafka_version: str = "latest", progress=_log.info) -> tuple[str, ...]:
    """The command that runs the Java member against Kafka `kafka_version`'s client, compiled and cached."""
    java = shutil.which("java")
    if not java:
        raise SetupError("'java' was not found on PATH; it is needed to run the Java member")
    javac = shutil.which("javac")
    if not javac:
        raise SetupError("'javac' was not found on PATH; it is needed to compile the Java member (install a JDK)")
    if not SOURCE.exists():
        raise SetupError(f"the Java member's source is missing: {SOURCE}")
    dist = kafka_dist.resolve(kafka_version, progress=progress)
    classpath = dist.classpath
    if not classpath:
        raise SetupError(f"Kafka {dist.version} has no jars in {dist.libs}")
    base = cache_dir() / "java-member" / dist.version
    base.mkdir(parents=True, exist_ok=True)
    classes = base / "classes"
    jar = base / "member.jar"
    jsa = base / "member.jsa"
    stamp = base / "COMPLETE"
    log = base / "javac.log"
    cp = f"{jar}:{classpath}"
    want = _stamp_text(java, classpath)
    with open(base / ".lock", "w") as lock:  # one build at a time across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (stamp.exists() and stamp.read_text().strip() == want and jar.exists()):
            progress(f"compiling the Java member against Kafka {dist.version} ...")
            stamp.unlink(missing_ok=True)
            jsa.unlink(missing_ok=True)
            compile_java(javac, (SOURCE, SHARED), classpath, classes, log, main=MAIN_CLASS, what="the Java member")
            _jar(classes, jar)
            _train(java, cp, base, progress)
            stamp.write_text(want + "\n")
    cds = (f"-XX:SharedArchiveFile={jsa}",) if jsa.exists() else ()
    return (java, *JVM_OPTS, *cds, "-cp", cp, MAIN_CLASS)
