"""Schedules come from the seed alone: same seed, same schedule; replay pins it."""
import json

import pytest

from harness.plan import scenarios
from harness.base.errors import BadInput
from harness.run.runner import RunConfig, replay_config
from harness.plan.scenarios import SCENARIOS, Action, ScenarioContext

CTX = ScenarioContext(session_timeout_s=6.0, brokers=3, racks=3)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_same_seed_same_schedule(name):
    sc = scenarios.get(name)
    a = scenarios.schedule(sc, seed=42, ctx=CTX)
    b = scenarios.schedule(sc, seed=42, ctx=CTX)
    assert a == b and a, name
    assert all(isinstance(x, Action) for x in a)


def test_seeds_change_timings():
    sc = scenarios.get("scale-out-in")
    schedules = {json.dumps([a.to_dict() for a in scenarios.schedule(sc, seed=s, ctx=CTX)]) for s in range(10)}
    assert len(schedules) > 1


def test_pause_long_exceeds_session_timeout_and_short_does_not():
    for seed in range(20):
        long_ = [a for a in scenarios.schedule(scenarios.get("pause-long"), seed=seed, ctx=CTX) if a.kind == "pause_member"]
        short = [a for a in scenarios.schedule(scenarios.get("pause-short"), seed=seed, ctx=CTX) if a.kind == "pause_member"]
        assert long_[0].params["duration_s"] > CTX.session_timeout_s
        assert short[0].params["duration_s"] < CTX.session_timeout_s


def test_unknown_scenario_is_bad_input():
    with pytest.raises(BadInput, match="unknown scenario"):
        scenarios.get("nope")


def test_protocol_not_supported_by_scenario_is_bad_input():
    with pytest.raises(BadInput, match="does not run with protocol consumer"):
        RunConfig(scenario="broker-upgrade", seed=1, protocol="consumer").validate()


def test_replay_config_pins_the_recorded_schedule(tmp_path):
    sched = [{"kind": "sleep", "params": {"s": 1.5}}, {"kind": "wait_stable", "params": {}}]
    cfg = RunConfig(scenario="member-kill", seed=5, protocol="consumer")
    from dataclasses import asdict
    (tmp_path / "history").mkdir()
    (tmp_path / "run.json").write_text(json.dumps({"config": asdict(cfg), "schedule": sched}))
    r = replay_config(tmp_path, runs_root="elsewhere")
    assert r.seed == 5 and r.protocol == "consumer" and r.runs_root == "elsewhere"
    assert [Action.from_dict(a) for a in r.schedule] == [Action("sleep", {"s": 1.5}), Action("wait_stable", {})]


def test_replay_of_a_directory_without_run_json_is_bad_input(tmp_path):
    with pytest.raises(BadInput, match="not a run directory"):
        replay_config(tmp_path)


def test_nightly_picks_streams_scenarios_only_for_streams_protocols():
    import random

    from harness.drive.nightly import _pick
    rng = random.Random(5)
    for _ in range(30):
        sc, protocol, kv, cv, _seed = _pick(rng, ["latest"], ["2.12.2"], ["classic", "streams"])
        assert sc.kind == "streams" and protocol in sc.protocols and cv is None
        sc, protocol, kv, cv, _seed = _pick(rng, ["latest"], ["2.12.2"], ["classic-cooperative"])
        assert sc.kind == "consumer" and cv == "2.12.2"
        sc, protocol, kv, cv, _seed = _pick(rng, ["latest"], ["2.12.2"], ["sessioned", "eager"])
        assert sc.kind == "connect" and protocol in sc.protocols and cv is None


