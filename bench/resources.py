"""What a large run costs the machine, measured while it runs: the CPU of each kind of process (the brokers, the member
processes, the harness's own group watch, Toxiproxy, the runner itself) and the brokers' own request latencies and
idle figures, read from their JMX metrics by Kafka's JmxTool.

Used by bench/rebalance_time.py (`--measure`) to name what limits a group's size on this machine:

- `ProcessCpu` samples, every few seconds, the CPU time (user + system) of every process under this one (psutil),
  keeps each process's last figure (a member process that stopped still counts), and sums them by kind
  (`kind_of`: the command line). The runner's own CPU is this process's (RUSAGE_SELF, every thread).
- `BrokerMetrics` opens each local broker's local JMX connector (`jcmd PID ManagementAgent.start_local`: no port,
  nothing on the network) and runs one JmxTool per broker, which writes the chosen MBeans' attributes every
  `interval_s` as CSV (`--report-format csv`). `request_summary` turns those rows into, per request type, the
  requests handled and their mean total time per interval (from the running mean and count: Kafka's histograms'
  `Mean` is over the broker's life), and the highest 99th percentile seen (Kafka's histograms keep a decaying sample,
  so it is a recent one); `idle_summary` the lowest share of time the request handler threads and the network
  threads were idle (Kafka's `RequestHandlerAvgIdlePercent`, one-minute rate; `NetworkProcessorAvgIdlePercent`).

Why by hand: psutil gives the processes' times; no library here reads a Kafka broker's metrics without a JMX port or
an agent in the broker, and Kafka's own JmxTool does the reading.
"""
from __future__ import annotations

import os
import re
import resource
import subprocess
import threading
import time
from pathlib import Path

#: the kinds of process, by what their command line holds (first match)
KINDS = (("broker", "kafka.Kafka"), ("jmx", "JmxTool"), ("member", "python_member"), ("member", "harness.members"),
         ("group_watch", "group_watch_proc"), ("toxiproxy", "toxiproxy"))
#: the requests a group's size loads, as Kafka names them in `kafka.network:type=RequestMetrics`
REQUESTS = ("ConsumerGroupHeartbeat", "Heartbeat", "JoinGroup", "SyncGroup", "LeaveGroup", "OffsetFetch",
            "OffsetCommit", "FetchConsumer", "Metadata", "FindCoordinator", "Produce")
IDLE_BEANS = {"kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent": "OneMinuteRate",
              "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent": "Value"}


def kind_of(cmdline: list[str]) -> str:
    """A process's kind from its command line: broker, jmx, member, group_watch, toxiproxy, or other."""
    text = " ".join(cmdline)
    for kind, needle in KINDS:
        if needle in text:
            return kind
    return "other"


def self_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class ProcessCpu:
    """CPU seconds by kind of process under this one, sampled every `every_s` on a thread of its own."""

    def __init__(self, every_s: float = 5.0) -> None:
        import psutil
        self._psutil = psutil
        self.every_s = every_s
        self._me = psutil.Process()
        self._first: dict[int, float] = {}
        self._last: dict[int, tuple[str, float]] = {}
        self.samples: list[dict] = []  # {"mono", "runner", <kind>: cumulative s since start}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="process-cpu", daemon=True)
        self._runner0 = self_cpu_s()
        self._take(first=True)

    def _take(self, first: bool = False) -> None:
        for p in self._me.children(recursive=True):
            try:
                t = p.cpu_times()
                cpu = t.user + t.system
                kind = self._last[p.pid][0] if p.pid in self._last else kind_of(p.cmdline())
            except (self._psutil.NoSuchProcess, self._psutil.AccessDenied, self._psutil.ZombieProcess):
                continue
            self._first.setdefault(p.pid, cpu if first else 0.0)
            self._last[p.pid] = (kind, cpu)
        sums: dict[str, float] = {}
        for pid, (kind, cpu) in self._last.items():
            sums[kind] = sums.get(kind, 0.0) + cpu - self._first[pid]
        self.samples.append({"mono": time.monotonic(), "runner": self_cpu_s() - self._runner0,
                             **{k: round(v, 2) for k, v in sums.items()}})

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self._take()

    def start(self) -> "ProcessCpu":
        self._thread.start()
        return self

    def stop(self) -> list[dict]:
        self._stop.set()
        self._thread.join(timeout=10)
        self._take()
        return self.samples


def cpu_summary(samples: list[dict], cores: int, bounds: dict[str, tuple[float, float]]) -> dict:
    """Per phase (name -> (mono from, mono to)): each kind's CPU seconds and its share of the machine's cores."""
    kinds = sorted({k for s in samples for k in s if k != "mono"})
    out = {}
    for name, (a, b) in bounds.items():
        lo, hi = _at(samples, a), _at(samples, b)
        if lo is None or hi is None or hi["mono"] <= lo["mono"]:
            continue
        wall = hi["mono"] - lo["mono"]
        cpu = {k: round(hi.get(k, 0.0) - lo.get(k, 0.0), 1) for k in kinds}
        out[name] = {"wall_s": round(wall, 1), "cpu_s": cpu,
                     "share_of_cores": {k: round(v / (wall * cores), 3) for k, v in cpu.items()},
                     "all_share_of_cores": round(sum(cpu.values()) / (wall * cores), 3)}
    return out


