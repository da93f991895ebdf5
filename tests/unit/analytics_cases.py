"""Kept runs for the analytics' "judged now" tests: fixtures/histories/joins-seconds-apart made a finished run directory
(STATUS pass, verdicts.json as judged when it ran), and its vacuous twin: the same recorded pass, its only fault
step's effect (the proxy's fault_start and fault_end of rule r1) gone from the history, so the step did nothing."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.invariants import judge
from harness.record.rundir import HARNESS_HISTORY, HISTORY, RUN_JSON, STATUS, VERDICTS_JSON, RunDir

KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "joins-seconds-apart"


def kept_pass(root: Path, name: str = "kept-pass") -> Path:
    """The kept run as a finished run directory that passed: STATUS pass, every verdict as judged from its history."""
    d = root / name
    shutil.copytree(KEPT, d)
    verdicts = {n: v.to_dict() for n, v in judge(RunDir(d).history()).items()}
    assert {v["status"] for v in verdicts.values()} <= {"valid", "skipped"}, verdicts  # it passed when it ran
    (d / VERDICTS_JSON).write_text(json.dumps(verdicts))
    (d / STATUS).write_text("pass\n")
    meta = json.loads((d / RUN_JSON).read_text())
    (d / RUN_JSON).write_text(json.dumps({**meta, "run_id": name}))  # two copies side by side: two runs
    return d


def vacuous_fault(root: Path, name: str = "kept-vacuous-fault") -> Path:
    """The kept pass whose only fault step did nothing: the proxy's fault events of it deleted, STATUS and
    verdicts.json still saying pass (as a run recorded before the check existed would)."""
    d = kept_pass(root, name)
    f = d / HISTORY / HARNESS_HISTORY
    lines = f.read_text().splitlines(keepends=True)
    kept = [line for line in lines if '"fault_id":"kp1"' not in line]
    assert len(lines) - len(kept) == 2  # its fault_start and fault_end
    f.write_text("".join(kept))
    return d
