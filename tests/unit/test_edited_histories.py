"""Copies of kept runs edited by hand (issue 45): an edited copy must not pass, and must name the step; the unedited
copy still passes.

Setup: the kept run fixtures/histories/joins-seconds-apart (the fenced-answer request fault: a1 sleep, a2
error_response, a3 wait_request_fault; recorded before run_start carried the plan) copied into tmp_path with STATUS
`pass`, its history/harness.jsonl edited line by line, then judged by `harness check` (the CLI's `main`, in-process).
Where a case needs the plan, the copy's run_start is given it the way the runner writes it now
(`runner.planned_steps` over the schedule its run.json recorded). The stall case: the kept single-file history
fixtures/histories/random-mix-consumer-fenced-given-back.jsonl (two poll stalls of m2, its per-record events left out),
judged by `invariants.judge` (what `harness check` calls), with `processed` events of m2 added inside a stall.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.invariants import judge
from harness.plan.scenario_model import Action
from harness.record.history import History
from harness.record.rundir import RunDir
from harness.run.planned import planned_steps

KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories"
JOINS = KEPT / "joins-seconds-apart"
STALLS = KEPT / "random-mix-consumer-fenced-given-back.jsonl"


def copy_of_kept(tmp_path: Path, *, with_plan: bool = False) -> Path:
    """The kept run copied, STATUS pass (as a finished run's); with_plan: its run_start given the plan."""
    run = tmp_path / JOINS.name
    shutil.copytree(JOINS, run)
    RunDir(run).set_status("pass")
    if with_plan:
        schedule = [Action.from_dict(d) for d in json.loads((run / "run.json").read_text())["schedule"]]
        edit(run, lambda e: {**e, "plan": planned_steps(schedule)} if e["type"] == "run_start" else e)
    return run


def edit(run: Path, change) -> None:
    """Rewrite history/harness.jsonl: each event through `change` (None: the line deleted); the header kept."""
    path = run / "history" / "harness.jsonl"
    header, *lines = path.read_text().splitlines()
    out = [header]
    for line in lines:
        e = change(json.loads(line))
        if e is not None:
            out.append(json.dumps(e, separators=(",", ":")))
    path.write_text("\n".join(out) + "\n")


def checked(run: Path, capsys) -> tuple[int, str]:
    """`harness check` of the run: its exit code and schedule_performed's row."""
    code = main(["check", str(run)])
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("schedule_performed"))
    return code, row


def without(*ids: str):
    return lambda e: None if e["type"] in ("action_start", "action_end") and e.get("action_id") in ids else e


@pytest.mark.parametrize("with_plan", [False, True], ids=["as-kept", "with-plan"])
def test_the_unedited_copy_passes(tmp_path, capsys, with_plan):
    code, row = checked(copy_of_kept(tmp_path, with_plan=with_plan), capsys)
    assert code == 0 and " valid " in row and "every one of the 3 steps happened" in row, row
    assert ("carries no plan" in row) != with_plan, row
    assert ("its plan is the schedule its run.json recorded" in row) != with_plan, row


def test_two_steps_deleted_from_a_run_with_its_plan_do_not_pass(tmp_path, capsys):
    run = copy_of_kept(tmp_path, with_plan=True)
    edit(run, without("a2", "a3"))
    code, row = checked(run, capsys)
    assert code == 1 and " unknown " in row, row
    assert "2 of 3 steps did not happen" in row and "step 2 (a2) error_response" in row, row
    assert "step 3 (a3) wait_request_fault" in row and "the history has no line of it" in row, row


def test_two_steps_deleted_from_the_kept_run_without_its_plan_do_not_pass(tmp_path, capsys):
    """The kept run has no plan: the steps left are numbered a3 alone, so a1 and a2 had lines."""
    run = copy_of_kept(tmp_path)
    edit(run, without("a1", "a2"))
    code, row = checked(run, capsys)
    assert code == 1 and " unknown " in row, row
    assert "step 1 (a1)" in row and "step 2 (a2)" in row and "the history has no line of it" in row, row


