"""The workload: keyed, sequence-numbered records at a set rate, every acknowledgement recorded."""
from __future__ import annotations

import threading
import time
from pathlib import Path

from confluent_kafka import Producer

from harness.base.errors import BadInput
from harness.record.history import HistoryWriter
from harness.record.intact import file_totals


class Pacer:
    """When the next record is due, at a rate another thread may change at any time (`set_rate`): each record
    is due one interval, at the rate of the moment, after the previous one was due."""

    def __init__(self, rate_per_s: float, *, now: float) -> None:
        self.rate = _positive(rate_per_s)
        self.restart(now=now)

    def restart(self, *, now: float) -> None:
        """The next record is due now (the producer thread starts)."""
        self._last = now - 1.0 / self.rate

    def set_rate(self, rate_per_s: float) -> float:
        """Produce at this rate from now on; returns the rate before (one float assignment: thread-safe)."""
        before, self.rate = self.rate, _positive(rate_per_s)
        return before

    def due(self) -> float:
        """When the next record is due (it moves when the rate changes)."""
        return self._last + 1.0 / self.rate

    def sent(self) -> None:
        """The due record was sent: the next one is due an interval later."""
        self._last = self.due()


def _positive(rate_per_s: float) -> float:
    if not rate_per_s > 0:
        raise BadInput(f"a producer rate must be above 0 records/s, got {rate_per_s!r}")
    return float(rate_per_s)


class Workload:
    """A producer thread writing `k<n>` keys with per-key sequence numbers, in turn to each of the topics (the
    rate is the total over them)."""

    def __init__(self, *, bootstrap: str, topics: list[str], history_path: Path, rate_per_s: float = 50.0,
                 keys: int = 60, on_event=None) -> None:
        """`on_event(type, **fields)`: the harness's history, where `stop` records the producer's totals."""
        self.topics = list(topics)
        self.pacer = Pacer(rate_per_s, now=time.monotonic())
        self.keys = keys
        self.hist = HistoryWriter(history_path, source="producer", member="producer")
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5, "message.timeout.ms": 120000, "log_level": 2})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="workload", daemon=True)
        self.sent = self.acked = self.failed = 0
        self.on_event = on_event
        self.last_offsets: dict[tuple[str, int], int] = {}  # the highest offset acknowledged per partition

    def _on_delivery(self, err, msg) -> None:
        key = msg.key().decode()
        seq = int(msg.value().decode().split(":")[1])
        if err is None and msg.offset() is None:  # written, but its offset not returned: an idempotent retry the
            self.acked += 1                        # broker answered as a duplicate (DUPLICATE_SEQUENCE_NUMBER)
            self.hist.event("acked_unplaced", topic=msg.topic(), partition=msg.partition(), key=key, seq=seq)
        elif err is None:
            self.acked += 1
            tp = (msg.topic(), msg.partition())
            self.last_offsets[tp] = max(self.last_offsets.get(tp, -1), msg.offset())
            self.hist.event("acked", topic=msg.topic(), partition=msg.partition(), offset=msg.offset(), key=key, seq=seq)
        else:
            self.failed += 1
            self.hist.event("failed", topic=msg.topic(), key=key, seq=seq, error=str(err))

    def _run(self) -> None:
        seqs = [[0] * self.keys for _ in self.topics]
        self.pacer.restart(now=time.monotonic())
        n = 0
        while not self._stop.is_set():
            k, t = n % self.keys, (n // self.keys) % len(self.topics)
            self.producer.produce(self.topics[t], key=f"k{k}".encode(), value=f"k{k}:{seqs[t][k]}".encode(),
                                  on_delivery=self._on_delivery)
            seqs[t][k] += 1
            n += 1
            self.sent = n
            self.pacer.sent()
            # poll serves delivery callbacks and may return as soon as one ran: wait out the interval in full,
            # in slices, so that a rate changed meanwhile counts at once
            while (wait := self.pacer.due() - time.monotonic()) > 0 and not self._stop.is_set():
                self.producer.poll(min(wait, 0.1))

    @property
    def rate(self) -> float:
        return self.pacer.rate

    def set_rate(self, rate_per_s: float) -> float:
        """Produce at this rate (the total over the topics) from now on; returns the rate before."""
        return self.pacer.set_rate(rate_per_s)

    def learn_partitions(self, topic: str, count: int, *, timeout_s: float = 30.0) -> float | None:
        """Make the producer learn that `topic` has `count` partitions now (a metadata request: its partitioner
        then spreads the keys over all of them, instead of waiting for its next metadata refresh, 5 minutes by
        default); the seconds it took, or None when its metadata still said fewer after `timeout_s`."""
        began = time.monotonic()
        while time.monotonic() - began < timeout_s:
            md = self.producer.list_topics(topic, timeout=5)
            t = md.topics.get(topic)
            if t is not None and t.error is None and len(t.partitions) >= count:
                return round(time.monotonic() - began, 3)
            time.sleep(0.2)
        return None

    def start(self) -> "Workload":
        self._thread.start()
        return self

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def stop(self, *, timeout_s: float = 60.0) -> int:
        """Stop producing and wait for outstanding acknowledgements; returns the count still unacknowledged. The
        producer's totals then go to the harness's history (`producer_totals`, docs/history.md "Totals"), where a
        torn producer file cannot hide them; once."""
        first = not self._stop.is_set()
        self._stop.set()
        self._thread.join(timeout=10)
        left = self.producer.flush(timeout_s)
        self.hist.close()
        if first and self.on_event is not None:
            self.on_event("producer_totals", sent=self.sent, acked=self.acked, failed=self.failed, unacknowledged=left,
                          last_offsets=[[t, p, o] for (t, p), o in sorted(self.last_offsets.items())],
                          **file_totals(self.hist.path))
        return left
