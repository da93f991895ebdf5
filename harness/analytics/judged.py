"""A run's status as judged now, not as recorded: what the analytics count a run by.

STATUS and verdicts.json say what the harness of the day judged. A pass recorded before a check existed (or while
it was laxer) is not a pass now if the history does not prove it: the kept run whose only fault did nothing passed
when it ran, and `harness check` says unknown today. So a finished run is counted by its recorded verdicts with the
run-level checks (`harness.invariants.RUN_CHECKERS`: that each step of the schedule happened) judged again from its
history, and the run's status follows from those verdicts by the rule every reader uses (`status_of`: a skip or an
unknown is never a pass), never from STATUS alone; nor is a run ever counted better than it was recorded. A history that cannot be read again gives unknown, with why.
A run that ended in error stays an error (it has no verdict to judge).

Pure Python, no Spark: `meta.load` calls it on the executors, one run directory at a time.
"""
from __future__ import annotations

from harness.record.rundir import RunDir, status_of

_RANK = ("pass", "unknown", "fail")  # a run judged now is never counted better than it was recorded


def judged_now(run_dir: str, recorded: str, verdicts: list[dict]) -> tuple[str, list[dict], str | None]:
    """(the run's status as judged now, the verdicts it rests on (the recorded ones, the run-level ones judged
    again in their place), why it differs from `recorded` (None when it does not))."""
    if recorded == "error":
        return recorded, verdicts, None
    from harness.invariants import RUN_CHECKERS
    from harness.invariants.core import run_checkers
    by_name = {v["name"]: v for v in verdicts}
    try:
        history = RunDir(run_dir).history()
    except Exception as e:  # noqa: BLE001 - an unreadable history proves nothing: unknown, and why
        why = f"its history cannot be judged again: {type(e).__name__}: {str(e)[:200]}"
        return ("unknown" if recorded == "pass" else recorded), verdicts, why if recorded == "pass" else None
    again = {n: v.to_dict() for n, v in run_checkers(RUN_CHECKERS, history, None).items()}
    by_name.update(again)
    now = list(by_name.values())
    status = max(status_of(v["status"] for v in now), recorded, key=_RANK.index)  # never better than recorded
    if status == recorded:
        return status, now, None
    changed = [n for n, v in again.items() if v["status"] != "valid"] or \
        sorted(n for n, v in by_name.items() if v["status"] in ("invalid", "unknown"))
    return status, now, f"recorded: {recorded}, judged now: {status} ({', '.join(changed)})"
