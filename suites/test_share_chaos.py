"""Share-group scenarios (KIP-932), judged by the share invariants (records held exclusively, acted on only
while held, redelivered by the rules, none lost; partitions served within their record-lock limit).

Verify: every share invariant holds through each share-* scenario of harness/plan/scenarios.py.
Setup: the shared 3-broker cluster (Kafka 4.2 or newer: older releases have no production share groups);
per test a topic, a share group whose configs (record lock 5 s, delivery count limit 4, session timeout) are
set before the first member joins, and share members: Python on confluent-kafka's ShareConsumer,
Java on KafkaShareConsumer (the smoke scenario runs with both; with the Java member it is marked nightly).
Then: the scenario's seeded schedule; the run directory lands under --harness-runs-root.
"""
import pytest

from harness.kafka.dist import version_key
from harness.suite.plugin import assert_run_passes
from harness.drive.nightly import kafka_since
from harness.plan.scenarios import SCENARIOS


def _cases():
    for s in SCENARIOS.values():
        if s.kind != "share":
            continue
        for member in ("python", "java"):  # the two share clients judged side by side on the smoke scenario
            if s.smoke or member == "python":
                # the smoke suite runs the Python one (about 90 s); the Java one (about 55 s) is nightly, to keep
                # the share group's addition to the smoke suite near a minute and a half
                mark = pytest.mark.smoke if s.smoke and member == "python" else pytest.mark.nightly
                yield pytest.param(s.name, member, marks=[mark], id=f"{s.name}-{member}")


@pytest.mark.parametrize("scenario,member", list(_cases()))
def test_share_scenario(scenario, member, run_scenario, kafka_cluster):
    if tuple(version_key(kafka_cluster.version)[:2]) < (4, 2):
        pytest.skip(f"share groups need Kafka 4.2 or newer; the cluster runs {kafka_cluster.version}")
    since = kafka_since(scenario)  # the dead-letter topic: 4.4
    if tuple(version_key(kafka_cluster.version)[:2]) < since:
        pytest.skip(f"{scenario} needs Kafka {since[0]}.{since[1]} or newer; the cluster runs {kafka_cluster.version}")
    start = SCENARIOS[scenario].initial_kafka  # share-rolling-upgrade starts its own cluster there, rolls to this one
    if start and version_key(kafka_cluster.version) <= version_key(start):
        pytest.skip(f"{scenario} rolls the brokers from {start} onto the session's release; it runs {kafka_cluster.version}")
    assert_run_passes(run_scenario(scenario, protocol="share", member=member))
