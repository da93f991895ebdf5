"""The docker backend against a real engine: clients only ever see the proxy, a partitioned broker is cut
off from the quorum while its clients still reach it, Ctrl-C leaves no container or network behind, and
a machine with no engine that cannot start one gets one line, exit 2.

The engine is Debian's dockerd, started by the harness when none answers (`./dev setup` installs it);
the images are built on first use (a few minutes cold, cached by content after).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from confluent_kafka.admin import AdminClient

from harness.cluster import docker_engine
from harness.cluster.docker import LABEL_CLUSTER, LABEL_PID, DockerCluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def engine():
    try:
        return docker_engine.client_for(docker_engine.ensure_engine(progress=print))
    except Exception as e:  # a machine that cannot run an engine: the tests below say why they did not run
        pytest.skip(f"no Docker engine here: {e}")


@pytest.fixture(scope="module")
def cluster(engine, tmp_path_factory):
    with DockerCluster(work_dir=tmp_path_factory.mktemp("docker"), version="latest", progress=print) as c:
        yield c
    left = engine.containers.list(all=True, filters={"label": f"{LABEL_CLUSTER}={c.tag}"})
    assert not left and not engine.networks.list(filters={"label": f"{LABEL_CLUSTER}={c.tag}"})


def test_metadata_advertises_only_the_proxy_and_brokers_log_to_the_host(cluster):
    md = cluster.admin().list_topics(timeout=10)
    assert {b.port for b in md.brokers.values()} == cluster.proxy_ports() and len(md.brokers) == 3
    assert not cluster.client_ports()  # no broker listener is published on the host at all
    assert all("Kafka Server started" in cluster.broker_log_path(b).read_text() or
               "KafkaRaftServer" in cluster.broker_log_path(b).read_text() for b in cluster.broker_ids())


def _alone(cluster, nid):
    """What the broker itself answers through its own proxy port (its clients' view): a fresh client's first
    metadata request goes to its one bootstrap address."""
    return AdminClient({"bootstrap.servers": f"127.0.0.1:{cluster.nodes[nid].proxy_port}", "log_level": 0}) \
        .list_topics(timeout=5)


def test_a_partitioned_broker_leaves_the_quorum_while_its_clients_still_reach_it(cluster):
    cluster.create_topic("t-partition", partitions=3, replication=3)
    victim = 3
    cluster.partition_broker(victim)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and victim in _alone(cluster, 1).brokers:
            time.sleep(0.5)
        assert victim not in _alone(cluster, 1).brokers, "the quorum never fenced the partitioned broker"
        assert _alone(cluster, victim).brokers, "the partitioned broker's clients could not reach it"
    finally:
        cluster.heal_partitions()
    cluster.wait_for_brokers({victim}, timeout_s=90)
    assert victim in cluster.registered_brokers()


def test_ctrl_c_on_a_docker_run_leaves_no_container_or_network(engine, tmp_path):
    cmd = [sys.executable, "-m", "harness", "run", "scale-out-in", "--backend", "docker", "--seed", "1",
           "--runs-root", str(tmp_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if "stable (initial assignment)" in line:
                break
        assert engine.containers.list(all=True, filters={"label": f"{LABEL_PID}={proc.pid}"}), "".join(seen)
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, "".join(seen) + rest
    assert not engine.containers.list(all=True, filters={"label": f"{LABEL_PID}={proc.pid}"})
    assert not engine.networks.list(filters={"label": f"{LABEL_PID}={proc.pid}"})
    for args in (["ps", "-a"], ["network", "ls"]):  # as a user checks it
        out = subprocess.run(["docker", *args], capture_output=True, text=True,
                             env={**os.environ, "DOCKER_HOST": docker_engine.ensure_engine()}).stdout
        assert f"h{proc.pid}-" not in out, out
    run_dir = next(p for p in tmp_path.iterdir() if p.is_dir())
    assert (run_dir / "STATUS").read_text().startswith("incomplete")
    assert json.loads((run_dir / "run.json").read_text())["backend"] == "docker"


def test_no_engine_and_none_can_start_is_one_line_and_exit_2(tmp_path):
    """A cache with no engine of the harness's, DOCKER_HOST unset, no dockerd and no apt-get on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("java", "go", "mvn"):
        found = subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip()
        if found:
            os.symlink(found, bin_dir / tool)
    env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
    env.update(PATH=str(bin_dir), HARNESS_CACHE=str(tmp_path / "cache"))
    if docker_engine.answers(f"unix://{docker_engine.SYSTEM_SOCKET}"):
        pytest.skip("an engine answers on the system socket here; the harness would use it")
    r = subprocess.run([sys.executable, "-m", "harness", "run", "scale-out-in", "--backend", "docker",
                        "--runs-root", str(tmp_path / "runs")], capture_output=True, text=True, env=env, timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "dockerd" in lines[0], r.stderr
    assert not (tmp_path / "runs").exists()
