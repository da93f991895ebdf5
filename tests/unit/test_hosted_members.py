"""Hosted members: several consumers in one member process, each its own member and history; the pool's stop,
kill and stop_many on them; the plan refuses actions that would signal one of them alone."""
import json
import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

import harness
from harness.plan.kinds.settings import client_settings
from harness.base.errors import BadInput
from harness.record.history import History
from harness.members import pool as pool_mod
from harness.members.hosted import hosted_envs, run_hosted
from harness.members.pool import MemberPool, MemberSpec

REPO = str(Path(harness.__file__).resolve().parent.parent)

#: a stand-in for python_member.Member that needs no Kafka: `started`, controls (stop), `stopped`
FAKE = textwrap.dedent(f"""
    import json, os, sys, time
    sys.path.insert(0, {REPO!r})
    from harness.record.history import HistoryWriter
    from harness.members.hosted import run_hosted

    class M:
        def __init__(self, env):
            self.member_id, self.control = env["HARNESS_MEMBER_ID"], env["HARNESS_CONTROL"]
            self.hist = HistoryWriter(env["HARNESS_HISTORY"], source="member", member=self.member_id)
            self.running, self.control_pending, self.seq = True, False, 0

        def loop(self):
            self.hist.event("started", member=self.member_id, pid=os.getpid(), controls=["stop"])
            while self.running:
                if self.control_pending:
                    self.control_pending = False
                    c = json.load(open(self.control)) if os.path.exists(self.control) else {{}}
                    if c.get("seq", 0) > self.seq:
                        self.seq = c["seq"]
                        self.running = not c.get("stop")
                        self.hist.event("control", member=self.member_id, seq=self.seq, stop=bool(c.get("stop")))
                time.sleep(0.02)
            self.hist.event("stopped", member=self.member_id, reason="sigterm")
            self.hist.close()
            return 0

    sys.exit(run_hosted(dict(os.environ), M))
""")


@pytest.fixture
def pool(tmp_path, monkeypatch):
    script = tmp_path / "fake_hosted.py"
    script.write_text(FAKE)
    monkeypatch.setattr(pool_mod, "MEMBER_SCRIPT", script)
    events = []
    (tmp_path / "h").mkdir()
    (tmp_path / "l").mkdir()
    p = MemberPool(merge_settings=client_settings, bootstrap="x:1", group_id="g", topic="t", history_dir=tmp_path / "h", log_dir=tmp_path / "l",
                   on_event=lambda type_, **kw: events.append({"type": type_, **kw}))
    yield p, events
    p.kill_all()


def test_one_process_hosts_several_members_each_with_its_own_history(pool):
    p, events = pool
    ms = p.start_hosted([MemberSpec(protocol="consumer", instance_id=f"i{i}") for i in range(3)])
    assert [m.member_id for m in ms] == ["m1", "m2", "m3"] and len({m.pid for m in ms}) == 1
    assert [e["member"] for e in events if e["type"] == "member_start"] == ["m1", "m2", "m3"]
    assert [e["instance_id"] for e in events if e["type"] == "member_start"] == ["i0", "i1", "i2"]
    for m in ms:
        evs = History.load(m.history.parent).events
        assert any(e["type"] == "started" and e["member"] == m.member_id for e in evs)


def test_stopping_one_hosted_member_leaves_the_others_running(pool):
    p, events = pool
    a, b, c = p.start_hosted([MemberSpec(protocol="consumer")] * 3)
    p.stop(b)
    assert b.exited and not a.exited and not c.exited and a.proc.alive()
    assert [(e["type"], e["member"]) for e in events if e["type"] in ("member_stop", "member_exit")] == \
        [("member_stop", "m2"), ("member_exit", "m2")]
    assert [e for e in events if e["type"] == "member_exit"][0]["how"] == "graceful"


def test_killing_a_hosted_member_kills_every_member_of_its_process(pool):
    p, events = pool
    a, b, c = p.start_hosted([MemberSpec(protocol="consumer")] * 3)
    p.stop(a)
    p.kill(b)
    exits = [(e["member"], e["how"]) for e in events if e["type"] == "member_exit"]
    assert exits == [("m1", "graceful"), ("m2", "kill"), ("m3", "kill")]
    assert c.exited and b.proc.wait(timeout_s=5) is not None
    with pytest.raises(Exception):
        p.pause(a)  # hosted with others: never paused alone (exited or not, its process hosts others)


def test_stop_many_stops_whole_processes_with_one_signal_and_others_alone(pool):
    p, events = pool
    first = p.start_hosted([MemberSpec(protocol="consumer")] * 2)
    second = p.start_hosted([MemberSpec(protocol="consumer")] * 2)
    p.stop_many([*first, second[0]])
    assert all(m.exited for m in first) and second[0].exited and not second[1].exited
    assert not first[0].proc.alive() and second[1].proc.alive()
    assert {e["member"] for e in events if e["type"] == "member_exit"} == {"m1", "m2", "m3"}


