"""A conformance and chaos test harness for Kafka rebalancing."""

__version__ = "0.1.0"