@pytest.mark.parametrize("with_plan", [False, True], ids=["as-kept", "with-plan"])
def test_steps_moved_past_run_end_do_not_pass(tmp_path, capsys, with_plan):
    run = copy_of_kept(tmp_path, with_plan=with_plan)
    late = 30.0  # run_end is 6.8 s after a3's end

    def move(e):
        if e["type"] in ("action_start", "action_end") and e.get("action_id") in ("a2", "a3"):
            return {**e, "mono": e["mono"] + late, "wall": e["wall"] + late}
        return e
    edit(run, move)
    code, row = checked(run, capsys)
    assert code == 1 and " unknown " in row, row
    assert "step 2 (a2) error_response" in row and "it began after run_end (late)" in row, row
    assert "step 3 (a3) wait_request_fault" in row, row


@pytest.mark.parametrize("with_plan", [False, True], ids=["as-kept", "with-plan"])
def test_run_end_deleted_does_not_pass(tmp_path, capsys, with_plan):
    run = copy_of_kept(tmp_path, with_plan=with_plan)
    edit(run, lambda e: None if e["type"] == "run_end" else e)
    code, row = checked(run, capsys)
    assert code == 1 and " unknown " in row and "the history has no run_end" in row, row


@pytest.mark.parametrize("with_plan", [False, True], ids=["as-kept", "with-plan"])
def test_an_action_end_without_ok_does_not_pass(tmp_path, capsys, with_plan):
    run = copy_of_kept(tmp_path, with_plan=with_plan)
    edit(run, lambda e: {k: v for k, v in e.items() if k != "ok"}
         if e["type"] == "action_end" and e["action_id"] == "a2" else e)
    code, row = checked(run, capsys)
    assert code == 1 and " unknown " in row, row
    assert "step 2 (a2) error_response" in row and "its action_end has no `ok`" in row, row


# -- a member's word against its processing: the kept history with two poll stalls of m2

def stall_events() -> list[dict]:
    return [json.loads(line) for line in STALLS.read_text().splitlines() if line.strip()]


def stall_window(evs: list[dict], action_id: str) -> tuple[float, float]:
    """m2's own stall window of the step: its control events stalling and resuming within the step."""
    a = next(e["mono"] for e in evs if e["type"] == "action_start" and e["action_id"] == action_id)
    z = next(e["mono"] for e in evs if e["type"] == "action_end" and e["action_id"] == action_id)
    controls = [e for e in evs if e["type"] == "control" and e["member"] == "m2" and a <= e["mono"] <= z]
    return controls[0]["mono"], controls[-1]["mono"]


def test_the_kept_stalls_pass_as_kept():
    v = judge(History.from_events(stall_events()))["schedule_performed"]
    assert v.status == "valid", v.message


def test_a_member_that_writes_stall_on_and_off_yet_processes_inside_does_not_pass():
    """m2 writes its stall and its resume as kept, and processes 11 batches inside the first stall (a17)."""
    evs = stall_events()
    on, off = stall_window(evs, "a17")
    step = (off - on) / 12
    evs += [{"type": "processed", "mono": on + step * (i + 1), "wall": 0.0, "source": "member", "member": "m2",
             "topic": "t", "partition": 3, "first_offset": 10 * i, "last_offset": 10 * i + 9, "count": 10}
            for i in range(11)]
    v = judge(History.from_events(evs))["schedule_performed"]
    assert v.status == "unknown", v.message
    assert "step 17 (a17) poll_stall" in v.message and "m2 processed 11 batches inside its stall" in v.message
    assert "step 25 (a25)" not in v.message  # the other stall, with no batch inside, still happened


def test_the_last_step_cut_from_a_run_directory_recorded_before_the_plan_does_not_pass(tmp_path):
    """A run directory whose run_start carries no plan (recorded before it did): its run.json's schedule is its plan,
    so its last step's lines deleted are seen (judged on the history's steps alone, it passed)."""
    import json as _json
    import shutil as _shutil

    from harness.cli import main as cli_main
    kept = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "joins-seconds-apart"
    run = tmp_path / "run"
    _shutil.copytree(kept, run)
    (run / "STATUS").write_text("pass\n")
    assert cli_main(["check", str(run)]) == 0
    h = run / "history" / "harness.jsonl"
    lines = h.read_text().splitlines(True)
    last = [_json.loads(x)["action_id"] for x in lines if '"action_start"' in x][-1]
    h.write_text("".join(x for x in lines if not (('"action_start"' in x or '"action_end"' in x)
                                                  and _json.loads(x).get("action_id") == last)))
    assert cli_main(["check", str(run)]) == 1
