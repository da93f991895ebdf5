"""The config names a Kafka release defines, read from the release's own jars, cached per version.

`harness/kafka/java/ConfigNames.java`, compiled against a release's jars (the ones `harness.kafka.dist` resolves, the
jars its brokers run) once per version and source revision, prints the names of the release's ConfigDef of a
kind: `broker` (Kafka 4's `AbstractKafkaConfig.CONFIG_DEF`; 3.x's `kafka.server.KafkaConfig.configDef()`) or
`group` (`GroupConfig`, Kafka 4.0+). The names are kept as `<cache>/config-names/<version>/<kind>.txt`, so a
later check reads a file and starts no JVM. `check` refuses a broker or group setting key no release of a run
defines (`harness/kafka/config_keys.py`), before anything starts (docs/settings.md).
"""
from __future__ import annotations

import fcntl
import hashlib
import logging
import re
import shutil
import subprocess
from pathlib import Path

from harness.kafka import config_keys
from harness.kafka import dist as kafka_dist
from harness.base.errors import SetupError
from harness.base.versions import GROUP_CONFIGS_SINCE, major_minor
from harness.kafka.jvm_build import BASE_JVM_OPTS, JvmProgram, build
from harness.base.tools import cache_dir

_log = logging.getLogger(__name__)

SOURCE = Path(__file__).resolve().parent / "java" / "ConfigNames.java"
MAIN_CLASS = "ConfigNames"
#: the classes that hold a kind's ConfigDef, tried in order (the first on the class path with one is read)
KINDS = {"broker": ("org.apache.kafka.server.config.AbstractKafkaConfig", "kafka.server.KafkaConfig"),
         "group": ("org.apache.kafka.coordinator.group.GroupConfig", "kafka.coordinator.group.GroupConfig")}
#: ConfigNames' exit code when none of the classes has a ConfigDef (the release defines no such configs)
NONE_FOUND = 3
PROGRAM = JvmProgram(name="config-names", what="the config-names reader", main=MAIN_CLASS, against="Kafka",
                     sources=(SOURCE,), jvm_opts=("-Xmx128m", *BASE_JVM_OPTS, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"))
RUN_TIMEOUT_S = 120
NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")


def _key(kind: str) -> str:
    """What a kept names file was read with: the program's source and the kind's classes."""
    return hashlib.sha256(SOURCE.read_bytes() + "\0".join(KINDS[kind]).encode()).hexdigest()[:16]


def _kept(path: Path, key: str):
    """The names kept in `path` (None: the release has none), or False when none are kept for `key`."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return False
    if not lines or lines[0] != f"# {key}":
        return False
    return None if lines[1:] == ["# none"] else frozenset(lines[1:])


def names(kind: str, version: str, *, progress=_log.info) -> frozenset[str] | None:
    """The config names Kafka `version` (x.y.z) defines for `kind` (broker, group), read once from its jars;
    None when its jars define none (no group configs before 4.0) or cannot be read here (no JDK, no jars)."""
    base = cache_dir() / "config-names" / version
    out, key = base / f"{kind}.txt", _key(kind)
    kept = _kept(out, key)
    if kept is not False:
        return kept
    if not (shutil.which("java") and shutil.which("javac")):
        progress(f"no JDK (java and javac) here: Kafka {version}'s {kind} config names are not checked up front")
        return None
    classpath = kafka_dist.resolve(version, progress=progress).classpath
    if not classpath:
        return None
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "w") as lock:  # one build and read at a time across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        kept = _kept(out, key)
        if kept is not False:
            return kept
        progress(f"reading Kafka {version}'s {kind} config names from its jars ...")
        built = build(PROGRAM, version, classpath=classpath, progress=progress)
        log = base / f"{kind}.log"
        with open(log, "w") as err:
            try:
                r = subprocess.run(built.command(args=KINDS[kind]),
                                   stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True,
                                   timeout=RUN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise SetupError(f"reading Kafka {version}'s {kind} config names timed out (see {log})") from None
        found = sorted(n for n in r.stdout.split() if NAME_RE.match(n))
        if r.returncode not in (0, NONE_FOUND) or (r.returncode == 0 and not found):
            raise SetupError(f"reading Kafka {version}'s {kind} config names failed (see {log})")
        tmp = out.with_suffix(".tmp")
        tmp.write_text("".join(f"{line}\n" for line in [f"# {key}", *(found or ["# none"])]))
        tmp.replace(out)
        return frozenset(found) if found else None


def _check(kind: str, what: str, keys, versions, *, progress, prefixes=(), extra=()) -> None:
    """BadInput when one of `keys` is defined by none of `versions` (not checked when one cannot be read)."""
    keys = list(dict.fromkeys(keys))
    if not keys or not versions:
        return
    read = {v: names(kind, v, progress=progress) for v in dict.fromkeys(versions)}
    if any(n is None for n in read.values()):
        return  # a release whose names cannot be read here: its brokers judge at start
    config_keys.check(what, keys, frozenset().union(*read.values()), by=f"Kafka {' or '.join(read)}",
                      prefixes=prefixes, extra=extra)


def check(broker_keys, group_keys, versions, *, progress=_log.info) -> None:
    """BadInput when a broker setting key is defined by none of the Kafka `versions` (x.y.z) a cluster runs, or a
    group setting key by none of those of them that have group configs (4.0 on)."""
    _check("broker", "broker setting", broker_keys, versions, progress=progress,
           prefixes=config_keys.BROKER_PREFIXES, extra=config_keys.BROKER_EXTRA)
    _check("group", "group setting", group_keys,
           [v for v in versions if major_minor(v) >= GROUP_CONFIGS_SINCE], progress=progress)
