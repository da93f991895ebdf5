"""Small builders of hand-made Kafka Connect history events for the Connect invariant tests.

Times are `mono` seconds; a task is (connector, number); workers are member ids. Harness events come from histbuild.
"""
from __future__ import annotations

from histbuild import drained, ev, fault_end, fault_start, history, member_exit, member_start, run_end, run_start

from harness.invariants.connect import ConnectCheckSettings

__all__ = ["batch", "conn_started", "conn_stopped", "drained", "fault_end", "fault_start", "history", "member_exit",
           "member_start", "member_stop", "rebalance", "record", "read", "run_end", "run_start", "settings",
           "task_started", "task_stopped", "worker", "cluster"]

SRC = "src"


def _m(type_: str, m: str, t: float, **fields) -> dict:
    return ev(type_, t, "member", member=m, **fields)


def worker(m: str, t: float, port: int, config: dict | None = None) -> list[dict]:
    """A worker's member_start and its `started` event (with its REST URL; `config`: its worker config, none by
    default)."""
    return [member_start(m, t), _m("started", m, t + 0.5, pid=1, protocol="sessioned", group_id="g", topic="t",
                                   instance_id=None, rack=None, client="connect-runtime 4.3.1",
                                   rest_url=f"http://127.0.0.1:{port}",
                                   **({"settings": config} if config is not None else {}))]


def member_stop(m: str, t: float) -> dict:
    return ev("member_stop", t, "harness", member=m)


def task_started(m: str, t: float, n: int, connector: str = SRC, resume: int | None = 0) -> dict:
    return _m("connect_task_started", m, t, connector=connector, task=n, worker=m, kind="source", resume_seq=resume)


def task_stopped(m: str, t: float, n: int, connector: str = SRC) -> dict:
    return _m("connect_task_stopped", m, t, connector=connector, task=n, worker=m, kind="source")


def conn_started(m: str, t: float, connector: str = SRC) -> dict:
    return _m("connect_connector_started", m, t, connector=connector, worker=m)


def conn_stopped(m: str, t: float, connector: str = SRC) -> dict:
    return _m("connect_connector_stopped", m, t, connector=connector, worker=m)


def batch(m: str, t: float, n: int, seq_from: int, seq_to: int, connector: str = SRC) -> dict:
    return _m("connect_batch", m, t, connector=connector, task=n, worker=m, seq_from=seq_from, seq_to=seq_to)


def rebalance(m: str, t: float, leader_port: int, epoch: int = 1) -> dict:
    return _m("connect_rebalance", m, t, leader=f"http://127.0.0.1:{leader_port}/", epoch=epoch, rebalancing=False)


def record(t: float, n: int, seq: int, connector: str = SRC) -> dict:
    return ev("connect_record", t, "harness-output", connector=connector, task=n, seq=seq, partition=0, offset=seq)


def read(t: float, records: int, complete: bool = True) -> dict:
    return ev("connect_read", t, "harness-output", topic="t-src", records=records, complete=complete)


def settings(**kw) -> ConnectCheckSettings:
    base = {"protocol": "sessioned", "scheduled_delay_s": 10.0, "session_timeout_s": 6.0, "reassign_slack_s": 5.0,
            "connectors": [SRC], "source_connectors": [SRC], "tasks": {SRC: 4}, "zombie_tolerance_s": 12.0}
    return ConnectCheckSettings.from_dict({**base, **kw})


def cluster(end: float = 100.0) -> list[dict]:
    """Three workers (m1 the leader, ports 1 2 3); the connector on m1, tasks 0-3 spread 2/1/1, from t=5."""
    return [run_start(0.0, kind="connect"), *worker("m1", 1.0, 1), *worker("m2", 1.0, 2), *worker("m3", 1.0, 3),
            rebalance("m1", 4.0, 1), conn_started("m1", 5.0), task_started("m1", 5.0, 0), task_started("m2", 5.0, 1),
            task_started("m3", 5.0, 2), task_started("m1", 5.0, 3), run_end(end)]
