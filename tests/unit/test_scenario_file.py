"""Scenario files (docs/scenarios.md): good ones load, a seed gives one schedule, bad ones are one line."""
import json
from dataclasses import asdict
from pathlib import Path

import pytest

from harness.plan import scenario_file
from harness.plan import scenarios
from harness.base.errors import BadInput
from harness.plan.config import RunConfig, replay_config, scenario_of
from harness.plan.scenarios import ScenarioContext

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "docs" / "examples").glob("*.toml"))
CTX = ScenarioContext(session_timeout_s=6.0, brokers=3, racks=3)
GOOD = """
name = "t"
[[steps]]
action = "broker_bounce"
broker = [1, 3]
down_s = [1.0, 3.0]
after = [0.5, 1.5]
repeat = 3
"""


def write(tmp_path, text, name="s.toml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_examples_are_there():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_load_and_validate(path):
    sc = scenario_of(str(path))
    sched = scenarios.schedule(sc, seed=1, ctx=CTX)
    # a Kafka Streams or Kafka Connect example is named after its kind
    assert sched and sc.kind == (path.stem.split("-")[0] if path.stem.startswith(("streams-", "connect-")) else "consumer")
    cfg = RunConfig.for_scenario(str(path), seed=1, protocol=sc.default_protocol)
    assert cfg.validate().name == sc.name == cfg.scenario and cfg.scenario_file == str(path)


def test_same_seed_same_schedule_and_ranges_in_bounds(tmp_path):
    sc = scenario_of(write(tmp_path, GOOD))
    assert scenarios.schedule(sc, seed=7, ctx=CTX) == scenarios.schedule(sc, seed=7, ctx=CTX)
    seen = set()
    for seed in range(50):
        sched = scenarios.schedule(sc, seed=seed, ctx=CTX)
        assert [a.kind for a in sched] == ["sleep", "broker_bounce", "wait_stable"] * 3
        for a in sched:
            if a.kind == "sleep":
                assert 0.5 <= a.params["s"] <= 1.5
            if a.kind == "broker_bounce":
                assert a.params["broker"] in (1, 2, 3) and isinstance(a.params["broker"], int)
                assert 1.0 <= a.params["down_s"] <= 3.0
                seen.add(a.params["broker"])
    assert seen == {1, 2, 3}


def test_settings_become_defaults_under_the_callers(tmp_path):
    path = write(tmp_path, """
name = "d"
protocols = ["consumer"]
[cluster]
brokers = 4
broker_settings = { "num.io.threads" = 4 }
[members]
count = 2
static = true
command = "prog --x"
slot_commands = { "1" = "other y" }
client_settings = { "fetch.wait.max.ms" = 100, "a" = "b" }
commit_mode = "async"
[group]
settings = { "consumer.session.timeout.ms" = 10000 }
[workload]
rate_per_s = 20
partitions = 4
[[steps]]
action = "scale_out"
""")
    cfg = RunConfig.for_scenario(path, seed=1, protocol="consumer", brokers=5, client_settings=(("a", "c"),))
    assert (cfg.scenario, cfg.brokers, cfg.partitions, cfg.rate_per_s) == ("d", 5, 4, 20)
    assert dict(cfg.client_settings) == {"fetch.wait.max.ms": "100", "a": "c"}
    assert cfg.broker_settings == (("num.io.threads", "4"),)
    assert cfg.group_settings == (("consumer.session.timeout.ms", "10000"),)
    assert cfg.member_command == ("prog", "--x") and cfg.slot_commands == ((1, ("other", "y")),)
    assert cfg.commit_mode == "async"
    assert RunConfig(scenario=path, seed=1, protocol="consumer", commit_mode="never").commit_mode == "never"
    sc = cfg.validate()
    assert sc.members == 2 and sc.static and sc.protocols == ("consumer",)


def test_replay_reads_the_recorded_text_not_the_file(tmp_path):
    path = write(tmp_path, GOOD)
    cfg = RunConfig.for_scenario(path, seed=3)
    Path(path).unlink()
    (tmp_path / "run" / "history").mkdir(parents=True)
    sched = [a.to_dict() for a in scenarios.schedule(cfg.validate(), seed=3, ctx=CTX)]
    (tmp_path / "run" / "run.json").write_text(json.dumps({"config": asdict(cfg), "schedule": sched}))
    r = replay_config(tmp_path / "run")
    assert r.scenario == "t" and r.scenario_text == GOOD and r.validate().name == "t"


def test_a_built_in_name_is_not_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "member-kill").write_text("not toml")
    assert scenario_of("member-kill") is scenarios.SCENARIOS["member-kill"]


