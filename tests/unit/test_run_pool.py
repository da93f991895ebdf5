"""Verify: runs on a pool over one cluster (--harness-concurrency): which runs must run alone is read from the
action registry; a run that must run alone never overlaps another; each result (or exception) reaches its own
caller; an interruption stops every run, leaves no process and leaves run directories marked incomplete.

Setup: jobs whose run function is a small fake (sleeps, returns its key, raises); two real runs of the runner
on the fake backend (harness/cluster/fake.py: real member processes, no Kafka) sharing one fake cluster.
Then: the pool's trace of starts and ends, each job's result, the run directories' STATUS, the live children.
"""
from __future__ import annotations

import logging
import threading
import time
from types import SimpleNamespace

import pytest

from harness.base import procs
from harness.plan import scenarios
from harness.plan.actions import ACTIONS, NEEDS
from harness.cluster import event_sinks
from harness.cluster.fake import FakeCluster, FakeWorkload, pid_alive
from harness.suite.pool import concurrency, front_unplanned, planned_call
from harness.drive.pool import Job, RunPool, _raise_in, exclusive_first
from harness.run.runner import Run
from harness.plan.scenarios import Action, Scenario
from harness.drive.sharing import CLUSTER_WIDE, disturbing_actions, exclusive_reason

from test_runner_fake import FAST, config, harness_events, status_lines


# -- which runs must run alone
def test_every_backend_ability_is_decided_and_each_acts_on_the_whole_cluster():
    assert CLUSTER_WIDE == frozenset(NEEDS)  # an ability added to harness/plan/actions.py needs a decision here


def test_the_rule_reads_the_registry_not_names():
    wide = {n for n, s in ACTIONS.items() if s.needs}
    assert {"kill_coordinator", "network_blackhole", "rack_outage", "broker_partition", "drop_request"} <= wide
    assert disturbing_actions(sorted(ACTIONS)) == [n for n in sorted(ACTIONS) if n in wide]
    assert disturbing_actions(["kill_member", "scale_out", "bounce", "pause_member", "group_config"]) == []


def _plan(schedule, *, own=False, broker_settings=()):
    return SimpleNamespace(own_cluster=own, schedule=[Action(k, {}) for k in schedule],
                           cfg=SimpleNamespace(broker_settings=tuple(broker_settings)))


@pytest.mark.parametrize("plan,expect", [
    (_plan(["scale_out", "kill_member", "wait_stable"]), None),
    (_plan(["scale_out", "network_blackhole"]), "network_blackhole (puts network faults"),
    (_plan(["hold_request", "broker_bounce"]), "hold_request (puts faults on chosen Kafka requests"),
    (_plan(["scale_out"], own=True), "starts a cluster of its own"),
    (_plan(["scale_out"], broker_settings=[("log.cleaner.enable", "true")]), "log.cleaner.enable=true"),
])
def test_why_a_run_must_run_alone(plan, expect):
    why = exclusive_reason(plan)
    assert why is None if expect is None else expect in why


def test_the_built_in_smoke_scenarios_are_classified_by_their_schedules():
    from harness.plan.config import scenario_of
    from harness.plan.scenario_model import ScenarioContext, schedule
    ctx = ScenarioContext(session_timeout_s=6.0, brokers=3, racks=3, target_kafka="latest")
    alone = {n for n in ("member-kill", "network-blackhole", "scale-out-in", "streams-scale-out", "share-member-kill",
                         "connect-worker-kill") if disturbing_actions(schedule(scenario_of(n), seed=1, ctx=ctx))}
    assert alone == {"network-blackhole"}


# -- the scheduling rule
def _job(key, log, *, exclusive=None, rank=0, s=0.15, fail=None):
    def call():
        log.append(("in", key))
        time.sleep(s)
        if fail:
            raise fail
        return f"result of {key}"
    return Job(key=key, label=key, call=call, exclusive=exclusive, rank=rank)


def _spans(pool) -> dict[str, tuple[float, float]]:
    start = {k: t for t, what, k in pool.trace if what == "start"}
    return {k: (start[k], t) for t, what, k in pool.trace if what == "end"}


