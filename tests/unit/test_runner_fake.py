"""The runner end to end on the fake backend (harness/cluster/fake.py): fake members are real processes
speaking the member contract, so the pool, observer, waits, nemesis, run directory and judging all run;
only Kafka is not there. Each run takes a few seconds.

The scenarios here are registered for the test only; their check overrides (a static grace of 1.5 s) show that a
scenario's overrides reach the run's settings.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

import harness
from harness.plan.kinds.settings import client_settings
from harness.record import schema as history_schema
from harness.base.versions import is_release
from harness.kafka import dist as kafka_dist
from harness.base import procs
from harness.plan import scenarios
from harness.cluster.fake import FakeCluster, FakeWorkload, balanced, pid_alive
from harness.base.errors import BadInput, SetupError
from harness.record.history import HistoryWriter, read_file
from harness.invariants import judge
from harness.members import MemberPool, MemberSpec
from harness.run.observe import Observer
from harness.plan.config import replay_config
from harness.record.rundir import RunDir
from harness.run.runner import Run, RunConfig
from harness.plan.scenarios import Action, Scenario
from harness.run.waits import Waits

FAKE_MEMBER = (sys.executable, str(Path(harness.__file__).parent / "members" / "fake_member.py"))
PAUSE_S = 0.77  # the pause of the "fake-pause" scenario: the tests below interrupt the run there


def _churn(rng, ctx):
    """Scale out, kill a member, replace it, scale in: each a rebalance; the first sleep comes from the seed."""
    st = Action("wait_stable", {})
    return [Action("sleep", {"s": round(rng.uniform(0.1, 0.4), 2)}), Action("scale_out", {}), st,
            Action("kill_member", {"slot": 0}), st, Action("replace_member", {"slot": 0}), st,
            Action("scale_in", {"pick": "newest"}), st]


def _pause(rng, ctx):
    return [Action("scale_out", {}), Action("pause_member", {"slot": 0, "duration_s": PAUSE_S}),
            Action("wait_stable", {})]


def _scale_out(rng, ctx):
    return [Action("scale_out", {}), Action("wait_stable", {})]


def _idle(rng, ctx):
    """A replacement in a slot whose member runs (a slot of no member is refused by the plan): the step does
    nothing."""
    return [Action("replace_member", {"slot": 0}), Action("scale_out", {}), Action("wait_stable", {})]


FAST = dict(members=2, check_overrides=lambda ctx, sched: {"static_grace_s": 1.5})


@pytest.fixture(autouse=True)
def fake_scenarios(monkeypatch):
    monkeypatch.setitem(scenarios.SCENARIOS, "fake-churn", Scenario("fake-churn", "test only", _churn, **FAST))
    monkeypatch.setitem(scenarios.SCENARIOS, "fake-scale", Scenario("fake-scale", "test only", _scale_out, **FAST))
    monkeypatch.setitem(scenarios.SCENARIOS, "fake-pause", Scenario("fake-pause", "test only", _pause, **FAST))
    monkeypatch.setitem(scenarios.SCENARIOS, "fake-idle", Scenario("fake-idle", "test only", _idle, **FAST))


@pytest.fixture(autouse=True)
def no_process_left():
    """No process the test started outlives it (processes already running, such as a session's shared
    cluster when the integration tests run first in the same pytest process, are not this test's)."""
    before = {p.pid for p in procs.live_children()}
    yield
    left = [p for p in procs.live_children() if p.pid not in before]
    for p in left:
        p.kill()
    assert not left, f"processes left alive: {[p.pid for p in left]}"


@pytest.fixture
def own_kafka(monkeypatch, tmp_path):
    """A run with its own cluster resolves its Kafka version first; the fake needs no jars."""
    monkeypatch.setattr(kafka_dist, "resolve", lambda v, progress=None: kafka_dist.KafkaDist(
        v if is_release(v) else "4.3.1", tmp_path))


@pytest.fixture
def shared(tmp_path):
    with FakeCluster(work_dir=tmp_path / "shared") as c:
        yield c
    assert not c.errors


def config(tmp_path, scenario="fake-churn", **kw) -> RunConfig:
    base = dict(scenario=scenario, seed=7, protocol="classic-cooperative", kafka_version="4.3.1",
                runs_root=str(tmp_path / "runs"), partitions=6, rate_per_s=40.0, session_timeout_s=2.0,
                heartbeat_interval_s=0.2, stable_s=0.5, stable_timeout_s=10.0, drain_timeout_s=5.0,
                quiet_period_s=0.5, member_command=FAKE_MEMBER)
    return RunConfig(**{**base, **kw})


def harness_events(run_dir) -> list[dict]:
    return read_file(Path(run_dir) / "history" / "harness.jsonl")[1]


def member_pids(run_dir) -> list[int]:
    return [e["pid"] for e in harness_events(run_dir) if e["type"] == "member_start"]


def status_lines(run_dir) -> list[str]:
    return (Path(run_dir) / "STATUS").read_text().splitlines()


def test_a_run_with_its_own_fake_cluster_passes_and_replays(tmp_path, own_kafka):
    made = []

    def make_cluster(**kw):
        made.append(FakeCluster(**kw))
        return made[-1]

    res = Run(config(tmp_path), make_cluster=make_cluster, make_workload=FakeWorkload).execute()
    d = RunDir.open(res.run_dir)
    assert (res.status, res.exit_code, status_lines(d.path)) == ("pass", 0, ["pass"]), res.verdicts
    cluster = made[0]
    assert cluster.work_dir == d.path / "cluster" and cluster.call_names()[:2] == ["start", "create_topic"]
    assert cluster.call_names()[-1] == "stop" and not cluster.errors

    verdicts = d.verdicts()
    assert verdicts and {v["status"] for v in verdicts.values()} <= {"valid", "skipped"}
    assert {k: v.status for k, v in judge(d.history()).items()} == {k: v["status"] for k, v in verdicts.items()}

    meta = d.meta()
    assert meta["status"] == "pass" and meta["scenario"] == "fake-churn" and meta["kind"] == "consumer"
    assert meta["schedule"] == json.loads((d.path / "schedule.json").read_text())
    assert [a["kind"] for a in meta["schedule_ran"]] == [a["kind"] for a in meta["schedule"]]
    kill = next(a for a in meta["schedule_ran"] if a["kind"] == "kill_member")
    assert kill["result"] == {"member": "m1"}

    evs = harness_events(d.path)
    assert {e["type"] for e in evs[:6]} == {"broker_event"}  # the run's own brokers start before run_start
    evs = evs[6:]
    assert evs[0]["type"] == "run_start" and evs[-1] == {**evs[-1], "type": "run_end", "status": "complete"}
    assert evs[0]["kind"] == "consumer" and evs[0]["settings"]["static_grace_s"] == 1.5
    assert evs[0]["settings"]["topic"] == meta["topic"]
    assert [e["type"] for e in evs].count("action_start") == len(meta["schedule"])
    assert any(e["type"] == "drained" and e["ok"] for e in evs)
    assert history_schema.validate_dir(d.history_dir) == []
    assert not [p for p in member_pids(d.path) if pid_alive(p)]

    again = Run(replay_config(d.path, seed=99), make_cluster=make_cluster, make_workload=FakeWorkload).execute()
    assert again.status == "pass" and again.run_dir != res.run_dir
    assert RunDir.open(again.run_dir).meta()["schedule"] == meta["schedule"]  # the recorded one, not seed 99's


def test_a_member_claiming_a_partition_it_was_not_given_fails_the_run(tmp_path, shared):
    res = Run(config(tmp_path, scenario="fake-scale", misbehave="claim-extra"), cluster=shared, make_workload=FakeWorkload).execute()
    assert (res.status, res.exit_code) == ("fail", 1)
    assert res.verdicts["exclusive_ownership"].status == "invalid"
    assert status_lines(res.run_dir) == ["fail"]
    assert RunDir.open(res.run_dir).verdicts()["exclusive_ownership"]["witnesses"]
    assert shared.call_names()[-1] == "heal"  # a shared cluster is healed, not stopped
    assert shared.up == {1, 2, 3}
    header, evs = read_file(Path(res.run_dir) / "history" / "harness.jsonl")
    run_start = next(e for e in evs if e["type"] == "run_start")
    assert header["backend"] == run_start["backend"] == RunDir.open(res.run_dir).meta()["backend"] == "fake"


def test_a_step_that_did_nothing_makes_the_run_unknown_with_the_step_named(tmp_path, shared):
    res = Run(config(tmp_path, scenario="fake-idle"), cluster=shared, make_workload=FakeWorkload).execute()
    assert (res.status, res.exit_code, status_lines(res.run_dir)[0]) == ("unknown", 1, "unknown")
    v = res.verdicts["schedule_performed"]
    assert v.status == "unknown" and v.measurements["not_performed"] == [1], v.message
    assert "step 1 (a1) replace_member {'slot': 0} did not happen: slot 0 is not empty" in v.message
    assert {n: x.status for n, x in res.verdicts.items() if x.status not in ("valid", "skipped")} == \
        {"schedule_performed": "unknown"}  # everything else held: the run is unknown only for the idle step
    evs = harness_events(res.run_dir)
    ends = [e for e in evs if e["type"] == "action_end"]
    assert (ends[0]["ok"], ends[0]["skipped"]) == (False, "slot 0 is not empty")
    assert ends[1]["ok"] is True and ends[1]["member"] == "m3"  # the scale-out did happen
    start = next(e for e in evs if e["type"] == "run_start")
    assert start["applies"]["coordinator_survival"] == {
        "applies": False, "why": "no step fails the coordinator over (kill_coordinator or restart_coordinator)"}
    assert history_schema.validate_dir(RunDir.open(res.run_dir).history_dir) == []
    assert RunDir.open(res.run_dir).verdicts()["schedule_performed"]["status"] == "unknown"


def test_the_kind_is_handed_the_runs_context_filled_in_as_set_up_goes(tmp_path, shared, monkeypatch):
    """The kind gets the RunContext, never the Run; each field the runner sets later is there before the first
    step of the kind that uses it (the cluster before the topics; the pool, observer and waits before the members
    started), and is what the runner itself uses."""
    from harness.kinds.consumer import ConsumerGroup
    from harness.run.context import LATER
    seen = {}
    for hook in ("prepare", "create_topics", "members_started", "finish"):
        def spy(self, *args, _hook=hook, _real=getattr(ConsumerGroup, hook)):
            seen[_hook] = sorted(n for n in LATER if hasattr(self.ctx, n))
            return _real(self, *args)
        monkeypatch.setattr(ConsumerGroup, hook, spy)
    run = Run(config(tmp_path, scenario="fake-scale"), cluster=shared, make_workload=FakeWorkload)
    assert run.kind.ctx is run.ctx and run.ctx.plan is run.plan and run.ctx.run_dir is run.dir
    assert run.execute().status == "pass"
    assert seen == {"prepare": [], "create_topics": ["cluster"], "members_started": sorted(LATER),
                    "finish": sorted(LATER)}
    ctx = run.ctx
    assert (ctx.cluster, ctx.pool, ctx.observer, ctx.waits) == (shared, run.pool, run.observer, run.waits)
    assert run.nemesis.ctx is ctx and ctx.group_id == f"g-{run.run_id}" and ctx.topic == f"t-{run.run_id}"


def interrupt_the_pause(monkeypatch, exc):
    real = Waits.sleep

    def sleep(self, s):
        if s == PAUSE_S:
            raise exc
        real(self, s)
    monkeypatch.setattr(Waits, "sleep", sleep)


def test_ctrl_c_leaves_an_incomplete_run_and_no_process(tmp_path, shared, monkeypatch):
    interrupt_the_pause(monkeypatch, KeyboardInterrupt())
    run = Run(config(tmp_path, scenario="fake-pause"), cluster=shared, make_workload=FakeWorkload)
    with pytest.raises(KeyboardInterrupt):
        run.execute()
    lines = status_lines(run.dir.path)
    assert lines[0] == "incomplete" and "interrupted" in lines[1]
    evs = harness_events(run.dir.path)
    assert [e["type"] for e in evs if e["type"].startswith("fault")] == ["fault_start", "fault_end"]
    assert evs[-1]["type"] == "run_end" and evs[-1]["status"] == "aborted"
    pids = member_pids(run.dir.path)
    assert len(pids) == 3 and not [p for p in pids if pid_alive(p)]
    assert not (run.dir.path / "verdicts.json").exists()


def test_ctrl_c_while_judging_leaves_a_complete_history_and_an_incomplete_run(tmp_path, shared, monkeypatch):
    import harness.run.runner as runner

    def interrupted(history):
        raise KeyboardInterrupt
    monkeypatch.setattr(runner, "judge", interrupted)
    run = Run(config(tmp_path, scenario="fake-pause"), cluster=shared, make_workload=FakeWorkload)
    with pytest.raises(KeyboardInterrupt):  # not OSError: nothing is written to the history closed before judging
        run.execute()
    lines = status_lines(run.dir.path)
    assert lines[0] == "incomplete" and "while judging" in lines[1] and "harness check" in lines[1]
    evs = harness_events(run.dir.path)
    assert [e["status"] for e in evs if e["type"] == "run_end"] == ["complete"]
    assert not [p for p in member_pids(run.dir.path) if pid_alive(p)]


def test_a_harness_error_in_an_action_is_an_error_run(tmp_path, shared, monkeypatch):
    interrupt_the_pause(monkeypatch, SetupError("the pause could not be undone"))
    res = Run(config(tmp_path, scenario="fake-pause"), cluster=shared, make_workload=FakeWorkload).execute()
    assert (res.status, res.exit_code, res.error) == ("error", 2, "the pause could not be undone")
    assert status_lines(res.run_dir) == ["error", "the pause could not be undone"]
    assert "SetupError" in (Path(res.run_dir) / "logs" / "harness-error.txt").read_text()
    evs = harness_events(res.run_dir)
    assert [e["type"] for e in evs if e["type"].startswith("fault")] == ["fault_start", "fault_end"]
    assert not [p for p in member_pids(res.run_dir) if pid_alive(p)]


def test_an_unexpected_exception_is_an_error_never_a_pass(tmp_path, shared, monkeypatch):
    interrupt_the_pause(monkeypatch, RuntimeError("a bug"))
    res = Run(config(tmp_path, scenario="fake-pause"), cluster=shared, make_workload=FakeWorkload).execute()
    assert res.status == "error" and status_lines(res.run_dir)[1] == "unexpected RuntimeError: a bug"


@pytest.mark.parametrize("kw, message", [
    (dict(scenario="no-such-scenario"), "unknown scenario 'no-such-scenario'"),
    (dict(protocol="consumer"), "needs Kafka 4.0 or newer; the cluster runs 3.9.2"),
    (dict(misbehave="be-rude"), "unknown misbehaviour 'be-rude'"),
])
def test_bad_input_is_caught_before_anything_starts(tmp_path, kw, message):
    cluster = FakeCluster(work_dir=tmp_path / "shared", version="3.9.2")  # never started
    with pytest.raises(BadInput, match=message):
        Run(config(tmp_path, **kw), cluster=cluster, make_workload=FakeWorkload)
    assert not (tmp_path / "runs").exists() and cluster.calls == []


# -- the fake itself
def test_the_fake_assignor_is_balanced_and_sticky():
    assert balanced(6, {"a": set()}, {}) == {"a": set(range(6))}
    two = balanced(6, {"a": set(range(6)), "b": set()}, {"a": 1, "b": 2})
    assert two["a"] == {0, 1, 2} and two["b"] == {3, 4, 5}
    three = balanced(6, {"a": {0, 1, 2}, "b": {3, 4, 5}, "c": set()}, {})
    assert three["a"] < {0, 1, 2} and three["b"] < {3, 4, 5} and sorted(map(len, three.values())) == [2, 2, 2]
    assert balanced(7, {"a": {0, 1, 2, 3}, "b": {4, 5, 6}}, {}) == {"a": {0, 1, 2, 3}, "b": {4, 5, 6}}


def test_a_fake_member_paused_past_its_session_loses_its_partitions(tmp_path, shared):
    hist_dir, log_dir = tmp_path / "history", tmp_path / "logs"
    log_dir.mkdir()
    shared.create_topic("t", partitions=4)
    with HistoryWriter(hist_dir / "harness.jsonl", source="harness") as hw:
        pool = MemberPool(merge_settings=client_settings, bootstrap=shared.bootstrap(), group_id="g", topic="t", history_dir=hist_dir,
                          log_dir=log_dir, on_event=hw.event, client_config={"session.timeout.ms": 600})
        obs = Observer(hist_dir, "t")

        def owned(until):
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                obs.poll()
                if until(obs.ownership()):
                    return obs.ownership()
                time.sleep(0.05)
            raise AssertionError(f"ownership stayed {obs.ownership()}")
        a, b = (pool.start(MemberSpec(protocol="classic-cooperative", command=FAKE_MEMBER)) for _ in range(2))
        owned(lambda o: len(o.get("m1", ())) == len(o.get("m2", ())) == 2)
        pool.pause(a)
        owned(lambda o: len(o["m2"]) == 4)  # m1 holds its two as well, in its own view: a zombie
        pool.resume(a)
        owned(lambda o: len(o["m1"]) == len(o["m2"]) == 2)  # it learnt, recorded lost, and rejoined
        pool.stop_all()
    events = read_file(hist_dir / "member-m1.jsonl")[1]
    assert [e["type"] for e in events if e["type"] in ("lost", "stopped")] == ["lost", "stopped"]


def test_the_observer_follows_connect_task_runs(tmp_path):
    """The Connect kind's "stable" reads the observer's view of which worker runs which connector and task."""
    with HistoryWriter(tmp_path / "member-m1.jsonl", source="member", member="m1") as w:
        w.event("connect_connector_started", connector="c", worker="m1")
        w.event("connect_task_started", connector="c", task=0, worker="m1", kind="source")
        w.event("connect_task_started", connector="c", task=1, worker="m1", kind="source")
        w.event("connect_task_stopped", connector="c", task=1, worker="m1", kind="source")
    obs = Observer(tmp_path, "t")
    obs.poll()
    assert obs.connect == {"m1": {"connectors": {"c"}, "tasks": {("c", 0)}}}


def test_a_history_torn_before_judging_leaves_an_incomplete_run_not_an_error(tmp_path, shared, monkeypatch):
    """A member file cut mid-line after its writer ended (harness/record/intact.py) is never judged: the run's own
    judging ends `incomplete` naming the file, as `harness check` does, not `error`."""
    import harness.run.runner as runner
    real = runner.Run._judge

    def torn_first(self):
        member = sorted(self.dir.path.joinpath("history").glob("member-*.jsonl"))[0]
        member.write_bytes(member.read_bytes()[:-7])
        return real(self)
    monkeypatch.setattr(runner.Run, "_judge", torn_first)
    result = Run(config(tmp_path, scenario="fake-pause"), cluster=shared, make_workload=FakeWorkload).execute()
    lines = status_lines(result.run_dir)
    assert result.status == lines[0] == "incomplete", lines
    assert "member-" in lines[1] and "incomplete" in lines[1], lines
    assert not (result.run_dir / "verdicts.json").exists()


def test_a_broker_the_backend_notices_died_reaches_the_history_and_the_verdict(tmp_path, shared, monkeypatch):
    """The waits ask the backend for brokers that died on their own (`notice_exits`) and what it records lands in
    the run's history: schedule_performed is unknown naming the broker and Kafka's reason."""
    told = []

    def notice():
        if not told:
            told.append(1)
            shared.on_event("broker_event", broker=2, what="died", version="4.3.1", pid=1, code=1,
                            reason="ERROR Exiting Kafka due to fatal exception")
        return [2]
    monkeypatch.setattr(shared, "notice_exits", notice)
    result = Run(config(tmp_path, scenario="fake-pause"), cluster=shared, make_workload=FakeWorkload).execute()
    v = result.verdicts["schedule_performed"]
    assert result.status == "unknown" and v.status == "unknown", v.message
    assert "broker 2 died on its own" in v.message and "ERROR Exiting Kafka due to fatal exception" in v.message
