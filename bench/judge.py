"""Judging a long history: load time, judge time and peak memory of one synthetic run of N events.

What runs: by default harness.analytics.synth_run writes one run directory that a correct group writes
(--members in one group on --partitions, --protocol; about --events events: half producer `acked`, the
rest the members' `processed` and `committed`, their assignments, the harness's steps and the coordinator's
lines; docs/benchmarks.md) under --dir; with --failure-path, the older generator harness.analytics.synth
(3 members, 6 partitions, --events events) whose run no correct group writes (its members process partitions
they were never given: the checkers' failure paths); or --run-dir names an existing run directory. A FRESH
Python process (so nothing is warm or already allocated; with one OpenBLAS thread unless the environment names a
count, as the harness's command line has it: harness.base.blas) then loads the run's history (History.load) and
judges it, and reports to this one:

- load: wall and CPU seconds of History.load(RUN/history), and which reader read the compact lines (`compiled`:
  harness/record/_bulkscan.c; `numpy` where it is not built, and in code before it; `older` before the numpy one);
- judge: wall and CPU seconds of the judgment. With --api judge (the default) that is
  harness.invariants.judge(history), which reads the kind and settings from the history's run_start alone.
  With --api check_all it is check_all(history, CheckSettings(topic=<run_start's topic>, partitions=6)), the
  API older versions have (the --failure-path run only);
- with --per-checker, the wall and CPU seconds of the shared views (timeline.build, timed before the judgment,
  which then reuses them) and of each checker within that judgment, with the load average when each ended;
- peak RSS: resource.getrusage(RUSAGE_SELF).ru_maxrss of that process (the peak of the whole process:
  interpreter, load and judge).

Verdicts: the process writes them (Verdict.to_dict per invariant) to --save-verdicts if given. With
--reference VERDICTS.json (saved by an earlier run, say of the old code) every verdict must be equal to
the reference's: status, message, witnesses and measurements, but for the measurement keys in
--ignore-measurement (default `partitions_inferred`: judge() infers the partition count that check_all
was told). Without --reference: on the correct run every verdict must be `valid`, or `skipped` where the
run's plan (run_start's `applies`) said the invariant does not apply; on the --failure-path run, only that
every invariant got a verdict. Exit status 1 when a check fails.

Before and after: run the same command with the older code first on PYTHONPATH ($BEFORE: its `harness`
package, say from `git archive`), from outside the repo ($CHECKOUT: this checkout; $RUNS: a scratch directory):

    cd $RUNS && PYTHONPATH=$BEFORE $CHECKOUT/.venv/bin/python $CHECKOUT/bench/judge.py \\
        --members 300 --partitions 1000 --events 100000 --dir $RUNS/judge-300 --save-verdicts $RUNS/before.json
    cd $RUNS && $CHECKOUT/.venv/bin/python $CHECKOUT/bench/judge.py \\
        --members 300 --partitions 1000 --events 100000 --dir $RUNS/judge-300 --reference $RUNS/before.json

The first generates the run (kept, and reused when --dir already holds a run of the same shape); the table
says which harness was imported. Wall times follow the machine's load; CPU times less so.
docs/benchmarks.md has the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, os, resource, sys, time
try:  # one OpenBLAS thread, as the harness's command line asks for before numpy is imported (older code: not)
    from harness.base.blas import one_thread
    one_thread()
except ImportError:
    pass
import harness
from harness.record.history import History
run_dir, api, per_checker = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
def clock():
    return time.perf_counter(), time.process_time()
w0, c0 = clock()
history = History.load(run_dir + "/history")
w1, c1 = clock()
times = {}
if per_checker:  # each checker timed within the judgment; the shared views first (the judgment reuses them)
    from harness import invariants
    from harness.invariants import timeline
    t0 = clock()
    timeline.build(history, invariants.run_settings(history)[1])
    t1 = clock()
    times["timeline.build"] = (t1[0] - t0[0], t1[1] - t0[1], os.getloadavg()[0])
    def timed(name, f):
        def run(h, s):
            t0 = clock()
            try:
                return f(h, s)
            finally:
                t1 = clock()
                times[name] = (t1[0] - t0[0], t1[1] - t0[1], os.getloadavg()[0])
        return run
    for table in (invariants.RUN_CHECKERS, invariants.CHECKERS):
        for name in list(table):
            table[name] = timed(name, table[name])
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
start = history.run_start() if hasattr(history, "run_start") else None
try:
    from harness.record import columns
    reader = "compiled" if getattr(columns, "COMPILED", None) is not None else "numpy"
except ImportError:  # code older than harness.record.columns
    reader = "older"
json.dump({"harness": harness.__file__, "reader": reader,
           "events": len(history), "load_s": w1 - w0, "load_cpu_s": c1 - c0,
           "judge_s": w2 - w1 + times.get("timeline.build", (0, 0))[0],
           "judge_cpu_s": c2 - c1 + times.get("timeline.build", (0, 0))[1], "per_checker": times,
           "loadavg": os.getloadavg(), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "applies": (start or {}).get("applies"), "verdicts": {k: v.to_dict() for k, v in verdicts.items()}},
          sys.stdout)
"""
ROOT = Path(__file__).resolve().parent.parent


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench/judge.py", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group()
    src.add_argument("--dir", type=Path, default=Path("/tmp/judge-bench"),
                     help="where the synthetic run is generated, or found if it is already there (default %(default)s)")
    src.add_argument("--run-dir", type=Path, help="judge this run directory instead of a synthetic one")
    p.add_argument("--events", type=int, default=1_000_000, help="events of the synthetic run (default %(default)s)")
    p.add_argument("--members", type=int, default=3, help="members of the correct run's group (default %(default)s)")
    p.add_argument("--partitions", type=int, default=6, help="partitions of the correct run's topic (default %(default)s)")
    p.add_argument("--protocol", default="consumer", help="the correct run's group protocol (default %(default)s)")
    p.add_argument("--failure-path", action="store_true",
                   help="the older synthetic run (harness.analytics.synth: 3 members, 6 partitions) that no correct "
                        "group writes, instead of the correct one; its verdicts are not asserted")
    p.add_argument("--seed", type=int, default=3, help="seed of the synthetic run (default %(default)s)")
    p.add_argument("--api", choices=("judge", "check_all"), default="judge",
                   help="judge(history), or check_all with CheckSettings(topic, partitions=6) as older code has it")
    p.add_argument("--per-checker", action="store_true", help="time each checker within the judgment too")
    p.add_argument("--repeat", type=int, default=1, help="fresh processes to run; the table shows each (default 1)")
    p.add_argument("--save-verdicts", type=Path, help="write the verdicts (of the last process) here as JSON")
    p.add_argument("--reference", type=Path, help="verdicts JSON (from --save-verdicts) the verdicts must equal")
    p.add_argument("--ignore-measurement", action="append", default=None, metavar="KEY",
                   help="a measurement left out of the comparison (repeatable; default: partitions_inferred)")
    return p


