"""The workload: keyed, sequence-numbered records at a set rate, every acknowledgement recorded."""
from __future__ import annotations

import threading
import time
from pathlib import Path

from confluent_kafka import Producer

from harness.history import HistoryWriter


class Workload:
    """A producer thread writing `k<n>` keys with per-key sequence numbers, in turn to each of the topics (the
    rate is the total over them)."""

    def __init__(self, *, bootstrap: str, topics: list[str], history_path: Path, rate_per_s: float = 50.0,
                 keys: int = 60) -> None:
        self.topics = list(topics)
        self.rate = rate_per_s
        self.keys = keys
        self.hist = HistoryWriter(history_path, source="producer", member="producer")
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5, "message.timeout.ms": 120000, "log_level": 2})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="workload", daemon=True)
        self.sent = self.acked = self.failed = 0

    def _on_delivery(self, err, msg) -> None:
        key = msg.key().decode()
        seq = int(msg.value().decode().split(":")[1])
        if err is None:
            self.acked += 1
            self.hist.event("acked", topic=msg.topic(), partition=msg.partition(), offset=msg.offset(), key=key, seq=seq)
        else:
            self.failed += 1
            self.hist.event("failed", topic=msg.topic(), key=key, seq=seq, error=str(err))

    def _run(self) -> None:
        seqs = [[0] * self.keys for _ in self.topics]
        interval = 1.0 / self.rate
        nxt = time.monotonic()
        n = 0
        while not self._stop.is_set():
            k, t = n % self.keys, (n // self.keys) % len(self.topics)
            self.producer.produce(self.topics[t], key=f"k{k}".encode(), value=f"k{k}:{seqs[t][k]}".encode(),
                                  on_delivery=self._on_delivery)
            seqs[t][k] += 1
            n += 1
            self.sent = n
            nxt += interval
            # poll serves delivery callbacks and may return as soon as one ran: wait out the interval in full
            while (wait := nxt - time.monotonic()) > 0 and not self._stop.is_set():
                self.producer.poll(wait)

    def start(self) -> "Workload":
        self._thread.start()
        return self

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def stop(self, *, timeout_s: float = 60.0) -> int:
        """Stop producing and wait for outstanding acknowledgements; returns the count still unacknowledged."""
        self._stop.set()
        self._thread.join(timeout=10)
        left = self.producer.flush(timeout_s)
        self.hist.close()
        return left
