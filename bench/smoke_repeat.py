"""Run the smoke gate N times and write a table: run, wall time, result, the failed tests with their first witness.

Each run is `./dev smoke` (or `--command`, split like a shell line) with its own JUnit XML and run directories under
`--out` (`run-K.xml`, `runs-K/`, `run-K.log`); the table (Markdown) is rewritten after every run, so a long series
stopped early keeps what it ran. A run that fails names each failed test and the first `witness:` line of its
message (else the message's first line); whether a failure is false (the harness's) or a finding about Kafka is
for a person to decide from its run directory (docs/benchmarks.md).

    python3 bench/smoke_repeat.py -n 30 --out /tmp/smoke-repeat --lock /tmp/realrun.lock

`--lock PATH` takes the lock (flock) around each run only, so that other work on the machine can go between runs;
a run's wall time starts once it holds the lock.
"""
from __future__ import annotations

import argparse
import fcntl
import os
import shlex
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def failures(junit: Path) -> list[tuple[str, str]]:
    """(test, first witness line) of each failed or errored test case of a JUnit XML file, and of each test excused as
    a known finding (xfailed: `excused` and the finding's id)."""
    if not junit.exists():
        return [("(no JUnit XML)", "the run ended before pytest wrote its results")]
    out = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        bad = case.find("failure")
        bad = bad if bad is not None else case.find("error")
        skipped = case.find("skipped")
        excused = skipped is not None and (skipped.get("message") or "").startswith("known finding: ")
        if bad is None and not excused:
            continue
        bad = bad if bad is not None else skipped
        text = (bad.get("message") or "") + "\n" + (bad.text or "")
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        witness = next((ln for ln in lines if ln.startswith("witness:")), lines[0] if lines else "")[:240]
        known = next((f"known finding: {ln.split(':')[1].strip()}" for ln in lines if ln.startswith("known finding: ")),
                     None)
        said = f"{known} ({witness})" if known else witness
        out.append((case.get("name", "?"), f"excused as {said}" if excused else said))
    return out


def table(rows: list[dict]) -> str:
    head = ["| run | wall time | result | failed tests (first witness) |", "|---|---|---|---|"]
    body = []
    for r in rows:
        failed = "; ".join(f"`{t}`: {w.replace('|', '/')}" for t, w in r["failed"]) or "-"
        m, s = divmod(round(r["wall_s"]), 60)
        body.append(f"| {r['run']} | {m} min {s:02d} s | {r['result']} | {failed} |")
    passed = sum(r["result"] == "pass" for r in rows)
    walls = sorted(r["wall_s"] for r in rows)
    summary = (f"\n{passed} of {len(rows)} runs passed; wall time min {walls[0]:.0f} s, median "
               f"{walls[len(walls) // 2]:.0f} s, max {walls[-1]:.0f} s\n") if rows else "\n"
    return "\n".join(head + body) + "\n" + summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--runs", type=int, default=30, help="how many runs (default: 30)")
    ap.add_argument("--out", type=Path, required=True, help="where the logs, JUnit files, run directories and table go")
    ap.add_argument("--command", default="./dev smoke", help="the gate's command, run from the repository's root "
                                                              "(default: ./dev smoke)")
    ap.add_argument("--lock", default=None, help="flock this file around each run")
    a = ap.parse_args(argv)
    if a.runs < 1:
        print("smoke_repeat: -n must be 1 or more", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for k in range(1, a.runs + 1):
        junit, runs = a.out / f"run-{k}.xml", a.out / f"runs-{k}"
        cmd = shlex.split(a.command) + [f"--junitxml={junit}", f"--harness-runs-root={runs}"]
        with open(a.lock or os.devnull, "a") as lock, open(a.out / f"run-{k}.log", "wb") as log:
            if a.lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # the wall time starts once the lock is held
            t0 = time.monotonic()
            # the gate holds the lock too: this script stopped mid-run does not free it under a running gate
            rc = subprocess.call(cmd, cwd=HERE, stdout=log, stderr=subprocess.STDOUT,
                                 pass_fds=(lock.fileno(),) if a.lock else ())
            wall = time.monotonic() - t0
        failed = failures(junit) if rc else []
        rows.append({"run": k, "wall_s": wall, "result": "pass" if rc == 0 else f"fail (exit {rc})",
                     "failed": failed})
        (a.out / "table.md").write_text(table(rows))
        print(f"run {k}: {rows[-1]['result']} in {wall:.0f} s" + "".join(f"\n  {t}: {w}" for t, w in failed),
              flush=True)
    return 0 if all(r["result"] == "pass" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
