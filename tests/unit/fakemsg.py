"""A record as confluent-kafka's consumer hands it over (`error`, `topic`, `partition`, `offset`), for the Python member's
tests without a broker."""
from __future__ import annotations


class Message:
    def __init__(self, partition: int, offset: int, topic: str = "t") -> None:
        self._t, self._p, self._o = topic, partition, offset

    def error(self):
        return None

    def topic(self):
        return self._t

    def partition(self):
        return self._p

    def offset(self):
        return self._o
