"""The member contract is a contract: a second, separately written member passes the same scenarios.

harness/members/java/Member.java (Apache Kafka Java client) runs through `RunConfig.member_command`
instead of harness/members/python_member.py (confluent-kafka). The runs must pass every invariant, and the histories
must show that the Java member is what ran.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.suite.plugin import assert_run_passes
from harness.record.history import read_file
from harness.record.schema import validate_dir
from harness.members.java_member import java_member_command

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def java_member(pytestconfig) -> tuple[str, ...]:
    """The Java member's command, compiled against the same Kafka version as the shared cluster."""
    return java_member_command(kafka_version=pytestconfig.getoption("harness_kafka_version"))


def _started_events(run_dir: Path) -> dict[str, dict]:
    started = {}
    for path in sorted((run_dir / "history").glob("member-*.jsonl")):
        header, events = read_file(path)
        evs = [e for e in events if e.get("type") == "started"]
        assert len(evs) == 1, f"{path.name}: expected one started event, found {len(evs)}"
        started[header["member"]] = evs[0]
    return started


def _assert_java_members_ran(result, *, protocol: str, at_least: int) -> None:
    started = _started_events(result.run_dir)
    assert len(started) >= at_least, f"expected at least {at_least} member histories, found {sorted(started)}"
    for member, ev in started.items():
        assert str(ev.get("client", "")).startswith("apache-kafka-java"), \
            f"member {member} ran {ev.get('client')!r}, not the Java member"
        assert ev["protocol"] == protocol
    # and they did the work: every member history but the ones killed early has processed records
    processed = 0
    for path in (result.run_dir / "history").glob("member-*.jsonl"):
        _, events = read_file(path)
        processed += sum(e["count"] for e in events if e.get("type") == "processed")
    assert processed > 0, "the Java members processed nothing"


def test_java_member_kill_cooperative(run_scenario, java_member):
    """SIGKILL one Java member, recover, replace it: cooperative-sticky over the classic protocol."""
    result = run_scenario("member-kill", protocol="classic-cooperative", member_command=java_member)
    assert_run_passes(result)
    # three members, one killed, one replacement
    _assert_java_members_ran(result, protocol="classic-cooperative", at_least=4)
    assert validate_dir(result.run_dir / "history") == []


def test_java_member_kill_consumer_protocol(run_scenario, java_member):
    """The same scenario with the KIP-848 consumer protocol (server-side assignment)."""
    result = run_scenario("member-kill", protocol="consumer", member_command=java_member)
    assert_run_passes(result)
    _assert_java_members_ran(result, protocol="consumer", at_least=4)
