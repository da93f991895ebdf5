"""The explorer's schedule (seeded: the same seed, the same perturbations), its bounds from the group's timings, its
perturbations applied to a fake proxy stream as request faults; and exact replay's matching: a recorded order
re-imposed on a fake proxy stream, and a divergence reported where the stream differs."""
import asyncio
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.drive import explore as ex
from harness.drive.exact import recorded_order
from harness.drive.explore_run import shrink
from harness.kproxy.perturb import Chain, Explorer, Imposed, Imposer, Perturbation
from harness.kproxy.wire import API_KEYS, RequestHead
from harness.plan.config import RunConfig
from harness.record import schema as hs

LIMITS = {"hold_bound_s": 3.0, "delay_max_s": 1.0, "from": {}}
MEMBERS = ["m1", "m2", "m3", "m4"]
HEADER = {"type": "header", "schema": "rebalance-history", "version": 1, "source": "harness", "member": None}


def _sched(seed, runs=10, depth=3):
    return ex.schedule(seed, runs, members=MEMBERS, apis=ex.CLASSIC_APIS, limits=LIMITS, depth=depth)


def test_the_same_seed_gives_the_same_perturbations_and_another_seed_others():
    a, b = _sched(7), _sched(7)
    assert [[p.to_dict() for p in ps] for ps in a] == [[p.to_dict() for p in ps] for ps in b]
    assert [[p.to_dict() for p in ps] for ps in a] != [[p.to_dict() for p in ps] for ps in _sched(8)]
    assert all(len(ps) == 2 for ps in a) and all(len(ps) == 4 for ps in _sched(7, depth=5))


def test_each_run_tries_another_interleaving_within_the_bounds():
    runs = _sched(3, runs=40)
    assert len({ex._shape(ps) for ps in runs}) == 40
    for p in (p for ps in runs for p in ps):
        assert p.member in MEMBERS and p.api in ex.CLASSIC_APIS and 1 <= p.nth <= ex.POSITIONS[p.api]
        assert p.bound_s == 3.0 and 0 <= p.delay_s <= 1.0
        assert (p.action == "hold") == bool(p.until) and p.member not in p.until
    assert {p.action for ps in runs for p in ps} == {"hold", "delay"}
    assert {p.side for ps in runs for p in ps} == {"request", "answer"}


def test_a_perturbation_round_trips_as_recorded():
    p = _sched(1)[0][0]
    assert Perturbation.of(p.to_dict()) == p


def test_bounds_come_from_the_groups_timings_and_say_so():
    cfg = RunConfig(scenario="race-leave-lost", seed=1, session_timeout_s=6.0, heartbeat_interval_s=0.5)
    b = ex.bounds(cfg)
    assert (b["hold_bound_s"], b["delay_max_s"]) == (3.0, 1.0)
    assert "session.timeout.ms 6 s" in b["from"]["session"]
    cfg = RunConfig(scenario="race-leave-lost", seed=1, client_settings=(("session.timeout.ms", "10000"),
                                                                 ("max.poll.interval.ms", "4000")))
    assert ex.bounds(cfg)["hold_bound_s"] == 2.0  # the rebalance timeout is the smaller
    cfg = RunConfig(scenario="race-leave-lost", seed=1, protocol="consumer",
                    broker_settings=(("group.consumer.heartbeat.interval.ms", "1000"),))
    b = ex.bounds(cfg)
    assert b["delay_max_s"] == 2.0 and "Kafka's default" in b["from"]["session"]


class _Conn:
    def __init__(self, conn_id, broker=1):
        self.conn_id, self.broker = conn_id, broker


def _head(api, corr, member):
    return RequestHead(API_KEYS[api], 5, corr, member)


