"""What the brokers said about a run's group: their log lines, as `broker` events of the history.

    logs = BrokerLog(cluster, group_id=...)   # at the run's start: where each broker's log ends now
    ...                                       # the run
    logs.collect(history_dir / "brokers.jsonl")   # after it: the lines about the group, as events

Chosen: a read after the run, from where each log ended when the run began (a shared cluster's logs
hold earlier runs), rather than a thread tailing live. The brokers stamp every line with their wall
clock to the millisecond (`local.py` sets slf4j-simple's `dateTimeFormat`), and this module turns it
into the history's monotonic clock with the wall-minus-monotonic offset taken at the start, so a
broker's line sits where it happened among the members' events, not where a tailer happened to read it.
A broker restarted during the run appends to the same file, so the start offsets stay good.

Which lines: every line that names the group (its coordinator's joins, leaves, state changes,
rebalances, refusals, fencing and errors), and every line about the group's partition of
`__consumer_offsets` (its coordinator loading and unloading it, its leadership, the log cleaner
compacting it), which is how a coordinator's move shows. The backend only says where each broker's
log is (`broker_log_path`), so the same reading serves any backend whose logs reach a host file.
"""
from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from pathlib import Path

from harness.record.history import HistoryWriter

MAX_MESSAGE = 2000

#: slf4j-simple with `yyyy-MM-dd'T'HH:mm:ss.SSSZ` (the local backend): `<ts> [thread] LEVEL logger - message`
_SIMPLE = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4}) \[(?P<thread>.*?)\] "
                     r"(?P<level>TRACE|DEBUG|INFO|WARN|ERROR) (?P<logger>\S+) - (?P<message>.*)$")
#: Kafka's own log4j layout `[%d] %p %m (%c)%n` (a broker in a container with its default logging; UTC)
_LOG4J = re.compile(r"^\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] (?P<level>TRACE|DEBUG|INFO|WARN|ERROR) "
                    r"(?P<message>.*) \((?P<logger>[^()\s]+)\)$")


def java_string_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units), as a signed 32-bit int."""
    b, h = s.encode("utf-16-be"), 0
    for i in range(0, len(b), 2):
        h = (31 * h + (b[i] << 8 | b[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def offsets_partition(group_id: str, partitions: int) -> int:
    """The partition of `__consumer_offsets` that holds a group (and whose leader coordinates it)."""
    h = java_string_hash(group_id)
    return (0 if h == -2**31 else abs(h)) % partitions  # Kafka's Utils.abs: Math.abs, MIN_VALUE -> 0


def parse_line(line: str) -> dict | None:
    """One log line as {wall, level, logger, message}, or None when it is not the start of a log record."""
    if m := _SIMPLE.match(line):
        wall = datetime.strptime(m["ts"], "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
    elif m := _LOG4J.match(line):
        wall = datetime.strptime(m["ts"], "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=timezone.utc).timestamp()
    else:
        return None
    return {"wall": wall, "level": m["level"], "logger": m["logger"], "message": m["message"][:MAX_MESSAGE]}


#: of the lines about the group's offsets partition, the ones about its coordinator, its leader and its compaction
#: (the cleaner's first and last line of each cleaning; not the replica fetchers' and the controller's bookkeeping)
_PARTITION_NEWS = re.compile(r"GroupCoordinator|Cleaning log |Swapping in cleaned segment|"
                             r"^\[Broker id=\d+\] (Leader|Follower) ")


def about_group(message: str, *, group_id: str, partition: int) -> bool:
    """Whether a log message is about the group, or its coordinator or compaction of its offsets partition."""
    if group_id in message:
        return True
    return re.search(rf"__consumer_offsets-{partition}(?!\d)", message) is not None \
        and _PARTITION_NEWS.search(message) is not None


def read_events(path: Path, *, start: int, broker: int, group_id: str, partition: int,
                since_wall: float, wall_minus_mono: float) -> list[dict]:
    """The `broker` events of one log file from byte `start` on (only whole lines; none before since_wall). A file
    that cannot be read gives one `broker_log_unread` event instead, naming the broker and why: what that broker
    said is then not in the history, and the checkers that read the brokers' words must not take its silence for
    an answer."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read()
    except OSError as e:
        return [{"type": "broker_log_unread", "mono": round(time.monotonic(), 6), "wall": time.time(),
                 "broker": broker, "error": f"{type(e).__name__}: {e}"}]
    out = []
    for raw in data[: data.rfind(b"\n") + 1].decode(errors="replace").splitlines():
        rec = parse_line(raw)
        if rec is None or rec["wall"] < since_wall or not about_group(rec["message"], group_id=group_id,
                                                                       partition=partition):
            continue
        out.append({"type": "broker", "mono": round(rec["wall"] - wall_minus_mono, 6), "wall": rec["wall"],
                    "broker": broker, "level": rec["level"], "logger": rec["logger"], "message": rec["message"]})
    return out


class BrokerLog:
    """Marks where each broker's log ends at a run's start; later writes the lines about its group."""

    def __init__(self, cluster, *, group_id: str) -> None:
        self.cluster = cluster
        self.group_id = group_id
        self.partitions = int(cluster.settings.properties().get("offsets.topic.num.partitions", 50))
        self.partition = offsets_partition(group_id, self.partitions)
        self.wall_minus_mono = time.time() - time.monotonic()
        self.since_wall = time.time()  # nothing before the mark: the run's own events come after it
        self.starts: dict[int, int] = {}
        for b in cluster.broker_ids():
            p = Path(cluster.broker_log_path(b))
            self.starts[b] = p.stat().st_size if p.exists() else 0

    def _read(self) -> list[dict]:
        evs = []
        for b in self.cluster.broker_ids():
            evs += read_events(Path(self.cluster.broker_log_path(b)), start=self.starts.get(b, 0), broker=b,
                               group_id=self.group_id, partition=self.partition, since_wall=self.since_wall,
                               wall_minus_mono=self.wall_minus_mono)
        return sorted(evs, key=lambda e: e["mono"])

    def events(self) -> list[dict]:
        """Every broker's lines about the group since the mark, in time order (the logs that could be read)."""
        return [e for e in self._read() if e["type"] == "broker"]

    def collect(self, path: Path) -> int:
        """Write the events to a `broker-log` history file, with a `broker_log_unread` event for each log that could
        not be read; how many lines."""
        evs = self._read()
        with HistoryWriter(path, source="broker-log", member=None, group_id=self.group_id,
                           offsets_partition=self.partition) as w:
            for e in evs:
                w.record(e)
        return sum(1 for e in evs if e["type"] == "broker")
