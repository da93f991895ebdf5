"""`harness matrix`: the cells it enumerates, how it judges each outcome, resuming, and its counts (no Kafka)."""
from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.base.errors import BadInput
from harness.drive import matrix
from harness.drive.matrix import Cell, Finished
from harness.invariants.core import Verdict
from harness.record.rundir import RunDir

PYPI = ["2.16.2", "2.16.1", "2.16.0", "2.15.1", "2.12.2", "2.12.0", "2.10.1", "2.10.0", "2.1.1", "2.1.0", "2.0.2",
        "1.9.2", "2.13.0rc1"]
MAVEN_CLIENTS = ["2.3.1", "2.4.0", "2.4.1", "2.5.0", "2.8.2", "2.8.1", "3.0.0", "3.0.2", "3.1.2", "3.2.3", "3.3.2",
                 "3.3.1", "3.9.2", "4.0.2", "4.4.0"]
MAVEN_KAFKA = ["3.2.3", "3.3.1", "3.3.2", "3.9.1", "3.9.2", "4.0.0", "4.4.0"]


def test_the_newest_patch_of_each_minor_from_the_oldest_is_taken_and_no_pre_release():
    assert matrix.newest_patches(PYPI, since=(2, 0)) == {
        (2, 0): "2.0.2", (2, 1): "2.1.1", (2, 10): "2.10.1", (2, 12): "2.12.2", (2, 15): "2.15.1", (2, 16): "2.16.2"}
    assert matrix.newest_patches(["2.4.0", "2.4.0.post1", "2.4.0.post3"], since=(2, 0)) == {(2, 4): "2.4.0.post3"}


def test_java_clients_are_2_4_2_8_3_0_and_each_minor_from_3_3():
    assert matrix.java_client_minors(MAVEN_CLIENTS) == ["2.4.1", "2.8.2", "3.0.2", "3.3.2", "3.9.2", "4.0.2", "4.4.0"]


def test_kafka_minors_start_at_3_3_and_name_the_minor_only():
    assert matrix.kafka_minors(MAVEN_KAFKA) == ["3.3", "3.9", "4.0", "4.4"]


def test_the_consumer_protocol_only_on_brokers_that_run_it():
    assert matrix.protocols_on("3.9") == ["classic-eager", "classic-cooperative"]
    assert matrix.protocols_on("4.0") == ["classic-eager", "classic-cooperative", "consumer"]
    assert matrix.protocols_on("latest") == ["classic-eager", "classic-cooperative", "consumer"]


def test_the_clients_part_is_member_kill_on_each_release_python_first_on_the_newest_kafka():
    cells = matrix.client_cells(PYPI, MAVEN_CLIENTS)
    assert {(c.scenario, c.protocol, c.kafka_version) for c in cells} == {("member-kill", "classic-cooperative", "latest")}
    assert [(c.member, c.client_version) for c in cells] == [
        ("python", v) for v in ("2.0.2", "2.1.1", "2.10.1", "2.12.2", "2.15.1", "2.16.2")] + [
        ("java", v) for v in ("2.4.1", "2.8.2", "3.0.2", "3.3.2", "3.9.2", "4.0.2", "4.4.0")]
    java = cells[-1].argv(seed=7, runs_root=Path("/r"))
    assert java[java.index("--member") + 1] == "java" and java[java.index("--client-version") + 1] == "4.4.0"
    assert "--member" not in cells[0].argv(seed=7, runs_root=Path("/r"))


def test_the_kafka_part_is_four_scenarios_on_each_minor_and_each_protocol_it_has():
    cells = matrix.kafka_cells(MAVEN_KAFKA)
    on = lambda kv: {(c.scenario, c.protocol) for c in cells if c.kafka_version == kv}  # noqa: E731
    assert on("3.3") == {(s, p) for s in matrix.KAFKA_SCENARIOS for p in ("classic-eager", "classic-cooperative")}
    assert on("4.4") == {(s, p) for s in matrix.KAFKA_SCENARIOS for p in ("classic-eager", "classic-cooperative",
                                                                          "consumer")}
    assert len(cells) == 2 * 4 * 2 + 2 * 4 * 3
    assert len({c.id for c in cells}) == len(cells)  # each cell its own folder