STEP = '\n[[steps]]\naction = "broker_bounce"\nbroker = 1\n'


@pytest.mark.parametrize("text, needles", [
    ('name = "x"\nnme = "y"' + STEP, ["nme", "unknown field"]),
    ('name = "x"\n[members]\ncout = 3' + STEP, ["members.cout", "unknown field"]),
    ('name = "x"\n[[steps]]\naction = "kil_member"\nslot = 0', ["steps[0] (kil_member)", "action", "unknown action"]),
    ('name = "x"' + STEP + 'dwn_s = 2', ["steps[0] (broker_bounce)", "dwn_s", "unknown parameter"]),
    ('name = "x"' + STEP + '[[steps]]\naction = "pause_member"\nslot = 0',
     ["steps[1] (pause_member)", "duration_s", "missing required"]),
    ('name = "x"' + STEP + 'down_s = [3.0, 1.0]', ["steps[0] (broker_bounce)", "down_s", "lo > hi"]),
    ('name = "x"' + STEP + 'after = [2, 1]', ["steps[0] (broker_bounce)", "after", "lo > hi"]),
    ('name = "x"' + STEP + 'down_s = [1.0, 2.0, 3.0]', ["down_s", "[lo, hi]"]),
    ('name = "x"\n[[steps]]\naction = "broker_bounce"\nbroker = "one"', ["steps[0] (broker_bounce)", "broker",
                                                                        "valid integer"]),
    ('name = "x"' + STEP + 'repeat = 0', ["steps[0] (broker_bounce)", "repeat"]),
    ('name = "x"\n[[steps]]\nslot = 1', ["steps[0]", "action", "required"]),
    ('name = "x y"' + STEP, ["name"]),
    ('name = "x"\nprotocols = ["eager"]' + STEP, ["protocols.0"]),
    ('name = "x"\nsteps = []', ["steps", "at least 1"]),
    ('name = "x"\n[members]\nslot_commands = { "one" = "p" }' + STEP, ["members.slot_commands", "one"]),
    ('name = "x"\n[[steps]\naction = 1', ["not valid TOML"]),
    ('name = "x"\n[[steps]]\naction = "change_subscription"\nslot = 0\nsubscription = []\nsubscribe_by = "unsubscribe"',
     ["steps[0] (change_subscription)", "subscribe_by", "'unsubscribe'", "'subscribe' or 'unsubscribe-subscribe'"]),
])
def test_bad_files_are_one_line_naming_file_step_and_field(tmp_path, text, needles):
    path = write(tmp_path, text, "bad.toml")
    with pytest.raises(BadInput) as e:
        scenario_of(path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(path), msg
    for n in needles:
        assert n in msg, msg
    with pytest.raises(BadInput):  # and before anything starts: the run's config is refused too
        RunConfig.for_scenario(path, seed=1)


def test_missing_file(tmp_path):
    path = str(tmp_path / "nope.toml")
    with pytest.raises(BadInput, match="nope.toml: cannot read the scenario file"):
        scenario_of(path)
    with pytest.raises(BadInput, match="nope.toml"):
        RunConfig.for_scenario(path, seed=1)


def test_constructing_a_run_config_reads_no_file(tmp_path, monkeypatch):
    path = write(tmp_path, GOOD)
    monkeypatch.setattr(Path, "read_text", lambda *a, **k: pytest.fail("a RunConfig read a file"))
    cfg = RunConfig(scenario=path, seed=1)
    assert cfg.scenario == path and cfg.scenario_text is None and cfg.scenario_file is None


def test_for_scenario_gives_the_scenarios_default_protocol(tmp_path):
    path = write(tmp_path, 'name = "c"\nprotocols = ["consumer", "classic-eager"]' + STEP)
    assert RunConfig.for_scenario(path, seed=1).protocol == "consumer"
    assert RunConfig.for_scenario(path, seed=1, protocol=None).protocol == "consumer"
    assert RunConfig.for_scenario(path, seed=1, protocol="classic-eager").protocol == "classic-eager"
    assert RunConfig.for_scenario("broker-upgrade", seed=1).protocol == "classic-cooperative"
    assert RunConfig.for_scenario("streams-scale-in", seed=1).protocol == "classic"


def test_every_action_of_the_nemesis_is_known():
    assert {"sleep", "wait_stable", "kill_member", "broker_bounce", "network_blackhole"} <= set(scenario_file.ACTIONS)
