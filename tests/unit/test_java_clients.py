"""The Java member on a kafka-clients release of its own (`--member java --client-version V`): what the plan refuses
before anything starts, what the lookup on Maven Central's list refuses, and what the kinds build and record."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.base.errors import BadInput
from harness.plan.config import RunConfig, plan, scenario_of
from harness.plan.kinds import java_clients
from harness.run import resolve as resolve_mod

BOUNCE_TO = """name = "java-mix"
protocols = ["classic-cooperative", "consumer"]
[members]
member = "java"
initial_client = "{first}"
[[steps]]
action = "bounce"
slot = 1
client_version = "{to}"
"""


def java(client_version=None, **kw) -> RunConfig:
    return RunConfig.for_scenario("member-kill", seed=1, member="java", client_version=client_version, **kw)


def mixed(tmp_path, first: str, to: str, **kw) -> RunConfig:
    path = tmp_path / "java-mix.toml"
    path.write_text(BOUNCE_TO.format(first=first, to=to))
    return RunConfig.for_scenario(str(path), seed=1, **kw)


@pytest.mark.parametrize("version, proto", [("3.9.1", "classic-cooperative"), ("2.4.1", "classic-eager"),
                                               ("3.7.0", "consumer"), (None, "consumer")])
def test_a_release_the_java_member_can_run_is_planned(version, proto):
    p = plan(java(version, protocol=proto), version="4.4.0")
    assert java_clients.versions(p.cfg, p.scenario, p.schedule) == ([version] if version else [])


@pytest.mark.parametrize("version, proto, needle", [
    ("3.9", "classic-cooperative", "give a release, x.y.z"),
    ("2.3.1", "classic-cooperative", "needs kafka-clients 2.4 or newer .*asked for 2.3.1"),
    ("3.6.2", "consumer", "kafka-clients 3.6.2 cannot speak the consumer group protocol .*3.7 or newer")])
def test_a_release_the_java_member_cannot_run_as_asked_is_refused_in_one_line(version, proto, needle):
    with pytest.raises(BadInput, match=needle) as e:
        plan(java(version, protocol=proto), version="4.4.0")
    assert "\n" not in str(e.value)


def test_a_bounce_onto_another_release_is_checked_against_the_protocol_it_runs(tmp_path):
    p = plan(mixed(tmp_path, "3.9.1", "4.1.0", protocol="consumer"), version="4.4.0")
    assert java_clients.versions(p.cfg, p.scenario, p.schedule) == ["3.9.1", "4.1.0"]
    p = plan(mixed(tmp_path, "3.9.1", "target"), version="4.4.0")  # target: the brokers' own kafka-clients
    assert java_clients.versions(p.cfg, p.scenario, p.schedule) == ["3.9.1"]
    with pytest.raises(BadInput, match="kafka-clients 3.6.2 cannot speak the consumer group protocol"):
        plan(mixed(tmp_path, "3.9.1", "3.6.2", protocol="consumer"), version="4.4.0")


def test_the_python_member_and_a_program_of_its_own_are_not_checked_as_kafka_clients():
    plan(RunConfig.for_scenario("member-kill", seed=1, client_version="2.3.1"), version="4.4.0")
    plan(java("0.1.2", member_command=("my-app",)), version="4.4.0")


def test_a_release_maven_central_does_not_list_is_refused_after_reading_the_list_again(monkeypatch):
    asked = []

    def listed(artifact, *, refresh=False):
        asked.append((artifact, refresh))
        return ["3.9.0", "3.9.1", "4.4.0"]
    monkeypatch.setattr("harness.kafka.dist.published_versions", listed)
    resolve_mod._check_java_clients(plan(java("3.9.1"), version="4.4.0"), fake=False)
    assert asked == [("kafka-clients", False)]  # listed: no second read
    with pytest.raises(BadInput, match=r"^kafka-clients 2\.9\.9 does not exist on Maven Central") as e:
        resolve_mod._check_java_clients(plan(java("2.9.9"), version="4.4.0"), fake=False)
    assert asked[1:] == [("kafka-clients", False), ("kafka-clients", True)] and "\n" not in str(e.value)
    resolve_mod._check_java_clients(plan(java("2.9.9"), version="4.4.0"), fake=True)  # a fake cluster: no Java


def test_the_java_member_kind_records_the_release_it_runs_and_rebuilds_a_bounced_slot(monkeypatch):
    from harness.kinds.consumer import ConsumerGroup
    from harness.members import java_member
    from runctx import context
    built = []
    monkeypatch.setattr(java_member, "java_member_command",
                        lambda *, kafka_version, client_version=None, progress: built.append(client_version)
                        or ("java", f"Member@{client_version or kafka_version}"))
    cfg = java("3.9.1")
    kind = ConsumerGroup(context(SimpleNamespace(cfg=cfg, scenario=scenario_of("member-kill"), racks=("r0",),
                                                 kafka_version="4.4.0", schedule=())))
    meta = kind.prepare()
    assert (meta["client_library"], meta["client_version"]) == ("kafka-clients", "3.9.1")
    spec = kind.member_spec(0)
    assert spec.command == ("java", "Member@3.9.1")
    assert kind.with_version(spec, "4.1.0").command == ("java", "Member@4.1.0")
    assert kind.with_version(spec, "default").command == ("java", "Member@4.4.0")  # "target": the brokers' own
    own = kind.with_version(spec.__class__(protocol="consumer", command=("my-app",)), "4.1.0")
    assert own.command == ("my-app",) and built == ["3.9.1", "4.1.0", None]


def test_the_java_share_member_runs_a_share_consumer_brokers_from_4_1_take(monkeypatch):
    from harness.kinds.share import ShareGroup
    from harness.members import java_member
    from runctx import context
    plan(RunConfig.for_scenario("share-member-kill", seed=1, member="java", client_version="4.1.1"), version="4.4.0")
    with pytest.raises(BadInput, match="the Java share member needs kafka-clients 4.1 or newer .*asked for 4.0.0"):
        plan(RunConfig.for_scenario("share-member-kill", seed=1, member="java", client_version="4.0.0"),
             version="4.4.0")
    monkeypatch.setattr(java_member, "java_share_member_command",
                        lambda *, kafka_version, client_version=None, progress: ("java", f"Share@{client_version}"))
    cfg = RunConfig.for_scenario("share-member-kill", seed=1, member="java", client_version="4.2.0")
    kind = ShareGroup(context(SimpleNamespace(cfg=cfg, scenario=scenario_of("share-member-kill"), racks=("r0",),
                                              kafka_version="4.4.0", schedule=(), settings={},
                                              broker_settings={})))
    meta = kind.prepare()
    assert (meta["client_library"], meta["client_version"], kind.builtin) == ("kafka-clients", "4.2.0",
                                                                              ("java", "Share@4.2.0"))


def test_the_java_member_takes_a_subscription_change_either_way():
    """A change_subscription step in a slot of the Java member is planned (the member takes the `subscription` control,
    docs/member-contract.md), by unsubscribe() then subscribe() as the example asks."""
    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "unsubscribe-subscribe.toml"
    for proto in ("consumer", "classic-cooperative"):
        p = plan(RunConfig.for_scenario(str(example), seed=1, member="java", protocol=proto), version="4.4.0")
        [step] = [a for a in p.schedule if a.kind == "change_subscription"]
        assert step.params == {"slot": 1, "subscription": ["payments"], "subscribe_by": "unsubscribe-subscribe"}
