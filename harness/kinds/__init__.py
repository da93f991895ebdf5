"""Kinds of members a run can drive: what differs between a consumer group and a Kafka Streams
application (their settings, topics, member specs, what "stable" means, what is read at the end).

The runner is the same for every kind; it asks the run's kind (`kind_of(scenario)`) for these parts. A kind is made
with the run's `RunContext` (harness/run/context.py, built by the runner) and reads nothing else of the run.
A new kind of member (Connect workers, share groups) is a new module here with the same methods, and its
plan-time checks in `checks.py`. The kind classes start members, so they are imported when a run asks for
one, never by importing this package (the plan and the scenario parser import `checks` and the settings).

May import: `base`, `record`, `kafka`, `plan`, `invariants`, `members`, `cluster`.
"""
from __future__ import annotations

from importlib import import_module

KINDS = {"consumer": "harness.kinds.consumer:ConsumerGroup", "streams": "harness.kinds.streams:StreamsApp",
         "connect": "harness.kinds.connect:ConnectCluster", "share": "harness.kinds.share:ShareGroup"}


def kind_of(scenario):
    """The kind class of a scenario's members."""
    module, _, name = KINDS[scenario.kind].partition(":")
    return getattr(import_module(module), name)