def test_an_exclusive_run_never_overlaps_another_and_the_rest_run_n_at_a_time():
    log: list = []
    jobs = [_job(f"s{i}", log, rank=i % 3) for i in range(6)] + [_job("x1", log, exclusive="kills brokers"),
                                                                 _job("x2", log, exclusive="network")]
    pool = RunPool(jobs, workers=3)
    pool.start()
    results = {j.key: pool.wait(j.key) for j in jobs}
    pool.close()
    assert results == {j.key: f"result of {j.key}" for j in jobs}  # each result reaches its own caller
    spans = _spans(pool)
    for x in ("x1", "x2"):
        a, b = spans[x]
        assert not [k for k, (c, d) in spans.items() if k != x and c < b and a < d], f"{x} overlapped"
    most = max(sum(1 for c, d in spans.values() if c <= t < d) for t, _, _ in pool.trace)
    assert most == 3
    assert [k for _, w, k in sorted(pool.trace) if w == "start"][:2] == ["x1", "x2"]  # those that run alone first


def test_the_order_is_those_alone_then_by_rank():
    jobs = [Job("a", "a", lambda: 0, rank=2), Job("b", "b", lambda: 0, exclusive="x"), Job("c", "c", lambda: 0, rank=0)]
    assert [j.key for j in exclusive_first(jobs)] == ["b", "c", "a"]


def test_a_job_added_late_runs_alone_before_the_pending_ones():
    log: list = []
    pool = RunPool([_job(f"s{i}", log) for i in range(4)], workers=2)
    pool.start()
    pool.add(_job("late", log, exclusive="not planned"))
    assert pool.wait("late") == "result of late"
    for k in ("s0", "s1", "s2", "s3"):
        pool.wait(k)
    pool.close()
    a, b = _spans(pool)["late"]
    assert not [k for k, (c, d) in _spans(pool).items() if k != "late" and c < b and a < d]


def test_an_exception_in_a_worker_is_its_own_callers_failure():
    log: list = []
    pool = RunPool([_job("ok", log), _job("bad", log, fail=RuntimeError("the plan refused it"))], workers=2)
    pool.start()
    with pytest.raises(RuntimeError, match="the plan refused it"):
        pool.wait("bad")
    assert pool.wait("ok") == "result of ok"
    pool.close()


def test_log_lines_of_a_worker_say_which_run_they_belong_to(caplog):
    def call():
        logging.getLogger("harness.run").info("topic t: producing %s records/s", 40)
        return 1
    pool = RunPool([Job("k", "member-kill-consumer", call)], workers=1)
    with caplog.at_level(logging.INFO, logger="harness"):
        pool.start()
        pool.wait("k")
        pool.close()
    assert "[member-kill-consumer] topic t: producing 40 records/s" in caplog.messages
    with caplog.at_level(logging.INFO, logger="harness"):  # (the level the logger had before this test came back)
        logging.getLogger("harness.run").info("after")
    assert "after" in caplog.messages  # the pool's labels end with it


# -- interruption
def test_interrupting_stops_running_and_pending_jobs():
    started, stopped = threading.Event(), []

    def forever(key):
        def call():
            started.set()
            try:
                while True:
                    time.sleep(0.01)
            except KeyboardInterrupt:
                stopped.append(key)
                raise
        return call
    jobs = [Job("a", "a", forever("a")), Job("b", "b", forever("b")), Job("c", "c", forever("c"))]
    pool = RunPool(jobs, workers=2, grace_s=5)
    pool.start()
    started.wait(5)
    time.sleep(0.2)
    pool.interrupt()
    assert sorted(stopped) == ["a", "b"] and all(j.state == "done" for j in jobs)
    for j in jobs:
        with pytest.raises(KeyboardInterrupt):
            pool.wait(j.key)
    assert not any(t.is_alive() for t in pool._threads)


