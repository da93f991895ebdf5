"""Kafka Connect settings of a run: the harness's defaults, the scenario's, the run's own (`--connect-set`); checked.

Every check here is a `BadInput` raised before anything starts (docs/connect.md lists the settings). The group
protocol of the workers is the run's `--protocol`: `connect.protocol` eager, compatible or sessioned.
"""
from __future__ import annotations

from functools import partial

from harness.base.errors import BadInput
from harness.plan.kinds.settings import merge, whole
from harness.base.versions import CONNECT_PROTOCOL_SINCE, KIP896_SINCE, OLDEST_CLIENT_FOR_4, dotted, major_minor

_int = partial(whole, "Connect")  # settings[key] as a whole number of at least lo, or BadInput


#: Connect settings of every run unless the scenario or --connect-set says otherwise; tuned for quick tests
CONNECT_DEFAULTS: dict = {
    "scheduled.rebalance.max.delay.ms": 10000,  # Kafka's default is 300000 (5 minutes)
    "rebalance.timeout.ms": 20000,
    "offset.flush.interval.ms": 1000,
    "task.shutdown.graceful.timeout.ms": 5000,
    "worker.sync.timeout.ms": 3000,
    # the sink tasks' consumers (a worker's `consumer.` setting): how soon they see partitions added to their topic;
    # Kafka's default is 300000 (5 minutes), too long for records written to new partitions to be read in a run
    "consumer.metadata.max.age.ms": 5000,
    "harness.source.tasks": 4,  # tasks.max of the HarnessSource connector
    "harness.sink.tasks": 3,  # tasks.max of the HarnessSink connector (0: no sink connector)
    "harness.batch.size": 10,  # records per poll of a source task
    "harness.interval.ms": 200,  # between polls of a source task
}
#: settings given to the workers as they are (the harness.* ones are the harness's)
WORKER_KEYS = ("scheduled.rebalance.max.delay.ms", "rebalance.timeout.ms", "offset.flush.interval.ms",
               "task.shutdown.graceful.timeout.ms", "worker.sync.timeout.ms", "consumer.metadata.max.age.ms")
#: a worker config key with this prefix is not given to Connect: the worker records its value under the rest of
#: the key instead of the one it runs with (the wrong-delay self-test, HarnessWorker.java)
MISREPORT = "harness.misreport."


def connect_settings(cfg, sc) -> dict:
    """The Connect settings of a run (defaults, the scenario's, the run's own), checked: BadInput if wrong."""
    settings = merge("Connect", CONNECT_DEFAULTS, sc.connect, cfg.connect_settings)
    _int(settings, "scheduled.rebalance.max.delay.ms", 0)
    _int(settings, "rebalance.timeout.ms", 1000)
    _int(settings, "offset.flush.interval.ms", 100)
    _int(settings, "task.shutdown.graceful.timeout.ms", 0)
    _int(settings, "worker.sync.timeout.ms", 100)
    _int(settings, "consumer.metadata.max.age.ms", 100)
    if _int(settings, "harness.source.tasks", 0) + _int(settings, "harness.sink.tasks", 0) < 1:
        raise BadInput("a Connect run needs at least one task (harness.source.tasks, harness.sink.tasks)")
    _int(settings, "harness.batch.size", 1)
    _int(settings, "harness.interval.ms", 0)
    return settings


def check_worker_version(version: str, broker_version: str, protocol: str) -> None:
    """BadInput when connect-runtime `version` cannot join brokers of `broker_version` or lacks `protocol`."""
    v, b = major_minor(version), major_minor(broker_version)
    if b >= KIP896_SINCE and v < OLDEST_CLIENT_FOR_4:
        raise BadInput(f"Connect workers on connect-runtime {version} cannot join Kafka {broker_version} brokers: "
                       f"Kafka {dotted(KIP896_SINCE)} serves clients from {dotted(OLDEST_CLIENT_FOR_4)} on (KIP-896)")
    since = CONNECT_PROTOCOL_SINCE[protocol]
    if v < since:
        raise BadInput(f"connect.protocol={protocol} needs connect-runtime {dotted(since)} or newer; "
                       f"the workers run {version}")
