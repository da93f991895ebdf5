"""Where a share group's settings go on each release: group configs where the release has them, else the brokers'
own `group.share.*` config at start (Kafka 4.2 has no group config `share.delivery.count.limit`); what a share run
on a release without share groups is told."""
import pytest

from harness.base.errors import BadInput
from harness.cluster.base import BrokerSettings
from harness.plan.config import RunConfig, plan
from harness.plan.kinds.share import as_group_configs, at_brokers, share_group_configs


def cfg(scenario="share-member-kill", **given):
    return RunConfig.for_scenario(scenario, seed=1, **given)


def test_kafka_4_2_takes_the_delivery_limit_and_record_locks_at_the_brokers_and_4_3_as_group_configs():
    s = share_group_configs(cfg())
    assert at_brokers(s, "4.2.2") == {"group.share.delivery.count.limit": "4",
                                      "group.share.partition.max.record.locks": "100"}
    assert "share.delivery.count.limit" not in as_group_configs(s, "4.2.2")
    assert as_group_configs(s, "4.2.2")["share.record.lock.duration.ms"] == "5000"
    assert at_brokers(s, "4.3.1") == {} and as_group_configs(s, "4.3.1") == s


def test_the_plan_puts_them_in_the_brokers_config_with_the_runs_group_set_value():
    p = plan(cfg(group_settings=(("share.delivery.count.limit", "3"),)), version="4.2.2")
    assert p.broker_settings["group.share.delivery.count.limit"] == "3"
    assert p.settings["share.delivery.count.limit"] == "3"  # what the observer and members are told
    assert plan(cfg(), version="4.4.0").broker_settings == {}
    props = BrokerSettings.for_brokers(3, p.broker_settings).properties()
    assert props["group.share.delivery.count.limit"] == "3"


class Shared:
    backend = "local"

    def __init__(self, props):
        self.settings = BrokerSettings.for_brokers(3, props)
        self.version = "4.2.2"

    def racks_in_use(self):
        return ["r0", "r1", "r2"]

    def broker_ids(self):
        return [1, 2, 3]


def test_a_shared_cluster_must_have_been_started_with_them_and_a_contradicting_broker_set_is_refused():
    needed = {"group.share.delivery.count.limit": "4", "group.share.partition.max.record.locks": "100"}
    assert plan(cfg(), version="4.2.2", shared=Shared(needed)).broker_settings == needed
    with pytest.raises(BadInput) as e:
        plan(cfg(), version="4.2.2", shared=Shared({}))
    assert "group.share.delivery.count.limit=4" in str(e.value) and "shared cluster" in str(e.value)
    with pytest.raises(BadInput) as e:
        plan(cfg(broker_settings=(("group.share.delivery.count.limit", "6"),)), version="4.2.2")
    assert "contradicts" in str(e.value) and "\n" not in str(e.value)


def test_kafka_4_1_is_refused_up_front_with_the_reason():
    with pytest.raises(BadInput) as e:
        plan(cfg(), version="4.1.2")
    msg = str(e.value)
    assert "needs Kafka 4.2 or newer" in msg and "preview in 4.1" in msg and "4.1.2" in msg and "\n" not in msg


def test_the_reset_policy_is_earliest_unless_the_run_or_its_file_says_latest():
    assert plan(cfg(), version="4.3.1").settings["share.auto.offset.reset"] == "earliest"
    p = plan(cfg("share-partitions-added-latest"), version="4.3.1")
    assert p.settings["share.auto.offset.reset"] == "latest"  # the file's [group] settings
    assert as_group_configs(p.settings, "4.2.2")["share.auto.offset.reset"] == "latest"  # a group config on 4.2 too
    given = cfg(group_settings=(("share.auto.offset.reset", "latest"),))
    assert plan(given, version="4.4.0").settings["share.auto.offset.reset"] == "latest"


@pytest.mark.parametrize("value", ["by_duration:PT1M", "none", "newest"])
def test_a_reset_policy_the_checkers_cannot_judge_is_refused_in_one_line(value):
    with pytest.raises(BadInput) as e:
        plan(cfg(group_settings=(("share.auto.offset.reset", value),)), version="4.4.0")
    assert "share.auto.offset.reset" in str(e.value) and "earliest or latest" in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("scenario,runs", [("member-kill", "a consumer group"),
                                           ("streams-scale-out", "Kafka Streams instances"),
                                           ("connect-worker-kill", "Kafka Connect workers")])
def test_a_share_groups_setting_on_another_kind_of_group_is_refused_in_one_line(scenario, runs):
    with pytest.raises(BadInput) as e:
        cfg(scenario, group_settings=(("share.auto.offset.reset", "latest"),)).validate()
    assert str(e.value) == (f"group setting share.auto.offset.reset=latest is a share group's (KIP-932); scenario "
                            f"{scenario} runs {runs}")
