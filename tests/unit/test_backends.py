"""The backend registry (harness/cluster/backends.py) and how a run, nightly and the CLI choose a backend."""
from __future__ import annotations

import pytest

from harness.kafka import dist as kafka_dist
from harness.cli import main
from harness.cluster import backends
from harness.cluster.backends import backend_class, new_backend, preflight
from harness.cluster.fake import FakeCluster
from harness.cluster.local import LocalCluster
from harness.base.errors import BadInput
from harness.plan.config import RunConfig
from harness.run.resolve import resolve


def cfg(tmp_path, **kw) -> RunConfig:
    return RunConfig(**{"scenario": "scale-out-in", "seed": 1, "kafka_version": "4.3.1",
                        "runs_root": str(tmp_path / "runs"), **kw})


@pytest.fixture
def no_lookup(monkeypatch, tmp_path):
    monkeypatch.setattr(kafka_dist, "resolve", lambda v, progress=None: kafka_dist.KafkaDist("4.3.1", tmp_path))


class Refusing(FakeCluster):
    backend = "refusing"
    checked: list = []

    @classmethod
    def preflight(cls, *, progress=print):
        cls.checked.append(True)
        raise BadInput("no engine answers here and none can be started")


def test_names_map_to_classes_and_an_unknown_one_is_bad_input(tmp_path):
    assert backend_class("local") is LocalCluster
    c = new_backend("local", work_dir=tmp_path, version="4.3.1", brokers=1)
    assert isinstance(c, LocalCluster) and c.n == 1 and c.backend == "local"
    with pytest.raises(BadInput, match="unknown backend 'kubernetes'; known: local, docker"):
        backend_class("kubernetes")


def test_a_run_config_with_an_unknown_backend_is_refused_before_anything(tmp_path, no_lookup):
    with pytest.raises(BadInput, match="unknown backend 'k8s'"):
        resolve(cfg(tmp_path, backend="k8s"))
    assert not (tmp_path / "runs").exists()


def test_the_backends_preflight_refuses_before_a_run_directory_exists(tmp_path, monkeypatch, no_lookup):
    monkeypatch.setitem(backends.BACKENDS, "docker", f"{__name__}:Refusing")
    Refusing.checked.clear()
    with pytest.raises(BadInput, match="no engine answers"):
        resolve(cfg(tmp_path, backend="docker"))
    assert Refusing.checked == [True] and not (tmp_path / "runs").exists()
    resolve(cfg(tmp_path))  # the local backend still works: its class has no preflight to refuse


def test_a_run_on_a_shared_cluster_of_another_backend_is_refused(tmp_path, no_lookup):
    with FakeCluster(work_dir=tmp_path / "c") as shared:
        shared.backend = "local"
        with pytest.raises(BadInput, match="asks for the docker backend but shares a cluster of the local one"):
            resolve(cfg(tmp_path, backend="docker"), shared=shared)


def test_the_cli_refuses_an_unknown_backend_in_one_line(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "scale-out-in", "--backend", "nope"])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and "invalid choice: 'nope'" in err[0]


def test_preflight_of_the_local_backend_is_a_no_op():
    preflight("local")


def test_a_partition_between_brokers_needs_the_docker_backend(tmp_path, no_lookup, capsys):
    """broker-partition's file asks for docker; asked for local by name, the plan refuses in one line."""
    assert RunConfig.for_scenario("broker-partition", seed=1).backend == "docker"
    local = RunConfig.for_scenario("broker-partition", seed=1, backend="local", runs_root=str(tmp_path / "runs"))
    assert local.backend == "local"
    with pytest.raises(BadInput, match=r"step 1 \(broker_partition\) .* needs the docker backend"):
        resolve(local)
    assert main(["run", "rack-partition", "--backend", "local", "--runs-root", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rack_partition" in err[0] and not (tmp_path / "runs").exists()


def test_nightly_draws_docker_only_scenarios_only_on_the_docker_backend():
    from harness.drive.nightly import shard_draws
    m = dict(kafka_versions=["4.3.1"], client_versions=[None], protocols=["classic-cooperative", "consumer"])
    local = {d.scenario for d in shard_draws(2, **m, runs=300)}
    docker = {d.scenario for d in shard_draws(2, **m, runs=300, backend="docker")}
    assert not local & {"broker-partition", "rack-partition"} and {"broker-partition", "rack-partition"} <= docker
