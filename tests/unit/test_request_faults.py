"""Request faults as schedule actions: the plan's checks (harness/plan/request_checks.py), the performers' translation of
slots into member ids and of `until` into conditions (harness/nemesis/requests.py, against a stub proxy that records
what it was given), and which clusters start with the request proxy. No Kafka here: tests/integration/
test_request_faults_real.py runs them on real brokers."""
from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from harness.plan import actions
from harness.plan import request_checks
from harness.cluster.backends import new_backend
from harness.base.errors import BadInput, Indeterminate
from harness.kproxy.rules import Seen
from harness.nemesis.core import Nemesis
from harness.plan.scenario_file import loads
from harness.plan.scenario_model import Action
from runctx import context
from test_nemesis import StubKind, StubPool, StubWaits


def _check(*steps, brokers=3, shared=None):
    request_checks.check([Action(k, p) for k, p in steps], brokers=brokers, shared=shared)


@pytest.mark.parametrize("kind,params,why", [
    ("hold_request", {"api": "SyncGroupp"}, "step 1 (hold_request): unknown Kafka API 'SyncGroupp'; did you mean "
                                            "SyncGroup"),
    ("drop_request", {"api": "Rebalance"}, "unknown Kafka API 'Rebalance'; names as in the protocol: JoinGroup, "),
    ("error_response", {"api": "JoinGroup", "error": "NOT_A_CODE"}, "unknown Kafka error 'NOT_A_CODE'"),
    ("drop_response", {"api": "LeaveGroup", "then": "later"}, "then must be one of stall, pass"),
    ("drop_request", {"api": "Heartbeat", "broker": 4}, "broker is 1 to 3"),
    ("delay_request", {"api": "Fetch", "delay_s": [2.0, 1.0]}, "delay_s must be >= 0 or a (lo, hi) range"),
    ("hold_request", {"api": "SyncGroup", "until_api": "Nope"}, "unknown Kafka API 'Nope'"),
    ("hold_request", {"api": "SyncGroup", "until_step": 0}, "until_step counts steps after this one"),
    ("hold_request", {"api": "SyncGroup", "slot": "some"}, "slot is a member slot (0 or more) or \"all\""),
    ("hold_request", {"api": "SyncGroup", "until_slot": -1}, "until_slot is a member slot"),
    ("hold_request", {"api": "SyncGroup", "count": 0}, "count must be at least 1"),
    ("error_response", {"api": "JoinGroup", "error": "NOT_COORDINATOR", "wait_s": -1}, "wait_s is 0 or more"),
    ("disconnect", {"api": "OffsetComit"}, "step 1 (disconnect): unknown Kafka API 'OffsetComit'; did you mean "
                                           "OffsetCommit"),
    ("disconnect", {"api": "OffsetCommit", "count": 0}, "step 1 (disconnect): disconnect: count must be at least 1"),
    ("disconnect", {"api": "OffsetCommit", "duration_s": -2.0}, "duration_s must be positive, not -2.0"),
    ("disconnect", {"api": "OffsetCommit", "slot": -1}, "slot is a member slot (0 or more) or \"all\""),
    ("disconnect", {"api": "OffsetCommit", "broker": 0}, "broker is 1 to 3"),
])
def test_a_request_fault_that_cannot_work_is_one_line_of_bad_input(kind, params, why):
    with pytest.raises(BadInput) as e:
        _check(("sleep", {"s": 1}), (kind, params))
    assert why in str(e.value) and "\n" not in str(e.value)


def test_request_faults_that_can_work_pass_the_checks():
    _check(("hold_request", {"api": "SyncGroup", "slot": 0, "until_api": "JoinGroup", "until_step": 2}),
           ("delay_request", {"api": "Fetch", "delay_s": [0.1, 0.3], "broker": 2, "duration_s": 5.0}),
           ("error_response", {"api": "ConsumerGroupHeartbeat", "error": "FENCED_MEMBER_EPOCH"}),
           ("drop_response", {"api": "LeaveGroup", "then": "pass"}),
           ("disconnect", {"api": "OffsetCommit", "slot": 0, "count": 2, "broker": 3}), ("clear_request_faults", {}))


