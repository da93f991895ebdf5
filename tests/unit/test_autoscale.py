"""The lag arithmetic, the autoscaler's decision rule (harness/nemesis/lag.py), the producer's changeable rate
(harness/members/workload.py `Pacer`, the fake producer) and the `autoscale` action on the fake backend.

Verify: lag sums watermark minus commit, uncommitted partitions from 0; the rule scales out above the
threshold, in only after a calm of cooldown_s, never within cooldown_s of a change, within min and max.
"""
from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from harness.base.errors import BadInput
from harness.nemesis.lag import Autoscaler, Policy, lag_of
from harness.members.workload import Pacer
from runctx import context


def test_lag_sums_the_watermark_minus_the_commit_and_counts_no_commit_from_zero():
    high = {("t", 0): 100, ("t", 1): 50, ("u", 0): 7, ("u", 1): 0}
    committed = {("t", 0): 90, ("t", 1): None, ("u", 0): -1001}  # ("u", 1) not returned at all
    assert lag_of(high, committed) == 10 + 50 + 7 + 0
    assert lag_of(high, {tp: hw for tp, hw in high.items()}) == 0
    assert lag_of({("t", 0): 5}, {("t", 0): 9}) == 0  # a commit past the watermark read a moment before: not -4
    assert lag_of({}, {("t", 0): 3}) == 0


def run(policy: Policy, series, *, members: int, every: float = 1.0):
    """Feed (lag) samples one per `every` seconds; members follow the decisions. Returns [(t, decision)]."""
    scaler, out = Autoscaler(policy), []
    for i, lag in enumerate(series):
        t = i * every
        d = scaler.decide(t, lag, members)
        if d:
            out.append((t, d))
            members += 1 if d == "out" else -1
    return out


P = Policy(scale_out_lag=300, scale_in_lag=50, min_members=2, max_members=4, cooldown_s=5.0)


def test_scale_out_above_the_threshold_then_not_again_within_the_cooldown():
    series = [0, 100, 400, 600, 800, 900, 1000, 1100, 1200, 1300]
    assert run(P, series, members=2) == [(2.0, "out"), (7.0, "out")]


def test_never_beyond_max_members():
    assert run(P, [1000] * 30, members=2) == [(0.0, "out"), (5.0, "out")]  # 2 -> 4, then held at 4
    assert run(P, [1000] * 30, members=4) == []


def test_scale_in_only_after_the_lag_stayed_low_for_the_cooldown():
    # low from t=0, broken at t=3 (lag 60 is not below 50), low again from t=4: the first scale in at t=9
    series = [10, 10, 10, 60, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10]
    assert run(P, series, members=4) == [(9.0, "in"), (14.0, "in")]


def test_never_below_min_members_and_between_thresholds_nothing():
    assert run(P, [0] * 40, members=2) == []
    assert run(P, [0] * 40, members=3) == [(5.0, "in")]
    assert run(P, [100, 200, 299, 300, 51, 50] * 5, members=3) == []


def test_a_burst_and_the_calm_after_it():
    """The scenarios' shape: lag builds (two scale outs, cooldown apart), drains, stays low (two scale ins)."""
    series = [0] * 3 + [200, 400, 700, 900, 1100, 1200, 1250, 1300, 1200, 900] + [500, 100, 20] + [10] * 20
    got = run(P, series, members=2)
    assert got == [(4.0, "out"), (9.0, "out"), (20.0, "in"), (25.0, "in")]  # low from t=15


def test_the_cooldown_after_a_scale_out_holds_a_scale_in_back():
    series = [1000, 0, 0, 0, 0, 0, 0, 0]
    assert run(P, series, members=2) == [(0.0, "out"), (6.0, "in")]  # low from t=1: 5 s at t=6, cooldown since t=0


def test_the_pacer_follows_a_rate_changed_between_records():
    p = Pacer(10, now=100.0)
    assert p.due() == pytest.approx(100.0)  # the first record at once
    p.sent()
    assert p.due() == pytest.approx(100.1)
    assert p.set_rate(100) == 10  # the interval from the last due record shrinks at once
    assert p.due() == pytest.approx(100.01)
    p.sent()
    p.set_rate(1)
    assert p.due() == pytest.approx(101.01)
    with pytest.raises(BadInput, match="above 0"):
        p.set_rate(0)


