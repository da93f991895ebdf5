"""Scenario files of every kind of group: `[members] kind = "consumer" | "streams" | "connect"`.

Verify: a Kafka Streams and a Kafka Connect file load, take their kind's protocols and settings, and plan like
the built-ins; what a kind cannot take (a consumer-only action, client settings, another kind's settings or
protocols, the member program as the kind) is one line naming the file and the field, exit code 2 from the CLI;
a `{ slots = N }` draw gives distinct slots taken by `item`.
"""
from __future__ import annotations

import pytest

from harness.plan import scenarios
from harness.base.errors import BadInput
from harness.plan.kinds.checks import checks_of
from harness.plan.config import RunConfig, scenario_of
from harness.plan.scenarios import ScenarioContext

CTX = ScenarioContext(session_timeout_s=6.0, brokers=3, racks=3)
STREAMS = """
name = "my-streams"
[members]
kind = "streams"
count = 2
max_count = 3
[streams]
settings = { "num.standby.replicas" = 1 }
[[steps]]
action = "scale_out"
after = 1.0
"""
CONNECT = """
name = "my-connect"
[members]
kind = "connect"
[connect]
settings = { "scheduled.rebalance.max.delay.ms" = 5000 }
[[steps]]
action = "kill_member"
slot = 1
replace_after_s = 1.0
"""


def write(tmp_path, text, name="s.toml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_a_streams_file_runs_its_kind_with_its_settings(tmp_path):
    path = write(tmp_path, STREAMS)
    cfg = RunConfig.for_scenario(path, seed=1)
    sc = cfg.validate()
    assert sc.kind == "streams" and sc.protocols == ("classic", "streams") and cfg.protocol == "classic"
    assert sc.members == 2 and sc.max_members == 3 and sc.streams == {"num.standby.replicas": 1}
    assert checks_of(sc.kind).settings(cfg, sc)["num.standby.replicas"] == 1
    assert [a.kind for a in scenarios.schedule(sc, seed=1, ctx=CTX)] == ["sleep", "scale_out", "wait_stable"]
    over = RunConfig.for_scenario(path, seed=1, streams_settings=(("num.standby.replicas", 2),))
    assert checks_of("streams").settings(over, over.validate())["num.standby.replicas"] == 2  # the command line wins


def test_a_connect_file_runs_its_kind_with_its_settings(tmp_path):
    path = write(tmp_path, CONNECT)
    cfg = RunConfig.for_scenario(path, seed=1)
    sc = cfg.validate()
    assert sc.kind == "connect" and cfg.protocol == "sessioned" and sc.connect == {"scheduled.rebalance.max.delay.ms": 5000}
    assert checks_of(sc.kind).settings(cfg, sc)["scheduled.rebalance.max.delay.ms"] == 5000


def test_the_member_program_is_member_not_kind(tmp_path):
    path = write(tmp_path, 'name = "j"\n[members]\nmember = "java"\n[[steps]]\naction = "scale_out"\n')
    assert RunConfig.for_scenario(path, seed=1).member == "java"


@pytest.mark.parametrize("text, needles", [
    ('name = "x"\n[members]\nkind = "java"\n[[steps]]\naction = "scale_out"',
     ["members.kind", "kind of group", 'member = "java"']),
    ('name = "x"\n[members]\nkind = "sharing"\n[[steps]]\naction = "scale_out"', ["members.kind", "'sharing'"]),
    ('name = "x"\n[members]\nkind = "share"\ncommit_mode = "async"\n[[steps]]\naction = "scale_out"',
     ["members.commit_mode", "share-group members", "share.acknowledgement.mode"]),
    (STREAMS.replace('action = "scale_out"', 'action = "poll_stall"\nslot = 0\nduration_s = 1.0'),
     ["steps[0] (poll_stall): action", "is for consumer groups", "streams"]),
    (STREAMS.replace("max_count = 3", 'client_settings = { "fetch.min.bytes" = 1 }'),
     ["members.client_settings", "Kafka Streams instances", "[streams] settings"]),
    (STREAMS.replace('"num.standby.replicas" = 1', '"num.standby.replica" = 1'),
     ["streams.settings", "unknown Streams setting 'num.standby.replica'", "did you mean num.standby.replicas"]),
    (STREAMS.replace('name = "my-streams"', 'name = "s"\nprotocols = ["classic-eager"]'),
     ["protocols.0", "'classic-eager'", "Kafka Streams instances", "classic, streams"]),
    (CONNECT + '[[topics]]\nname = "a"\n', ["topics", "Kafka Connect workers"]),
    (CONNECT.replace("[connect]", "[streams]\nsettings = { \"num.standby.replicas\" = 1 }\n[connect]"),
     ["streams", "Kafka Connect workers"]),
    ('name = "x"\n[connect]\nsettings = { "harness.source.tasks" = 2 }\n[[steps]]\naction = "scale_out"',
     ["connect", "consumer-group members", 'members.kind = "connect"']),
    ('name = "x"\n[draws]\np = { slots = 4 }\n[[steps]]\naction = "bounce"\nslot = { draw = "p", item = 0 }',
     ["draws.p", "1 to members.count (3)", "4"]),
    ('name = "x"\n[draws]\np = { slots = 2 }\n[[steps]]\naction = "bounce"\nslot = { draw = "p", item = 2 }',
     ["steps[0] (bounce): slot", "item is 0 to 1"]),
    ('name = "x"\n[draws]\np = { slots = 2 }\n[[steps]]\naction = "bounce"\nslot = { draw = "p" }',
     ["steps[0] (bounce): slot", "2 member slots", "item = 0"]),
    ('name = "x"\n[[steps]]\naction = "bounce"\nslot = { slots = 2 }', ["steps[0] (bounce): slot", "under [draws]"]),
    ('name = "x"\n[draws]\nv = [0, 2]\n[[steps]]\naction = "bounce"\nslot = { draw = "v", item = 0 }',
     ["steps[0] (bounce): slot", "{ slots = N } draw"]),
])
def test_what_a_kind_cannot_take_is_one_line(tmp_path, text, needles):
    path = write(tmp_path, text, "bad.toml")
    with pytest.raises(BadInput) as e:
        scenario_of(path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(path), msg
    for n in needles:
        assert n in msg, msg


def test_the_cli_refuses_a_bad_streams_file_with_exit_2(tmp_path, capsys):
    from harness.cli import main
    path = write(tmp_path, STREAMS.replace("max_count = 3", 'slot_commands = { "0" = "x" }'), "bad.toml")
    assert main(["run", path, "--runs-root", str(tmp_path / "runs"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "members.slot_commands" in err[0] and "Kafka Streams instances" in err[0], err
    assert not (tmp_path / "runs").exists()


def test_a_slots_draw_gives_distinct_slots_in_a_drawn_order(tmp_path):
    path = write(tmp_path, 'name = "x"\n[members]\ncount = 4\n[draws]\np = { slots = 2 }\n'
                           '[[steps]]\naction = "bounce"\nslot = { draw = "p", item = 0 }\n'
                           '[[steps]]\naction = "kill_member"\nslot = { draw = "p", item = 1 }\n')
    sc = scenario_of(path)
    pairs = set()
    for seed in range(60):
        s = scenarios.schedule(sc, seed=seed, ctx=CTX)
        (b,), (k,) = [a.params for a in s if a.kind == "bounce"], [a.params for a in s if a.kind == "kill_member"]
        assert b["slot"] != k["slot"] and {b["slot"], k["slot"]} <= {0, 1, 2, 3}
        pairs.add((b["slot"], k["slot"]))
    assert len(pairs) == 12  # every ordered pair of 4 slots
