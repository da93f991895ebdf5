"""Members and settings options: parsing, what RunConfig keeps, and what plan.resolve refuses up front."""
from argparse import Namespace
from pathlib import Path
from dataclasses import replace

import pytest

from harness.plan.options import member_options
from harness.cluster.base import BrokerSettings
from harness.cluster.fake import FakeCluster
from harness.base.errors import BadInput
from harness.plan.config import RunConfig
from harness.run.resolve import resolve
from harness.record.rundir import RunDir


def opts(**kw):
    base = {"member": "python", "member_command": [], "client_set": [], "broker_set": [], "group_set": []}
    return member_options(Namespace(**{**base, **kw}))


def test_member_commands_for_every_slot_and_for_chosen_slots():
    o = opts(member_command=["python3 app.py --x 'a b'", "slot2=java -jar app.jar"])
    assert o["member_command"] == ("python3", "app.py", "--x", "a b")
    assert o["slot_commands"] == ((2, ("java", "-jar", "app.jar")),)
    cfg = RunConfig(scenario="member-kill", seed=1, **o)
    assert cfg.slot_command(2) == ("java", "-jar", "app.jar")
    assert cfg.slot_command(0) == cfg.member_command


def test_settings_are_text_and_the_last_value_wins():
    o = opts(client_set=["fetch.wait.max.ms=100", "fetch.wait.max.ms=200"], broker_set=["a.b=x=y"])
    assert o["client_settings"] == (("fetch.wait.max.ms", "200"),)
    assert o["broker_settings"] == (("a.b", "x=y"),)
    assert "group_settings" not in o  # only what was given


@pytest.mark.parametrize("kw, needle", [
    ({"client_set": ["nokey"]}, "KEY=VALUE"), ({"member_command": ["slot0="]}, "names no program"),
    ({"member_command": ["a", "b"]}, "given twice")])
def test_malformed_options(kw, needle):
    with pytest.raises(BadInput, match=needle):
        opts(**kw)


def shared(version="4.3.1", **extra):
    return FakeCluster(work_dir="/nonexistent", version=version, settings=BrokerSettings.for_brokers(3, extra))


def test_broker_settings_on_a_shared_cluster_only_when_it_has_them():
    cfg = RunConfig(scenario="member-kill", seed=1, broker_settings=(("num.io.threads", "4"),))
    with pytest.raises(BadInput, match="cannot apply to a run on a shared cluster"):
        resolve(cfg, shared=shared())
    assert resolve(cfg, shared=shared(**{"num.io.threads": "4"})).kafka_version == "4.3.1"


def test_group_settings_need_kafka_4():
    cfg = RunConfig(scenario="member-kill", seed=1, group_settings=(("consumer.session.timeout.ms", "9000"),))
    with pytest.raises(BadInput, match="need Kafka 4.0 or newer"):
        resolve(cfg, shared=shared("3.9.2"))
    resolve(cfg, shared=shared())


def test_consumer_protocol_needs_confluent_kafka_2_4():
    cfg = RunConfig(scenario="member-kill", seed=1, protocol="consumer", client_version="2.3.0")
    with pytest.raises(BadInput, match="2.3.0 cannot speak the consumer group protocol"):
        resolve(cfg, shared=shared())
    resolve(replace(cfg, client_version="2.4.0"), shared=shared())
    resolve(replace(cfg, protocol="classic-eager"), shared=shared())  # old clients run the classic protocols
    resolve(replace(cfg, member_command=("my-app",)), shared=shared())  # not the Python member: not ours to check


@pytest.mark.parametrize("kw, needle", [
    ({"client_settings": (("group.id", "x"),)}, "harness's to set"), ({"member": "cobol"}, "unknown member"),
    ({"slot_commands": ((-1, ("a",)),)}, "bad member command")])
def test_validate_refuses(kw, needle):
    with pytest.raises(BadInput, match=needle):
        RunConfig(scenario="member-kill", seed=1, **kw).validate()


def test_streams_scenarios_take_no_client_settings():
    with pytest.raises(BadInput, match="--client-set does not apply"):
        RunConfig(scenario="streams-scale-out", seed=1, protocol="classic",
                  client_settings=(("a", "b"),)).validate()


