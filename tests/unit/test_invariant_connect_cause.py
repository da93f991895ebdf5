"""connect_rebalance_cause: each generation the Connect workers report began with a cause in the history, and no
cause starts more generations than its allowance (a storm: tasks restarted with no configuration or membership
change); judged by hand-made histories."""
from __future__ import annotations

import json
from pathlib import Path

from connectbuild import conn_started, conn_stopped, fault_end, fault_start, history, member_exit, member_start, \
    run_end, run_start, settings, task_started, worker
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
    assert "explain at most 9" in v.message and "config (src) at 1.5-3.0s (3: 2 + 1 write(s)" in v.message
    assert v.measurements["storm"] == 6


def test_the_eager_protocol_allows_fewer_rounds():
    assert judged(protocol="eager").status == "valid"
    v = judged(gen("m1", 9.0, 6), protocol="eager")
    assert v.status == "invalid" and "a storm: generations 6-6" in v.message and "explain at most 5" in v.message


def restarts(*runs: tuple, tasks_at: float = 9.1) -> list:
    """The connector run on each (worker, start, stop) before its first task started at `tasks_at` on m3."""
    out = [e for m, a, b in runs for e in (conn_started(m, a), conn_stopped(m, b))]
    return [*out, conn_started("m2", tasks_at - 0.1), task_started("m3", tasks_at, 0)]


def test_under_eager_each_run_of_a_connector_before_its_tasks_ran_may_write_their_configurations_once():
    """Eager restarts every connector each round; a run that finds its tasks' configurations missing writes them (a
    follower forwards them to the leader, which writes them without comparing), and each write is a round: two runs
    ended before the tasks ran allow 1 + 2 generations to the configuration."""
    two = restarts(("m1", 4.1, 7.9), ("m2", 8.1, 8.9))
    v = judged(*two, gen("m1", 9.0, 6), protocol="eager")
    assert v.status == "valid", v.message
    assert v.measurements["causes"]["config"] == 3
    assert "connectors' configurations (eager): src 3: 1 + 2 write(s) of its tasks' configurations: 2 run(s) of " \
           "it ended before its tasks first ran" in v.message
    extra = judged(*two, gen("m1", 9.0, 6), gen("m1", 10.0, 7), protocol="eager")
    assert extra.status == "invalid" and "a storm: generations 7-7" in extra.message, extra.message
    assert "explain at most 6" in extra.message and "config (src) at 1.5-3.0s (3: 1 + 2 write(s)" in extra.message


def test_under_eager_a_round_past_the_connectors_runs_is_still_a_storm():
    """The buggy-side twin: the same generations with one run of the connector before its tasks ran (one write of
    their configurations at most)."""
    v = judged(*restarts(("m1", 4.1, 7.9)), gen("m1", 9.0, 6), protocol="eager")
    assert v.status == "invalid" and "a storm: generations 6-6" in v.message, v.message
    assert "config (src) at 1.5-3.0s (2: 1 + 1 write(s) of its tasks' configurations: 1 run(s)" in v.message


def test_cooperative_protocols_keep_their_connector_and_revocation_rounds_beside_the_writes():
    v = judged(*restarts(("m1", 4.1, 7.9), ("m2", 8.1, 8.9)), gen("m1", 9.0, 7))
    assert v.status == "valid", v.message
    assert "src 4: 2 + 2 write(s)" in v.message
    none = judged()  # no run of the connector recorded: one write of its tasks' configurations at least
    assert none.status == "valid" and "src 3: 2 + 1 write(s) of its tasks' configurations: 0 run(s)" in none.message


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


EAGER_RUN = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / \
    "connect-worker-kill-eager-task-configs-twice.jsonl"


def _eager_run(keep=lambda e: True) -> list:
    return [e for e in map(json.loads, EAGER_RUN.read_text().splitlines()) if keep(e)]


def test_the_real_eager_worker_kill_whose_source_wrote_its_tasks_configurations_twice_is_caused():
    """The matrix's `connect-worker-kill` on eager (Kafka 4.4.0, connect-runtime 4.4.0, seed 808765773), trimmed to the
    harness's events, the workers' own and the coordinator's rebalance lines: harness-source ran on m1 in generation 4
    and on m2 in 5 and 6 before its tasks first ran in 7; m2's runs each forwarded its tasks' configurations to the
    leader (two `POST /connectors/harness-source/tasks` in m1's log, config offset 11 then 16), each write a round:
    generations 7 and 8. Judged a storm at generation 8 before the allowance counted the runs."""
    v = judge(history(*_eager_run()))[NAME]
    assert v.status == "valid", v.message
    assert v.measurements["bumps"] == 12 and sum(v.measurements["causes"].values()) == 12
    assert "harness-source 4: 1 + 3 write(s) of its tasks' configurations: 3 run(s) of it ended before its tasks " \
           "first ran; harness-sink 2: 1 + 1" in v.message


def test_the_real_eager_run_without_the_connectors_restarts_is_a_storm():
    """Its buggy-side twin: the same generations, harness-source run once before its tasks ran (m2's runs in
    generations 5 and 6 absent): one write of their configurations at most, and a generation is left a storm."""
    m2_early = {("connect_connector_started", 26755.68), ("connect_connector_stopped", 26756.10),
                ("connect_connector_started", 26756.63), ("connect_connector_stopped", 26759.08)}
    twin = _eager_run(lambda e: not (e.get("member") == "m2" and e.get("connector") == "harness-source"
                                     and (e["type"], round(e["mono"], 2)) in m2_early))
    assert len(twin) == len(_eager_run()) - 4
    v = judge(history(*twin))[NAME]
    assert v.status == "invalid" and v.message.startswith("a storm: generations "), v.message
    assert "config (harness-source) at 44.7-46.2s (2: 1 + 1 write(s) of its tasks' configurations: 1 run(s)" \
           in v.message
