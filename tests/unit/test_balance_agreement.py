"""The runner's stable wait and the checker agree on "complete and balanced", for each kind of group.

Verify that one history, written to a run's history directory, is called stable by the runner's wait (the
kind's `settled` over the `Observer`, through `Waits.wait_stable`) exactly when the checker judges its end
state balanced (`convergence_balance`, `task_balance`, `connect_balance` over `History.load`), on balanced and
unbalanced cases, and that both sides reach the verdict through the same function of `harness.invariants.balance`.
Setup: hand-made histories (histbuild, streamsbuild, connectbuild) written with the history writer; a fake
clock and member pool for the wait.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

import connectbuild as cb
import histbuild as hb
import streamsbuild as sb
from harness.record.history import History
from harness.record.format import HistoryWriter
from harness.invariants import CheckSettings, balance, convergence
from harness.invariants.connect import ConnectCheckSettings, check_balance
from harness.invariants.streams import StreamsCheckSettings, check_task_balance
from harness.plan.kinds.checks import checks_of
from harness.kinds.connect import SINK, SOURCE, ConnectCluster
from harness.kinds.consumer import ConsumerGroup
from harness.kinds.streams import StreamsApp
from harness.run.observe import Observer
from harness.plan.config import RunConfig
from harness.plan.scenarios import SCENARIOS
from harness.plan.topics import Topic, run_topics
from harness.run.waits import Waits
from runctx import context


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


def _write(hdir: Path, events: list[dict]) -> Path:
    with HistoryWriter(hdir / "history.jsonl", source="harness") as w:
        for e in sorted(events, key=lambda e: e["mono"]):
            w.record(e)
    return hdir


def _wait(kind, hdir: Path, topics: list[str], live: set[str]) -> bool:
    """The runner's stable wait over the history written so far (the whole of it here)."""
    clock, recorded = _Clock(), []
    pool = SimpleNamespace(reap=lambda: None, live=lambda: [SimpleNamespace(member_id=m) for m in sorted(live)])
    waits = Waits(observer=Observer(hdir, topics), pool=pool, kind=kind, cfg=SimpleNamespace(stable_s=2.0),
                  event=lambda ty, **f: recorded.append(ty), say=lambda *a: None, clock=clock, sleep=clock.sleep)
    stable = waits.wait_stable("agreement", timeout_s=10.0)
    assert stable == ("wait_timeout" not in recorded)
    return stable


@pytest.fixture
def calls(monkeypatch):
    """Who called which rule of `harness.invariants.balance`: (rule, calling module)."""
    import sys
    seen = []
    for rule in ("consumer", "streams", "connect"):
        real = getattr(balance, rule)

        def spy(*a, _real=real, _rule=rule, **kw):
            seen.append((_rule, sys._getframe(1).f_globals["__name__"]))
            return _real(*a, **kw)
        monkeypatch.setattr(balance, rule, spy)
    return seen


# -- a consumer group over two topics, one member subscribing by a regex
RUN = "r1"
TOPICS = run_topics(RUN, (("orders", 1), ("payments", 3)), partitions=0)
O, P = (t.real for t in TOPICS)


def _consumer_history(regex: str, extra=()) -> list[dict]:
    """a subscribes by `regex` and holds nothing; b holds payments 0-2, c orders-0; from t=1 to t=40."""
    return [hb.run_start(0.0), *hb.join("a", 0.1, subscription=[regex]), *hb.join("b", 0.2, subscription=[P]),
            hb.assigned("b", 0.7, [(P, 0), (P, 1), (P, 2)]), *hb.join("c", 0.3, subscription=[O]),
            hb.assigned("c", 0.8, [(O, 0)]), *extra, hb.run_end(40.0)]


@pytest.mark.parametrize("regex, extra, balanced", [
    (f"^t-{RUN}-ord.*", (), True),  # a may take only orders: 0 against c's 1, balanced
    (f"^t-{RUN}-pay.*", (), False),  # a could take one of b's 3 payments
    (f"^t-{RUN}-(orders|payments)$", (), False),
    (f"^t-{RUN}-ord.*", [hb.revoked("b", 5.0, [(P, 2)])], False),  # payments-2 unowned: incomplete
    (f"^t-{RUN}-ship.*", (), True),  # a's regex takes none of the run's topics: 0 against 3 is balanced
    (f"^t-{RUN}-ord.*", [hb.revoked("c", 5.0, [(O, 0)]), hb.assigned("b", 5.0, [(O, 0)])], False),  # a could take it
    ("^nothing", [hb.revoked("b", 5.0, [(P, 2)]), hb.assigned("a", 5.0, [(P, 2)])], False),  # counts 2/1/1, but a
    # holds a partition of a topic it does not subscribe to
])
def test_a_consumer_groups_stable_wait_and_its_judgment_agree(tmp_path, calls, regex, extra, balanced):
    hdir = _write(tmp_path, _consumer_history(regex, extra))
    kind = ConsumerGroup(context(SimpleNamespace(cfg=None), run_id=RUN, topics=TOPICS))
    stable = _wait(kind, hdir, [O, P], {"a", "b", "c"})
    v = convergence.check(History.load(hdir), CheckSettings(topics=((O, 1), (P, 3)), max_poll_interval_s=10.0))
    assert stable == balanced
    assert (v.status == "valid") == balanced, v.message
    assert v.measurements["complete"] and v.measurements["balanced"] if balanced else v.status == "invalid"
    assert {c for _, c in calls} == {"harness.kinds.consumer", "harness.invariants.convergence"}


