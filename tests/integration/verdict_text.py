"""The verdicts of a run that did not hold, as one string a failed assertion shows whole (pytest shortens a dict it
shows, and the failing verdict was cut from CI's output)."""
import json
from pathlib import Path


def not_held(verdicts: dict | Path, width: int = 600) -> str:
    """Each verdict not `valid` or `skipped`: its name, status, message and first witness (cut at `width`);
    `verdicts` is a run's verdicts.json mapping or the run directory."""
    if isinstance(verdicts, Path):
        verdicts = json.loads((verdicts / "verdicts.json").read_text())
    lines = []
    for name, v in verdicts.items():
        if v["status"] in ("valid", "skipped"):
            continue
        wits = v.get("witnesses") or []
        first = f" | witness: {json.dumps(wits[0])[:width]}" if wits else ""
        lines.append(f"{name}: {v['status']}: {v['message'][:width]}{first}")
    return "\n".join(lines) or "every verdict valid or skipped"


def settle_known(pytestconfig, returncode: int, run_dir: Path, verdicts: dict) -> None:
    """A failed run that is a known Kafka or client finding (its marks cover every failing witness) is settled as the
    suites settle one: failed naming the finding, or xfailed with it under --harness-known-findings xfail; any other
    outcome returns, for the test's own asserts."""
    from harness.findings.registry import known
    from harness.suite.known import line, settle
    excuse = known(run_dir, verdicts) if returncode == 1 else None
    if excuse is not None:
        said = "".join(f"\n  {n}: invalid: {x['message']}" for n, x in verdicts.items() if x["status"] == "invalid")
        settle(pytestconfig, f"run {run_dir}: fail{said}\n{line(excuse)}", excuse)
