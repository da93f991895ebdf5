"""Verify: a run's outcome reads in one line naming what failed, who, where and at what second of the run, and every
message and witness line `harness check` prints gives seconds from the run's start, never the host's raw clock.

Setup: hand-made verdicts and witnesses (the run started at mono 1000.0); the kept runs of fixtures/histories judged
as `harness check` judges them (tests/unit/kept_output.py); a kept run made a finished run directory that passed
when an older harness judged it (tests/unit/analytics_cases.py).
Then: `headline` has the forms harness/report/headline.py's docstring gives; a witness is its `why` whole, then the
event in words; keys holding a monotonic time print in run seconds; the grep for raw monotonic times catches one
planted in a message and finds none in what `harness check` prints of any kept run; `harness check` of a run an
older harness judged says what it recorded and which invariants are new to it.
"""
from __future__ import annotations

import json
import re
import shutil

import pytest

from harness.cli import main, print_table
from harness.invariants import Verdict, judge
from harness.record.rundir import STATUS, VERDICTS_JSON, RunDir, RunResult
from harness.report.headline import at, headline, run_t0, sentence, witness_lines
from kept_output import KEPT, check_output, kept_runs, monos, raw_monos

T0 = 1000.0
TOPIC = "t-0"


def _assigned(member: str, parts, mono: float, why: str | None = None) -> dict:
    w = {"type": "assigned", "mono": mono, "wall": 1795842695.93, "member": member,
         "partitions": [[TOPIC, p] for p in parts], "source": "member"}
    return {**w, "why": why} if why else w


def _verdicts(**statuses) -> dict:
    out = {}
    for name, (status, message, *ws) in statuses.items():
        out[name] = Verdict(name, status, message, tuple(ws))
    return out


# -- the one line

def test_a_failure_names_its_invariant_its_first_witness_in_words_and_the_other_failures():
    vs = _verdicts(schedule_performed=("valid", "every step happened"),
                   exclusive_ownership=("invalid", "partition 4 assigned to m3 at 12.3s while m2 held it",
                                        _assigned("m2", [4], 1012.3, "m2 holds partition 4 and did not revoke or lose it "
                                                                     "before m3 was assigned it"),
                                        _assigned("m3", [4], 1014.1)),
                   coverage_liveness=("unknown", "the partition count is unknown"),
                   convergence_balance=("invalid", "not balanced within 40.0s"))
    assert headline(vs, t0=T0, status="fail") == (
        "exclusive_ownership: m2 holds partition 4 and did not revoke or lose it before m3 was assigned it "
        "(m2 assigned partition 4 of t-0 at 12.3 s) (+ convergence_balance); undecided: coverage_liveness")


def test_a_failure_without_witnesses_says_its_message():
    vs = _verdicts(convergence_balance=("invalid", "not complete and balanced within 40.0s of the disturbance at 3.1s"))
    assert headline(vs, t0=T0, status="fail") == \
        "convergence_balance: not complete and balanced within 40.0s of the disturbance at 3.1s"


def test_an_undecided_run_says_the_missing_fact():
    vs = _verdicts(exclusive_ownership=("valid", "one owner"),
                   assignor_shape=("unknown", "the brokers' group.consumer.assignors was not recorded"),
                   record_integrity=("unknown", "no acknowledged record"))
    assert headline(vs, t0=T0, status="unknown") == \
        "undecided: assignor_shape: the brokers' group.consumer.assignors was not recorded (+ record_integrity)"


def test_a_pass_an_error_and_an_unfinished_run():
    vs = _verdicts(exclusive_ownership=("valid", "one owner"), static_membership=("skipped", "no static member"))
    assert headline(vs, t0=T0, status="pass") == "pass: 1 invariants held, 1 did not apply"
    assert headline({}, t0=None, status="error", error="the cluster did not start") == \
        "error: the cluster did not start"
    assert headline(vs, t0=T0, status="incomplete") == \
        "incomplete: the run did not finish; its partial history judged: pass: 1 invariants held, 1 did not apply"


# -- witnesses as sentences

def test_a_witness_is_its_why_whole_then_the_event_in_run_seconds():
    why = "m3 held partition 4 from 30.8s to 32.8s but the coordinator never gave it to m3: " + "x" * 400
    said = sentence(_assigned("m3", [4, 5], 1030.8, why), t0=T0)
    assert said == f"{why} (m3 assigned partitions 4, 5 of t-0 at 30.8 s)"  # whole: no cut inside the why
    assert "1030.8" not in said and "1795842695" not in said  # neither raw clock


