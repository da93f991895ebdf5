"""The fake backend's files, and the producer that writes records into them (harness/cluster/fake.py).

`bootstrap()` of a `FakeCluster` is `fake:<root>`; everything the fake cluster, the fake members
(harness/members/fake_member.py, which spells the same paths with the standard library only) and
`FakeWorkload` share is a file under that root:

    topics/<topic>/meta.json          {"partitions": N}
    topics/<topic>/p<N>.log           one record per line, "<key> <seq>"; the line index is the offset
    groups/<group>/members/<id>.json  a member's registration (pid, topic, joined); mtime = last heartbeat
    groups/<group>/assign/<id>.json   {"epoch", "partitions"}: what the coordinator gives the member
    groups/<group>/ack/<id>           the last epoch the member has acted on (revokes recorded)
    groups/<group>/offsets/<topic>-<p>  the committed offset (the next to read)

`FakeWorkload` has the constructor and the surface of harness/members/workload.py's `Workload`: every record
is appended with one write, then recorded as `acked`; it never fails and never waits for a broker.
"""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from harness.base.errors import SetupError
from harness.record.history import HistoryWriter
from harness.record.intact import file_totals
from harness.members.workload import Pacer

PREFIX = "fake:"


def fake_root(bootstrap: str) -> Path:
    """The directory a fake bootstrap string names."""
    if not bootstrap.startswith(PREFIX):
        raise SetupError(f"{bootstrap!r} is not a fake cluster's bootstrap (fake:<dir>)")
    return Path(bootstrap[len(PREFIX):])


def topic_dir(root: Path, topic: str) -> Path:
    return root / "topics" / topic


def partitions_of(root: Path, topic: str) -> int:
    try:
        return int(json.loads((topic_dir(root, topic) / "meta.json").read_text())["partitions"])
    except FileNotFoundError:
        raise SetupError(f"topic {topic} does not exist on the fake cluster at {root}") from None


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


class FakeWorkload:
    """A producer thread writing keys `k<n>` with per-key sequence numbers into the fake topic's files."""

    def __init__(self, *, bootstrap: str, topics: list[str], history_path: Path, rate_per_s: float = 50.0,
                 keys: int = 60, on_event=None) -> None:
        """`on_event(type, **fields)`: the harness's history, where `stop` records the producer's totals, as the real
        producer's does (harness/members/workload.py)."""
        self.on_event = on_event
        self.root = fake_root(bootstrap)
        if len(topics) != 1:
            raise SetupError(f"the fake cluster's producer writes one topic, not {len(topics)}")
        self.topic = topic = topics[0]
        self.partitions = partitions_of(self.root, topic)
        self.pacer = Pacer(rate_per_s, now=time.monotonic())
        self.keys = keys
        self.hist = HistoryWriter(history_path, source="producer", member="producer")
        self._fds = [os.open(topic_dir(self.root, topic) / f"p{p}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                     for p in range(self.partitions)]
        self._next = [self._count(p) for p in range(self.partitions)]  # another producer may have written before
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-workload", daemon=True)
        self.sent = self.acked = self.failed = 0

    def _count(self, p: int) -> int:
        return (topic_dir(self.root, self.topic) / f"p{p}.log").read_bytes().count(b"\n")

    def produce(self, key_n: int, seq: int) -> None:
        """Append one record and record its acknowledgement."""
        p = key_n % self.partitions
        os.write(self._fds[p], f"k{key_n} {seq}\n".encode())
        offset = self._next[p]
        self._next[p] += 1
        self.sent += 1
        self.acked += 1
        self.hist.event("acked", topic=self.topic, partition=p, offset=offset, key=f"k{key_n}", seq=seq)

    def _run(self) -> None:
        seqs = [0] * self.keys
        self.pacer.restart(now=time.monotonic())
        n = 0
        while not self._stop.is_set():
            k = n % self.keys
            self.produce(k, seqs[k])
            seqs[k] += 1
            n += 1
            self.pacer.sent()
            while (wait := self.pacer.due() - time.monotonic()) > 0 and not self._stop.is_set():
                self._stop.wait(min(wait, 0.1))  # in slices: a rate changed meanwhile counts at once

    @property
    def rate(self) -> float:
        return self.pacer.rate

    def set_rate(self, rate_per_s: float) -> float:
        """Produce at this rate from now on; returns the rate before."""
        return self.pacer.set_rate(rate_per_s)

    def start(self) -> "FakeWorkload":
        self._thread.start()
        return self

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def stop(self, *, timeout_s: float = 60.0) -> int:
        """Stop producing; returns the count still unacknowledged (always 0: every write is acknowledged). The
        totals go to the harness's history once, as the real producer's."""
        first = not self._stop.is_set()
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=timeout_s)
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        self.hist.close()
        if first and self.on_event is not None:
            last = [[self.topic, p, n - 1] for p, n in enumerate(self._next) if n > 0]
            self.on_event("producer_totals", sent=self.sent, acked=self.acked, failed=self.failed, unacknowledged=0,
                          last_offsets=last, **file_totals(self.hist.path))
        return 0
