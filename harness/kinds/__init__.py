"""Kinds of members a run can drive: what differs between a consumer group and a Kafka Streams
application (their settings, topics, member specs, what "stable" means, what is read at the end).

The runner is the same for every kind; it asks the run's kind (`kind_of(scenario)`) for these parts.
A new kind of member (Connect workers, share groups) is a new module here with the same methods.
"""
from __future__ import annotations

from harness.kinds.connect import ConnectCluster
from harness.kinds.consumer import ConsumerGroup
from harness.kinds.streams import StreamsApp

KINDS = {"consumer": ConsumerGroup, "streams": StreamsApp, "connect": ConnectCluster}


def kind_of(scenario):
    """The kind class of a scenario's members."""
    return KINDS[scenario.kind]
