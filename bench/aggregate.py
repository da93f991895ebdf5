"""Benchmark of `harness aggregate` (not a timed test).

Generates N synthetic run directories (harness.analytics.synth, ~EVENTS history events each) under a
scratch folder, times the aggregation on local[2], checks a few known answers, and deletes the data.

    .venv/bin/python bench/aggregate.py --runs 1000 4000 --events 10000 --scratch /tmp/agg-bench
    .venv/bin/python bench/aggregate.py --runs 20 1000 --events 10000 --repeat 3   # the figures of issue 46

Prints one result line per size: runs, events, bytes on disk, generation time, aggregation time (with --repeat, each
aggregation's and their median), the 1-minute load average before and after, and the job's own phase times.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from harness.analytics import synth  # noqa: E402


def _slice(args):
    out, start, n, events, seed, first = args
    e = synth.generate(out, n, events, seed, corrupt=synth.CORRUPT_KINDS if first else (), start=start)
    return e.runs, e.events, len(e.rebalances and [1]), sum(len(v) for v in e.rebalances.values()), len(e.violating), len(e.flaky)


def generate(out: str, runs: int, events: int, seed: int, procs: int) -> dict:
    step = (runs + procs * 4 - 1) // (procs * 4)
    jobs = [(out, s, min(step, runs - s), events, seed, s == 0) for s in range(0, runs, step)]
    tot = {"runs": 0, "events": 0, "rebalances": 0, "violating": 0, "flaky": 0}
    with ProcessPoolExecutor(procs) as ex:
        for r, ev, _, rb, vi, fl in ex.map(_slice, jobs):
            tot["runs"] += r
            tot["events"] += ev
            tot["rebalances"] += rb
            tot["violating"] += vi
            tot["flaky"] += fl
    return tot


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, nargs="+", default=[1000, 4000])
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--scratch", default="/tmp/agg-bench")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--procs", type=int, default=2, help="generator processes")
    ap.add_argument("--keep", action="store_true", help="keep the generated data")
    ap.add_argument("--repeat", type=int, default=1, help="aggregations of each size (their median is quoted)")
    a = ap.parse_args(argv)
    results = []
    for n in a.runs:
        data, out = os.path.join(a.scratch, f"runs-{n}"), os.path.join(a.scratch, f"out-{n}")
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
        t = time.monotonic()
        exp = generate(data, n, a.events, a.seed, a.procs)
        gen_s = time.monotonic() - t
        size = int(subprocess.run(["du", "-sb", data], capture_output=True, text=True).stdout.split()[0])
        print(f"generated {exp['runs']} runs (+{len(synth.CORRUPT_KINDS)} corrupt), {exp['events']} events, "
              f"{size / 1e9:.2f} GB in {gen_s:.1f}s", flush=True)
        load = os.getloadavg()[0]
        times, s = [], None
        for _ in range(a.repeat):
            shutil.rmtree(out, ignore_errors=True)
            t = time.monotonic()
            cmd = [sys.executable, "-m", "harness", "aggregate", data, "--out", out, "--master", a.master]
            p = subprocess.run(cmd, capture_output=True, text=True)
            times.append(time.monotonic() - t)
            if p.returncode != 0:
                print(p.stdout[-3000:], p.stderr[-3000:])
                return 1
            s = json.load(open(os.path.join(out, "summary.json")))
        ok = (s["totals"]["runs"] == exp["runs"] and s["totals"]["bursts"] == exp["rebalances"]
              and s["totals"]["violating_runs"] == exp["violating"] and len(s["flaky"]) == exp["flaky"]
              and len(s["skipped"]) == len(synth.CORRUPT_KINDS))
        line = (f"RESULT runs={n} events={exp['events']} bytes={size} generate_s={gen_s:.1f} "
                f"aggregate_s={statistics.median(times):.1f} (each: {' '.join(f'{x:.1f}' for x in times)}; the "
                f"last job's own elapsed {s['elapsed_s']}s) master={a.master} load_avg_1m_before={load:.1f} "
                f"after={os.getloadavg()[0]:.1f} answers={'ok' if ok else 'MISMATCH'} "
                f"phases_cumulative_s={json.dumps(s.get('phases_cumulative_s'))}")
        print(line, flush=True)
        results.append(line)
        if not a.keep:
            shutil.rmtree(data, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