def test_the_newest_part_runs_each_scenario_on_each_protocol_it_names_that_the_gate_allows():
    specs = {"a": SimpleNamespace(protocols=("classic-eager", "consumer"), backend=None),
             "b": SimpleNamespace(protocols=("share",), backend="docker")}
    cells = matrix.newest_cells(specs, allowed=lambda name, p: not (name == "a" and p == "consumer"))
    assert [(c.scenario, c.protocol, c.backend) for c in cells] == [("a", "classic-eager", None), ("b", "share", "docker")]
    assert cells[1].argv(seed=1, runs_root=Path("/r"))[-2:] == ["--backend", "docker"]


def test_the_newest_gate_is_the_nightlys():
    assert matrix.newest_allows("member-kill", "consumer")
    assert matrix.newest_allows("protocol-migration", "classic-eager")  # moves members to consumer: 4.x has it


def test_the_builtin_newest_part_names_every_scenario():
    from harness.plan.scenarios import SCENARIOS
    cells = matrix.newest_cells(SCENARIOS, allowed=matrix.newest_allows)
    assert {c.scenario for c in cells} == set(SCENARIOS)
    assert all(c.protocol in SCENARIOS[c.scenario].protocols for c in cells)


def test_a_cells_seed_depends_on_the_matrix_seed_and_the_cell_only():
    a, b = Cell("kafka", "member-kill", "consumer", "4.4"), Cell("kafka", "member-kill", "classic-eager", "4.4")
    assert matrix.cell_seed(1, a) == matrix.cell_seed(1, a)
    assert matrix.cell_seed(1, a) != matrix.cell_seed(2, a) and matrix.cell_seed(1, a) != matrix.cell_seed(1, b)


# -- judging, on run directories made by hand

def _run_dir(folder: Path, status: str, verdicts: dict[str, str], name: str = "run-1") -> Path:
    rd = RunDir.create(folder, name)
    rd.write_meta({"config": {"scenario": "member-kill"}})
    rd.write_verdicts({n: Verdict(n, s, f"{n} {s}") for n, s in verdicts.items()})
    rd.set_status(status)
    return rd.path


def _no_finding(run_dir, verdicts=None):
    return None


def _finding(id_):
    return lambda run_dir, verdicts=None: SimpleNamespace(finding=SimpleNamespace(id=id_))


def test_a_pass_is_a_pass(tmp_path):
    d = _run_dir(tmp_path, "pass", {"exclusive_ownership": "valid"})
    assert matrix.judge_run(d, known=_finding("never-asked"))[:3] == ("pass", "pass", None)


def test_a_failure_a_known_finding_matches_is_known_with_its_id(tmp_path):
    d = _run_dir(tmp_path, "fail", {"exclusive_ownership": "invalid", "commit_progress": "valid"})
    assert matrix.judge_run(d, known=_finding("librdkafka-x")) == (
        "known", "fail", "librdkafka-x", ["exclusive_ownership"], [])


def test_a_failure_no_finding_matches_is_a_failure_with_its_invariants(tmp_path):
    d = _run_dir(tmp_path, "unknown", {"rebalance_cause": "unknown", "bounded_migrations": "valid"})
    assert matrix.judge_run(d, known=_no_finding) == ("unknown", "unknown", None, [], ["rebalance_cause"])


def test_the_registrys_matcher_never_excuses_an_undecided_run(tmp_path):
    d = _run_dir(tmp_path, "unknown", {"rebalance_cause": "unknown", "exclusive_ownership": "invalid"})
    assert matrix.judge_run(d)[0] == "unknown"  # harness.findings.registry.known, as the suite's xfail


def test_a_run_that_ended_in_error_is_an_error_with_its_reason(tmp_path):
    rd = RunDir.create(tmp_path, "run-1")
    rd.write_meta({})
    rd.set_status("error", "the brokers did not start")
    assert matrix.judge_run(rd.path, known=_no_finding)[:3] == ("error", "error", "the brokers did not start")


