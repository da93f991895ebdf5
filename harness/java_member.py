"""The second member implementation: fixtures/members/java/Member.java on the Apache Kafka Java client.

`java_member_command()` compiles it once per Kafka version (and per source revision) into the cache and
returns the command that runs it; pass that as `RunConfig.member_command` (or `MemberSpec.command`).
It speaks the same member contract (docs/member-contract.md) as harness/member.py and shares no code
with it, so a run through it checks the contract and the checkers, not one implementation's habits.
"""
from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from pathlib import Path

from harness import kafka_dist
from harness.errors import SetupError
from harness.tools import cache_dir

SOURCE = Path(__file__).resolve().parent.parent / "fixtures" / "members" / "java" / "Member.java"
MAIN_CLASS = "Member"
# a member is small and short-lived: start fast, stay small
JVM_OPTS = ("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS")


def _source_hash(source: Path) -> str:
    return hashlib.sha256(source.read_bytes()).hexdigest()[:16]


def java_member_command(*, kafka_version: str = "latest", progress=print) -> tuple[str, ...]:
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
    stamp = base / "COMPILED"
    log = base / "javac.log"
    want = _source_hash(SOURCE)
    with open(base / ".lock", "w") as lock:  # one compile at a time across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (stamp.exists() and stamp.read_text().strip() == want and (classes / f"{MAIN_CLASS}.class").exists()):
            progress(f"compiling the Java member against Kafka {dist.version} ...")
            stamp.unlink(missing_ok=True)
            shutil.rmtree(classes, ignore_errors=True)
            classes.mkdir(parents=True)
            with open(log, "w") as out:
                r = subprocess.run([javac, "--release", "17", "-Xlint:-options", "-cp", classpath,
                                    "-d", str(classes), str(SOURCE)],
                                   stdout=out, stderr=subprocess.STDOUT)
            if r.returncode != 0 or not (classes / f"{MAIN_CLASS}.class").exists():
                raise SetupError(f"compiling the Java member failed (see {log})")
            stamp.write_text(want + "\n")
    return (java, *JVM_OPTS, "-cp", f"{classes}:{classpath}", MAIN_CLASS)
