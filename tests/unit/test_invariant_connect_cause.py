"""connect_rebalance_cause: each generation the Connect workers report began with a cause in the history, and no
cause starts more generations than its allowance (a storm: tasks restarted with no configuration or membership
change); judged by hand-made histories."""
from __future__ import annotations

from connectbuild import fault_end, fault_start, history, member_exit, member_start, run_end, run_start, settings, \
    worker
from histbuild import broker_event, ev

from harness.invariants import applies, judge
from harness.invariants.connect import CONNECT_CHECKERS
from harness.invariants.connect.cause import NAME, check

CONFIG = {"session.timeout.ms": "6000", "scheduled.rebalance.max.delay.ms": "10000", "rebalance.timeout.ms": "20000"}


def gen(m: str, t: float, epoch: int) -> dict:
    return ev("connect_rebalance", t, "member", member=m, leader="http://127.0.0.1:1/", epoch=epoch,
              rebalancing=False, completed=epoch)


def created(t: float, connector: str = "src") -> dict:
    return ev("connect_connector_created", t, "harness", connector=connector, config={"tasks.max": "4"})


def base(*items, end: float = 120.0, config: dict | None = CONFIG) -> list:
    """Three workers started at 1 s, the connector created at 3 s, generation 3 reported at 4 s and 5 at 8 s."""
    return [run_start(0.0, kind="connect"), *worker("m1", 1.0, 1, config), *worker("m2", 1.0, 2, config),
            *worker("m3", 1.0, 3, config), created(3.0), gen("m1", 4.0, 3), gen("m2", 4.05, 3), gen("m1", 8.0, 5),
            *items, run_end(end)]


def judged(*items, protocol: str = "sessioned", **kw):
    return check(history(*base(*items, **kw)), settings(protocol=protocol))


def test_registered_as_a_connect_checker():
    assert CONNECT_CHECKERS[NAME] is check


def test_the_workers_joins_and_the_connector_explain_the_first_generations():
    v = judged()
    assert v.status == "valid", v.message
    assert v.measurements["bumps"] == 5 and v.measurements["generations"] == [1, 5]
    assert v.measurements["reach_s"] == 37.0
    assert "rebalance.timeout.ms=20000 (m1's worker config)" in v.message


def test_a_kill_explains_its_expiry_the_delayed_round_and_a_revocation_round():
    v = judged(member_exit("m2", 80.0, how="kill"), gen("m1", 86.5, 6), gen("m1", 96.6, 7), gen("m1", 97.0, 8))
    assert v.status == "valid", v.message
    assert v.measurements["causes"]["killed"] == 3


def test_a_paused_worker_explains_its_rounds():
    v = judged(fault_start(50.0, "f1", ["m2"]), fault_end(60.0, "f1"), gen("m1", 57.0, 6), gen("m1", 61.0, 8))
    assert v.status == "valid", v.message


def test_a_new_worker_explains_its_join_and_a_revocation_round():
    v = judged(*worker("m4", 50.0, 4, CONFIG), gen("m1", 52.0, 7))
    assert v.status == "valid", v.message


def test_a_broker_event_explains_rounds_of_the_workers_running():
    v = judged(broker_event(50.0, 1, "kill"), gen("m1", 55.0, 8))
    assert v.status == "valid", v.message


def test_a_generation_with_nothing_in_reach_is_a_violation_naming_it():
    v = judged(gen("m1", 90.0, 6))
    assert v.status == "invalid"
    assert v.message.startswith("generation 6 began between 63.0s and 90.0s (m1 reported it) with no cause in reach")
    assert "session.timeout.ms=6000" in v.message and "scheduled.rebalance.max.delay.ms=10000" in v.message
    assert v.measurements["uncaused"] == 1 and v.witnesses[0]["type"] == "connect_rebalance"


def test_generations_past_every_allowance_are_a_storm():
    v = judged(*[gen("m1", 10.0 + 2 * i, 6 + i) for i in range(10)])
    assert v.status == "invalid"
    assert v.message.startswith("a storm: generations 10-15 (6 past the allowance of every cause in reach, "
                                "sessioned protocol)")
    assert "explain at most 9" in v.message and "config (src) at 1.5-3.0s (3)" in v.message
    assert v.measurements["storm"] == 6