def test_replay_takes_members_and_settings_from_run_json(tmp_path):
    import json
    from harness.plan.config import config_dict, replay_config
    cfg = RunConfig(scenario="member-kill", seed=1, member="java", slot_commands=((1, ("app", "-v")),),
                    client_settings=(("a", "1"),), broker_settings=(("b", "2"),), group_settings=(("c", "3"),),
                    commit_mode="async")
    (tmp_path / "history").mkdir()
    (tmp_path / "run.json").write_text(json.dumps({"config": config_dict(cfg), "schedule": []}))
    again = replay_config(tmp_path)
    assert replace(again, schedule=None) == cfg
    assert replay_config(tmp_path, commit_mode="never").commit_mode == "never"


def test_commit_mode_option_and_what_validate_refuses():
    assert opts(commit_mode="never") == {"commit_mode": "never"}
    assert "commit_mode" not in opts()  # not given: the RunConfig default (sync) or a scenario file's
    cfg = RunConfig(scenario="member-kill", seed=1, commit_mode="auto")
    assert cfg.user_settings()["commit_mode"] == "auto"
    cfg.validate()
    with pytest.raises(BadInput, match="unknown commit mode 'often'"):
        RunConfig(scenario="member-kill", seed=1, commit_mode="often").validate()
    for mode in ("sync", "async", "auto", "never"):  # the Java member takes each, as the Python member does
        RunConfig(scenario="member-kill", seed=1, commit_mode=mode, member="java").validate()
    RunConfig(scenario="member-kill", seed=1, commit_mode="async", member="java", member_command=("app",)).validate()
    with pytest.raises(BadInput, match="applies to consumer groups"):
        RunConfig(scenario="streams-scale-out", seed=1, protocol="classic", commit_mode="never").validate()


def test_processing_time_from_the_option_a_scenario_and_replay(tmp_path):
    import json
    from harness.plan.config import config_dict, replay_config
    assert opts(processing_ms=5.0) == {"processing_ms": 5.0} and "processing_ms" not in opts()
    assert RunConfig.for_scenario("autoscale", seed=1).processing_ms == 20.0  # [members] processing_ms of the file
    assert RunConfig.for_scenario("autoscale", seed=1, processing_ms=5.0).processing_ms == 5.0
    assert RunConfig.for_scenario("streams-autoscale", seed=1).processing_ms == 20.0  # a Python builder's
    assert RunConfig.for_scenario("member-kill", seed=1).processing_ms == 0.0
    cfg = RunConfig(scenario="member-kill", seed=1, processing_ms=3.0)
    (tmp_path / "history").mkdir()
    (tmp_path / "run.json").write_text(json.dumps({"config": config_dict(cfg), "schedule": []}))
    assert replay_config(tmp_path).processing_ms == 3.0 and replay_config(tmp_path, processing_ms=0).processing_ms == 0


def test_processing_time_is_refused_for_the_java_member_and_out_of_range():
    with pytest.raises(BadInput, match="the Java member does not simulate processing"):
        RunConfig(scenario="member-kill", seed=1, processing_ms=10, member="java").validate()
    RunConfig(scenario="member-kill", seed=1, processing_ms=10, member="java", member_command=("app",)).validate()
    with pytest.raises(BadInput, match="from 0 to 60000"):
        RunConfig(scenario="member-kill", seed=1, processing_ms=-1).validate()


def test_processing_time_reaches_members_as_the_contract_and_streams_settings_say():
    from types import SimpleNamespace
    from harness.kinds.consumer import ConsumerGroup
    from harness.kinds.streams import StreamsApp
    from harness.plan.config import scenario_of
    from runctx import context
    cfg = RunConfig.for_scenario("autoscale", seed=1)
    plan = SimpleNamespace(cfg=cfg, scenario=scenario_of("autoscale"), racks=("r0",))
    kind = ConsumerGroup(context(plan, topics=[SimpleNamespace(real="t-r", partitions=6)]))
    assert kind.member_spec(0).processing_ms == 20.0 and kind.input_topics() == [("t-r", 6)]
    scfg = RunConfig.for_scenario("streams-autoscale", seed=1)
    sc = scenario_of("streams-autoscale")
    from harness.plan.kinds.streams import streams_settings
    splan = SimpleNamespace(cfg=scfg, scenario=sc, racks=("r0",), settings=streams_settings(scfg, sc))
    app = StreamsApp(context(splan, topics=[SimpleNamespace(real="t-r", partitions=6)], run_dir=RunDir(Path("/tmp/x"))))
    assert app._member_config(0)["harness.processing.ms"] == 20.0 and app.input_topics() == [("t-r", 6)]