async def _stream(ctl, member, apis, *, gap_s=0.0, start_s=0.0, out):
    """One member's connection: its requests one after another through the controller, as the proxy passes them."""
    await asyncio.sleep(start_s)
    conn = _Conn(int(member[1:]))
    for corr, api in enumerate(apis, 1):
        head = _head(api, corr, member)
        await ctl.request(conn, head, member)
        ctl.passed(conn, head, member)
        out.append((member, api))
        await ctl.answer(conn, head, member)
        await asyncio.sleep(gap_s)


def _run(ctl, streams):
    out = []

    async def main():
        await asyncio.gather(*(_stream(ctl, m, apis, start_s=t, gap_s=gap[0] if gap else 0.0, out=out)
                               for m, apis, t, *gap in streams))
    asyncio.run(main())
    return out


def test_a_hold_waits_for_the_others_and_is_a_request_fault():
    events = []
    p = Perturbation("x1", "m1", "SyncGroup", 1, action="hold", until=("m2",), bound_s=2.0)
    ctl = Explorer([p], emit=lambda t, **f: events.append({"type": t, "mono": time.monotonic(), **f}))
    out = _run(ctl, [("m1", ["JoinGroup", "SyncGroup"], 0.0), ("m2", ["Heartbeat", "Fetch", "JoinGroup"], 0.2, 0.1)])
    # held until m2 passed a step of the group protocol: its heartbeat and fetch do not release it
    assert out == [("m1", "JoinGroup"), ("m2", "Heartbeat"), ("m2", "Fetch"), ("m2", "JoinGroup"), ("m1", "SyncGroup")]
    start, end = events
    assert start["kind"] == "hold_request" and start["rule"] == "x1" and start["members_affected"] == ["m1"]
    assert end["outcome"] == "seen" and ctl.applied[0]["correlation_id"] == 2
    for e in events:
        assert hs.validate_line(HEADER, {**e, "wall": time.time()}) == [], e


def test_an_answer_hold_runs_out_at_its_bound():
    events = []
    p = Perturbation("x1", "m1", "JoinGroup", 1, side="answer", action="hold", until=("m9",), bound_s=0.2)
    ctl = Explorer([p], emit=lambda t, **f: events.append({"type": t, **f}))
    t0 = time.monotonic()
    _run(ctl, [("m1", ["JoinGroup"], 0.0)])
    assert 0.2 <= time.monotonic() - t0 < 1.0
    assert events[0]["side"] == "answer" and events[1]["outcome"] == "timeout"


def test_a_hold_whose_connection_closed_meanwhile_ends_closed():
    """The checkers take a hold that ended `seen` or `timeout` as a request only made late (causes.Cause.late); one
    whose connection closed under it never went on, and says so."""
    events = []
    p = Perturbation("x1", "m1", "JoinGroup", 1, action="hold", until=("m9",), bound_s=0.05)
    ctl = Explorer([p], emit=lambda t, **f: events.append({"type": t, **f}))
    conn = SimpleNamespace(conn_id=1, broker=1, closed=True)
    asyncio.run(ctl.request(conn, _head("JoinGroup", 1, "m1"), "m1"))
    assert events[-1]["type"] == "fault_end" and events[-1]["outcome"] == "closed"
    assert ctl.applied[0]["outcome"] == "closed"


RECORDED = [("m2", "JoinGroup"), ("m1", "JoinGroup"), ("m1", "SyncGroup"), ("m2", "SyncGroup"),
            ("m2", "OffsetCommit"), ("m1", "OffsetCommit")]


def test_a_recorded_order_is_reimposed_on_a_stream_that_comes_otherwise():
    events = []
    ctl = Imposer(Imposed(RECORDED), apis=("JoinGroup", "SyncGroup", "OffsetCommit"), bound_s=2.0,
                  emit=lambda t, **f: events.append({"type": t, **f}))
    # live, m1 comes first and m2 late: without the imposer m1 would pass all three before m2's first
    out = _run(ctl, [("m1", ["JoinGroup", "SyncGroup", "OffsetCommit"], 0.0),
                     ("m2", ["JoinGroup", "SyncGroup", "OffsetCommit"], 0.1)])
    assert out == RECORDED
    assert ctl.divergence is None and ctl.held >= 1
    assert {e["outcome"] for e in events if e["type"] == "fault_end"} == {"seen"}


