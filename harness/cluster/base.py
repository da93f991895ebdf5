"""The cluster backend interface: what a scenario may do to a Kafka cluster.

Small core (start, bootstrap, stop) with the abilities apart, as Jepsen keeps its DB protocol apart
from killing and pausing: a backend that cannot pause simply does not implement `Pausable`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol, runtime_checkable

EventSink = Callable[..., None]  # sink(type_, **fields): records a harness event


def noop(*_a, **_k) -> None:
    """An event sink that records nothing."""


@dataclass(frozen=True)
class BrokerSettings:
    """Broker and group settings tuned down for quick tests; recorded in every run."""

    num_partitions: int = 6
    replication_factor: int = 3
    min_insync_replicas: int = 2
    group_initial_rebalance_delay_ms: int = 1000  # the first instances of a run join one generation
    group_min_session_timeout_ms: int = 1000
    consumer_session_timeout_ms: int = 6000
    consumer_heartbeat_interval_ms: int = 500
    extra: dict = field(default_factory=dict)  # `--broker-set KEY=VALUE`: over everything above

    @classmethod
    def for_brokers(cls, brokers: int, extra: dict | None = None) -> "BrokerSettings":
        """The defaults for a cluster of `brokers` nodes (replication no wider than the cluster), plus extra."""
        return cls(replication_factor=min(3, brokers), min_insync_replicas=min(2, brokers), extra=dict(extra or {}))

    def properties(self) -> dict[str, str]:
        props = {
            "num.partitions": self.num_partitions,
            "default.replication.factor": self.replication_factor,
            "min.insync.replicas": self.min_insync_replicas,
            "offsets.topic.replication.factor": self.replication_factor,
            "offsets.topic.num.partitions": 6,
            "transaction.state.log.replication.factor": self.replication_factor,
            "transaction.state.log.min.isr": self.min_insync_replicas,
            "group.initial.rebalance.delay.ms": self.group_initial_rebalance_delay_ms,
            "group.min.session.timeout.ms": self.group_min_session_timeout_ms,
            "group.consumer.session.timeout.ms": self.consumer_session_timeout_ms,
            "group.consumer.min.session.timeout.ms": self.group_min_session_timeout_ms,
            "group.consumer.heartbeat.interval.ms": self.consumer_heartbeat_interval_ms,
            "group.consumer.min.heartbeat.interval.ms": 100,
            # share groups (KIP-932, Kafka 4.1+; older brokers ignore these): a share-group state topic the cluster
            # can hold, and group configs allowed down to the quick timings a run sets (harness/kinds/share.py)
            "share.coordinator.state.topic.replication.factor": self.replication_factor,
            "share.coordinator.state.topic.min.isr": self.min_insync_replicas,
            "share.coordinator.state.topic.num.partitions": 6,
            "group.share.min.session.timeout.ms": self.group_min_session_timeout_ms,
            "group.share.min.heartbeat.interval.ms": 100,
            "group.share.min.record.lock.duration.ms": 1000,
            "auto.create.topics.enable": "false",
            "controlled.shutdown.enable": "true",
            **self.extra,
        }
        return {k: str(v) for k, v in props.items()}


@runtime_checkable
class Backend(Protocol):
    """A running Kafka cluster: start it, reach it, stop it (stop always cleans up). What the runner,
    the nemesis and the kinds of members use; `local.LocalCluster` and `fake.FakeCluster` implement it."""

    work_dir: object
    settings: BrokerSettings
    on_event: EventSink

    @property
    def version(self) -> str: ...
    def start(self) -> None: ...
    def bootstrap(self) -> str: ...
    def broker_ids(self) -> list[int]: ...
    def broker_version(self, broker_id: int) -> str: ...
    def rack_of(self, broker_id: int) -> str: ...
    def racks_in_use(self) -> list[str]: ...
    def broker_log_path(self, broker_id: int) -> Path: ...  # a host file (harness/cluster/broker_log.py reads it)
    def brokers_of_rack(self, rack: str) -> list[int]: ...
    def create_topic(self, topic: str, *, partitions: int, replication: int, config: dict | None = None) -> None: ...
    def admin(self): ...
    def reset_admin(self) -> None: ...
    def notice_exits(self) -> list[int]: ...  # brokers that died on their own since the last look, each recorded once
    def stop(self) -> None: ...


@runtime_checkable
class RackOutages(Protocol):
    def rack_outage(self, rack: str) -> list[int]: ...
    def rack_restore(self, rack: str) -> None: ...


@runtime_checkable
class Leadership(Protocol):
    """Partition leaders read and moved with every broker up (harness/cluster/leadership.py)."""

    def partition_leaders(self, topic: str) -> dict[int, dict]: ...
    def move_leadership(self, topic: str, broker: int) -> dict[int, list[int]]: ...


@runtime_checkable
class Killable(Protocol):
    def kill_broker(self, broker_id: int) -> None: ...
    def terminate_broker(self, broker_id: int) -> None: ...
    def start_broker(self, broker_id: int, *, version: str | None = None) -> None: ...
    def restart_broker(self, broker_id: int) -> None: ...
    def rolling_restart(self) -> None: ...
    def rolling_upgrade(self, version: str) -> None: ...


@runtime_checkable
class Pausable(Protocol):
    def pause_broker(self, broker_id: int) -> None: ...
    def resume_broker(self, broker_id: int) -> None: ...


@runtime_checkable
class Partitionable(Protocol):
    """Network faults between clients and brokers."""

    def add_latency(self, *, latency_ms: int, jitter_ms: int = 0, broker_ids: list[int] | None = None) -> None: ...
    def blackhole(self, *, broker_ids: list[int] | None = None) -> None: ...
    def heal(self) -> None: ...


@runtime_checkable
class BrokerPartitions(Protocol):
    """Network faults between brokers (the docker backend): a broker cut off from the other brokers and
    the controller quorum while its clients still reach it."""

    def partition_broker(self, broker_id: int) -> None: ...
    def heal_partitions(self) -> None: ...


@runtime_checkable
class RequestFaults(Protocol):
    """Faults on chosen Kafka requests (the local backend, started with `request_faults`): the request proxy
    (harness/kproxy/) in the client path, or None when the cluster was started without it."""

    def request_proxy(self): ...
