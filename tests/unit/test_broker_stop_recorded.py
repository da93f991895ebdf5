"""A broker's kill or graceful stop is recorded only when a live broker was there to stop, and only once it is gone
(issue 45): the fake backend, the local backend's stop functions on real child processes standing in for brokers
(no Kafka started), and the docker backend's on stand-in containers.

Setup: FakeCluster started in tmp_path; LocalCluster and DockerCluster objects made without their constructors
(`__new__`), holding only the nodes and the event sink their stop functions use.
"""
from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from harness.base.errors import Indeterminate
from harness.base.procs import Proc
from harness.cluster.docker import DockerCluster
from harness.cluster.fake import FakeCluster
from harness.cluster.local import LocalCluster


def stops(events: list) -> list[dict]:
    return [f for t, f in events if t == "broker_event" and f["what"] in ("kill", "terminate")]


@pytest.mark.parametrize("stop", ["kill_broker", "terminate_broker"])
def test_the_fake_backend_stops_a_live_broker_once_and_records_no_second_stop(tmp_path, stop):
    events = []
    with FakeCluster(work_dir=tmp_path / "c", on_event=lambda t, **f: events.append((t, f))) as cluster:
        getattr(cluster, stop)(1)
        assert [(e["broker"], e["what"]) for e in stops(events)] == [(1, stop.split("_")[0])]
        with pytest.raises(Indeterminate, match="cannot (kill|terminate) broker 1: it has no process"):
            getattr(cluster, stop)(1)
        assert len(stops(events)) == 1  # nothing false recorded of the broker already down
        cluster.start_broker(1)
        getattr(cluster, stop)(1)
        assert len(stops(events)) == 2


def backend_with(cls, proc) -> tuple:
    """A backend of `cls` with one broker whose process (or container) is `proc`, and the events it records."""
    events = []
    cluster = cls.__new__(cls)
    cluster.nodes = {1: SimpleNamespace(proc=proc, version="4.0.0")}
    cluster.on_event = lambda t, **f: events.append((t, f))
    cluster._stopped = set()  # what __init__ makes: the processes the harness stopped (never noticed as died)
    return cluster, events


def local_with(proc) -> tuple[LocalCluster, list]:
    return backend_with(LocalCluster, proc)


def child(tmp_path, code: str) -> Proc:
    return Proc.spawn([sys.executable, "-c", code], log_path=tmp_path / "child.log", name="stand-in broker")


@pytest.mark.parametrize("stop, code", [("kill_broker", -9), ("terminate_broker", -15)])
def test_local_records_the_stop_once_the_process_is_gone(tmp_path, stop, code):
    proc = child(tmp_path, "import time; time.sleep(60)")
    cluster, events = local_with(proc)
    getattr(cluster, stop)(1)
    assert not proc.alive() and cluster.nodes[1].proc is None
    [e] = stops(events)
    assert (e["broker"], e["what"], e["pid"], e["code"]) == (1, stop.split("_")[0], proc.pid, code)


@pytest.mark.parametrize("stop", ["kill_broker", "terminate_broker"])
def test_local_records_nothing_of_a_broker_whose_process_is_not_alive(tmp_path, stop):
    proc = child(tmp_path, "raise SystemExit(3)")
    proc.wait(timeout_s=30)
    cluster, events = local_with(proc)
    with pytest.raises(Indeterminate, match=rf"broker 1: its process {proc.pid} exited on its own \(code 3\)"):
        getattr(cluster, stop)(1)
    cluster.nodes[1].proc = None
    with pytest.raises(Indeterminate, match="broker 1: it has no process"):
        getattr(cluster, stop)(1)
    assert events == []


class Container:
    """A docker-py container as the docker backend's stop functions use it."""

    def __init__(self, status: str, stops: bool = True) -> None:
        self.status, self.stops, self.attrs, self.done = status, stops, {"State": {}}, []

    def reload(self) -> None:
        pass

    def get_wrapped_container(self) -> "Container":
        return self

    def _end(self, how: str, code: int) -> None:
        self.done.append(how)
        if self.stops:
            self.status, self.attrs = "exited", {"State": {"ExitCode": code}}

    def kill(self) -> None:
        self._end("kill", 137)

    def stop(self, timeout: int) -> None:
        self._end("stop", 143)

    def wait(self, timeout: int) -> dict:
        return {"StatusCode": self.attrs["State"].get("ExitCode")}


def docker_with(container) -> tuple[DockerCluster, list]:
    return backend_with(DockerCluster, container)


@pytest.mark.parametrize("stop, code", [("kill_broker", 137), ("terminate_broker", 143)])
def test_docker_records_the_stop_once_the_container_stopped(stop, code):
    c = Container("running")
    cluster, events = docker_with(c)
    getattr(cluster, stop)(1)
    [e] = stops(events)
    assert (e["what"], e["code"]) == (stop.split("_")[0], code) and cluster.nodes[1].proc is None


@pytest.mark.parametrize("stop", ["kill_broker", "terminate_broker"])
def test_docker_records_nothing_of_a_container_not_running_or_not_stopped(stop):
    cluster, events = docker_with(Container("exited"))
    with pytest.raises(Indeterminate, match="broker 1: its container is exited"):
        getattr(cluster, stop)(1)
    cluster, events2 = docker_with(None)
    with pytest.raises(Indeterminate, match="broker 1: it has no container"):
        getattr(cluster, stop)(1)
    cluster, events3 = docker_with(Container("running", stops=False))
    with pytest.raises(Indeterminate, match="still running after the harness's"):
        getattr(cluster, stop)(1)
    assert events == events2 == events3 == []