def _runner(*, status=None, verdicts=None, code=0, line=""):
    """A fake `harness run`: leaves a run directory with that status (none when status is None) and exits `code`."""
    calls = []

    def run(argv, *, log_path=None):
        calls.append(argv)
        if status:
            _run_dir(Path(argv[argv.index("--runs-root") + 1]), status, verdicts or {})
        return Finished(code, line)
    run.calls = calls
    return run


CELL = Cell("clients", "member-kill", "classic-cooperative", client_version="2.12.2")


def test_an_exit_2_without_a_run_directory_is_a_refusal_with_its_line_kept_for_a_resume(tmp_path):
    run = _runner(code=2, line="harness: confluent-kafka 2.12.2 refuses the client settings: TypeError")
    o = matrix.run_one(CELL, runs_root=tmp_path, seed=1, run=run, known=_no_finding)
    assert (o.outcome, o.reason) == ("refused", "confluent-kafka 2.12.2 refuses the client settings: TypeError")
    assert o.explained and len(o.load_at_start) == 3
    assert matrix.recorded(CELL, tmp_path).outcome == "refused"


def test_a_crash_without_a_run_directory_is_an_error_not_a_refusal(tmp_path):
    o = matrix.run_one(CELL, runs_root=tmp_path, seed=1, run=_runner(code=1, line="Traceback"), known=_no_finding)
    assert (o.outcome, o.reason) == ("error", "exit 1: Traceback") and not o.explained
    assert matrix.recorded(CELL, tmp_path) is None  # run again on resume


def test_a_run_left_incomplete_is_unexplained_and_run_again(tmp_path):
    o = matrix.run_one(CELL, runs_root=tmp_path, seed=1, run=_runner(status="incomplete", code=-1,
                                                                          line="stopped after 1500s"),
                       known=_no_finding)
    assert (o.outcome, o.reason) == ("incomplete", "exit -1: stopped after 1500s") and not o.explained
    assert matrix.recorded(CELL, tmp_path) is None


def test_the_matrix_runs_each_cell_once_and_resumes_past_the_recorded_ones(tmp_path):
    cells = [CELL, Cell("kafka", "member-kill", "consumer", "4.4")]
    run = _runner(status="fail", verdicts={"exclusive_ownership": "invalid"})
    first = matrix.run_matrix(cells, runs_root=tmp_path, seed=3, command="harness matrix", run=run,
                              known=_no_finding, progress=lambda *_: None)
    assert [o.outcome for o in first] == ["fail", "fail"] and len(run.calls) == 2
    again = matrix.run_matrix(cells, runs_root=tmp_path, seed=3, command="harness matrix", run=run,
                              known=_finding("f"), progress=lambda *_: None)
    assert len(run.calls) == 2  # nothing run again
    assert [o.outcome for o in again] == ["known", "known"]  # judged again as the registry matches today
    assert again[0].load_at_start == first[0].load_at_start  # what its run recorded is kept
    doc = json.loads((tmp_path / matrix.MATRIX_JSON).read_text())
    assert doc["seed"] == 3 and doc["counts"]["all"]["known"] == 2 and matrix.recorded_seed(tmp_path) == 3


def test_jobs_run_cells_side_by_side_and_keep_the_outcomes_in_cell_order(tmp_path):
    cells = [CELL, Cell("kafka", "member-kill", "consumer", "4.4"), Cell("kafka", "member-kill", "consumer", "4.3")]
    inner, running, most = _runner(status="pass"), [0], [0]
    gate = threading.Barrier(2, timeout=10)

    def run(argv, *, log_path=None):
        running[0] += 1
        most[0] = max(most[0], running[0])
        if "4.3" not in argv:
            gate.wait()  # the first two cells are running at once, or this times out
        running[0] -= 1
        return inner(argv, log_path=log_path)
    got = matrix.run_matrix(cells, runs_root=tmp_path, seed=3, command="c", run=run, jobs=2,
                            known=_no_finding, progress=lambda *_: None)
    assert most[0] == 2 and len(inner.calls) == 3
    assert [o.cell["kafka_version"] for o in got] == ["latest", "4.4", "4.3"] and {o.outcome for o in got} == {"pass"}
    doc = json.loads((tmp_path / matrix.MATRIX_JSON).read_text())
    assert [o["cell"]["kafka_version"] for o in doc["outcomes"]] == ["latest", "4.4", "4.3"]


