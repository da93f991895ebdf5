"""Scenarios only a network of containers gives (broker partitions), on the docker backend.

Verify: every invariant holds through each scenario that needs the docker backend (`backend = "docker"`
in its file), on each group protocol.
Setup: the session cluster when the suite runs with `--harness-backend docker`; otherwise a 3-broker docker
cluster of this module's own (containers from images built on this machine; an engine is started if
none answers), so that `./dev smoke` covers both backends.
Then: the scenario's seeded schedule; the run directory lands under --harness-runs-root.
"""
import pytest

from harness.suite.plugin import assert_run_passes
from harness.plan.scenarios import SCENARIOS

#: the smoke case: the coordinator partitioned from the quorum, on KIP-848's protocol
SMOKE = ("broker-partition", "consumer")


def _cases():
    for s in SCENARIOS.values():
        if s.backend != "docker":
            continue
        for p in s.protocols:
            yield pytest.param(s.name, p, marks=[pytest.mark.smoke if (s.name, p) == SMOKE else pytest.mark.nightly],
                               id=f"{s.name}-{p}")


@pytest.fixture(scope="module")
def docker_cluster(pytestconfig, runs_root, request):
    if pytestconfig.getoption("harness_backend") == "docker":
        yield request.getfixturevalue("kafka_cluster")
        return
    from harness.cluster.backends import new_backend, preflight
    from harness.cluster.base import BrokerSettings
    from harness.base.errors import HarnessError
    try:
        preflight("docker")
    except HarnessError as e:
        pytest.fail(f"the docker backend cannot run here: {e}", pytrace=False)
    cluster = new_backend("docker", work_dir=runs_root / "cluster-docker", settings=BrokerSettings.for_brokers(3),
                          version=pytestconfig.getoption("harness_kafka_version"))
    with cluster:
        yield cluster


@pytest.mark.parametrize("scenario,group_protocol", list(_cases()))
def test_docker_scenario(scenario, group_protocol, docker_cluster, request, pytestconfig, runs_root, harness_repeat):
    from harness.suite.plugin import run_on, seed_for
    from harness.run.runner import RunConfig
    cfg = RunConfig.for_scenario(scenario, protocol=group_protocol,
                                 seed=seed_for(pytestconfig, request.node.nodeid, harness_repeat),
                                 kafka_version=pytestconfig.getoption("harness_kafka_version"),
                                 runs_root=str(runs_root), backend="docker")
    assert_run_passes(run_on(request, cfg, docker_cluster))  # through the pool when docker_cluster is the session's
