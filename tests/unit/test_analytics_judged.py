"""Verify: the analytics count a run by its verdicts as judged now, not by its STATUS (harness/analytics/judged.py,
harness/analytics/meta.py), with no Spark.

Setup: the kept run fixtures/histories/joins-seconds-apart made a finished run directory (STATUS pass, verdicts.json
as judged when it ran), and its vacuous twin whose only fault step did nothing (analytics_cases.py).
Then: the vacuous twin, recorded pass, is counted unknown with "recorded: pass, judged now: unknown
(schedule_performed)", as `harness check` says; the unedited run still counts pass; a STATUS pass over a verdict
that is unknown counts unknown; a recorded unknown or fail is never counted better; an error stays an error; a
history that cannot be read again is unknown, with why.
"""
from __future__ import annotations

import json

from analytics_cases import kept_pass, vacuous_fault
from harness.analytics import meta
from harness.analytics.judged import judged_now
from harness.cli import main
from harness.record.rundir import HARNESS_HISTORY, HISTORY, STATUS, VERDICTS_JSON

STATUS_COL, RECORDED, NOTE = 9, -2, -1  # the run row's status (schemas.RUNS), then the two columns load adds


def test_the_vacuous_fault_run_recorded_pass_counts_unknown(tmp_path, capsys):
    d = vacuous_fault(tmp_path)
    res = meta.load(str(d))
    assert res["reason"] is None
    run = res["run"]
    assert (run[STATUS_COL], run[RECORDED]) == ("unknown", "pass")
    assert run[NOTE] == "recorded: pass, judged now: unknown (schedule_performed)"
    assert [(v[1], v[2]) for v in res["violations"]] == [("schedule_performed", "unknown")]
    assert "step 2 (a2) error_response" in res["violations"][0][3]
    assert main(["check", str(d)]) == 1 and "schedule_performed     unknown" in capsys.readouterr().out


def test_the_unedited_kept_run_still_counts_pass(tmp_path):
    res = meta.load(str(kept_pass(tmp_path)))
    assert res["reason"] is None and res["run"][STATUS_COL] == "pass" and res["run"][RECORDED] == "pass"
    assert res["run"][NOTE] is None and res["violations"] == []


def test_a_status_pass_over_an_unknown_verdict_counts_unknown(tmp_path):
    d = kept_pass(tmp_path)
    verdicts = json.loads((d / VERDICTS_JSON).read_text())
    verdicts["record_integrity"]["status"] = "unknown"
    (d / VERDICTS_JSON).write_text(json.dumps(verdicts))
    run = meta.load(str(d))["run"]
    assert run[STATUS_COL] == "unknown"
    assert run[NOTE] == "recorded: pass, judged now: unknown (record_integrity)"


def test_never_counted_better_than_recorded_and_an_error_stays_one(tmp_path):
    d = kept_pass(tmp_path)
    verdicts = list(json.loads((d / VERDICTS_JSON).read_text()).values())
    for recorded in ("unknown", "fail", "error"):
        status, _, why = judged_now(str(d), recorded, verdicts)
        assert (status, why) == (recorded, None)


def test_a_history_that_cannot_be_read_again_is_unknown_with_why(tmp_path):
    d = kept_pass(tmp_path)
    f = d / HISTORY / HARNESS_HISTORY
    f.write_text('{"type":"header","schema":"another","version":1}\n' + f.read_text().split("\n", 1)[1])
    status, verdicts, why = judged_now(str(d), "pass", [])
    assert status == "unknown" and why.startswith("its history cannot be judged again: ")
    assert (d / STATUS).read_text() == "pass\n"  # the reader never writes the run directory
