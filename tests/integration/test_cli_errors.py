"""Verify: bad input and missing tools give one clear line on stderr and exit code 2.

Setup: the `harness` command as a user runs it, in a subprocess.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
HARNESS = [sys.executable, "-m", "harness.cli"]


def run(args, *, env=None, timeout=300):
    return subprocess.run(HARNESS + args, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def one_line_error(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, r.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def test_unknown_scenario(tmp_path):
    one_line_error(run(["run", "no-such-scenario", "--runs-root", str(tmp_path)]), "unknown scenario", "no-such-scenario")
    assert not list(tmp_path.iterdir()), "no run directory for input refused up front"


def test_unknown_protocol():
    one_line_error(run(["run", "member-kill", "--protocol", "nope"]), "invalid choice", "nope")


def test_unknown_kafka_version(tmp_path):
    one_line_error(run(["kafka", "9.9.9"], env={"HARNESS_CACHE": str(tmp_path)}), "9.9.9", "does not exist")


def test_malformed_kafka_version():
    one_line_error(run(["kafka", "four"]), "bad Kafka version")


def test_unknown_client_version(tmp_path):
    r = run(["run", "member-kill", "--client-version", "0.0.1", "--runs-root", str(tmp_path)],
            env={"HARNESS_CACHE": str(tmp_path / "cache")})
    one_line_error(r, "confluent-kafka 0.0.1")
    status = next(tmp_path.glob("*/STATUS")).read_text()
    assert status.startswith("error"), status


def test_consumer_protocol_on_kafka_3(tmp_path):
    r = run(["run", "broker-upgrade", "--protocol", "consumer", "--runs-root", str(tmp_path)])
    one_line_error(r, "does not run with protocol consumer")


def _path_without(tmp_path: Path, *missing: str) -> str:
    """The current PATH with the named tools hidden: a directory that holds one is replaced by a
    directory of links to everything else in it."""
    shadow = tmp_path / "bin"
    shadow.mkdir()
    dirs = []
    for d in os.environ["PATH"].split(os.pathsep):
        if not d or not os.path.isdir(d):
            continue
        if any(os.path.exists(os.path.join(d, tool)) for tool in missing):
            for name in os.listdir(d):
                if name not in missing and not (shadow / name).exists():
                    (shadow / name).symlink_to(os.path.join(d, name))
            if str(shadow) not in dirs:
                dirs.append(str(shadow))
        else:
            dirs.append(d)
    return os.pathsep.join(dirs)


@pytest.mark.parametrize("tool", ["mvn", "java"])
def test_missing_java_or_maven(tool, tmp_path):
    r = run(["kafka", "latest"], env={"PATH": _path_without(tmp_path, tool), "HARNESS_CACHE": str(tmp_path / "c")})
    one_line_error(r, f"'{tool}' was not found")


def test_missing_go(tmp_path):
    """With Kafka cached but no Toxiproxy built yet, a run needs go: one line, exit 2, run marked error."""
    env = {"PATH": _path_without(tmp_path, "go"), "HARNESS_CACHE": str(tmp_path / "c")}
    r = run(["run", "member-kill", "--kafka-version", "latest", "--runs-root", str(tmp_path / "runs"), "--quiet"],
            env=env)
    one_line_error(r, "'go' was not found")
    assert next((tmp_path / "runs").glob("*/STATUS")).read_text().startswith("error")


# -- Kafka Streams settings: refused before anything starts
@pytest.mark.parametrize("args, needle", [
    (["--streams-set", "num.standby.replicas=3"], "cannot be placed"),
    (["--streams-set", "processing.guarantee=exactly_once"], "processing.guarantee"),
    (["--streams-set", "probing.rebalance.interval.ms=1000"], "at least 60000"),
    (["--streams-set", "max.warmup.replicas=0"], "max.warmup.replicas"),
    (["--streams-set", "no.such.setting=1"], "unknown Streams setting"),
    (["--streams-set", "num.standby.replicas"], "KEY=VALUE"),
    (["--misbehave", "claim-extra"], "unknown misbehaviour"),
])
def test_bad_streams_settings(args, needle, tmp_path):
    one_line_error(run(["run", "streams-scale-out", *args, "--runs-root", str(tmp_path)]), needle)
    assert not list(tmp_path.iterdir()), "no run directory for input refused up front"


def test_streams_protocol_needs_a_newer_broker(tmp_path):
    r = run(["run", "streams-scale-out", "--protocol", "streams", "--kafka-version", "latest-3",
             "--runs-root", str(tmp_path)])
    one_line_error(r, "the streams protocol, which needs Kafka 4.1 or newer", "3.9")
    assert not list(tmp_path.iterdir()), "refused before any run directory or broker"


def test_consumer_protocol_needs_kafka_4_before_any_broker_starts(tmp_path):
    r = run(["run", "member-kill", "--protocol", "consumer", "--kafka-version", "latest-3",
             "--runs-root", str(tmp_path)], timeout=120)
    one_line_error(r, "the consumer protocol, which needs Kafka 4.0 or newer", "3.9")
    assert not list(tmp_path.iterdir()), "refused before any run directory or broker"


# -- paths that are not what a command reads
def test_check_on_a_directory_that_is_not_a_run(tmp_path):
    one_line_error(run(["check", str(tmp_path)]), "is not a run directory")


def test_check_on_a_missing_path(tmp_path):
    one_line_error(run(["check", str(tmp_path / "nope")]), "is not a run directory")


def test_replay_of_a_directory_that_is_not_a_run(tmp_path):
    one_line_error(run(["replay", str(tmp_path)]), "is not a run directory")


def test_aggregate_of_a_missing_directory(tmp_path):
    one_line_error(run(["aggregate", str(tmp_path / "nonexistent"), "--out", str(tmp_path / "out")]),
                   "no such directory", "nonexistent")
    assert not (tmp_path / "out").exists()


def test_streams_protocol_without_static_membership():
    one_line_error(run(["run", "streams-static-bounce", "--protocol", "streams"]), "does not run with protocol streams")
