"""What `harness check` prints of each kept run (fixtures/histories/*), and the raw monotonic times in a text.

A kept run directory is checked as `harness check` checks it (the CLI's `main`); a kept single-file history
(`*.jsonl`, events without a header) is judged and printed the same way (`print_table`, then its `headline`).
"""
from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories"

#: a number with a decimal point, as messages print times ("89080.844", "2932.9s")
DECIMAL = re.compile(r"(?<![\w.])-?\d+\.\d+")


def kept_runs() -> list[Path]:
    """Every kept run: its directory, or its single history file."""
    return sorted(p for p in KEPT.iterdir() if p.is_dir() or p.suffix == ".jsonl")


def monos(path: Path) -> list[float]:
    """Every monotonic time the kept run's history holds (any key holding the host's monotonic clock)."""
    from harness.report.headline import is_mono_key
    files = [path] if path.is_file() else sorted((path / "history").glob("*.jsonl"))
    out = []
    for f in files:
        for line in f.read_text().splitlines():
            e = json.loads(line) if line.strip() else {}
            out += [float(v) for k, v in e.items() if is_mono_key(k) and isinstance(v, (int, float))
                    and not isinstance(v, bool)]
    return out


def raw_monos(text: str, lo: float, hi: float) -> list[str]:
    """The decimal numbers of the text within [lo - 1, hi + 1]: raw monotonic times of a history whose clock reads
    lo to hi (seconds from its start are below lo when the run began more than its length after the host booted)."""
    return [m.group() for m in DECIMAL.finditer(text) if lo - 1 <= float(m.group()) <= hi + 1]


def check_output(path: Path) -> str:
    """What `harness check` prints of a kept run (a single history file: its table and its one line)."""
    buf = io.StringIO()
    with redirect_stdout(buf):
        if path.is_dir():
            from harness.cli import main
            main(["check", str(path)])
        else:
            from harness.cli import print_table
            from harness.invariants import judge
            from harness.invariants.clock import run_t0
            from harness.record.history import History
            from harness.report.headline import headline
            h = History.from_events(json.loads(x) for x in path.read_text().splitlines() if x.strip())
            verdicts, t0 = judge(h), run_t0(h)
            print_table(verdicts, t0=t0)
            print(headline(verdicts, t0=t0))
    return buf.getvalue()
