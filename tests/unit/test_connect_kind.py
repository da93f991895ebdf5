"""The Connect kind's pure parts: the generated worker config, the check settings, "stable" over the observer."""
from pathlib import Path
from types import SimpleNamespace

from harness.kinds.connect import SINK, SOURCE, ConnectCluster
from harness.plan.kinds.connect import connect_settings
from harness.plan.config import RunConfig
from harness.record.rundir import RunDir
from harness.plan.scenarios import SCENARIOS
from harness.plan.topics import Topic
from runctx import context


def _kind(tmp_path: Path, **given) -> ConnectCluster:
    cfg = RunConfig.for_scenario("connect-worker-kill", seed=1, **given)
    sc = SCENARIOS["connect-worker-kill"]
    plan = SimpleNamespace(cfg=cfg, scenario=sc, settings=connect_settings(cfg, sc), racks=("r0", "r1", "r2"),
                           kafka_version="4.3.1")
    ctx = context(plan, group_id="g-run", topics=[Topic("", "t-run", cfg.partitions)], run_dir=RunDir(tmp_path),
                  clock=lambda: 0.0, cluster=SimpleNamespace(bootstrap=lambda: "127.0.0.1:9092"))
    kind = ConnectCluster(ctx)
    kind.command = ("java", "HarnessWorker")
    return kind


def test_each_slot_gets_a_worker_config_of_its_own(tmp_path):
    kind = _kind(tmp_path, protocol="compatible", connect_settings=(("scheduled.rebalance.max.delay.ms", 0),))
    a, b = kind.member_spec(0), kind.member_spec(1)
    assert a.command[:2] == ("java", "HarnessWorker") and a.command[-1].endswith("worker-slot0.properties")
    props = dict(line.split("=", 1) for line in Path(a.command[-1]).read_text().splitlines())
    assert props["group.id"] == "g-run" and props["connect.protocol"] == "compatible"
    assert props["scheduled.rebalance.max.delay.ms"] == "0" and props["session.timeout.ms"] == "6000"
    assert props["config.storage.topic"] == "g-run-configs" and props["plugin.discovery"] == "service_load"
    assert kind.member_spec(0).command[-1] == a.command[-1] and kind.ports[0] != kind.ports[1]
    assert props["listeners"] == f"http://127.0.0.1:{kind.ports[0]}" and b.start_wait_s == 90.0


def test_the_check_settings_name_the_connectors_and_the_run_delay(tmp_path):
    s = _kind(tmp_path).connect_check_settings()
    assert s["scheduled_delay_s"] == 10.0 and s["tasks"] == {SOURCE: 4, SINK: 3}
    assert list(s["source_connectors"]) == [SOURCE] and list(s["sink_connectors"]) == [SINK]
    wrong = _kind(tmp_path, misbehave="wrong-delay")  # runs the run's delay, records three times it
    assert wrong.connect_check_settings()["scheduled_delay_s"] == 10.0
    conf = wrong._worker_config(0)
    assert (conf["scheduled.rebalance.max.delay.ms"], conf["harness.misreport.scheduled.rebalance.max.delay.ms"]) == \
        ("10000", "30000")
    only_source = _kind(tmp_path, connect_settings=(("harness.sink.tasks", 0),))
    assert list(only_source.connect_check_settings()["connectors"]) == [SOURCE] and not only_source.drains


def test_stable_means_every_unit_running_once(tmp_path):
    kind = _kind(tmp_path)
    kind.connectors_created = True
    kind._status_at = float("inf")  # no REST calls here
    tasks = {(c, i) for c, n in ((SOURCE, 4), (SINK, 3)) for i in range(n)}
    obs = SimpleNamespace(connect={"m1": {"connectors": {SOURCE, SINK}, "tasks": set(tasks)}})
    assert kind.settled(obs, {"m1"})[0]
    obs.connect["m2"] = {"connectors": set(), "tasks": {(SOURCE, 0)}}
    assert not kind.settled(obs, {"m1", "m2"})[0]  # task 0 on two workers
    assert kind.settled(obs, {"m1"})[0]  # m2 gone
