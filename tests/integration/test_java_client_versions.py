"""Verify: the Java member runs the kafka-clients release a run asks for, against whatever the brokers run, a scenario
mixes releases per slot, and a release Maven Central lacks is refused before anything starts.

Setup: the shared cluster (the newest Kafka by default, 4.4.0 when this was written); kafka-clients releases and
their dependencies from Maven Central (harness/members/java_member.py, cached per release). The refusals run the
`harness` command in a subprocess, as a user does.
Then: every invariant holds, and each member's `started` event names the kafka-clients release it loaded, which the
member reads at run time from the client's own jar, not from what was asked.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.record.history import History
from harness.record.rundir import RunDir
from harness.suite.plugin import assert_run_passes

pytestmark = pytest.mark.integration
OLDER = "3.9.1"  # a kafka-clients release older than the brokers the suites run (4.x)


def loaded(run_dir) -> list[str]:
    """The kafka-clients release each Java member loaded, in the order they started."""
    started = [e for e in History.load(run_dir / "history") if e["type"] == "started"]
    assert started and all(e["client"].startswith("apache-kafka-java ") for e in started), started
    return [e["client"].split()[1] for e in started]


@pytest.mark.nightly  # 40-110 s (the release's build, then a run); the mix below runs that release in CI
def test_the_java_member_runs_an_older_kafka_clients_against_the_brokers(run_scenario):
    result = run_scenario("member-kill", protocol="classic-cooperative", member="java", client_version=OLDER)
    assert_run_passes(result)
    meta = RunDir(result.run_dir).meta()
    assert (meta["client_library"], meta["client_version"]) == ("kafka-clients", OLDER)
    assert meta["kafka_version"] != OLDER and meta["kafka_version"].startswith("4."), meta["kafka_version"]
    assert set(loaded(result.run_dir)) == {OLDER}  # what ran, read by each member from the client it loaded


MIX = """name = "java-clients-mix"
doc = "Java members on kafka-clients {older}; slot 1 bounced onto the brokers' own release."
[members]
count = 2
member = "java"
initial_client = "{older}"
[[steps]]
action = "bounce"
slot = 1
client_version = "target"
"""


def test_a_scenario_mixes_kafka_clients_releases_per_slot(run_scenario, tmp_path):
    path = tmp_path / "java-clients-mix.toml"
    path.write_text(MIX.format(older=OLDER))
    result = run_scenario(str(path), protocol="classic-cooperative")
    assert_run_passes(result)
    brokers = RunDir(result.run_dir).meta()["kafka_version"]
    assert loaded(result.run_dir) == [OLDER, OLDER, brokers]  # slot 1 came back on the brokers' own release


HARNESS = [sys.executable, "-m", "harness.cli"]


@pytest.mark.parametrize("version, needle", [
    ("0.0.1", "needs kafka-clients 2.4 or newer"),  # no such release, and older than the member takes
    ("3.9.99", "kafka-clients 3.9.99 does not exist on Maven Central")])
def test_a_kafka_clients_release_the_member_cannot_run_is_refused_before_anything_starts(tmp_path, version, needle):
    r = subprocess.run([*HARNESS, "run", "member-kill", "--member", "java", "--client-version", version,
                        "--runs-root", str(tmp_path)], capture_output=True, text=True, timeout=600, env=os.environ)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert (r.returncode, len(lines)) == (2, 1), (r.returncode, r.stdout, r.stderr)
    assert needle in lines[0], lines[0]
    assert not list(tmp_path.iterdir()), "no run directory: refused before anything started"
