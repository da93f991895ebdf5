"""Verify: group protocol migrations on real brokers, what the brokers said about them in the history, and
the group surviving its coordinator (docs/migration.md).

Setup: the shared cluster for the refused migration and the Streams migration (CI); every other test on a
cluster of its own (their scenarios set broker settings, or other Kafka versions), marked nightly.
Then:
- a confluent-kafka cooperative-sticky group migrated online is refused by the coordinator, and the run's
  verdict names the broker's reason (the expected_refusal witness is the broker's own line);
- upgrade (classic -> consumer) and downgrade (consumer -> classic) pass on two broker versions and two
  client versions, and so does an upgrade with the coordinator restarted after offsets-topic compactions;
- each group.consumer.migration.policy allows or refuses each direction as it promises;
- Kafka Streams moves offline to the streams protocol and back keeping its state, on two broker versions; an
  instance that forgets its state fails state_kept;
- the group survives its coordinator restarted and killed after compactions; a member that forgets its
  offsets fails coordinator_survival.
"""
from __future__ import annotations

import re

import pytest

from harness.suite.plugin import assert_run_passes, failure_message
from harness.record import schema as history_schema
from harness.record.history import History
from harness.run.runner import RunConfig, run_scenario

pytestmark = pytest.mark.integration
FIRST_GA_CLIENT = "2.12.2"  # confluent-kafka: KIP-848 GA from 2.12.0 (the newest 2.12 patch)


def _broker_lines(result) -> list[dict]:
    return [e for e in History.load(result.run_dir / "history") if e["type"] == "broker"]


def test_refused_migration_ends_with_the_brokers_refusal(run_scenario):
    result = run_scenario("protocol-migration-refused", protocol="classic-cooperative")
    assert_run_passes(result)
    v = result.verdicts["expected_refusal"]
    assert v.status == "valid" and "userData from a custom assignor would be lost" in v.message
    assert v.witnesses[0]["type"] == "broker" and v.witnesses[0]["level"] == "WARN"
    assert history_schema.validate_dir(result.run_dir / "history") == []
    said = _broker_lines(result)
    assert any("Stabilized group" in e["message"] for e in said), "the coordinator's state changes are recorded"
    errors = [e for e in History.load(result.run_dir / "history") if e["type"] == "error" and e.get("fatal")]
    assert errors and "group id does not exist" in errors[0]["error"], "the refused member saw GROUP_ID_NOT_FOUND"


def _own(tmp_path, scenario: str, **kw):
    cfg = RunConfig.for_scenario(scenario, runs_root=str(tmp_path), **kw)
    return run_scenario(cfg)


@pytest.mark.nightly
@pytest.mark.parametrize("kafka", ["4.0", "latest"])
@pytest.mark.parametrize("client", [FIRST_GA_CLIENT, None])
@pytest.mark.parametrize("scenario, start_on", [("protocol-migration", "classic-eager"),
                                                ("protocol-downgrade", "consumer"),
                                                ("protocol-migration-coordinator", "classic-eager")])
def test_upgrade_and_downgrade_across_versions(scenario, start_on, kafka, client, tmp_path):
    """Upgrade, downgrade, and an upgrade with the coordinator restarted and killed after offsets-topic
    compactions, on the first brokers and the first client with KIP-848 GA and the newest of each."""
    result = _own(tmp_path, scenario, protocol=start_on, seed=1, kafka_version=kafka, client_version=client)
    assert result.status == "pass", failure_message(result)
    said = _broker_lines(result)
    text = " ".join(e["message"] for e in said)
    if scenario == "protocol-downgrade":
        assert "joins the consumer group using the classic protocol" in text
    else:
        assert "Converted the classic group to a consumer group" in text
    if scenario == "protocol-migration-coordinator":
        v = result.verdicts["coordinator_survival"]
        assert v.status == "valid" and v.measurements["failovers"] == 3
        assert any("Swapping in cleaned segment" in e["message"] for e in said), "the offsets partition was compacted"
        assert sum("Finished loading of metadata" in e["message"] for e in said) >= 3


@pytest.mark.nightly
def test_the_group_survives_its_coordinator_after_compaction(tmp_path):
    result = _own(tmp_path, "coordinator-restart-compacted", protocol="classic-cooperative", seed=1)
    assert result.status == "pass", failure_message(result)
    assert result.verdicts["coordinator_survival"].measurements["failovers"] == 2


@pytest.mark.nightly
def test_a_member_that_forgets_its_offsets_fails_coordinator_survival(tmp_path):
    result = _own(tmp_path, "coordinator-restart-compacted", protocol="classic-eager", seed=2,
                  misbehave="forget-offsets")
    v = result.verdicts["coordinator_survival"]
    assert result.status == "fail" and v.status == "invalid", failure_message(result)
    assert v.measurements["offsets_lost"] >= 1
    assert {w["member"] for w in v.witnesses if w["type"] == "processed"} == {"m1"}  # slot 0 misbehaves


