"""The built-in scenarios shipped as files (harness/plan/builtin/), of every kind of group, and the format features
they use.

Verify: every shipped file validates and builds a schedule for many seeds; each converted built-in keeps
its meaning (what it does, its ranges, the relations between its steps); the new value forms refuse bad
input in one line naming file, step and field.
"""
from collections import Counter

import pytest

from harness.plan import scenario_file
from harness.plan import scenarios
from harness.base.errors import BadInput
from harness.base.vocabulary import CONSUMER_PROTOCOLS
from harness.plan.actions import ACTIONS
from harness.plan.config import RunConfig
from harness.plan.scenarios import SCENARIOS, ScenarioContext

CTX = ScenarioContext(session_timeout_s=6.0, brokers=3, racks=3, target_kafka="4.1.0", target_client="2.16.1")
SEEDS = range(40)
FILES = {f.name.removesuffix(".toml"): f for f in scenarios.builtin_files()}
PYTHON_ONLY = {"random-mix"}  # it draws the kind of each action: a file's steps are fixed actions


def sched(name, seed, ctx=CTX):
    return scenarios.schedule(scenarios.get(name), seed=seed, ctx=ctx)


def of(name, seed, kind, ctx=CTX):
    return [a.params for a in sched(name, seed, ctx) if a.kind == kind]


def test_every_built_in_but_random_mix_is_a_file():
    assert set(FILES) == set(SCENARIOS) - PYTHON_ONLY
    kinds = Counter(SCENARIOS[n].kind for n in FILES)
    assert kinds == {"consumer": 46, "streams": 9, "connect": 11, "share": 16}, kinds


@pytest.mark.parametrize("name", sorted(FILES))
def test_each_file_validates_names_itself_and_builds_for_many_seeds(name):
    model = scenario_file.parse(FILES[name].read_text(), FILES[name].name)
    assert model.name == name and model.doc
    sc = SCENARIOS[name]
    assert sc.kind == model.members.kind and sc.doc == model.doc
    for seed in SEEDS:
        s = scenarios.schedule(sc, seed=seed, ctx=CTX)
        assert s and (s[-1].kind == "wait_stable" or _waits_its_rule_out(s[-1]))
    assert RunConfig(scenario=name, seed=1, protocol=sc.default_protocol).validate() is sc


def _waits_its_rule_out(a) -> bool:
    """A request fault that waits until its rule is spent (`wait_s`) may end a schedule: a stable wait after it would
    only come before the runner's own final one (livelock-commit-starves-heartbeat's group never settles)."""
    return a.params.get("wait_s") is not None and "requests" in ACTIONS[a.kind].needs


def test_scenario_level_fields_kept():
    smoke = {n for n, s in SCENARIOS.items() if s.smoke}
    assert smoke == {"scale-out-in", "member-kill", "network-blackhole", "streams-scale-out", "connect-worker-kill",
                     "share-member-kill"}
    assert SCENARIOS["scale-out-in"].members == 1
    assert SCENARIOS["static-bounce"].static and SCENARIOS["rack-outage"].racks
    assert SCENARIOS["broker-upgrade"].initial_kafka == "latest-3"
    assert SCENARIOS["client-rolling-upgrade"].initial_client == "2.12.2"
    assert SCENARIOS["broker-upgrade"].protocols == ("classic-eager", "classic-cooperative")
    assert SCENARIOS["protocol-migration"].protocols == ("classic-eager",)  # the path the coordinator converts
    assert SCENARIOS["protocol-migration-refused"].protocols == ("classic-cooperative",)
    assert SCENARIOS["protocol-migration-refused"].check_overrides(CTX, sched("protocol-migration-refused", 1)) == {
        "expect_broker": "Cannot upgrade classic group \\S+ to consumer group"}
    assert SCENARIOS["member-kill"].protocols == CONSUMER_PROTOCOLS
    # a pause's zombie window is judged from the recorded fault and the member's own settings, not set per scenario
    assert SCENARIOS["pause-long"].check_overrides(CTX, sched("pause-long", 1)) == {}


@pytest.mark.parametrize("name, extra", [("rolling-bounce", {}), ("client-rolling-upgrade", {"client_version": "2.16.1"}),
                                         ("protocol-migration", {"protocol": "consumer"})])
def test_rolling_bounces_bounce_each_of_the_three_slots_once(name, extra):
    orders = set()
    for seed in SEEDS:
        bounces = of(name, seed, "bounce")
        assert sorted(b["slot"] for b in bounces) == [0, 1, 2]
        assert all(0.2 <= b["down_s"] <= 1.0 and {k: b[k] for k in extra} == extra for b in bounces)
        assert [a.kind for a in sched(name, seed)] == ["bounce", "wait_stable"] * 3
        orders.add(tuple(b["slot"] for b in bounces))
    assert len(orders) > 3, "the order is drawn from the seed"


