"""Judging a long history: load time, judge time and peak memory of one synthetic run of N events.

What runs: harness.analytics.synth writes one valid run directory of N events (default 1,000,000: about
half producer `acked`, 40% member `processed`, 10% `committed`, and a few dozen control events: members,
ownership, run start and end) under --dir, or --run-dir names an existing run directory. A FRESH Python
process (so nothing is warm or already allocated) then loads the run's history (History.load) and judges
it, and reports to this one:

- load: wall and CPU seconds of History.load(RUN/history);
- judge: wall and CPU seconds of the judgment. With --api judge (the default) that is
  harness.invariants.judge(history), which reads the kind and settings from the history's run_start alone
  (the synthetic run_start names only the topic: the partition count is inferred). With --api check_all it
  is check_all(history, CheckSettings(topic=<run_start's topic>, partitions=6)), the API older versions have;
- peak RSS: resource.getrusage(RUSAGE_SELF).ru_maxrss of that process (the peak of the whole process:
  interpreter, load and judge).

Verdicts: the process writes them (Verdict.to_dict per invariant) to --save-verdicts if given. With
--reference VERDICTS.json (saved by an earlier run, say of the old code) every verdict must be equal to
the reference's: status, message, witnesses and measurements, but for the measurement keys in
--ignore-measurement (default `partitions_inferred`: judge() infers the partition count that check_all
was told). Without --reference it checks that every invariant got a verdict. (The synthetic run's own
verdicts.json is made up for the analytics tests, not a judgment: it is no reference.) Exit status 1 when
a check fails.

Before and after: run the same command with the older code first on PYTHONPATH, from outside the repo:

    cd /tmp && PYTHONPATH=/tmp/before-wt /work/main/.venv/bin/python /work/main/bench/judge.py \\
        --api check_all --dir /tmp/judge-bench --save-verdicts /tmp/judge-before.json
    cd /tmp && /work/main/.venv/bin/python /work/main/bench/judge.py \\
        --dir /tmp/judge-bench --reference /tmp/judge-before.json

The first generates the run (about 190 MB for 1,000,000 events; kept, and reused when --dir already holds
a run of the same size); the table says which harness was imported. Wall times follow the machine's load;
CPU times less so. docs/benchmarks.md has the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import gc, json, resource, sys, time
import harness
from harness.record.history import History
run_dir, api = sys.argv[1], sys.argv[2]
def clock():
    return time.perf_counter(), time.process_time()
w0, c0 = clock()
history = History.load(run_dir + "/history")
w1, c1 = clock()
if api == "judge":
    from harness.invariants import judge
    verdicts = judge(history)
else:
    from harness.invariants import CheckSettings, check_all
    start = next(e for e in history.events if e["type"] == "run_start") if not hasattr(history, "control") else \
        next(e for _, e in history.control() if e["type"] == "run_start")
    verdicts = check_all(history, CheckSettings(topic=start["settings"]["topic"], partitions=6))
w2, c2 = clock()
json.dump({"harness": harness.__file__, "events": len(history), "load_s": w1 - w0, "load_cpu_s": c1 - c0,
           "judge_s": w2 - w1, "judge_cpu_s": c2 - c1,
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "verdicts": {k: v.to_dict() for k, v in verdicts.items()}}, sys.stdout)
"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench/judge.py", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group()
    src.add_argument("--dir", type=Path, default=Path("/tmp/judge-bench"),
                     help="where the synthetic run is generated, or found if it is already there (default %(default)s)")
    src.add_argument("--run-dir", type=Path, help="judge this run directory instead of a synthetic one")
    p.add_argument("--events", type=int, default=1_000_000, help="events of the synthetic run (default %(default)s)")
    p.add_argument("--seed", type=int, default=3, help="seed of the synthetic run (default %(default)s)")
    p.add_argument("--api", choices=("judge", "check_all"), default="judge",
                   help="judge(history), or check_all with CheckSettings(topic, partitions=6) as older code has it")
    p.add_argument("--repeat", type=int, default=1, help="fresh processes to run; the table shows each (default 1)")
    p.add_argument("--save-verdicts", type=Path, help="write the verdicts (of the last process) here as JSON")
    p.add_argument("--reference", type=Path, help="verdicts JSON (from --save-verdicts) the verdicts must equal")
    p.add_argument("--ignore-measurement", action="append", default=None, metavar="KEY",
                   help="a measurement left out of the comparison (repeatable; default: partitions_inferred)")
    return p


def synthetic_run(root: Path, events: int, seed: int) -> Path:
    """The valid run directory of a synthetic set (generated unless `root` already holds one of this size)."""
    from harness.record.rundir import RunDir
    marker = root / f".events-{events}-seed-{seed}"
    if not marker.exists():
        from harness.analytics import synth
        if root.exists():
            import shutil
            shutil.rmtree(root)
        synth.generate(str(root), 1, events, seed)
        marker.write_text("")
    runs = [d for d in sorted(root.iterdir()) if RunDir.is_run_dir(d) and RunDir(d).status() in ("pass", "fail")
            and "corrupt" not in d.name]
    if len(runs) != 1:
        raise SystemExit(f"{root}: expected one valid synthetic run, found {len(runs)}")
    return runs[0]


def compare(got: dict, ref: dict, ignore: set[str]) -> list[str]:
    """The differences between two sets of verdicts (as to_dict), ignoring some measurement keys."""
    out = [f"{n}: missing" for n in ref if n not in got] + [f"{n}: not in the reference" for n in got if n not in ref]
    for n in sorted(set(got) & set(ref)):
        a, b = got[n], ref[n]
        for f in ("status", "message", "witnesses"):
            if a[f] != b[f]:
                out.append(f"{n}: {f} differs: {str(a[f])[:200]} != {str(b[f])[:200]}")
        ma = {k: v for k, v in a["measurements"].items() if k not in ignore}
        mb = {k: v for k, v in b["measurements"].items() if k not in ignore}
        if ma != mb:
            keys = sorted(k for k in set(ma) | set(mb) if ma.get(k) != mb.get(k))
            out.append(f"{n}: measurements differ: {keys}")
    return out


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    run = args.run_dir or synthetic_run(args.dir, args.events, args.seed)
    results = []
    for _ in range(max(1, args.repeat)):
        done = subprocess.run([sys.executable, "-c", CHILD, str(run), args.api], capture_output=True, text=True,
                              env=dict(os.environ))
        if done.returncode:
            sys.stderr.write(done.stderr)
            return 1
        results.append(json.loads(done.stdout))
    last = results[-1]
    print(f"run: {run} ({last['events']:,} events)\nharness: {last['harness']}\napi: {args.api}\n")
    print(f"{'':8}{'load s':>9}{'(cpu)':>8}{'judge s':>10}{'(cpu)':>8}{'total s':>10}{'(cpu)':>8}{'peak RSS MB':>13}")
    for i, r in enumerate(results, 1):
        print(f"{'#' + str(i):8}{r['load_s']:9.2f}{r['load_cpu_s']:8.2f}{r['judge_s']:10.2f}{r['judge_cpu_s']:8.2f}"
              f"{r['load_s'] + r['judge_s']:10.2f}{r['load_cpu_s'] + r['judge_cpu_s']:8.2f}{r['peak_rss_mb']:13.0f}")
    print()
    for n, v in last["verdicts"].items():
        print(f"  {n:22} {v['status']:8} {v['message'][:90]}")
    if args.save_verdicts:
        args.save_verdicts.write_text(json.dumps(last["verdicts"], indent=1, sort_keys=True))
    problems: list[str] = []
    if args.reference:
        ref = json.loads(args.reference.read_text())
        ignore = set(args.ignore_measurement if args.ignore_measurement is not None else ["partitions_inferred"])
        problems = compare(json.loads(json.dumps(last["verdicts"])), ref, ignore)
        print(f"\nverdicts vs {args.reference}: " + ("equal" if not problems else f"{len(problems)} differences"))
    else:
        from harness.invariants import CHECKERS
        problems = [f"{n}: no verdict" for n in CHECKERS if n not in last["verdicts"]]
        print("\nevery invariant judged" if not problems else "")
    for p in problems:
        print("  " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