def _said(result) -> str:
    return " ".join(e["message"] for e in _broker_lines(result))


@pytest.mark.nightly  # two minutes; the Streams smoke case and the refused migration above run in ./dev test
def test_streams_moves_to_the_streams_protocol_and_back_keeping_its_state(run_scenario):
    """KIP-1071's offline migration: the application stops, starts on `streams`, stops, starts on `classic`;
    the coordinator converts the empty group each way, and every task starts on the state it had."""
    result = run_scenario("streams-protocol-migration", protocol="classic")
    assert_run_passes(result)
    said = _said(result)
    assert "Converted the empty classic group to a streams group" in said
    assert "Converted the empty streams group to a classic group" in said
    kept = result.verdicts["state_kept"]
    assert kept.status == "valid" and kept.measurements["starts"] >= 18  # 6 tasks, on each protocol in turn
    protocols = [e["protocol"] for e in History.load(result.run_dir / "history") if e["type"] == "started"]
    assert protocols == ["classic"] * 3 + ["streams"] * 3 + ["classic"] * 3


@pytest.mark.nightly  # over three minutes; its passing twin above runs in ./dev test
def test_a_streams_instance_that_forgets_its_state_fails_state_kept(run_scenario):
    result = run_scenario("streams-protocol-migration", protocol="classic", misbehave="forget-state")
    v = result.verdicts["state_kept"]
    assert result.status == "fail" and v.status == "invalid", failure_message(result)
    assert v.witnesses[0]["member"] == "m1" and v.witnesses[0]["store_keys"] < 3000  # slot 0's first instance


#: (direction, group.consumer.migration.policy) -> what the coordinator says (a regex) when the group is migrated
#: online that way under that policy (GroupMetadataManager: validateOnlineUpgrade / validateOnlineDowngrade)
POLICY_OUTCOMES = {
    ("upgrade", "bidirectional"): "Converted the classic group to a consumer group",
    ("upgrade", "upgrade"): "Converted the classic group to a consumer group",
    ("upgrade", "downgrade"): "to consumer group because (the )?online upgrade is disabled",
    ("upgrade", "disabled"): "to consumer group because (the )?online upgrade is disabled",
    ("downgrade", "bidirectional"): "Converted the consumer group to a classic group",
    ("downgrade", "downgrade"): "Converted the consumer group to a classic group",
    ("downgrade", "upgrade"): "to classic group because (the )?online downgrade is disabled",
    # Kafka 4.4.0+ (KAFKA-20640; 4.0 to 4.3.1 let the classic member in)
    ("downgrade", "disabled"): r"Cannot join the consumer group \S+ with the classic protocol because the group "
                               "migration is disabled",
}


@pytest.mark.nightly
@pytest.mark.parametrize("direction, policy", list(POLICY_OUTCOMES))
def test_each_migration_policy_allows_or_refuses_as_it_promises(direction, policy, tmp_path):
    """A refusal the policy promises shows as the run's failure (`expected_refusal`: the scenario expects no
    refusal), the coordinator's line its witness; what the policy allows passes."""
    scenario, start_on = {"upgrade": ("protocol-migration", "classic-eager"),
                          "downgrade": ("protocol-downgrade", "consumer")}[direction]
    result = _own(tmp_path, scenario, protocol=start_on, seed=1,
                  broker_settings=(("group.consumer.migration.policy", policy),))
    want = POLICY_OUTCOMES[direction, policy]
    assert re.search(want, _said(result)), failure_message(result)
    v = result.verdicts["expected_refusal"]
    if want.startswith("Converted"):
        assert result.status == "pass", failure_message(result)
    else:
        assert result.status == "fail" and v.status == "invalid", failure_message(result)
        assert re.search(want, v.witnesses[0]["message"]) and v.witnesses[0]["type"] == "broker"


@pytest.mark.nightly
@pytest.mark.parametrize("kafka", ["4.2", "latest"])
def test_streams_migration_across_versions(kafka, tmp_path):
    """Brokers and kafka-streams of one version (a Streams run takes the brokers' own): the first release
    with the streams protocol production-ready, and the newest."""
    result = _own(tmp_path, "streams-protocol-migration", protocol="classic", seed=1, kafka_version=kafka)
    assert result.status == "pass", failure_message(result)
    said = _said(result)
    assert "Converted the empty classic group to a streams group" in said
    assert "Converted the empty streams group to a classic group" in said
