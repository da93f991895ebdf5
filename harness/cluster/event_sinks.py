"""Who hears a shared cluster's events (broker events, the request proxy's records): every run on it now.

A run on a shared cluster attaches its history's `event` while it runs and detaches it at its end; runs that
share the cluster at the same time (harness/drive/pool.py) each hear the cluster's events, and each keeps only
its own history. With no run attached, the cluster's own sink (the one it was made with) hears them.
"""
from __future__ import annotations

import threading

_lock = threading.Lock()


class Fanout:
    """The sink a shared cluster calls while runs are attached: each attached run's sink, in attach order."""

    def __init__(self, base) -> None:
        self.base = base
        self.sinks: list = []

    def __call__(self, type_: str, **fields) -> None:
        with _lock:
            sinks = list(self.sinks) or [self.base]
        for s in sinks:
            s(type_, **fields)


def attach(cluster, sink) -> None:
    """The cluster's events go to sink too, until `detach`."""
    with _lock:
        fan = cluster.on_event
        if not isinstance(fan, Fanout):
            fan = cluster.on_event = Fanout(fan)
        fan.sinks.append(sink)


def detach(cluster, sink) -> None:
    """sink hears no more of the cluster; with no run attached the cluster has its own sink again."""
    with _lock:
        fan = cluster.on_event
        if isinstance(fan, Fanout):
            if sink in fan.sinks:
                fan.sinks.remove(sink)
            if not fan.sinks:
                cluster.on_event = fan.base
