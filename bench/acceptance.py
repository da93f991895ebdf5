"""The acceptance table: how a series of repeated runs was judged (runs, passes, failures, unknowns by invariant).

Each argument is a series: a folder holding run directories at any depth (what `harness run --repeat N --runs-root
DIR` writes), optionally named `label=DIR`. A run is counted from its own files: its STATUS and its verdicts.json
(a run directory without a verdicts file, a run that stopped before judging, counts by its STATUS: `error` with its reason, else `incomplete`). The table
(Markdown) goes to stdout; docs/benchmarks.md keeps the one of the acceptance runs.

    python3 bench/acceptance.py consumer=runs/rm-consumer cooperative=runs/rm-coop
    .venv/bin/python bench/acceptance.py --rejudge consumer=runs/rm-consumer   # as the checkers judge them today

Whether a failure or an unknown is the harness's or a finding about Kafka is for a person to settle from its run
directory; the table only counts.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path


def run_dirs(root: Path) -> list[Path]:
    """Every run directory under `root` (a folder with a run.json), oldest first by name; of a repeat (its
    repeat.json), only the repeat's own runs: the shrink attempts of a failing one are not runs of the series."""
    shrinks = set()
    for rj in root.rglob("repeat.json"):
        own = {Path(o["run_dir"]).name for o in json.loads(rj.read_text()).get("outcomes", []) if o.get("run_dir")}
        shrinks |= {p.parent for p in rj.parent.glob("*/run.json") if p.parent.name not in own}
    return sorted((p.parent for p in root.rglob("run.json") if p.parent not in shrinks), key=lambda p: p.name)


def judged(run_dir: Path, rejudge: bool = False) -> tuple[str, dict[str, str]]:
    """(status, {invariant: status}) of one run directory; ("incomplete", {}) before its verdicts. `rejudge`: the
    verdicts of the checkers of this checkout, judged again from the run's history (a run that finished judging)."""
    status_file, verdicts_file = run_dir / "STATUS", run_dir / "verdicts.json"
    lines = status_file.read_text().strip().splitlines() if status_file.exists() else []
    if not verdicts_file.exists():  # an error before judging: STATUS says `error` and why on its next line
        return (" ".join(lines[:2]) if lines else "incomplete"), {}
    status = lines[0] if lines else "incomplete"
    if rejudge and status in ("pass", "fail", "unknown"):
        from harness.invariants import judge
        from harness.record.history import History
        from harness.record.rundir import status_of
        got = judge(History.load(run_dir / "history"))
        return status_of(v.status for v in got.values()), {name: v.status for name, v in got.items()}
    verdicts = json.loads(verdicts_file.read_text())
    return status, {name: v.get("status", "?") for name, v in verdicts.items()}


def series_row(label: str, root: Path, rejudge: bool = False) -> tuple[list[str], list[tuple[str, str]]]:
    """One table row and the (run, note) of each run that did not pass."""
    statuses: Counter = Counter()
    invalid: Counter = Counter()
    unknown: Counter = Counter()
    notes = []
    for d in run_dirs(root):
        status, verdicts = judged(d, rejudge)
        statuses[status.split(" ")[0]] += 1
        bad = [n for n, s in verdicts.items() if s == "invalid"]
        und = [n for n, s in verdicts.items() if s == "unknown"]
        invalid.update(bad)
        unknown.update(und)
        if status != "pass":
            notes.append((d.name, f"{status}" + (": " if verdicts else "") + ", ".join([f"{n} invalid" for n in bad] + [f"{n} unknown" for n in und])))
    total = sum(statuses.values())
    row = [label, str(total), str(statuses["pass"]), str(statuses["fail"]),
           str(total - statuses["pass"] - statuses["fail"]),
           ", ".join(f"{n} {c}" for n, c in sorted(invalid.items())) or "-",
           ", ".join(f"{n} {c}" for n, c in sorted(unknown.items())) or "-"]
    return row, notes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("series", nargs="+", help="label=DIR or DIR: a folder of run directories")
    ap.add_argument("--rejudge", action="store_true", help="count each finished run by the verdicts this checkout's "
                    "checkers give its history now, not by the verdicts.json written when it ran")
    args = ap.parse_args(argv)
    rows, notes = [], []
    for s in args.series:
        label, _, path = s.rpartition("=")
        root = Path(path)
        if not root.is_dir():
            print(f"acceptance: {root} is not a folder", file=sys.stderr)
            return 2
        row, n = series_row(label or root.name, root, args.rejudge)
        rows.append(row)
        notes += [(row[0], *x) for x in n]
    print("| series | runs | pass | fail | unknown, error or incomplete | invalid verdicts | unknown verdicts |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if notes:
        print()
        for label, run, note in notes:
            print(f"- {label} `{run}`: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