# -- a Kafka Streams application
def _streams_kind(tmp_path: Path, partitions: int, standbys: int) -> StreamsApp:
    cfg = RunConfig.for_scenario("streams-scale-out", seed=1, partitions=partitions,
                                 streams_settings=(("num.standby.replicas", standbys),))
    sc = SCENARIOS["streams-scale-out"]
    plan = SimpleNamespace(cfg=cfg, scenario=sc, settings=checks_of("streams").settings(cfg, sc), racks=("r0",), schedule=())
    return StreamsApp(context(plan, group_id="g-run", topics=[Topic("", "t-run", partitions)],
                              run_dir=SimpleNamespace(path=tmp_path)))


T = sb.T


@pytest.mark.parametrize("standbys, assignment, balanced", [
    (1, {"m1": (T[0:2], T[2:4]), "m2": (T[2:4], T[0:2])}, True),
    (1, {"m1": (T[0:3], T[3:4]), "m2": (T[3:4], T[0:3])}, False),  # actives 3 against 1
    (0, {"m1": (T[0:2], ()), "m2": (T[2:4], ())}, True),
    (0, {"m1": (T[0:2], T[2:3]), "m2": (T[2:4], ())}, False),  # a warmup left: still probing
    (1, {"m1": (T[0:2], T[2:3]), "m2": (T[2:4], T[0:2])}, False),  # task 0_3 lacks its standby
])
def test_a_streams_apps_stable_wait_and_its_judgment_agree(tmp_path, calls, standbys, assignment, balanced):
    _streams_agree(tmp_path, 4, standbys, assignment, balanced, calls)


def test_streams_active_plus_standby_counts_are_one_rule_too(tmp_path, calls):
    """Six tasks, one standby each, on three instances: actives 2/2/2 but active + standby 2/4/6, beyond the
    checker's stateful slack of 2 (the runner used to wait for the actives only)."""
    assignment = {"m1": (T[0:2], ()), "m2": (T[2:4], T[4:6]), "m3": (T[4:6], T[0:4])}
    _streams_agree(tmp_path, 6, 1, assignment, False, calls)


def _streams_agree(tmp_path, partitions, standbys, assignment, balanced, calls) -> None:
    kind = _streams_kind(tmp_path, partitions, standbys)
    evs = [sb.run_start(0.0)]
    for i, (m, (act, stb)) in enumerate(sorted(assignment.items())):
        evs += [*sb.join(m, 0.1 * (i + 1)), *sb.run(m, 2.0, act, stb)]
    hdir = _write(tmp_path / "history", evs + [sb.run_end(30.0)])
    stable = _wait(kind, hdir, ["t-run"], set(assignment))
    v = check_task_balance(History.load(hdir), StreamsCheckSettings.from_dict(kind.streams_check_settings()))
    assert stable == balanced
    assert (v.status == "valid") == balanced, v.message
    assert {c for _, c in calls} == {"harness.kinds.streams", "harness.invariants.streams.placement"}


# -- a Kafka Connect cluster: the source connector's 4 tasks and the sink's 3 on three workers
def _connect_kind(tmp_path: Path) -> ConnectCluster:
    cfg = RunConfig.for_scenario("connect-worker-kill", seed=1)
    sc = SCENARIOS["connect-worker-kill"]
    plan = SimpleNamespace(cfg=cfg, scenario=sc, settings=checks_of("connect").settings(cfg, sc), racks=("r0",),
                           kafka_version="4.3.1")
    kind = ConnectCluster(context(plan, group_id="g-run", topics=[Topic("", "t-run", cfg.partitions)],
                                  run_dir=SimpleNamespace(path=tmp_path), clock=lambda: 0.0))
    kind.connectors_created, kind._status_at = True, float("inf")  # no REST calls here
    return kind


UNITS = [(SOURCE, i) for i in range(4)] + [(SINK, i) for i in range(3)]


@pytest.mark.parametrize("connectors, tasks, balanced", [
    ({"m1": [SOURCE], "m2": [SINK]}, {"m1": UNITS[0:3], "m2": UNITS[3:5], "m3": UNITS[5:7]}, True),
    ({"m1": [SOURCE], "m2": [SINK]}, {"m1": UNITS}, False),  # every task on m1 (the runner used to call it stable)
    ({"m1": [SOURCE, SINK]}, {"m1": UNITS[0:3], "m2": UNITS[3:5], "m3": UNITS[5:7]}, False),  # connectors 2/0/0
    ({"m1": [SOURCE], "m2": [SINK]}, {"m1": UNITS[0:3], "m2": UNITS[3:5], "m3": UNITS[5:6]}, False),  # one missing
    ({"m1": [SOURCE], "m2": [SINK]}, {"m1": UNITS[0:3], "m2": UNITS[2:5], "m3": UNITS[5:7]}, False),  # one twice
])
def test_a_connect_clusters_stable_wait_and_its_judgment_agree(tmp_path, calls, connectors, tasks, balanced):
    kind = _connect_kind(tmp_path)
    evs = [cb.run_start(0.0, kind="connect"), *cb.worker("m1", 1.0, 1), *cb.worker("m2", 1.0, 2),
           *cb.worker("m3", 1.0, 3)]
    evs += [cb.conn_started(m, 5.0, c) for m, cs in connectors.items() for c in cs]
    evs += [cb.task_started(m, 5.0, n, c) for m, ts in tasks.items() for c, n in ts]
    hdir = _write(tmp_path / "history", evs + [cb.drained(20.0), cb.run_end(30.0)])
    stable = _wait(kind, hdir, ["t-run"], {"m1", "m2", "m3"})
    v = check_balance(History.load(hdir), ConnectCheckSettings.from_dict(kind.connect_check_settings()))
    assert stable == balanced
    assert (v.status == "valid") == balanced, v.message
    assert {c for _, c in calls} == {"harness.kinds.connect", "harness.invariants.connect.balance"}
