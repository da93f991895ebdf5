"""Verify: when the brokers refuse DescribeConfigs, a consumer-protocol run's bounds are unknown, naming what was
missing, never judged with Kafka's documented defaults (45 s session, 5 s heartbeat) while the brokers run 6 s.

Setup: a 3-broker local cluster of the newest Kafka release (the harness's tuned-down broker settings: the group
session timeout 6 s) with the request proxy in the client path; an `error_response` rule answers every
DescribeConfigs request, of any client, with CLUSTER_AUTHORIZATION_FAILED (as brokers whose authorizer refuses it
would: a real DescribeConfigs response, each resource asked for refused). In a consumer-group run only the
harness's own admin client sends DescribeConfigs: the reading of the group settings at the run's start. Then
`member-kill` on the consumer protocol (seed 1) on that cluster.
Then:
- the history's `group_settings` event says the group and every broker were unread, with the brokers' answer;
- `coverage_liveness` and `convergence_balance`, whose bounds need the group's session timeout, are `unknown`,
  naming `consumer.session.timeout.ms` and the refusal; `record_integrity`, which needs no timing, is judged
  (valid); the run's status is not `pass`;
- the same history with the `group_settings` event the brokers give when they answer (read from the cluster once
  the rule is lifted) is judged on those bounds: `convergence_balance` valid, its bound made of the 6 s read.
"""
import json
import time

import pytest

from harness.cluster.backends import new_backend
from harness.cluster.base import BrokerSettings
from harness.record.history import History
from harness.invariants import judge
from harness.kproxy import error_response
from harness.plan.config import RunConfig
from harness.run.runner import run_scenario

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(pytestconfig, tmp_path_factory):
    c = new_backend("local", work_dir=tmp_path_factory.mktemp("refused"),
                    version=pytestconfig.getoption("harness_kafka_version"), settings=BrokerSettings.for_brokers(3),
                    request_faults=True)
    with c:
        yield c


def test_describe_configs_refused_leaves_the_consumer_protocols_bounds_unknown(cluster, tmp_path):
    rule = cluster.kproxy.install(error_response("DescribeConfigs", error="CLUSTER_AUTHORIZATION_FAILED", count=None))
    try:
        result = run_scenario(RunConfig(scenario="member-kill", protocol="consumer", seed=1,
                                        runs_root=str(tmp_path / "runs")), cluster=cluster)
    finally:
        cluster.kproxy.remove(rule)
    h = History.load(result.run_dir / "history")
    (gs,) = h.of_type("group_settings")
    assert set(gs["unread"]) == {"group", *(f"broker {b}" for b in cluster.broker_ids())}, gs
    assert all("CLUSTER_AUTHORIZATION_FAILED" in why for why in gs["unread"].values()), gs
    assert not gs["broker"] and not gs["group"]
    refusals = [e for e in h.of_type("fault_start") if e.get("api") == "DescribeConfigs"]
    assert refusals and all(e["error"] == "CLUSTER_AUTHORIZATION_FAILED" for e in refusals)

    verdicts = json.loads((result.run_dir / "verdicts.json").read_text())
    for name in ("coverage_liveness", "convergence_balance"):
        v = verdicts[name]
        assert v["status"] == "unknown", (name, v["message"])
        assert "consumer.session.timeout.ms could not be read" in v["message"], v["message"]
        assert "CLUSTER_AUTHORIZATION_FAILED" in v["message"], v["message"]
    assert verdicts["record_integrity"]["status"] == "valid", verdicts["record_integrity"]["message"]
    assert result.status != "pass"

    # the brokers answer again: what they say stands in the same history, and the bounds are judged with it
    from harness.kinds.consumer import BROKER_GROUP_KEYS
    from confluent_kafka.admin import ConfigResource, ResourceType
    cluster.reset_admin()
    deadline = time.monotonic() + 30
    while True:
        try:
            fs = cluster.admin().describe_configs([ConfigResource(ResourceType.BROKER, str(cluster.broker_ids()[0]))],
                                                  request_timeout=10)
            entries = next(iter(fs.values())).result(timeout=15)
            break
        except Exception:  # noqa: BLE001 - the client's cached refusal may take a moment to clear
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
    read = {k: entries[k].value for k in BROKER_GROUP_KEYS if k in entries}
    assert read["group.consumer.session.timeout.ms"] == "6000", read
    answered = {**{k: v for k, v in gs.items() if k not in ("error", "unread")}, "broker": read}
    events = [answered if e.get("type") == "group_settings" else e for e in h.events]
    v = judge(History.from_events(events))["convergence_balance"]
    assert v.status == "valid", v.message
    assert "could not be read" not in v.message