def test_jobs_below_one_is_refused():
    args = argparse.Namespace(part=None, jobs=0, stop_at=None, list=False)
    with pytest.raises(BadInput, match="--jobs 0"):
        matrix.main(args)


def test_no_cell_starts_after_the_stop_time(tmp_path):
    run = _runner(status="pass")
    got = matrix.run_matrix([CELL], runs_root=tmp_path, seed=3, command="c", run=run, stop_at=0.0,
                            progress=lambda *_: None)
    assert got == [] and run.calls == []


def _o(part, outcome, invalid=(), unknown=()):
    return matrix.Outcome({**vars(CELL), "part": part}, outcome, invalid=list(invalid), unknown=list(unknown))


def test_the_counts_give_each_outcome_and_the_unexplained_verdicts_by_invariant():
    outs = [_o("clients", "pass"), _o("clients", "known", ["exclusive_ownership"]), _o("clients", "refused"),
            _o("kafka", "fail", ["bounded_migrations"]), _o("kafka", "unknown", [], ["rebalance_cause"]),
            _o("kafka", "unknown", [], ["rebalance_cause"]), _o("kafka", "incomplete")]
    c = matrix.counts(outs)
    assert c["clients"] == {"cells": 3, "pass": 1, "known": 1, "refused": 1, "fail": 0, "unknown": 0, "error": 0,
                            "invalid_by_invariant": {}, "unknown_by_invariant": {}}
    assert c["kafka"]["invalid_by_invariant"] == {"bounded_migrations": 1}
    assert c["kafka"]["unknown_by_invariant"] == {"rebalance_cause": 2} and c["kafka"]["error"] == 1
    assert c["all"]["cells"] == 7
    t = matrix.table(outs)
    assert "| kafka | 4 | 0 | 0 | 0 | 1 | 2 | 1 | bounded_migrations 1 | rebalance_cause 2 |" in t
    assert t.count("\n- ") == 6  # every cell that is not a pass is listed


@pytest.mark.parametrize("text", ["bogus", "clients,bogus", ","])
def test_a_part_that_does_not_exist_is_refused(text):
    with pytest.raises(BadInput, match="--part"):
        matrix.parse_parts(text)


def test_parts_run_in_matrix_order():
    assert matrix.parse_parts("newest,clients") == ["clients", "newest"]
    assert matrix.parse_parts(None) == matrix.parse_parts("all") == list(matrix.PARTS)


def test_a_stop_time_past_today_is_tomorrows():
    from datetime import datetime, timezone
    now = datetime(2026, 12, 7, 23, 15, tzinfo=timezone.utc)
    assert matrix.parse_stop_at("00:08", now=now) == datetime(2026, 12, 8, 0, 8, tzinfo=timezone.utc).timestamp()
    assert matrix.parse_stop_at("23:45", now=now) == datetime(2026, 12, 7, 23, 45, tzinfo=timezone.utc).timestamp()


@pytest.mark.parametrize("text", ["25:00", "8pm", "20:61"])
def test_a_bad_stop_time_is_refused(text):
    with pytest.raises(BadInput, match="--stop-at"):
        matrix.parse_stop_at(text)