def synthetic_run(root: Path, args) -> Path:
    """The run directory of the synthetic run asked for (generated, by this checkout's generators whatever harness
    judges it, unless `root` already holds one of this shape)."""
    shape = (f"failure-path-{args.events}-seed-{args.seed}" if args.failure_path else
             f"{args.protocol}-{args.members}-{args.partitions}-{args.events}-seed-{args.seed}")
    marker = root / f".{shape}"
    if not marker.exists():
        if root.exists():
            import shutil
            shutil.rmtree(root)
        cmd = (["-c", f"from harness.analytics import synth; synth.generate({str(root)!r}, 1, {args.events}, "
                      f"{args.seed})"] if args.failure_path else
               ["-m", "harness.analytics.synth_run", str(root), "--members", str(args.members), "--partitions",
                str(args.partitions), "--events", str(args.events), "--protocol", args.protocol, "--seed", str(args.seed)])
        done = subprocess.run([sys.executable, *cmd], env={**os.environ, "PYTHONPATH": str(ROOT)},
                              capture_output=True, text=True)
        if done.returncode == 2:  # a shape that cannot be: its one line
            sys.stderr.write(done.stderr)
            raise SystemExit(2)
        if done.returncode:
            raise SystemExit(f"generating the synthetic run failed:\n{done.stderr}")
        marker.write_text("")
    from harness.record.rundir import RunDir
    runs = [d for d in sorted(root.iterdir()) if RunDir.is_run_dir(d) and RunDir(d).status() in ("pass", "fail")
            and "corrupt" not in d.name]
    if len(runs) != 1:
        raise SystemExit(f"{root}: expected one valid synthetic run, found {len(runs)}")
    return runs[0]


def not_valid(verdicts: dict, applies: dict | None) -> list[str]:
    """The verdicts of a correct run that are neither valid nor skipped where its plan said the invariant does not
    apply."""
    out = []
    for n, v in verdicts.items():
        said = (applies or {}).get(n) or {}
        if v["status"] == "valid" or (v["status"] == "skipped" and said.get("applies") is False):
            continue
        out.append(f"{n}: {v['status']} on a correct run: {v['message'][:200]}")
    return out


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
    run = args.run_dir or synthetic_run(args.dir, args)
    results = []
    for _ in range(max(1, args.repeat)):
        done = subprocess.run([sys.executable, "-c", CHILD, str(run), args.api, "1" if args.per_checker else "0"],
                              capture_output=True, text=True, env=dict(os.environ))
        if done.returncode:
            sys.stderr.write(done.stderr)
            return 1
        results.append(json.loads(done.stdout))
    last = results[-1]
    print(f"run: {run} ({last['events']:,} events)\nharness: {last['harness']} (reader: {last['reader']})\n"
          f"api: {args.api}\n")
    print(f"{'':8}{'load s':>9}{'(cpu)':>8}{'judge s':>10}{'(cpu)':>8}{'total s':>10}{'(cpu)':>8}{'peak RSS MB':>13}"
          f"  load average (1, 5, 15 min) at the end")
    for i, r in enumerate(results, 1):
        print(f"{'#' + str(i):8}{r['load_s']:9.2f}{r['load_cpu_s']:8.2f}{r['judge_s']:10.2f}{r['judge_cpu_s']:8.2f}"
              f"{r['load_s'] + r['judge_s']:10.2f}{r['load_cpu_s'] + r['judge_cpu_s']:8.2f}{r['peak_rss_mb']:13.0f}"
              f"  {', '.join(f'{x:.2f}' for x in r['loadavg'])}")
    if last["per_checker"]:
        print(f"\n  {'(last process)':22}{'wall s':>8}{'cpu s':>8}  load average (1 min) when it ended")
        for n, (w, c, load) in last["per_checker"].items():
            print(f"  {n:22}{w:8.2f}{c:8.2f}  {load:.2f}")
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
    from harness.invariants import CHECKERS
    problems += [f"{n}: no verdict" for n in CHECKERS if n not in last["verdicts"]]
    if not (args.run_dir or args.failure_path):  # a correct run: every invariant that applies holds
        problems += not_valid(last["verdicts"], last["applies"])
        print("\nevery verdict valid (or skipped where the plan said it does not apply)" if not problems else "")
    for p in problems:
        print("  " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