def test_a_witness_without_why_reads_from_its_shape():
    processed = {"type": "processed", "mono": 1002.0, "member": "m1", "topic": TOPIC, "partition": 3, "offset": 17}
    assert sentence(processed, t0=T0) == "m1 processed partition 3 of t-0 at offset 17 at 2.0 s"
    log = {"type": "broker", "mono": 1014.2, "broker": 2, "message": "Member m2 has failed"}
    assert sentence(log, t0=T0) == "broker 2 logged 'Member m2 has failed' at 14.2 s"
    assert sentence({**log, "why": "what the broker said"}, t0=T0) == "what the broker said (broker 2 logged at 14.2 s)"


def test_a_witness_of_no_known_shape_reads_key_by_key_its_times_in_run_seconds():
    odd = {"task": "c-1", "older": "m1", "newer": "m2", "older_start": 1001.5, "acked_mono": 1003.25, "overlap_s": 2.0,
           "wall": 1795842695.9}
    said = sentence({k: v for k, v in odd.items() if k != "task"}, t0=T0)
    assert said == "older m1; newer m2; older_start 1.5 s; acked_mono 3.2 s; overlap_s 2.0"
    assert "task c-1" in sentence(odd, t0=T0)  # the task is what a Connect witness is about
    assert at(1012.34, None) == "?"  # the run's start unknown: no time rather than a raw one


def test_the_table_prints_witnesses_as_sentences_and_says_how_many_more(capsys):
    ws = [_assigned(f"m{k}", [k], T0 + k, f"m{k} assigned partition {k} while another held it") for k in range(1, 8)]
    vs = {"exclusive_ownership": Verdict("exclusive_ownership", "invalid", "7 double assignments", tuple(ws))}
    print_table(vs, t0=T0)
    out = capsys.readouterr().out.splitlines()
    assert out[2].strip() == "witness: m1 assigned partition 1 while another held it (m1 assigned partition 1 of t-0 " \
                             "at 1.0 s)"
    assert out[-1].strip() == "witness: (and 2 more in verdicts.json)" and len(witness_lines(vs["exclusive_ownership"],
                                                                                        t0=T0)) == 6
    assert not raw_monos("\n".join(out), T0, T0 + 7)


# -- no raw monotonic time in what harness check prints

def test_the_grep_catches_a_raw_monotonic_time():
    """Must-fail direction: a message or a witness line carrying the host's clock is caught; run seconds are not."""
    lo, hi = 89048.97, 89084.57  # close-leaves-before-revoking's clock
    assert raw_monos("partition 2 assigned to m4 at 89080.844 while m3 held it", lo, hi) == ["89080.844"]
    assert raw_monos('witness: {"type": "assigned", "mono": 89054.061150436}', lo, hi) == ["89054.061150436"]
    assert raw_monos("(DescribeConfigs at 89049.0s)", lo, hi) == ["89049.0"]
    assert raw_monos("partition 2 assigned to m4 at 31.9s (bound 40.0s; wall 1795842695.9)", lo, hi) == []


@pytest.mark.parametrize("kept", kept_runs(), ids=lambda p: p.name)
def test_harness_check_of_a_kept_run_prints_no_raw_monotonic_time(kept):
    ms = monos(kept)
    out = check_output(kept)
    assert out.startswith("invariant") and len(out.splitlines()) > 5, out  # the table was printed
    found = {line.strip()[:200]: bad for line in out.splitlines() if (bad := raw_monos(line, min(ms), max(ms)))}
    assert not found, found


# -- the first line of a failing kept run

def _finished(tmp_path, name: str, status: str) -> RunDir:
    d = tmp_path / name
    shutil.copytree(KEPT / name, d)
    (d / STATUS).write_text(f"{status}\n")
    return RunDir(d)


def test_the_first_line_of_a_failing_kept_run_names_invariant_member_partition_and_run_second(tmp_path):
    from harness.suite.plugin import failure_message
    rd = _finished(tmp_path, "close-leaves-before-revoking", "fail")
    verdicts = judge(rd.history())
    msg = failure_message(RunResult(rd.path, "fail", verdicts))
    first = msg.splitlines()[0]
    assert re.fullmatch(r"exclusive_ownership: m3 holds partition 2 .*\(m3 assigned partitions 2, 5 of t-\S+ at 5\.1 s\)"
                        r" \(\+ coordinator_claims\)", first), first
    assert msg.splitlines()[1] == f"run {rd.path.name}: fail"
    assert "  exclusive_ownership: invalid: partition 2 assigned to m4 at 31.9s" in msg  # Allure's categories read it
    assert run_t0(rd.path) == 89048.978371617