def test_the_eager_protocol_allows_fewer_rounds():
    assert judged(protocol="eager").status == "valid"
    v = judged(gen("m1", 9.0, 6), protocol="eager")
    assert v.status == "invalid" and "a storm: generations 6-6" in v.message and "explain at most 5" in v.message


def test_a_broker_event_before_any_worker_runs_explains_nothing():
    evs = base(broker_event(0.5, 1, "ready"))
    v = check(history(*evs[:1], broker_event(0.5, 1, "ready"), *evs[1:], gen("m1", 9.0, 15)), settings())
    assert v.status == "invalid" and "broker" not in v.message


def test_no_generation_reported_is_skipped_and_an_older_run_is_not_failed_by_it():
    v = check(history(*[e for e in base() if e["type"] != "connect_rebalance"]), settings())
    assert v.status == "skipped" and "connect_rebalance" in v.message
    assert NAME in applies.FACTS_RECORDED_LATER
    assert applies.decide(v, {"connect_balance": {"applies": True, "why": "x"}}).status == "skipped"
    assert applies.decide(v, {NAME: {"applies": True, "why": "y"}}).status == "unknown"


def test_settings_unrecorded_are_unknown_naming_them():
    v = judged(config={"session.timeout.ms": "6000"})
    assert v.status == "unknown"
    assert "scheduled.rebalance.max.delay.ms, rebalance.timeout.ms" in v.message


def test_judge_gives_it_for_a_connect_run():
    evs = base(ev("connect_task_started", 5.0, "member", member="m1", connector="src", task=0, worker="m1"))
    assert judge(history(*evs))[NAME].status == "valid"


def test_applies_to_connect_runs_but_on_the_fake_backend():
    facts = applies.PlanFacts(kind="connect", protocol="sessioned", members=3)
    assert applies.applicability(facts)[NAME]["applies"] is True
    fake = applies.PlanFacts(kind="connect", protocol="sessioned", members=3, backend="fake")
    assert applies.applicability(fake)[NAME]["applies"] is False
    share = applies.applicability(applies.PlanFacts(kind="share", protocol="share", members=3))
    assert share["share_rebalance_cause"]["applies"] is True


def test_a_workers_join_reaches_from_its_started_and_a_config_from_its_asking():
    """On a busy host a worker joins (its herder starting) up to a minute after its process began, before it writes
    `started`; the workers may rebalance for a connector's configuration before the harness's PUT is answered."""
    late = [run_start(0.0, kind="connect"), member_start("m1", 1.0),
            ev("started", 60.0, "member", member="m1", pid=1, rest_url="http://127.0.0.1:1", settings=CONFIG),
            gen("m1", 70.0, 1),
            ev("connect_connector_created", 80.0, "harness", connector="src", config={}, asked_mono=75.0),
            gen("m1", 76.0, 2), gen("m1", 77.0, 3), run_end(100.0)]
    v = check(history(*late), settings())
    assert v.status == "valid", v.message
    assert v.measurements["causes"] == {"join": 2, "config": 1}
    unasked = [e for e in late if e["type"] != "connect_connector_created"]
    assert check(history(*unasked), settings()).status == "invalid"


def test_the_real_worker_kill_is_caused():
    """`harness run connect-worker-kill --seed 1` (Kafka 4.4.0, connect-runtime 4.4.0, a host at load 100: workers
    took 55 s to start and joined before writing `started`; the connectors' configs rebalanced the group before the
    harness's PUT was answered), trimmed to the harness's events, the workers' own and the coordinator's rebalance
    lines: every one of its 12 generations had a cause."""
    import json
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "connect-worker-kill-generations.jsonl"
    v = judge(history(*[json.loads(x) for x in path.read_text().splitlines() if x]))[NAME]
    assert v.status == "valid", v.message
    assert v.measurements["bumps"] == 12 and v.measurements["causes"] == {"config": 4, "join": 7, "killed": 1}