def test_static_bounce_stays_within_the_session_timeout_and_settles():
    for seed in SEEDS:
        assert [a.kind for a in sched("static-bounce", seed)] == ["bounce", "sleep", "wait_stable"] * 3
        bounces = of("static-bounce", seed, "bounce")
        assert sorted(b["slot"] for b in bounces) == [0, 1, 2]
        assert all(0.6 <= b["down_s"] <= 1.8 for b in bounces)  # 0.1-0.3 x 6 s


def test_pauses_are_relative_to_the_session_timeout():
    for st in (6.0, 10.0):
        ctx = ScenarioContext(session_timeout_s=st, brokers=3, racks=3)
        for seed in SEEDS:
            (long_,), (short,) = of("pause-long", seed, "pause_member", ctx), of("pause-short", seed, "pause_member", ctx)
            assert 1.4 * st - 0.01 <= long_["duration_s"] <= 1.8 * st + 0.01
            assert 0.2 * st - 0.01 <= short["duration_s"] <= 0.4 * st + 0.01
            assert long_["slot"] in (0, 1, 2) and short["slot"] in (0, 1, 2)


def test_scale_out_in_scales_out_n_and_in_n():
    seen = set()
    for seed in SEEDS:
        kinds = [a.kind for a in sched("scale-out-in", seed) if a.kind in ("scale_out", "scale_in")]
        n = kinds.count("scale_out")
        assert kinds == ["scale_out"] * n + ["scale_in"] * n and n in (2, 3)
        assert all(0.5 <= s["s"] <= 2.0 for s in of("scale-out-in", seed, "sleep"))
        assert all(p == {"pick": "newest"} for p in of("scale-out-in", seed, "scale_in"))
        seen.add(n)
    assert seen == {2, 3}


def test_member_kill_replaces_the_slot_it_killed():
    slots = Counter()
    for seed in SEEDS:
        assert [a.kind for a in sched("member-kill", seed)] == ["sleep", "kill_member", "wait_stable",
                                                               "replace_member", "wait_stable"]
        (kill,), (rep,) = of("member-kill", seed, "kill_member"), of("member-kill", seed, "replace_member")
        assert kill == rep and kill["slot"] in (0, 1, 2)
        assert 1.0 <= of("member-kill", seed, "sleep")[0]["s"] <= 3.0
        slots[kill["slot"]] += 1
    assert set(slots) == {0, 1, 2}


def test_context_values_come_from_the_run():
    small = ScenarioContext(session_timeout_s=10.0, brokers=5, racks=2, target_kafka="4.2.0")
    brokers, racks = set(), set()
    for seed in SEEDS:
        (bh,) = of("network-blackhole", seed, "network_blackhole", small)
        assert 1 <= bh["broker"] <= 5 and 2.0 <= bh["duration_s"] <= 5.0
        brokers.add(bh["broker"])
        (ro,) = of("rack-outage", seed, "rack_outage", small)
        assert ro["rack"] in ("r0", "r1") and 3.0 <= ro["down_s"] <= 6.0
        racks.add(ro["rack"])
        (lat,) = of("network-latency", seed, "network_latency")
        assert lat["latency_ms"] in (100, 200, 300) and lat["jitter_ms"] in (0, 50) and 4 <= lat["duration_s"] <= 8
        assert 2.0 <= of("coordinator-kill", seed, "kill_coordinator")[0]["down_s"] <= 5.0
    assert brokers == {1, 2, 3, 4, 5} and racks == {"r0", "r1"}
    assert of("broker-upgrade", 1, "broker_upgrade", small) == [{"version": "4.2.0"}]


# -- the format's value forms, refused in one line
BASE = 'name = "x"\n'


@pytest.mark.parametrize("text, needles", [
    (BASE + '[[steps]]\naction = "network_latency"\nlatency_ms = { choice = [] }\njitter_ms = 0\nduration_s = 1.0',
     ["steps[0] (network_latency)", "latency_ms", "choice is a non-empty list"]),
    (BASE + '[[steps]]\naction = "network_latency"\nlatency_ms = { choice = [100, "fast"] }\njitter_ms = 0\n'
     'duration_s = 1.0', ["latency_ms", "'fast'", "valid integer"]),
    (BASE + '[[steps]]\naction = "network_latency"\nlatency_ms = { pick = [1] }\njitter_ms = 0\nduration_s = 1.0',
     ["latency_ms", "{ pick }"]),
    (BASE + '[[steps]]\naction = "broker_bounce"\nbroker = "every"', ["steps[0] (broker_bounce)", "broker", "'every'",
                                                                       "words broker takes: any"]),
    (BASE + '[[steps]]\naction = "rack_outage"\nrack = "anywhere"\ndown_s = 1.0', ["rack", "'anywhere'", "not a rack"]),
    (BASE + '[[steps]]\naction = "kill_coordinator"\ndown_s = "each"', ["down_s", "'each'"]),
    (BASE + '[[steps]]\naction = "pause_member"\nslot = { session_timeout = 1.0 }\nduration_s = 1.0',
     ["slot", "seconds (session_timeout)", "valid integer"]),
    (BASE + '[[steps]]\naction = "pause_member"\nslot = 0\nduration_s = { session_timeout = [1.8, 1.4] }',
     ["duration_s", "lo > hi"]),
    (BASE + '[[steps]]\naction = "replace_member"\nslot = { draw = "victim" }',
     ["steps[0] (replace_member)", "slot", "unknown draw 'victim'"]),
    (BASE + '[draws]\nn = [1, 2]\n[[steps]]\naction = "scale_out"', ["draws.n", "used by no step"]),
    (BASE + '[draws]\nn = { choice = [1.5, 2.5] }\n[[steps]]\naction = "scale_out"\nrepeat = { draw = "n" }',
     ["steps[0] (scale_out)", "repeat", "valid integer"]),
    (BASE + '[draws]\nn = { draw = "m" }\n[[steps]]\naction = "scale_out"', ["draws.n", "cannot name another draw"]),
    (BASE + '[[steps]]\naction = "scale_out"\nrepeat = [0, 2]', ["repeat", "at least 1"]),
    (BASE + '[[steps]]\naction = "scale_out"\nsettle = -1.0', ["settle", "at least 0"]),
])
def test_bad_values_are_one_line(tmp_path, text, needles):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(BadInput) as e:
        RunConfig.for_scenario(str(path), seed=1)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(path)), msg
    for n in needles:
        assert n in msg, msg


