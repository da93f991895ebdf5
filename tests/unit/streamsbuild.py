"""Small builders of hand-made Kafka Streams history events for the Streams invariant tests.

Times are `mono` seconds; tasks are ids like "0_1" (see `T`). Harness events come from histbuild.
"""
from __future__ import annotations

from histbuild import ev, fault_end, fault_start, history, member_exit, member_start, run_end, run_start

from harness.invariants.streams import StreamsCheckSettings

__all__ = ["T", "ev", "fault_end", "fault_start", "history", "member_exit", "member_start", "run_end", "run_start",
           "started", "state", "tasks", "restore", "restore_end", "standby_start", "standby_suspended",
           "task_active", "task_active_end", "processed", "stopped", "join", "run", "move", "leave", "settings",
           "group"]

#: task ids of subtopology 0
T = [f"0_{i}" for i in range(8)]


def _m(type_: str, m: str, t: float, **fields) -> dict:
    return ev(type_, t, "member", member=m, **fields)


def started(m: str, t: float, rack: str | None = None, protocol: str = "classic", threads: int = 1,
            config: dict | None = None) -> dict:
    """m's start; `config`: the Streams settings it writes (`settings`), none by default."""
    return _m("started", m, t, client="kafka-streams", rack=rack, protocol=protocol, threads=threads,
              **({"settings": config} if config is not None else {}))


def state(m: str, t: float, to: str, frm: str = "") -> dict:
    return _m("stream_state", m, t, to=to, **{"from": frm})


def tasks(m: str, t: float, active=(), standby=(), lags: dict | None = None) -> dict:
    """A snapshot; lags default to 0 for every task listed (active running, standbys caught up)."""
    if lags is None:
        lags = {k: 0 for k in [*active, *standby]}
    return _m("tasks", m, t, active={k: "t1" for k in active}, standby={k: "t1" for k in standby}, lags=dict(lags))


def restore(m: str, t: float, task: str, records: int, store: str = "s", start: int = 0, partition: int = 0) -> dict:
    return _m("restore_start", m, t, task=task, store=store, changelog=f"app-{store}-changelog", partition=partition,
              start=start, end=start + records)


def restore_end(m: str, t: float, task: str, restored: int, store: str = "s", partition: int = 0) -> dict:
    return _m("restore_end", m, t, task=task, store=store, changelog=f"app-{store}-changelog", partition=partition,
              restored=restored)


def standby_start(m: str, t: float, task: str, start: int = 0, store: str = "s", partition: int = 0) -> dict:
    return _m("standby_start", m, t, task=task, store=store, changelog=f"app-{store}-changelog", partition=partition,
              start=start)


def standby_suspended(m: str, t: float, task: str, current: int, end: int, reason: str = "promoted",
                      store: str = "s", partition: int = 0) -> dict:
    return _m("standby_suspended", m, t, task=task, store=store, partition=partition, reason=reason, current=current,
              end=end)


def task_active(m: str, t: float, task: str, partitions=(0,)) -> dict:
    return _m("task_active", m, t, task=task, thread="t1", partitions=[["t", p] for p in partitions])


def task_active_end(m: str, t: float, task: str) -> dict:
    return _m("task_active_end", m, t, task=task, thread="t1")


def processed(m: str, t: float, task: str, first: int = 0, last: int = 9, partition: int = 0) -> dict:
    return _m("processed", m, t, task=task, topic="in", partition=partition, first_offset=first, last_offset=last,
              count=last - first + 1)


def stopped(m: str, t: float) -> dict:
    return _m("stopped", m, t)


# -- whole pieces
def join(m: str, t: float, rack: str | None = None) -> list[dict]:
    """The harness starts m at t; it starts and begins its first rebalance."""
    return [member_start(m, t, rack=rack), started(m, t + 0.1, rack=rack),
            state(m, t + 0.2, "REBALANCING", "CREATED")]


def run(m: str, t: float, active=(), standby=(), lags: dict | None = None) -> list[dict]:
    """m ends a rebalance at t: its snapshot, its active tasks initialised, RUNNING."""
    return [tasks(m, t, active, standby, lags), *[task_active(m, t, k) for k in active],
            state(m, t + 0.01, "RUNNING", "REBALANCING")]


def move(m: str, t: float, before, after, standby=(), lags: dict | None = None) -> list[dict]:
    """A rebalance on m at t: tasks it loses are closed, tasks it gains start; RUNNING again 1 s later."""
    out = [state(m, t, "REBALANCING", "RUNNING")]
    out += [task_active_end(m, t + 0.5, k) for k in before if k not in after]
    out += [tasks(m, t + 0.6, after, standby, lags)]
    out += [task_active(m, t + 0.7, k) for k in after if k not in before]
    return out + [state(m, t + 1.0, "RUNNING", "REBALANCING")]


def leave(m: str, t: float, active=(), how: str = "graceful") -> list[dict]:
    """m goes: a graceful close ends its tasks and logs stopped first; a kill is only the harness's exit."""
    if how != "graceful":
        return [member_exit(m, t, how=how)]
    return [state(m, t - 0.5, "PENDING_SHUTDOWN", "RUNNING"), *[task_active_end(m, t - 0.4, k) for k in active],
            tasks(m, t - 0.3), state(m, t - 0.2, "NOT_RUNNING", "PENDING_SHUTDOWN"), stopped(m, t - 0.1),
            member_exit(m, t)]


def settings(**kw) -> StreamsCheckSettings:
    kw.setdefault("tasks", 4)
    return StreamsCheckSettings(**kw)


def group(end: float = 30.0, standby: bool = False, racks=(None, None)) -> list[dict]:
    """m1 active 0_0, 0_1 and m2 active 0_2, 0_3 from t=2 to the end; with `standby`, each backs up the other."""
    a, b = T[:2], T[2:4]
    return [run_start(0.0), *join("m1", 0.1, racks[0]), *join("m2", 0.2, racks[1]),
            *run("m1", 2.0, a, b if standby else ()), *run("m2", 2.0, b, a if standby else ()), run_end(end)]


# -- the producer and the output topic read back after the run
def acked(t: float, partition: int, offset: int, topic: str = "t") -> dict:
    return ev("acked", t, "producer", topic=topic, partition=partition, offset=offset, key=f"k{offset}", seq=offset)


def output(t: float, partition: int, offset: int, out_offset: int = 0, topic: str = "t") -> dict:
    return ev("output", t, "harness-output", topic=topic, partition=partition, offset=offset, out_partition=0,
              out_offset=out_offset)


def output_read(t: float, records: int, complete: bool = True, topic: str = "t") -> dict:
    return ev("output_read", t, "harness-output", topic=topic, output_topic=f"{topic}-out", records=records,
              complete=complete, end_offsets={"0": records})