def test_ctrl_c_while_a_test_waits_interrupts_the_pool():
    main = threading.current_thread()

    def call():
        while True:
            time.sleep(0.01)
    pool = RunPool([Job("a", "a", call)], workers=1, grace_s=5)
    pool.start()
    threading.Timer(0.3, _raise_in, args=(main,)).start()  # as the SIGINT handler raises in the main thread
    with pytest.raises(KeyboardInterrupt):
        pool.wait("a")
    assert pool.interrupted and pool.jobs["a"].state == "done"


def test_a_run_that_does_not_stop_in_time_has_its_processes_killed():
    killed = []

    def stubborn():
        while True:
            try:
                time.sleep(0.01)
            except KeyboardInterrupt:
                if killed:
                    raise
    pool = RunPool([Job("a", "a", stubborn)], workers=1, grace_s=0.3, kill_children=lambda: killed.append(1))
    pool.start()
    time.sleep(0.1)
    pool._raise_in = lambda t: (_raise_in(t), time.sleep(0.05))  # noqa: E731
    pool.interrupt()
    assert killed


# -- real runs on the fake backend, together
def _long(rng, ctx):
    return [Action("scale_out", {}), Action("sleep", {"s": 30.0}), Action("wait_stable", {})]


@pytest.fixture
def fake_long(monkeypatch):
    monkeypatch.setitem(scenarios.SCENARIOS, "fake-long", Scenario("fake-long", "test only", _long, **FAST))
    monkeypatch.setitem(scenarios.SCENARIOS, "fake-scale", Scenario(
        "fake-scale", "test only", lambda rng, ctx: [Action("scale_out", {}), Action("wait_stable", {})], **FAST))


def _run_job(key, cfg, cluster):
    return Job(key, key, lambda: Run(cfg, cluster=cluster, make_workload=FakeWorkload).execute())


def test_two_runs_share_a_cluster_at_once_and_each_keeps_its_own_history(tmp_path, fake_long):
    before = {p.pid for p in procs.live_children()}
    with FakeCluster(work_dir=tmp_path / "shared") as c:
        base = c.on_event
        pool = RunPool([_run_job("one", config(tmp_path, scenario="fake-scale", seed=1), c),
                        _run_job("two", config(tmp_path, scenario="fake-scale", seed=2), c)], workers=2)
        pool.start()
        one, two = pool.wait("one"), pool.wait("two")
        pool.close()
        assert c.on_event is base  # no run's history hears the cluster after its end
    assert (one.status, two.status) == ("pass", "pass"), (one.error, two.error)
    spans = _spans(pool)
    assert spans["one"][0] < spans["two"][1] and spans["two"][0] < spans["one"][1]  # they did overlap
    for r, seed in ((one, 1), (two, 2)):
        assert harness_events(r.run_dir)[0]["seed"] == seed
    assert not [p for p in procs.live_children() if p.pid not in before]


def _sleeping(run) -> bool:
    """Whether the run has reached its long sleep (its history file may not be there, or hold no line yet)."""
    path = run.dir.path / "history" / "harness.jsonl"
    if not path.exists() or b"\n" not in path.read_bytes():
        return False
    return any(e["type"] == "action_start" and e["kind"] == "sleep" for e in harness_events(run.dir.path))


def test_interrupting_runs_leaves_them_incomplete_and_no_process(tmp_path, fake_long):
    before = {p.pid for p in procs.live_children()}
    with FakeCluster(work_dir=tmp_path / "shared") as c:
        runs = [Run(config(tmp_path, scenario="fake-long", seed=s), cluster=c, make_workload=FakeWorkload)
                for s in (1, 2)]
        pool = RunPool([Job(f"r{i}", f"r{i}", r.execute) for i, r in enumerate(runs)], workers=2, grace_s=20)
        pool.start()
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not all(_sleeping(r) for r in runs):
                time.sleep(0.1)
        finally:  # a failure here must not leave the runs' members to the next test
            pool.interrupt()
    for r in runs:
        lines = status_lines(r.dir.path)
        assert lines[0] == "incomplete" and "interrupted" in lines[1]
        pids = [e["pid"] for e in harness_events(r.dir.path) if e["type"] == "member_start"]
        assert pids and not [p for p in pids if pid_alive(p)]
    assert not [p for p in procs.live_children() if p.pid not in before]