def test_a_shared_cluster_without_the_proxy_is_refused_with_a_request_fault_only():
    shared = SimpleNamespace(backend="local", kproxy=None)
    with pytest.raises(BadInput, match="shared cluster was started without the request proxy"):
        _check(("drop_request", {"api": "JoinGroup"}), shared=shared)
    _check(("sleep", {"s": 1}), shared=shared)
    _check(("drop_request", {"api": "JoinGroup"}), shared=SimpleNamespace(backend="local", kproxy=object()))


def test_both_backends_are_made_with_the_request_proxy_when_asked(tmp_path):
    """The docker backend has the proxy too (issue 47): the request proxy in the harness's process in front of the
    Toxiproxy container's published ports (harness/cluster/docker.py); nothing starts here."""
    for name in ("local", "docker"):
        c = new_backend(name, work_dir=tmp_path / name, request_faults=True)
        assert c.request_faults and c.request_proxy() is None  # made when the cluster starts
    with pytest.raises(BadInput, match="unknown backend|not a backend|teleport"):
        new_backend("teleport", work_dir=tmp_path, request_faults=True)


def test_needs_requests_and_a_files_needs():
    assert actions.needs_requests([Action("sleep", {}), Action("hold_request", {"api": "SyncGroup"})])
    assert not actions.needs_requests([Action("scale_out", {})])
    sc = loads('name = "x"\n[[steps]]\naction = "error_response"\napi = "JoinGroup"\nerror = "NOT_COORDINATOR"\n',
               "x.toml")
    assert sc.needs == frozenset({"requests"})
    assert loads('name = "y"\n[[steps]]\naction = "scale_out"\n', "y.toml").needs == frozenset()


def test_a_request_fault_step_does_not_wait_for_a_stable_group_unless_it_says_so():
    import random
    from harness.plan.scenario_model import ScenarioContext
    sc = loads('name = "x"\n[[steps]]\naction = "hold_request"\napi = "SyncGroup"\nslot = 0\n'
               '[[steps]]\naction = "scale_out"\n', "x.toml")
    kinds = [a.kind for a in sc.build(random.Random(1), ScenarioContext(10, 3, 3))]
    assert kinds == ["hold_request", "scale_out", "wait_stable"]


class StubProxy:
    """Records the rules installed; `applied` counts as the test says."""

    def __init__(self) -> None:
        self.rules: dict = {}
        self.counts: dict = {}
        self.removed: list[str] = []

    def install(self, rule) -> str:
        rid = f"r{len(self.rules) + 1}"
        self.rules[rid] = rule
        return rid

    def applied(self, rid: str) -> int:
        return self.counts.get(rid, 0)

    def remove(self, rid: str) -> None:
        self.removed.append(rid)


@pytest.fixture
def nem():
    n = Nemesis(context(cluster=SimpleNamespace(kproxy=StubProxy()), pool=StubPool(), waits=StubWaits()),
                kind=StubKind())
    for _ in range(3):
        n.add_member()
    return n


def test_a_slot_is_the_member_in_it_now_and_all_is_none(nem):
    out = nem.perform(Action("error_response", {"api": "JoinGroup", "error": "NOT_COORDINATOR", "slot": 1,
                                                "broker": 2}))
    assert out == {"rule": "r1", "member": "m2", "count": 1}
    r = nem.cluster.kproxy.rules["r1"]
    assert (r.action, r.member, r.broker, r.error, r.count) == ("error_response", "m2", 2, "NOT_COORDINATOR", 1)
    nem.perform(Action("delay_request", {"api": "Fetch", "delay_s": [0.1, 0.2]}))
    r = nem.cluster.kproxy.rules["r2"]
    assert (r.member, r.broker, r.delay_s, r.count) == (None, None, (0.1, 0.2), None)
    nem.pool.stop(nem.slots[0])
    assert nem.perform(Action("drop_request", {"api": "JoinGroup", "slot": 0})) == {
        "skipped": "slot 0 has no live member"}