def test_stop_many_signals_each_whole_process_once_and_each_exit_is_graceful(pool, monkeypatch):
    """A second SIGTERM could reach a hosting process already ending (its handler given back by Python's exit) and
    kill it: a graceful stop read as a crash (-15). 100 members in ten processes showed it."""
    p, events = pool
    procs = [p.start_hosted([MemberSpec(protocol="consumer")] * 2) for _ in range(3)]
    sent = []
    for ms in procs:
        real = ms[0].proc.signal
        monkeypatch.setattr(ms[0].proc, "signal", lambda sig, _r=real, _p=ms[0].proc: sent.append((_p.pid, sig)) or _r(sig))
    p.stop_many([m for ms in procs for m in ms])
    assert sorted(sent) == sorted((ms[0].proc.pid, signal.SIGTERM) for ms in procs)
    assert [e["how"] for e in events if e["type"] == "member_exit"] == ["graceful"] * 6


def test_hosted_members_must_share_everything_but_static_id_and_rack(pool):
    p, _ = pool
    from harness.base.errors import SetupError
    with pytest.raises(SetupError, match="only their static ids and racks may differ"):
        p.start_hosted([MemberSpec(protocol="consumer"), MemberSpec(protocol="classic-eager")])


def test_hosted_envs_give_each_consumer_its_own_id_history_and_control():
    envs = hosted_envs({"HARNESS_PROTOCOL": "consumer", "HARNESS_HOSTED": json.dumps([
        {"member_id": "m1", "history": "/h/m1", "control": "/c/m1", "instance_id": "s0"},
        {"member_id": "m2", "history": "/h/m2", "control": "/c/m2", "rack": "r1"}])})
    assert [(e["HARNESS_MEMBER_ID"], e["HARNESS_HISTORY"], e["HARNESS_INSTANCE_ID"], e["HARNESS_RACK"]) for e in envs] \
        == [("m1", "/h/m1", "s0", ""), ("m2", "/h/m2", "", "r1")]
    assert all(e["HARNESS_PROTOCOL"] == "consumer" for e in envs)
    for bad in ("[", "[]", '[{"member_id": "m1"}]', '[{"member_id": "m1", "history": "a"}, '
                                                     '{"member_id": "m1", "history": "b"}]'):
        with pytest.raises(SystemExit):
            hosted_envs({"HARNESS_HOSTED": bad})


def test_run_hosted_stops_every_consumer_on_sigterm():
    class M:
        def __init__(self, env):
            self.member_id, self.running, self.control_pending = env["HARNESS_MEMBER_ID"], True, False

        def loop(self):
            while self.running:
                time.sleep(0.01)
            return 0
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1)}
    try:
        import threading
        threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
        env = {"HARNESS_HOSTED": json.dumps([{"member_id": f"m{i}", "history": "x"} for i in range(3)])}
        assert run_hosted(env, M) == 0
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def test_the_plan_refuses_one_process_signals_when_processes_host_several_members():
    from harness.plan import config as plan
    from harness.plan import scenarios
    from harness.plan.config import RunConfig
    from harness.plan.scenario_model import Action
    cfg = RunConfig(scenario="member-kill", seed=1, members_per_process=4)
    sc = scenarios.get("member-kill")
    with pytest.raises(BadInput, match=r"step 0 \(kill_member\) signals one member's process, which hosts 4"):
        plan._check_actions(cfg, sc, (Action("kill_member", {"slot": 0}),), backend="local")
    plan._check_actions(cfg, sc, (Action("scale_out", {"count": 3}), Action("scale_in", {"count": 2})),
                        backend="local")
    with pytest.raises(BadInput, match="members per process"):
        RunConfig(scenario="member-kill", seed=1, members_per_process=4, member="java").validate()
    with pytest.raises(BadInput, match="members per process"):
        RunConfig(scenario="member-kill", seed=1, members_per_process=0).validate()
    assert RunConfig(scenario="member-kill", seed=1, members_per_process=4).validate()


def test_a_kill_is_recorded_after_its_signal_so_no_member_event_comes_after_the_recorded_exit(pool):
    # a share-member-kill smoke run (three runs at a time) had its killed member's `share_processed` 67 ms after its
    # recorded `member_exit`: the exit was written before the signal was sent, and the loaded harness was held between
    p, events = pool
    m, _ = p.start_hosted([MemberSpec(protocol="consumer")] * 2)
    order = []
    real_kill = m.proc.kill
    m.proc.kill = lambda: (order.append("signal"), real_kill())
    p.on_event = lambda type_, **kw: order.append(type_)
    p.kill(m)
    assert order == ["signal", "member_exit", "member_exit"]