# -- the shared cluster's events
def test_every_run_attached_hears_the_cluster_and_the_cluster_gets_its_own_sink_back():
    heard: dict[str, list] = {"base": [], "a": [], "b": []}
    c = SimpleNamespace(on_event=lambda t, **f: heard["base"].append(t))
    base = c.on_event
    a, b = (lambda t, **f: heard["a"].append(t)), (lambda t, **f: heard["b"].append(t))
    event_sinks.attach(c, a)
    event_sinks.attach(c, b)
    c.on_event("broker_event")
    event_sinks.detach(c, a)
    c.on_event("request_fault")
    event_sinks.detach(c, b)
    c.on_event("later")
    assert heard == {"base": ["later"], "a": ["broker_event"], "b": ["broker_event", "request_fault"]}
    assert c.on_event is base


# -- the plugin's side
def _item(params, name="suites/test_x.py", fixtures=("run_scenario",)):
    from pathlib import Path
    return SimpleNamespace(callspec=SimpleNamespace(params=params, id="-".join(map(str, params.values()))),
                           fixturenames=list(fixtures), path=Path(name), nodeid=f"{name}::t")


@pytest.mark.parametrize("params,expect", [
    ({"scenario": "member-kill", "protocol": "consumer"}, ("member-kill", "consumer", {})),
    ({"scenario": "streams-scale-out", "streams_protocol": "classic"}, ("streams-scale-out", "classic", {})),
    ({"scenario": "share-member-kill", "member": "java"}, ("share-member-kill", "share", {"member": "java"})),
    ({"scenario": "streams-scale-out", "protocol": "consumer"}, None),  # the test skips: not planned
    ({"scenario": "no-such-scenario", "protocol": "consumer"}, None),
])
def test_a_tests_planned_run_comes_from_its_parameters(params, expect):
    assert planned_call(_item(params)) == expect


def test_a_test_that_runs_no_scenario_fixture_is_not_planned_and_goes_first():
    docker = _item({"scenario": "broker-partition", "group_protocol": "consumer"}, "suites/test_d.py",
                   fixtures=("docker_cluster",))
    chaos = _item({"scenario": "member-kill", "protocol": "consumer"})
    unit = _item({}, "tests/unit/test_u.py", fixtures=())
    assert planned_call(docker) is None
    items = [unit, chaos, docker]
    front_unplanned(items)
    assert items == [docker, unit, chaos]


@pytest.mark.parametrize("text,ok", [("1", 1), ("3", 3), ("0", None), ("two", None), ("-1", None)])
def test_the_concurrency_option(text, ok):
    cfg = SimpleNamespace(getoption=lambda name: text)
    if ok:
        assert concurrency(cfg) == ok
    else:
        with pytest.raises(pytest.exit.Exception) as e:
            concurrency(cfg)
        assert e.value.returncode == 2 and "--harness-concurrency" in str(e.value)


def test_every_module_a_run_may_import_is_imported_before_the_workers_start():
    """The smoke suite's Streams run failed with "SystemError: AST constructor recursion depth mismatch" when it
    first imported harness.kinds.streams while other runs imported theirs (pytest rewrites the harness's modules;
    Python 3.11's compiler is not thread-safe): the pool's setup imports them first, in the main thread."""
    import subprocess
    import sys
    code = ("import sys; from harness.suite.pool import warm_imports; names = warm_imports(); "
            "need = ['harness.kinds.streams', 'harness.kinds.connect', 'harness.kinds.share', 'harness.kinds.consumer',"
            " 'harness.run.runner', 'harness.nemesis.core', 'harness.members.pool', 'harness.invariants']; "
            "missing = [n for n in need if n not in sys.modules]; "
            "assert not missing and not [n for n in sys.modules if n.startswith('harness.analytics')], missing")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