def test_a_divergence_is_reported_where_the_stream_differs():
    events = []
    ctl = Imposer(Imposed(RECORDED), apis=("JoinGroup", "SyncGroup", "OffsetCommit"), bound_s=0.3,
                  emit=lambda t, **f: events.append({"type": t, "mono": time.monotonic(), "wall": 1.0, **f}))
    # live, m2 never sends its SyncGroup: m2's OffsetCommit is its SyncGroup's place no more, and m1's OffsetCommit
    # waits for m2's SyncGroup and OffsetCommit recorded before it until the bound runs out
    out = _run(ctl, [("m1", ["JoinGroup", "SyncGroup", "OffsetCommit"], 0.0), ("m2", ["JoinGroup"], 0.0)])
    assert ctl.divergence == {"member": "m1", "api": "OffsetCommit", "position": 1, "waited_s": ctl.divergence[
        "waited_s"], "waiting_for": [["m2", "SyncGroup", 1], ["m2", "OffsetCommit", 1]],
        "why": "m1's OffsetCommit #1 waited 0.3 s for m2's SyncGroup #1, m2's OffsetCommit #1, recorded before it"}
    assert ctl.divergence["waited_s"] >= 0.3 and out[-1] == ("m1", "OffsetCommit")
    diverged = [e for e in events if e["type"] == "order_diverged"]
    assert len(diverged) == 1 and hs.validate_line(HEADER, diverged[0]) == []


def test_a_request_beyond_the_record_diverges_at_once():
    """m1 joins twice (a SyncGroup between: a second join, not a resend) where the record has one join of it."""
    ctl = Imposer(Imposed(RECORDED), apis=("JoinGroup",), bound_s=5.0, emit=lambda *a, **f: None)
    t0 = time.monotonic()
    _run(ctl, [("m1", ["JoinGroup", "SyncGroup", "JoinGroup"], 0.0), ("m2", ["JoinGroup"], 0.0)])
    assert time.monotonic() - t0 < 2.0
    assert ctl.divergence["why"] == "m1 sent JoinGroup #2; the recorded order has 1"


# m1 and m2 join, sync and commit, m2 first; m1's join took two JoinGroups in the record (its first answered
# MEMBER_ID_REQUIRED, sent again with the member id the answer gave), m2's one (its one was answered at once)
RETRIED = [("m2", "JoinGroup"), ("m1", "JoinGroup"), ("m1", "JoinGroup"), ("m2", "SyncGroup"), ("m1", "SyncGroup"),
           ("m1", "OffsetCommit"), ("m2", "OffsetCommit")]
IMPOSED = ("JoinGroup", "SyncGroup", "LeaveGroup", "OffsetCommit")


def test_a_join_sent_again_after_member_id_required_is_one_step_of_the_order():
    """Live, the retry falls the other way: m1's join takes one JoinGroup, m2's two, and m1 comes first. Counted by
    JoinGroup request, m2's resend would be its JoinGroup #2, which the record has not (a divergence at once), and m1's
    SyncGroup would wait for m1's own second JoinGroup forever; counted by join, the recorded order is re-imposed:
    m2's join first, then the syncs and commits as recorded. The resend is not held and not counted."""
    events = []
    ctl = Imposer(Imposed(RETRIED), apis=IMPOSED, bound_s=2.0, emit=lambda t, **f: events.append({"type": t, **f}))
    out = _run(ctl, [("m1", ["JoinGroup", "SyncGroup", "OffsetCommit"], 0.0),
                     ("m2", ["JoinGroup", "JoinGroup", "SyncGroup", "OffsetCommit"], 0.1)])
    assert ctl.divergence is None, ctl.divergence
    resend = [i for i, x in enumerate(out) if x == ("m2", "JoinGroup")][1]  # it may go on before m1's or after
    assert out[:resend] + out[resend + 1:] == [("m2", "JoinGroup"), ("m1", "JoinGroup"), ("m2", "SyncGroup"),
                                               ("m1", "SyncGroup"), ("m1", "OffsetCommit"), ("m2", "OffsetCommit")]
    assert ctl.imposed.keys == [("m2", "JoinGroup", 1), ("m1", "JoinGroup", 1), ("m2", "SyncGroup", 1),
                                ("m1", "SyncGroup", 1), ("m1", "OffsetCommit", 1), ("m2", "OffsetCommit", 1)]
    assert ctl.held >= 1 and {e["outcome"] for e in events if e["type"] == "fault_end"} == {"seen"}