def test_the_cli_refuses_a_bad_part_with_one_line_and_exit_2(capsys, tmp_path):
    from harness.cli import main
    assert main(["matrix", "--part", "bogus", "--runs-root", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--part 'bogus'" in err[0]
    assert not (tmp_path / "r").exists()


def test_a_rerun_runs_an_unexplained_cell_once_more_and_keeps_its_first_run(tmp_path):
    cells = [CELL, Cell("kafka", "member-kill", "consumer", "4.4")]
    failing = _runner(status="unknown", verdicts={"rebalance_cause": "unknown"})
    matrix.run_matrix(cells[:1], runs_root=tmp_path, seed=3, command="c", run=failing, known=_no_finding,
                      progress=lambda *_: None)
    passing = _runner(status="pass", verdicts={"rebalance_cause": "valid"})
    got = matrix.run_matrix(cells, runs_root=tmp_path, seed=3, command="c", run=passing, known=_no_finding,
                            rerun=True, progress=lambda *_: None)
    assert [o.outcome for o in got] == ["pass", "pass"] and len(passing.calls) == 2
    assert [e["outcome"] for e in got[0].earlier] == ["unknown"] and got[0].earlier[0]["load_at_start"]
    assert "earlier run: unknown" in matrix.table(got)
    again = matrix.run_matrix(cells, runs_root=tmp_path, seed=3, command="c", run=passing, known=_no_finding,
                              rerun=True, progress=lambda *_: None)
    assert len(passing.calls) == 2  # once more only: nothing is run a third time
    assert again[0].earlier[0]["unknown"] == ["rebalance_cause"] and again[0].earlier[0]["load_at_start"]


def test_without_rerun_an_unexplained_cell_is_not_run_again(tmp_path):
    failing = _runner(status="fail", verdicts={"commit_progress": "invalid"})
    for _ in range(2):
        got = matrix.run_matrix([CELL], runs_root=tmp_path, seed=3, command="c", run=failing, known=_no_finding,
                                progress=lambda *_: None)
    assert len(failing.calls) == 1 and got[0].outcome == "fail" and got[0].earlier == []



def test_a_cells_run_past_its_time_is_stopped_and_counted_as_such(tmp_path):
    import sys
    import time
    t0 = time.monotonic()
    got = matrix.run_cell_process(["-c", "import time; time.sleep(60)"], timeout_s=0.5, program=(sys.executable,))
    assert got == Finished(-1, "stopped after 0s") and time.monotonic() - t0 < 30


def test_a_cells_exit_code_and_last_line_of_stderr_are_kept(tmp_path):
    import sys
    code = "import sys; print('out'); sys.stderr.write('a\\nharness: no such release\\n\\n'); sys.exit(2)"
    got = matrix.run_cell_process(["-c", code], program=(sys.executable,), log_path=tmp_path / "o")
    assert got == Finished(2, "harness: no such release") and (tmp_path / "o").read_text() == "out\n"


def test_a_failed_cell_is_matched_again_on_its_history_judged_by_todays_checkers(tmp_path):
    """The kept matrix run whose recorded coordinator_claims was undecided without witnesses: its recorded verdicts
    match no finding, its history judged again names the holding between samples, inside the finding's mark."""
    import shutil
    from harness.findings import registry
    kept = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "kafka-4.2-rolling-bounce-fence-between-samples"
    run = tmp_path / "run"
    shutil.copytree(kept, run)
    (run / "STATUS").write_text("fail\n")
    bare = {"rebalance_cause": {"name": "rebalance_cause", "status": "invalid", "witnesses": []},
            "coordinator_claims": {"name": "coordinator_claims", "status": "unknown", "witnesses": []}}
    (run / "verdicts.json").write_text(json.dumps(bare))
    assert registry.known(run) is None  # as recorded
    outcome, status, reason, invalid, unknown = matrix.judge_run(run)
    assert (outcome, status, reason) == ("known", "fail", "librdkafka-848-first-assignment-not-reconciled")
    assert (invalid, unknown) == (["rebalance_cause"], ["coordinator_claims"])  # what the run recorded


def test_ctrl_c_with_jobs_stops_every_running_cell_and_starts_no_other(tmp_path):
    """Two cells run (real child processes, each a session of its own, sleeping); Ctrl-C in the matrix's thread
    stops both by their process groups, and the third cell never starts."""
    import os
    import signal
    import sys as _sys
    cells = [CELL, Cell("kafka", "member-kill", "consumer", "4.4"), Cell("kafka", "member-kill", "consumer", "4.3")]
    started = []

    def run(argv, *, log_path=None):
        started.append(argv)
        if len(started) == 2:
            threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()  # Ctrl-C once both are running
        return matrix.run_cell_process(["-c", "import time; time.sleep(60)"], program=(_sys.executable,),
                                       log_path=log_path)
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        matrix.run_matrix(cells, runs_root=tmp_path, seed=3, command="c", run=run, jobs=2, known=_no_finding,
                          progress=lambda *_: None)
    assert len(started) == 2 and time.monotonic() - t0 < 30  # stopped, not waited for (60 s each)
    assert not matrix._RUNNING