def test_harness_check_ends_with_the_one_line(tmp_path, capsys):
    rd = _finished(tmp_path, "close-leaves-before-revoking", "fail")
    (rd.path / VERDICTS_JSON).write_text(json.dumps({n: v.to_dict() for n, v in judge(rd.history()).items()}))
    assert main(["check", str(rd.path)]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("exclusive_ownership: m3 holds partition 2 and did not revoke or lose it"), out[-1]
    assert not any(line.startswith("recorded:") for line in out)  # judged as it recorded: nothing to say


# -- a run an older harness judged

def test_check_of_a_run_an_older_harness_passed_names_the_invariants_new_to_it(tmp_path, capsys):
    from analytics_cases import kept_pass
    d = kept_pass(tmp_path)
    recorded = json.loads((d / VERDICTS_JSON).read_text())
    del recorded["coordinator_claims"], recorded["rebalance_cause"]  # judged by a harness that had neither
    (d / VERDICTS_JSON).write_text(json.dumps(recorded))
    assert main(["check", str(d)]) == 0
    out = capsys.readouterr().out
    assert f"recorded: pass (its STATUS; verdicts.json: {len(recorded)} invariants); judged now: pass (a harness " \
           f"older than this one judged it)" in out
    assert "new to it (judged now, absent from its verdicts.json): rebalance_cause, coordinator_claims" in out
    assert out.strip().splitlines()[-1].startswith("pass: ")


def test_check_of_a_recorded_pass_judged_unknown_now_says_both(tmp_path, capsys):
    from analytics_cases import vacuous_fault
    d = vacuous_fault(tmp_path)
    assert main(["check", str(d)]) == 1  # not silently: it says why
    out = capsys.readouterr().out.strip().splitlines()
    assert any(line.startswith("recorded: pass (its STATUS; verdicts.json: ") and line.endswith("judged now: unknown")
               for line in out), out
    assert "judged otherwise now: schedule_performed (recorded valid, now unknown)" in out
    assert out[-1].startswith("undecided: schedule_performed: "), out[-1]


def test_check_of_a_run_judged_as_it_recorded_says_nothing_more(tmp_path, capsys):
    from analytics_cases import kept_pass
    assert main(["check", str(kept_pass(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "recorded:" not in out and "new to it" not in out


# -- the --repeat table's rows

def test_a_repeat_row_is_the_runs_one_line(tmp_path):
    from harness.drive import repeat as rp
    run = tmp_path / "r1"
    (run / "history").mkdir(parents=True)
    header = {"type": "header", "schema": "rebalance-history", "version": 1, "source": "harness"}
    (run / "history" / "harness.jsonl").write_text(json.dumps(header) + "\n" +
                                                   json.dumps({"type": "run_start", "mono": T0}) + "\n")
    vs = _verdicts(exclusive_ownership=("invalid", "x", _assigned("m2", [4], 1012.3, "m2 and m3 both held partition 4")))
    o = rp.Outcome.of(1, 7, RunResult(run, "fail", vs), 20.0)
    assert o.headline == "exclusive_ownership: m2 and m3 both held partition 4 (m2 assigned partition 4 of t-0 at 12.3 s)"
    rep = rp.Repeat("member-kill", "consumer", 7, 1, False, True, tmp_path, outcomes=[o])
    assert rp.table(rep)[1] == f"   1  7           fail       20.0s  {o.headline}"
    assert rp.Outcome.of(2, 8, RunResult(run, "pass", _verdicts(a=("valid", "y"))), 1.0).headline == ""


def test_check_of_a_finished_run_without_verdicts_json_names_no_invariant_new(tmp_path, capsys):
    """A run directory whose verdicts.json is gone (or never written) says so; it is no older harness's."""
    rd = _finished(tmp_path, "close-leaves-before-revoking", "pass")
    assert main(["check", str(rd.path)]) == 1
    out = capsys.readouterr().out
    assert "recorded: pass (its STATUS; no verdicts.json); judged now: fail" in out and "new to it" not in out