def test_a_second_join_where_the_record_has_a_resend_diverges():
    """The twin: live, m2 joins, syncs and joins again (a rebalance the record has not: the SyncGroup between makes
    the second JoinGroup a join of its own, not a resend), so the order diverged, and the replay says where."""
    events = []
    ctl = Imposer(Imposed(RETRIED), apis=IMPOSED, bound_s=2.0,
                  emit=lambda t, **f: events.append({"type": t, "mono": time.monotonic(), "wall": 1.0, **f}))
    _run(ctl, [("m1", ["JoinGroup", "SyncGroup", "OffsetCommit"], 0.0),
               ("m2", ["JoinGroup", "SyncGroup", "JoinGroup"], 0.1)])
    assert ctl.divergence is not None
    assert ctl.divergence["why"] == "m2 sent JoinGroup #2; the recorded order has 1", ctl.divergence
    assert [e["member"] for e in events if e["type"] == "order_diverged"] == ["m2"]


def test_a_chain_applies_the_perturbations_and_the_order():
    ctl = Chain(Explorer([Perturbation("x1", "m2", "JoinGroup", 1, action="delay", delay_s=0.2)],
                         emit=lambda *a, **f: None), None,
                Imposer(Imposed([("m2", "JoinGroup"), ("m1", "JoinGroup")]), apis=("JoinGroup",), bound_s=2.0,
                        emit=lambda *a, **f: None))
    assert _run(ctl, [("m1", ["JoinGroup"], 0.0), ("m2", ["JoinGroup"], 0.0)]) == [("m2", "JoinGroup"),
                                                                                 ("m1", "JoinGroup")]


def test_the_recorded_order_is_read_from_order_events_by_forwarding_time():
    J, S, H = API_KEYS["JoinGroup"], API_KEYS["SyncGroup"], API_KEYS["Heartbeat"]
    events = [{"type": "order", "member": "m1", "rows": [[1, J, 1.0, 1.0, 1.5], [2, S, 1.6, 3.0, 3.1],
                                                         [3, H, 1.7, 1.7, 1.8]]},
              {"type": "fault_start"},
              {"type": "order", "member": "m2", "rows": [[1, J, 0.5, 2.0, 2.5], [2, S, 2.6, None, None]]}]
    assert recorded_order(events) == [("m1", "JoinGroup"), ("m2", "JoinGroup"), ("m1", "SyncGroup")]


def test_shrinking_keeps_the_fewest_that_still_fail():
    a = Perturbation("x1", "m1", "SyncGroup", 2, action="hold", until=("m2",), bound_s=3.0)
    b = Perturbation("x2", "m2", "Heartbeat", 1, action="delay", delay_s=0.8)
    tried = []

    def fails(ps):  # the failure needs m1's SyncGroup held, at its second position
        tried.append(ps)
        return any(p.member == "m1" and p.action == "hold" and p.nth == 2 for p in ps)
    got = shrink([a, b], fails, max_attempts=10, progress=lambda *_: None)
    assert [Perturbation.of(d) for d in got["to"]] == [a]
    assert got["attempts"] == len(tried) <= 10 and "drop x2: still fails" in got["log"]


