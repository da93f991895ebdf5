"""Verify: a suite test's Allure result carries its run's own times and a step per verdict, whatever the test body's
own timing was.

Setup: a hand-made run directory (run.json: a 230.4 s run that finished at a set time; verdicts.json: one verdict
of each status; history/harness.jsonl: an action of 2.5 s, and one the nemesis could not do); an inner pytest
session with allure-pytest and the harness plugin, whose one test collects that run through the plugin's `run_on`
(the runner replaced by a function that returns it, as the pool hands a finished run over) after sleeping 0.3 s.
Then: the Allure result's start and stop are the run's (not the test body's 0.3 s), its thread label is the pool
worker's, the action is a step with its own start and stop (the one that did not happen: skipped), and each
verdict is a step named `<invariant>: <status> — <message>` whose status is the verdict's; one whose run.json has
no `finished` spans `started` to its history's last event.
"""
import json
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone

from harness.record.history import HistoryWriter
from harness.report.allure_times import STEP_STATUS, run_span, verdict_name

FINISHED = datetime(2026, 11, 27, 10, 0, 0, tzinfo=timezone.utc)
VERDICTS = {
    "exclusive_ownership": {"name": "exclusive_ownership", "status": "invalid", "witnesses": [{"member": "m1"}],
                            "message": "partition t-0 held by m1 and m2 for 1.20s"},
    "coverage_liveness": {"name": "coverage_liveness", "status": "valid", "message": "every partition owned"},
    "share_served": {"name": "share_served", "status": "unknown", "message": "no delivery to judge"},
    "static_membership": {"name": "static_membership", "status": "skipped", "message": "no static member"},
}


def _run_dir(path, *, finished=True):
    (path / "history").mkdir(parents=True)
    start = FINISHED - timedelta(seconds=230.4)
    meta = {"run_id": path.name, "seed": 7, "protocol": "consumer", "started": (start + timedelta(seconds=0.6)).isoformat()}
    if finished:
        meta.update(finished=FINISHED.isoformat(), duration_s=230.4)
    (path / "run.json").write_text(json.dumps(meta))
    (path / "verdicts.json").write_text(json.dumps(VERDICTS))
    (path / "STATUS").write_text("fail\n")
    t = start.timestamp()
    with HistoryWriter(path / "history" / "harness.jsonl", source="harness", member=None) as w:
        for type_, at, extra in (("run_start", 1.0, {"run_id": "r", "scenario": "s", "seed": 7, "settings": {}}),
                                 ("action_start", 40.0, {"action_id": "a1", "kind": "kill_member",
                                                         "params": {"slot": 0}}),
                                 ("action_end", 42.5, {"action_id": "a1", "kind": "kill_member", "ok": True,
                                                       "error": None}),
                                 ("action_start", 50.0, {"action_id": "a2", "kind": "poll_stall",
                                                         "params": {"slot": 0, "duration_s": 3.0}}),
                                 ("action_end", 50.1, {"action_id": "a2", "kind": "poll_stall", "ok": True,
                                                       "error": None, "skipped": "slot 0 lists no stall control"}),
                                 ("run_end", 229.0, {"status": "complete"})):
            w._write({"type": type_, "mono": at, "wall": t + at, **extra})
    return path, t


def test_run_span_is_run_json_s_and_else_started_to_the_last_event(tmp_path):
    d, t = _run_dir(tmp_path / "a")
    assert run_span(d) == (FINISHED.timestamp() - 230.4, FINISHED.timestamp())
    e, t = _run_dir(tmp_path / "b", finished=False)
    a, b = run_span(e)
    assert abs(a - (t + 0.6)) < 1e-6 and abs(b - (t + 229.0)) < 1e-6
    assert run_span(tmp_path / "nothing") is None


def test_verdict_step_names_and_statuses():
    assert verdict_name("x", {"status": "invalid", "message": "two\n owners"}) == "x: invalid — two owners"
    assert verdict_name("x", {"status": "valid"}) == "x: valid"
    assert len(verdict_name("x", {"status": "unknown", "message": "y" * 2000})) < 420
    assert STEP_STATUS == {"valid": "passed", "invalid": "failed", "unknown": "broken", "skipped": "skipped"}


def test_the_allure_result_has_the_run_s_times_and_a_step_per_verdict(tmp_path):
    d, t = _run_dir(tmp_path / "run-1")
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(f"""
        import time
        from pathlib import Path
        from harness.suite.plugin import run_on
        from harness.record.rundir import RunResult

        def test_collects_a_finished_run(request, monkeypatch):
            monkeypatch.setattr("harness.run.runner.run_scenario",
                                lambda cfg, cluster=None: RunResult(Path({str(d)!r}), "fail"))
            time.sleep(0.3)
            run_on(request, None, None)
            request.node.harness_worker = "harness-run-2"
    """))
    results = tmp_path / "allure"
    r = subprocess.run([sys.executable, "-m", "pytest", "test_inner.py", "-q", "-p", "no:cacheprovider",
                        f"--alluredir={results}", "-p", "harness.suite.plugin"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    (res,) = [json.loads(p.read_text()) for p in results.glob("*-result.json")]
    assert res["stop"] == round(FINISHED.timestamp() * 1000) and res["stop"] - res["start"] == 230400
    thread = [lb["value"] for lb in res["labels"] if lb["name"] == "thread"]
    assert thread[0].endswith("-harness-run-2") and len(thread) == 1, thread
    steps = {s["name"]: s for s in res["steps"]}
    action = next(s for n, s in steps.items() if n.startswith("kill_member slot=0"))
    assert (action["start"], action["stop"]) == (round((t + 40.0) * 1000), round((t + 42.5) * 1000))
    assert action["status"] == "passed"
    stall = next(s for n, s in steps.items() if n.startswith("poll_stall slot=0"))
    assert stall["status"] == "skipped" and "no stall control" in stall["statusDetails"]["message"]
    for name, v in VERDICTS.items():
        step = steps[f"{name}: {v['status']} — {v['message']}"]
        assert step["status"] == STEP_STATUS[v["status"]] and step["stop"] == res["stop"]
    assert [s["name"].split(":")[0] for s in res["steps"][2:]] == list(VERDICTS)  # after the actions, in order
    assert steps[verdict_name("exclusive_ownership", VERDICTS["exclusive_ownership"])]["attachments"]