def _at(samples: list[dict], mono: float) -> dict | None:
    """The sample nearest to `mono`."""
    return min(samples, key=lambda s: abs(s["mono"] - mono)) if samples else None


class BrokerMetrics:
    """One JmxTool per local broker writing its request and idle metrics every `interval_s` to `out_dir`."""

    def __init__(self, pids: dict[int, int], classpath: str, out_dir: Path, interval_s: float = 10.0) -> None:
        self.pids, self.classpath, self.out_dir, self.interval_s = pids, classpath, out_dir, interval_s
        self.procs: dict[int, subprocess.Popen] = {}

    def start(self) -> "BrokerMetrics":
        self.out_dir.mkdir(parents=True, exist_ok=True)
        for broker, pid in self.pids.items():
            url = local_jmx_url(pid)
            names = [f"kafka.network:type=RequestMetrics,name=TotalTimeMs,request={r}" for r in REQUESTS]
            cmd = ["java", "-Xmx64m", "-XX:TieredStopAtLevel=1", "-cp", self.classpath, "org.apache.kafka.tools.JmxTool",
                   "--jmx-url", url, "--report-format", "csv",
                   "--reporting-interval", str(int(self.interval_s * 1000))]  # every attribute: JmxTool reports
            # only when it got every attribute asked of every bean, and a histogram, a meter and a gauge differ
            for n in names + list(IDLE_BEANS):
                cmd += ["--object-name", n]
            self.procs[broker] = subprocess.Popen(cmd, stdout=open(self.out_dir / f"jmx-{broker}.csv", "w"),
                                                  stderr=open(self.out_dir / f"jmx-{broker}.log", "w"),
                                                  start_new_session=True)
        return self

    def stop(self) -> dict:
        for p in self.procs.values():
            p.terminate()
        for p in self.procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                p.wait()
        return {b: read_rows((self.out_dir / f"jmx-{b}.csv").read_text()) for b in self.procs}


def local_jmx_url(pid: int, timeout_s: float = 30.0) -> str:
    """The JMX service URL of a running JVM's local connector, which `jcmd` starts (local only: no port)."""
    subprocess.run(["jcmd", str(pid), "ManagementAgent.start_local"], capture_output=True, timeout=timeout_s,
                   check=True)
    out = subprocess.run(["jcmd", str(pid), "ManagementAgent.status"], capture_output=True, text=True,
                         timeout=timeout_s, check=True).stdout
    m = re.search(r"URL\s*:\s*(service:jmx:\S+)", out)
    if not m:
        raise RuntimeError(f"jcmd {pid} ManagementAgent.status named no local connector: {out.strip()[:200]}")
    return m.group(1)


def read_rows(text: str) -> list[dict]:
    """JmxTool's CSV (one `name,"value"` line per bean attribute, each report starting with its `time`) as a dict of
    floats per report; a report with fewer values than the first (torn by the stop) is left out."""
    rows: list[dict] = []
    for line in text.splitlines():
        key, comma, value = line.rpartition(",")  # a bean's name has commas of its own
        value = value.strip().strip('"')
        if not comma:
            continue  # not a report's line
        if key == "time":
            rows.append({})
        if rows:
            try:
                rows[-1][key] = float(value)
            except ValueError:
                pass  # a meter's unit, an event type
    full = len(rows[0]) if rows else 0
    return [r for r in rows if len(r) >= full]


def request_summary(rows: list[dict], wall_from: float | None = None, wall_to: float | None = None) -> dict:
    """Per request type, between two wall times (ms since the epoch, JmxTool's `time`): requests handled, their mean
    total time (ms) over the span and its highest per-interval mean, and the highest 99th percentile reported."""
    rows = [r for r in rows if "time" in r and (wall_from is None or r["time"] >= wall_from)
            and (wall_to is None or r["time"] <= wall_to)]
    out = {}
    for req in REQUESTS:
        bean = f"kafka.network:type=RequestMetrics,name=TotalTimeMs,request={req}"
        pts = [(r[f"{bean}:Count"], r[f"{bean}:Mean"], r.get(f"{bean}:99thPercentile", 0.0)) for r in rows
               if f"{bean}:Count" in r and f"{bean}:Mean" in r]
        if len(pts) < 2 or pts[-1][0] <= pts[0][0]:
            continue
        means = [(c1 * m1 - c0 * m0) / (c1 - c0) for (c0, m0, _), (c1, m1, _) in zip(pts, pts[1:]) if c1 > c0]
        n = pts[-1][0] - pts[0][0]
        out[req] = {"requests": int(n), "mean_ms": round((pts[-1][0] * pts[-1][1] - pts[0][0] * pts[0][1]) / n, 1),
                    "worst_interval_mean_ms": round(max(means), 1), "p99_max_ms": round(max(p for *_, p in pts[1:]), 1)}
    return out


def idle_summary(rows: list[dict]) -> dict:
    """The lowest idle share (0 to 1) of the request handler threads and of the network threads reported."""
    out = {}
    for bean, attr in IDLE_BEANS.items():
        vals = [r[f"{bean}:{attr}"] for r in rows if f"{bean}:{attr}" in r]
        if vals:
            out[bean.rsplit("name=", 1)[1]] = {"min": round(min(vals), 3), "mean": round(sum(vals) / len(vals), 3)}
    return out