def test_a_disconnect_step_installs_a_disconnect_of_the_slots_member_and_takes_no_then(nem):
    out = nem.perform(Action("disconnect", {"api": "OffsetCommit", "slot": 2, "count": 2, "broker": 1}))
    assert out == {"rule": "r1", "member": "m3", "count": 2}
    r = nem.cluster.kproxy.rules["r1"]
    assert (r.action, r.api, r.member, r.broker, r.count) == ("disconnect", "OffsetCommit", "m3", 1, 2)
    with pytest.raises(BadInput, match=r"then: unknown parameter of disconnect \(it takes: api, slot, broker, count, "
                                       r"duration_s, wait_s"):
        loads('name = "x"\n[[steps]]\naction = "disconnect"\napi = "OffsetCommit"\nthen = "pass"\n', "x.toml")


def test_without_a_count_a_rule_takes_one_request_or_every_request_while_its_duration_lasts(nem):
    rules = nem.cluster.kproxy.rules
    for kind, extra in (("drop_request", {}), ("drop_response", {}), ("hold_request", {}), ("disconnect", {}),
                        ("error_response", {"error": "NOT_COORDINATOR"})):
        nem.perform(Action(kind, {"api": "ConsumerGroupHeartbeat", "slot": 0, **extra}))
        assert rules[f"r{len(rules)}"].count == 1, kind
        out = nem.perform(Action(kind, {"api": "ConsumerGroupHeartbeat", "slot": 0, "duration_s": 8.0, **extra}))
        assert out["count"] is None and rules[out["rule"]].duration_s == 8.0, kind
        out = nem.perform(Action(kind, {"api": "ConsumerGroupHeartbeat", "slot": 0, "duration_s": 8.0, "count": 3,
                                        **extra}))
        assert out["count"] == 3, kind


def test_a_hold_until_another_members_api_and_a_later_steps_end(nem):
    nem.perform(Action("hold_request", {"api": "SyncGroup", "slot": 0, "until_api": "JoinGroup", "until_step": 2}),
                step=4)
    r = nem.cluster.kproxy.rules["r1"]
    seen, event = r.until
    assert seen == Seen("JoinGroup", None) and isinstance(event, threading.Event) and not event.is_set()
    nem.step_done(5)
    assert not event.is_set()
    nem.step_done(6)
    assert event.is_set()
    nem.perform(Action("hold_request", {"api": "SyncGroup", "until_api": "Heartbeat", "until_slot": 2}))
    assert nem.cluster.kproxy.rules["r2"].until == (Seen("Heartbeat", "m3"),)


def test_wait_request_fault_and_wait_s_report_whether_the_rule_was_reached(nem):
    proxy = nem.cluster.kproxy
    assert nem.perform(Action("wait_request_fault", {})) == {"skipped": "no request fault was installed before"}
    nem.perform(Action("drop_response", {"api": "LeaveGroup", "slot": 0}))
    proxy.counts["r1"] = 1
    assert nem.perform(Action("wait_request_fault", {"timeout_s": 0.0})) == {"rule": "r1", "applied": 1,
                                                                            "reached": True}
    out = nem.perform(Action("hold_request", {"api": "SyncGroup", "count": 2, "wait_s": 0.0}))
    assert out == {"rule": "r2", "member": "all", "count": 2, "spent": False, "applied": 0}


def test_clear_and_the_schedules_end_lift_every_rule_and_release_step_holds(nem):
    nem.perform(Action("hold_request", {"api": "SyncGroup", "until_step": 9}))
    nem.perform(Action("drop_request", {"api": "JoinGroup"}))
    event = nem.cluster.kproxy.rules["r1"].until[0]
    assert nem.perform(Action("clear_request_faults", {})) == {"lifted": 2}
    assert nem.cluster.kproxy.removed == ["r1", "r2"] and event.is_set()
    assert nem.end_request_faults() == 0


def test_a_cluster_without_the_proxy_makes_a_request_fault_indeterminate(nem):
    nem.cluster = SimpleNamespace(kproxy=None)
    with pytest.raises(Indeterminate, match="started without it"):
        nem.perform(Action("drop_request", {"api": "JoinGroup"}))


