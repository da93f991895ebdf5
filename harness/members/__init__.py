"""Members: the processes that join a group and write their history (docs/member-contract.md).

- `pool`: spawning, stopping, killing, pausing members; their lives in the harness history
- `python_member`: the Python member on confluent-kafka (run as a script under any client install)
- `clients`: isolated confluent-kafka installs, one per version
- (`harness.kafka.jvm_build` builds the Java ones: libraries, the shared sources, the history schema's constants
  generated from harness/record/history.schema.json and the vocabulary's from harness/base/vocabulary.py)
- `java_member`: the Java member (`java/Member.java`) on the Apache Kafka client
- `streams_member`: the Kafka Streams member (`streams/StreamsMember.java`) on kafka-streams
- `connect_member`: the Kafka Connect worker (`connect/*.java`) on connect-runtime, with the harness's connectors
- `harness/kafka/java_shared/`: Java compiled into each of them (`HistoryHeader`, the one Java history header;
  `KafkaVersion`)

The Java sources ship with the package as package data.

May import: `base`, `record`, `kafka`. The Python member runs as a script under any confluent-kafka install and
imports only what it needs of these.
"""
__all__ = ["MemberPool", "MemberProcess", "MemberSpec"]


def __getattr__(name: str):
    """MemberPool, MemberProcess and MemberSpec from `pool`, imported on first use: the Python member imports
    its sibling modules through this package and must not pull the pool (and what it imports) in."""
    if name in __all__:
        from harness.members import pool
        return getattr(pool, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