def test_a_users_file_may_use_every_form(tmp_path):
    path = tmp_path / "all.toml"
    path.write_text("""
name = "all-forms"
[members]
count = 2
[draws]
times = { choice = [1, 2] }
[[steps]]
action = "bounce"
slot = "each"
down_s = { session_timeout = 0.5 }
client_version = "target"
repeat = { draw = "times" }
settle = [0.5, 1.0]
[[steps]]
action = "broker_bounce"
broker = "any"
after = { session_timeout = [0.1, 0.2] }
""")
    sc = RunConfig.for_scenario(str(path), seed=1).validate()
    for seed in SEEDS:
        s = scenarios.schedule(sc, seed=seed, ctx=CTX)
        bounces = [a.params for a in s if a.kind == "bounce"]
        assert len(bounces) in (2, 4) and sorted(b["slot"] for b in bounces[:2]) == [0, 1]
        assert all(b["down_s"] == 3.0 and b["client_version"] == "2.16.1" for b in bounces)
        sleeps = [a.params["s"] for a in s if a.kind == "sleep"]
        assert all(0.5 <= x <= 1.0 for x in sleeps[:-1]) and 0.6 <= sleeps[-1] <= 1.2


@pytest.mark.parametrize("step, needles", [
    ('action = "network_latency"\nlatency_ms = { choice = "fast" }\njitter_ms = 0\nduration_s = 1.0',
     ["latency_ms", "choice is a non-empty list"]),
    ('action = "broker_bounce"\nbroker = "all"', ["broker", "'all'", "words broker takes: any"]),
])
def test_the_cli_refuses_a_bad_value_in_one_line_with_exit_2(tmp_path, capsys, step, needles):
    from harness.cli import main
    path = tmp_path / "bad.toml"
    path.write_text(f'name = "x"\n[[steps]]\n{step}\n')
    assert main(["run", str(path), "--runs-root", str(tmp_path / "runs"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"harness: {path}: steps[0]"), err
    assert all(n in err[0] for n in needles), err
    assert not (tmp_path / "runs").exists(), "refused before any run directory"


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_built_in_file_run_by_name_brings_its_run_settings(name):
    """Run by name, a shipped file's settings ([members], [cluster], [workload], [[topics]]) are the run's
    defaults, exactly as when the file is run by its path."""
    from harness.plan.config import RunConfig
    from harness.plan.scenarios import builtin_text
    cfg = RunConfig.for_scenario(name, seed=1)
    for key, value in scenario_file.run_defaults(scenario_file.parse(builtin_text(name), name)).items():
        assert getattr(cfg, key) == value, (key, getattr(cfg, key), value)


def test_the_run_settings_of_a_shipped_file_reach_a_run_by_name(monkeypatch):
    """A shipped file with client settings, a workload and topics: run by name, they are the run's, under
    what the caller gives."""
    from harness.plan.config import RunConfig
    text = FILES["member-kill"].read_text() + ('\n[workload]\nrate_per_s = 20\n[[topics]]\nname = "a"\npartitions = 2\n')
    text = text.replace("[members]", '[members]\nclient_settings = { "fetch.wait.max.ms" = 100, "x" = 1 }', 1)
    assert "client_settings" in text
    monkeypatch.setattr(scenarios, "builtin_text", lambda name: text if name == "member-kill" else None)
    cfg = RunConfig.for_scenario("member-kill", seed=1, client_settings=(("x", "2"),))
    assert cfg.rate_per_s == 20 and cfg.topics == (("a", 2),) and cfg.scenario == "member-kill"
    assert dict(cfg.client_settings) == {"fetch.wait.max.ms": "100", "x": "2"}