def test_a_race_scenario_is_refused_only_on_a_backend_without_the_proxy(monkeypatch):
    from harness.plan import backends
    from harness.plan.scenarios import SCENARIOS
    sc = SCENARIOS["race-leave-lost"]
    request_checks.check_backend(sc, "docker")
    monkeypatch.setitem(backends.ABILITIES, "docker", backends.ABILITIES["docker"] - {"requests"})
    with pytest.raises(BadInput, match="^scenario race-leave-lost puts faults on Kafka requests .* the docker backend "
                                       "cannot; run it with --backend local$"):
        request_checks.check_backend(sc, "docker")


def test_the_plugins_cluster_has_the_proxy_when_a_selected_scenario_needs_it():
    from harness.suite.plugin import _selected_need_requests

    def session(*names):
        return SimpleNamespace(items=[SimpleNamespace(callspec=SimpleNamespace(params={"scenario": n})) for n in names]
                               + [SimpleNamespace()])
    assert _selected_need_requests(session("member-kill", "race-leave-lost"))
    assert not _selected_need_requests(session("member-kill", "no-such-scenario"))


def _held(rng, ctx):
    return [Action("hold_request", {"api": "SyncGroup", "slot": 0, "until_step": 5}), Action("scale_out", {}),
            Action("wait_stable", {})]


@pytest.mark.parametrize("with_faults", [True, False])
def test_a_run_starts_its_own_cluster_with_the_proxy_only_when_its_schedule_needs_it(tmp_path, monkeypatch,
                                                                                     with_faults):
    """On the fake backend (real member processes, no Kafka): the cluster is made with request_faults when the
    schedule holds a request fault, the step installs its rule on slot 0's member, the schedule's end lifts it."""
    from harness.kafka import dist as kafka_dist
    from harness.plan import scenarios
    from harness.cluster.fake import FakeCluster, FakeWorkload
    from harness.run.runner import Run
    from harness.plan.scenarios import Scenario
    from test_runner_fake import config
    monkeypatch.setattr(kafka_dist, "resolve", lambda v, progress=None: kafka_dist.KafkaDist("4.3.1", tmp_path))
    build = _held if with_faults else (lambda rng, ctx: [Action("scale_out", {}), Action("wait_stable", {})])
    monkeypatch.setitem(scenarios.SCENARIOS, "fake-held", Scenario(
        "fake-held", "test only", build, members=2, check_overrides=lambda ctx, sched: {"static_grace_s": 1.5}))
    made, proxy = [], StubProxy()

    def make_cluster(**kw):
        made.append(kw)
        c = FakeCluster(**{k: v for k, v in kw.items() if k != "request_faults"})
        c.kproxy = proxy if kw.get("request_faults") else None
        return c

    res = Run(config(tmp_path, scenario="fake-held"), make_cluster=make_cluster, make_workload=FakeWorkload).execute()
    # the stub proxy applies no rule to a request: the hold never bit, so the run did not exercise it (unknown)
    assert res.status == ("unknown" if with_faults else "pass"), res.verdicts
    assert {n for n, v in res.verdicts.items() if v.status not in ("valid", "skipped")} == \
        ({"schedule_performed"} if with_faults else set())
    assert made[0].get("request_faults", False) is with_faults
    if with_faults:
        (rule,) = proxy.rules.values()
        assert (rule.action, rule.api, rule.member) == ("hold_request", "SyncGroup", "m1")
        assert proxy.removed == ["r1"] and rule.until[0].is_set()
        assert "step 1 (a1) hold_request" in res.verdicts["schedule_performed"].message
        assert "applied rule r1 (m1) to 0 requests, not 1" in res.verdicts["schedule_performed"].message


def test_nightly_draws_the_race_scenarios_after_the_mix_on_both_backends():
    """The nightly draws race scenarios on every backend with the request proxy: both."""
    import random
    from harness.drive import nightly
    seen = {"local": set(), "docker": set()}
    for backend in seen:
        rng = random.Random(3)
        for _ in range(300):
            seen[backend].add(nightly._pick(rng, ["4.4.0"], ["2.16.1"], ["classic-cooperative"], backend)[0].name)
    assert any(n.startswith("race-") for n in seen["local"])
    assert any(n.startswith("race-") for n in seen["docker"])