def test_the_random_mix_draws_the_group_actions_too():
    """Over many seeds the nightly mix draws every kind it knows, the group actions among them, each with
    parameters its nemesis method takes."""
    import inspect

    from harness.nemesis.core import Nemesis
    from harness.plan.scenarios import SCENARIOS, ScenarioContext, schedule
    ctx = ScenarioContext(session_timeout_s=6.0, brokers=3, racks=3)
    seen = {}
    for seed in range(60):
        for a in schedule(SCENARIOS["random-mix"], seed=seed, ctx=ctx):
            seen.setdefault(a.kind, a.params)
            inspect.signature(getattr(Nemesis, "_do_" + a.kind)).bind(None, **a.params)
    assert {"poll_stall", "leave_during_join", "settings_roll", "change_subscription", "group_config", "autoscale",
            "pause_member", "broker_bounce"} <= set(seen)
    assert seen["group_config"]["if_supported"] is True
    assert seen["poll_stall"]["if_supported"] is True and 3.0 <= seen["poll_stall"]["duration_s"] <= 12.0


def test_connect_settings_are_checked_before_anything_starts():
    """Bad Connect settings are one BadInput line (the CLI exits 2): an unknown key, a delay below zero, an unknown
    or consumer-group protocol, a consumer-group option."""
    from harness.plan.config import RunConfig
    cases = [({"connect_settings": (("scheduled.rebalance.max.delay.ms", -1),)}, "at least 0"),
             ({"connect_settings": (("no.such.key", 1),)}, "unknown Connect setting"),
             ({"protocol": "classic-eager"}, "does not run with protocol"),
             ({"protocol": "bogus"}, "unknown protocol"),
             ({"client_settings": (("fetch.min.bytes", "1"),)}, "--client-set"),
             ({"misbehave": "claim-extra"}, "unknown misbehaviour")]
    for given, says in cases:
        with pytest.raises(BadInput, match=says):
            RunConfig.for_scenario("connect-worker-kill", seed=1, **given).validate()
    assert RunConfig.for_scenario("connect-worker-kill", seed=1).protocol == "sessioned"


def test_connect_worker_versions_are_checked_against_the_brokers():
    from harness.plan.kinds.connect import check_worker_version
    with pytest.raises(BadInput, match="cannot join Kafka 4.3.1 brokers"):
        check_worker_version("2.0.1", "4.3.1", "sessioned")
    with pytest.raises(BadInput, match="connect.protocol=sessioned needs connect-runtime 2.4"):
        check_worker_version("2.3.1", "3.9.1", "sessioned")
    check_worker_version("2.0.1", "3.9.1", "eager")
    check_worker_version("3.9.1", "4.3.1", "compatible")


def test_nightly_runs_a_scenario_with_broker_settings_of_its_own_on_its_own_cluster():
    from harness.cluster.base import BrokerSettings
    from harness.drive.nightly import _shared_or_own
    from harness.plan.config import RunConfig

    class Shared:
        version = "4.4.0"
        settings = BrokerSettings.for_brokers(3)

    plain = RunConfig.for_scenario("member-kill", seed=1)
    compacting = RunConfig.for_scenario("coordinator-restart-compacted", seed=1)
    assert _shared_or_own(Shared, plain) is Shared
    assert _shared_or_own(Shared, compacting) is None
    assert dict(compacting.broker_settings)["log.cleaner.backoff.ms"] == "500"


def test_nightly_runs_a_share_scenario_on_42_on_a_cluster_started_with_its_group_settings():
    """On Kafka 4.2 a share group's settings are broker settings (no share group configs there): a night's shared
    4.2 cluster started without them is not the run's; one started with them is, and 4.4's needs none."""
    from harness.cluster.base import BrokerSettings
    from harness.drive.nightly import _shared_or_own
    from harness.plan.config import RunConfig, brokers_need

    share = RunConfig.for_scenario("share-leader-restart", seed=1, member="java")
    need = brokers_need(share, "4.2.2")
    assert need and all(k.startswith("group.share.") for k in need), need

    def cluster(version, props):
        return type("Shared", (), {"version": version, "settings": BrokerSettings.for_brokers(3, props)})

    assert _shared_or_own(cluster("4.2.2", {}), share) is None
    with_them = cluster("4.2.2", need)
    assert _shared_or_own(with_them, share) is with_them
    assert brokers_need(share, "4.4.0") == {}
    plain = cluster("4.4.0", {})
    assert _shared_or_own(plain, share) is plain