def test_the_fake_producer_changes_its_rate_while_it_runs(tmp_path):
    from harness.cluster.fake import FakeCluster, FakeWorkload
    cluster = FakeCluster(work_dir=tmp_path / "c")
    cluster.start()
    try:
        cluster.create_topic("t", partitions=2)
        w = FakeWorkload(bootstrap=cluster.bootstrap(), topics=["t"], history_path=tmp_path / "p.jsonl", rate_per_s=2)
        w.start()
        time.sleep(1.0)
        slow = w.sent
        assert w.set_rate(200) == 2 and w.rate == 200
        time.sleep(1.0)
        fast = w.sent - slow
        w.stop()
    finally:
        cluster.stop()
    assert slow <= 4 and fast >= 60, (slow, fast)  # ~2-3 in the first second, ~200 in the next (loose: CI load)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t


def test_the_autoscale_action_records_samples_decisions_and_the_burst(monkeypatch):
    """On stand-ins: a lag series by time, a clock the sleeps advance; the action scales and restores the rate."""
    from harness.nemesis import group as nemesis_group
    from harness.nemesis.core import Nemesis
    from tests.unit.test_nemesis import StubPool, StubWaits

    clock = Clock()
    monkeypatch.setattr(nemesis_group, "time", clock)
    lags = {0: 0, 1: 500, 2: 600, 3: 700, 4: 800, 5: 20}  # by whole second; 20 from t=5 on
    monkeypatch.setattr(nemesis_group, "group_lag", lambda admin, g, topics: lags.get(int(clock.t - 1000), 20))
    waits = StubWaits()
    waits.sleep = lambda s: setattr(clock, "t", clock.t + s)
    producer = SimpleNamespace(rate=50.0)
    producer.set_rate = lambda r: (producer.rate, setattr(producer, "rate", r))[0]
    events = []
    kind = SimpleNamespace(member_spec=lambda slot: SimpleNamespace(rack=None), input_topics=lambda: [("t", 6)])
    resets = []
    cluster = SimpleNamespace(admin=lambda: None, reset_admin=lambda: resets.append(len(events)))
    nem = Nemesis(context(event=lambda t, **f: events.append((t, f)), cluster=cluster, pool=StubPool(), waits=waits),
                  kind=kind, workload=producer)
    nem.add_member()
    nem.add_member()
    info = nem.perform(SimpleNamespace(kind="autoscale", params=dict(
        duration_s=12.0, scale_out_lag=300, scale_in_lag=50, min_members=2, max_members=4, cooldown_s=3.0,
        burst_rate_per_s=175.0, burst_s=4.0)))
    assert [(d["t"], d["scale"], d.get("member")) for d in info["decisions"]] == [
        (1.0, "out", "m3"), (4.0, "out", "m4"), (8.0, "in", "m4"), (11.0, "in", "m3")]
    assert info["samples"][:3] == [[0.0, 0, 2], [1.0, 500, 2], [2.0, 600, 3]] and len(info["samples"]) == 12
    assert info["rates"] == [[0.0, 175.0], [4.0, 50.0]] and producer.rate == 50.0
    assert [(t, f.get("kind")) for t, f in events] == [("fault_start", "autoscale"), ("fault_end", None)]
    assert events[0][1]["targets"] == ["g"] and events[0][1]["members_affected"] == []
    assert resets == [0]  # a fresh admin client before the first lag read (librdkafka 2.16.0, docs/findings.md)


def test_workload_rate_needs_a_producer():
    from harness.base.errors import Indeterminate
    from harness.nemesis.core import Nemesis
    nem = Nemesis(context(cluster=None, pool=None, waits=None), kind=None)
    with pytest.raises(Indeterminate, match="no producer"):
        nem.perform(SimpleNamespace(kind="workload_rate", params={"rate_per_s": 10.0}))
