"""The runner's own CPU time per minute of a long, quiet run: does watching a run cost more as it grows?

What runs: a real scenario run (3-broker local cluster behind Toxiproxy, the producer at its default
rate, MEMBERS consumer members on PARTITIONS partitions, protocol classic-cooperative, seed 1) of a
scenario registered here at run time whose whole schedule is one `sleep` of MINUTES minutes. Around
that sleep the runner does what every run does: it waits for the initial stable assignment, and after
it the final stable assignment, the drain (every acknowledged record processed), the quiet period and
the judging.

What is measured: the CPU time of this one process (getrusage(RUSAGE_SELF), user + system, summed
over all its threads: the runner's main thread, the producer thread, the Kafka clients' threads).
Member processes and broker JVMs are child processes and do not count (RUSAGE_SELF excludes children).
A sampler thread records, every 10 s and at each progress line of the runner, the process's CPU time,
the wall time since start, the main thread's own CPU time (from /proc, 10 ms ticks: the runner's
polling loop runs there, the producer does not), and the size of the run's history directory. During
the sleep phase the samples fall on whole minutes from its start; the sleep's exact bounds come from
its action_start/action_end in the harness history afterwards (same monotonic clock).

Output: a table of CPU seconds per minute of the sleep phase, all threads and the main thread alone
(first, last, mean), CPU and wall time per phase (setup, members start + initial wait, sleep, final
wait, producer stop + drain + quiet, stopping members + teardown + judging), the total, the history's
events at the end; all samples go to --out as JSON.

How to read it: the per-minute figure of the sleep phase is mostly the producer thread (it follows the
acknowledgements per minute); a runner that reads the history only in its waits (wait_stable, the
drain) shows that cost in the "final wait" and "drain" phases and in the main thread's total, which
grow with the history's size. docs/benchmarks.md has the figures.

Use it on any version of the harness by putting that checkout first on PYTHONPATH and running from
outside the repo (so `harness` is imported from there; the script prints where it came from):

    cd /tmp && PYTHONPATH=/path/to/checkout /work/main/.venv/bin/python /work/main/bench/runner_cpu.py \\
        --minutes 10 --members 20 --out /tmp/runner-cpu.json

A 10-minute run with 20 members takes about 11 minutes of wall time (cluster start, waits, drain,
judging) and writes about 30 MB of history under --runs-root, which is kept.
Ctrl-C stops it; the runner kills the members and the cluster on the way out.
Only the harness API that existed before and after the incremental observer is used
(harness.plan.scenarios.SCENARIOS/Scenario/Action/PROTOCOLS, harness.run.runner.RunConfig/run_scenario).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

SAMPLE_EVERY_S = 10.0


def cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


_TICK = os.sysconf("SC_CLK_TCK")


def thread_cpu_s(tid: int) -> float | None:
    """One thread's user+system CPU seconds from /proc (None off Linux or if it is gone)."""
    try:
        stat = Path(f"/proc/self/task/{tid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime (fields 14 and 15 of stat)


def dir_bytes(d: Path | None) -> int:
    if d is None:
        return 0
    try:
        return sum(e.stat().st_size for e in os.scandir(d) if e.is_file())
    except OSError:
        return 0


class Sampler:
    """Samples CPU, wall time and history size every SAMPLE_EVERY_S, and on demand with a label."""

    def __init__(self, runs_root: Path, scenario: str) -> None:
        self.runs_root = runs_root
        self.scenario = scenario
        self.t0 = time.monotonic()
        self.cpu0 = cpu_s()
        self.main_tid = threading.main_thread().native_id
        self.main0 = thread_cpu_s(self.main_tid) or 0.0
        self.samples: list[dict] = []
        self.marks: dict[str, dict] = {}
        self.history_dir: Path | None = None
        self._old = set(self._runs())  # run directories already there are not this run's
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._realign = threading.Event()
        self._anchor = self.t0  # samples fall at anchor + k * SAMPLE_EVERY_S
        self._thread = threading.Thread(target=self._loop, name="cpu-sampler", daemon=True)

    def _runs(self) -> list[Path]:
        return list(self.runs_root.glob(f"*-{self.scenario}-*/history"))

    def _find_history(self) -> Path | None:
        if self.history_dir is None:
            new = [p for p in self._runs() if p not in self._old]
            self.history_dir = new[0] if len(new) == 1 else None
        return self.history_dir

    def sample(self, label: str | None = None) -> dict:
        main = thread_cpu_s(self.main_tid)
        s = {"wall_s": round(time.monotonic() - self.t0, 3), "cpu_s": round(cpu_s() - self.cpu0, 3),
             "main_thread_cpu_s": None if main is None else round(main - self.main0, 2),
             "history_bytes": dir_bytes(self._find_history())}
        if label:
            s["label"] = label
        with self._lock:
            self.samples.append(s)
        return s

    def mark(self, name: str, *, realign: bool = False) -> dict:
        """A labelled sample; with realign, the periodic samples restart from now (whole minutes of a phase)."""
        s = self.sample(name)
        self.marks.setdefault(name, s)
        if realign:
            self._anchor = self.t0 + s["wall_s"]
            self._realign.set()
        return s

    def _loop(self) -> None:
        k = 1
        while True:
            wait = self._anchor + k * SAMPLE_EVERY_S - time.monotonic()
            realigned = self._realign.wait(max(0.0, wait))
            if self._stop.is_set():
                return
            if realigned:
                self._realign.clear()
                k = 1
                continue
            self.sample()
            k += 1

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._realign.set()
        self._thread.join(timeout=5)


def cpu_at(samples: list[dict], wall: float, key: str = "cpu_s") -> float | None:
    """CPU seconds (key: cpu_s or main_thread_cpu_s) at a wall time, interpolated between the samples around it."""
    samples = [s for s in samples if s.get(key) is not None]
    before = [s for s in samples if s["wall_s"] <= wall]
    after = [s for s in samples if s["wall_s"] >= wall]
    if not before or not after:
        return None
    a, b = before[-1], after[0]
    if b["wall_s"] == a["wall_s"]:
        return a[key]
    return a[key] + (b[key] - a[key]) * (wall - a["wall_s"]) / (b["wall_s"] - a["wall_s"])


def count_events(history_dir: Path | None) -> dict[str, int]:
    counts: dict[str, int] = {}
    if history_dir is None:
        return counts
    for f in sorted(history_dir.glob("*.jsonl")):
        with open(f, "rb") as fh:
            counts[f.name] = max(0, sum(1 for _ in fh) - 1)  # less the header line
    return counts


def figures(samples: list[dict], marks: dict[str, dict], harness_events: list[dict], *, t0: float, sleep_s: float,
            minutes: float) -> dict:
    """CPU per whole minute of the sleep phase (all threads, and the main thread alone) and per phase."""
    marks = dict(marks)
    # the sleep phase: its action_start/action_end in the harness history (stamped with time.monotonic() in
    # this process, the sampler's clock), else from the progress line that ends the initial wait
    acts = [e["mono"] - t0 for e in harness_events if e.get("type") in ("action_start", "action_end")]
    sleep_bounds = [acts[0], acts[-1]] if len(acts) >= 2 else acts
    sleep_len_s = sleep_s
    if sleep_bounds and cpu_at(samples, sleep_bounds[0]) is not None:  # else the progress mark stays
        main_at = cpu_at(samples, sleep_bounds[0], "main_thread_cpu_s")
        cpu_at_start = cpu_at(samples, sleep_bounds[0])
        marks["sleep_start"] = {"wall_s": round(sleep_bounds[0], 3), "cpu_s": round(cpu_at_start, 3),
                                "main_thread_cpu_s": None if main_at is None else round(main_at, 2),
                                "label": "sleep_start (action_start in the history)"}
        if len(sleep_bounds) == 2:
            sleep_len_s = sleep_bounds[1] - sleep_bounds[0]
    per_minute: list[float] = []
    per_minute_main: list[float | None] = []
    if "sleep_start" in marks:
        t_sleep = marks["sleep_start"]["wall_s"]
        for k in range(int(minutes)):
            a, b = cpu_at(samples, t_sleep + 60 * k), cpu_at(samples, t_sleep + 60 * (k + 1))
            if a is None or b is None:
                break
            per_minute.append(round(b - a, 3))
            am = cpu_at(samples, t_sleep + 60 * k, "main_thread_cpu_s")
            bm = cpu_at(samples, t_sleep + 60 * (k + 1), "main_thread_cpu_s")
            per_minute_main.append(None if am is None or bm is None else round(bm - am, 2))

    sleep_end_cpu = sleep_end_wall = None
    if "sleep_start" in marks:
        sleep_end_wall = marks["sleep_start"]["wall_s"] + sleep_len_s
        sleep_end_cpu = cpu_at(samples, sleep_end_wall)
    bounds = [("setup (cluster, topic, producer)", None, "members_starting"),
              ("members start + initial wait", "members_starting", "sleep_start"),
              ("sleep", "sleep_start", "sleep_end"),
              ("final wait", "sleep_end", "final_wait_end"),
              ("producer stop + drain + quiet", "final_wait_end", "stop_members"),
              ("stop members + teardown + judging", "stop_members", "run_returned")]
    at = {k: (v["wall_s"], v["cpu_s"], v["main_thread_cpu_s"] or 0.0) for k, v in marks.items()}
    at[None] = (0.0, 0.0, 0.0)
    if sleep_end_cpu is not None:
        at["sleep_end"] = (sleep_end_wall, sleep_end_cpu, cpu_at(samples, sleep_end_wall, "main_thread_cpu_s") or 0.0)
    phases_wall = {name: round(at[b][0] - at[a][0], 1) if a in at and b in at else None for name, a, b in bounds}
    phases = {name: round(at[b][1] - at[a][1], 3) if a in at and b in at else None for name, a, b in bounds}
    phases_main = {name: round(at[b][2] - at[a][2], 2) if a in at and b in at else None for name, a, b in bounds}
    return {"per_minute": per_minute, "per_minute_main": per_minute_main, "phases": phases,
            "phases_main": phases_main, "phases_wall": phases_wall, "marks": marks}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0,
                    help="length of the sleep phase, the part of the run that is only watched (default 10)")
    ap.add_argument("--members", type=int, default=20, help="consumer member processes (default 20)")
    ap.add_argument("--partitions", type=int, default=40, help="partitions of the run's topic (default 40)")
    ap.add_argument("--kafka-version", default="latest", help="Kafka version of the brokers (default latest)")
    ap.add_argument("--schedule", choices=("sleep", "waits"), default="sleep",
                    help="sleep: one sleep of MINUTES (the run is only watched for members exiting); waits: "
                         "MINUTES of wait_stable then a 5 s sleep, over and over (the runner polls the history "
                         "all the time, as it does through a Streams run's long waits)")
    ap.add_argument("--out", type=Path, default=None,
                    help="JSON file for the samples and the summary (default: none, only the table)")
    ap.add_argument("--runs-root", type=Path, default=Path("/tmp/runner-cpu-runs"),
                    help="where the run directory goes (default /tmp/runner-cpu-runs); it is kept")
    args = ap.parse_args()
    if args.minutes <= 0 or args.members < 1 or args.partitions < 1:
        ap.error("--minutes, --members and --partitions must be positive")

    import harness
    from harness.plan import scenarios
    from harness.record.rundir import HARNESS_HISTORY, RunDir
    from harness.run.runner import RunConfig, run_scenario
    from harness.plan.scenarios import Action, Scenario

    code = Path(harness.__file__).resolve().parent.parent
    print(f"harness imported from {Path(harness.__file__).resolve()}", flush=True)

    name = "bench-runner-cpu"
    sleep_s = args.minutes * 60
    if args.schedule == "sleep":
        steps = [Action("sleep", {"s": sleep_s})]
    else:  # each round: a wait of at least stable_s (2 s) and a 5 s sleep
        steps = [a for _ in range(int(sleep_s // 7)) for a in (Action("wait_stable", {}), Action("sleep", {"s": 5.0}))]
    scenarios.SCENARIOS[name] = Scenario(
        name=name, doc=f"Benchmark: {args.members} members, {args.schedule} for {sleep_s:g} s (bench/runner_cpu.py).",
        build=lambda rng, ctx: list(steps), members=args.members, protocols=scenarios.PROTOCOLS)
    assert scenarios.get(name) is scenarios.SCENARIOS[name]

    args.runs_root.mkdir(parents=True, exist_ok=True)
    sampler = Sampler(args.runs_root, name)
    lines: list[tuple[float, str]] = []

    def progress(msg: str) -> None:
        print(msg, flush=True)
        lines.append((time.monotonic() - sampler.t0, msg))
        if re.search(r"\((initial assignment)\)", msg):  # 'stable (...)' or 'not stable after ... (...)'
            sampler.mark("sleep_start", realign=True)
        elif re.search(r"\(final\)", msg):
            sampler.mark("final_wait_end")
        elif msg.rstrip().endswith("draining"):
            sampler.mark("drain_start")
        elif "stopping members" in msg:
            sampler.mark("stop_members")
        elif "starting" in msg and "members" in msg:
            sampler.mark("members_starting")
        else:
            sampler.sample("progress")

    cfg = RunConfig(scenario=name, seed=1, partitions=args.partitions, kafka_version=args.kafka_version,
                    runs_root=str(args.runs_root))
    started = datetime.now(timezone.utc)
    sampler.start()
    try:
        result = run_scenario(cfg, progress=progress)
    finally:  # Ctrl-C goes on up after this; run_scenario has already torn the run down
        sampler.mark("run_returned")
        sampler.stop()

    samples = sampler.samples
    marks = sampler.marks
    end = marks["run_returned"]
    run = RunDir(result.run_dir)
    hist_dir = run.history_dir
    run_meta = run.meta()
    harness_events = [json.loads(l) for l in run.history_file(HARNESS_HISTORY).read_text().splitlines()[1:] if l.strip()]
    events = count_events(hist_dir)
    timeouts = [e for e in harness_events if e.get("type") == "wait_timeout"]

    fig = figures(samples, marks, harness_events, t0=sampler.t0, sleep_s=sleep_s, minutes=args.minutes)
    per_minute, per_minute_main = fig["per_minute"], fig["per_minute_main"]
    phases, phases_main, phases_wall = fig["phases"], fig["phases_main"], fig["phases_wall"]
    summary = {
        "date": started.date().isoformat(), "started": started.isoformat(),
        "harness_code": str(code), "harness_file": str(Path(harness.__file__).resolve()),
        "python": sys.version.split()[0],
        "config": {"minutes": args.minutes, "members": args.members, "partitions": args.partitions,
                   "kafka_version_requested": args.kafka_version, "seed": 1, "protocol": cfg.protocol,
                   "rate_per_s": cfg.rate_per_s},
        "kafka_version": run_meta.get("kafka_version"), "run_dir": str(result.run_dir), "status": result.status,
        "error": result.error,
        "wall_s": end["wall_s"], "total_cpu_s": end["cpu_s"], "main_thread_cpu_s": end["main_thread_cpu_s"],
        "sleep_per_minute_cpu_s": per_minute,
        "sleep_first_minute_cpu_s": per_minute[0] if per_minute else None,
        "sleep_last_minute_cpu_s": per_minute[-1] if per_minute else None,
        "sleep_mean_minute_cpu_s": round(statistics.mean(per_minute), 3) if per_minute else None,
        "sleep_per_minute_main_thread_cpu_s": per_minute_main,
        "phases_cpu_s": phases,
        "phases_main_thread_cpu_s": phases_main, "phases_wall_s": phases_wall,
        "history_events": sum(events.values()), "history_events_by_file": events,
        "history_bytes": dir_bytes(hist_dir),
        "wait_timeouts": [{"what": e.get("what"), "timeout_s": e.get("timeout_s")} for e in timeouts],
        "t0_monotonic": sampler.t0,  # samples' wall_s is time.monotonic() less this, as the history's mono
        "marks": fig["marks"], "samples": samples,
        "progress": [{"wall_s": round(t, 2), "msg": m} for t, m in lines],
    }
    if args.out:
        args.out.write_text(json.dumps(summary, indent=2))

    print()
    print(f"run {result.run_dir}: {result.status}; Kafka {summary['kafka_version']}; "
          f"{args.members} members, {args.partitions} partitions; wall {end['wall_s'] / 60:.1f} min")
    if timeouts:
        print("wait timeouts: " + ", ".join(f"{t['what']} ({t['timeout_s']:g} s)" for t in summary["wait_timeouts"]))
    print(f"{'minute of sleep':>16} | {'runner CPU s':>12} | {'main thread s':>13} | {'history MB at end':>17}")
    t_sleep = fig["marks"].get("sleep_start", {}).get("wall_s")
    for k, c in enumerate(per_minute, 1):
        at = [s for s in samples if t_sleep is not None and s["wall_s"] <= t_sleep + 60 * k + 0.5]
        mb = at[-1]["history_bytes"] / 1e6 if at else 0.0
        main_s = per_minute_main[k - 1]
        print(f"{k:>16} | {c:>12.2f} | {'?' if main_s is None else f'{main_s:.2f}':>13} | {mb:>17.1f}")
    if per_minute:
        print(f"{'first/last/mean':>16} | {per_minute[0]:.2f} / {per_minute[-1]:.2f} / "
              f"{summary['sleep_mean_minute_cpu_s']:.2f}")
    print("per phase: CPU s / main thread CPU s / wall s")
    for k, v in phases.items():
        print(f"  {k}: {'?' if v is None else f'{v:.2f}'} / {'?' if phases_main[k] is None else phases_main[k]}"
              f" / {'?' if phases_wall[k] is None else phases_wall[k]}")
    print(f"total CPU {end['cpu_s']:.1f} s (main thread {end['main_thread_cpu_s']} s) in {end['wall_s']:.0f} s; "
          f"history {summary['history_events']} events, {summary['history_bytes'] / 1e6:.1f} MB")
    if args.out:
        print(f"samples: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