def test_explore_refuses_what_it_cannot_do_before_anything_starts():
    cfg = RunConfig(scenario="race-leave-lost", seed=1)
    with pytest.raises(Exception, match="without --repeat"):
        ex.check(cfg, SimpleNamespace(repeat=3, until_fail=False))
    ex.check(cfg, SimpleNamespace(repeat=None, until_fail=True))  # --until-fail stops the exploration
    with pytest.raises(Exception, match="only the local backend"):
        ex.check(RunConfig(scenario="race-leave-lost", seed=1, backend="docker"), SimpleNamespace(repeat=None))


# -- the exploration's loop, with a stand-in run and a cluster whose request proxy only holds a controller

from tests.unit.test_repeat import config, fake_scenarios, own_kafka, stand_in  # noqa: E402,F401


class ProxiedCluster:
    backend, version = "fake", "4.3.1"

    def __init__(self, backend, **kw):
        self.kw, self.calls = kw, []
        self.proxy = SimpleNamespace(order=SimpleNamespace(control=None))
        self.on_event = lambda *a, **f: None

    def request_proxy(self):
        return self.proxy

    def start(self):
        self.calls.append("start")

    def stop(self):
        self.calls.append("stop")


def test_explore_runs_each_with_its_perturbations_on_one_proxied_cluster(tmp_path, own_kafka):
    import json
    from harness.drive.explore_run import explore
    clusters, ran, controls = [], [], []
    inner = stand_in(["pass", "fail", "pass"], ran)

    def run(cfg, *, cluster, progress):
        controls.append(cluster.proxy.order.control)
        return inner(cfg, cluster=cluster, progress=progress)
    rep = explore(config(tmp_path), count=3, until_fail=True, shrink_attempts=0, progress=lambda *_: None, run=run,
                  make_cluster=lambda b, **kw: clusters.append(ProxiedCluster(b, **kw)) or clusters[-1])
    assert [o.status for o in rep.outcomes] == ["pass", "fail"] and rep.exit_code == 1  # stopped at the failure
    assert len(clusters) == 1 and clusters[0].kw["request_faults"] is True and clusters[0].calls == ["start", "stop"]
    assert clusters[0].proxy.order.control is None  # taken off after each run
    saved = json.loads((rep.out_dir / "explore.json").read_text())
    assert saved["strategy"] == "pct" and len(saved["runs"]) == 3 and saved["bounds"]["hold_bound_s"] == 1.0
    for n, ctl in enumerate(controls):
        assert isinstance(ctl, Explorer)
        planned = [Perturbation.of(d) for d in saved["runs"][n]]
        assert sorted(ctl.by_key.values(), key=lambda p: p.pid) == planned
        own = json.loads((Path(rep.outcomes[n].run_dir) / "explore.json").read_text())
        assert own["planned"] == saved["runs"][n] and own["applied"] == [] and own["run"] == n + 1


def test_exact_replay_refuses_a_run_without_a_recorded_order_before_anything_starts(tmp_path, monkeypatch):
    from harness.base.errors import BadInput
    from harness.drive import exact
    from harness.record.history import HistoryWriter
    from harness.record.rundir import RunDir
    d = RunDir.create(tmp_path, "old-run")
    d.write_meta({"config": {}})
    with HistoryWriter(d.history_file("harness.jsonl"), source="harness", member=None) as h:
        h.event("fault_start", fault_id="kp1", kind="hold_request", targets=[], members_affected=[],
                brokers_affected=[1])
    monkeypatch.setattr(exact, "new_backend", lambda *a, **k: pytest.fail("a cluster was made"))
    with pytest.raises(BadInput, match="recorded no order of JoinGroup, SyncGroup, LeaveGroup, OffsetCommit"):
        exact.replay_exact(d.path, runs_root=str(tmp_path / "runs"))
    assert not (tmp_path / "runs").exists()
