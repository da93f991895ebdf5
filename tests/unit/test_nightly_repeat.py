"""Verify: `harness nightly --repeat N` runs every draw under N seeds drawn from the draw's own, shrinks a draw's
first failure only, and its summary gives each scenario x protocol x version's failures as a rate of its runs.

Setup: nightly() with a cluster that only records start and stop and a run function standing in for runs (a
chosen seed fails); `rates` and `summary_lines` on hand-made runs.
Then: N runs per draw, the draw's seed first; repeat 1 is the night without repeat; a 1-in-3 failure reads
"1/3 failed"; runs that could not be judged are said apart, never counted as passes.
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.drive.nightly import NightlyResult, NightlyRun, nightly, rates, summary_lines
from harness.record.rundir import RunResult
from harness.drive.seeds import seeds

MATRIX = dict(kafka_versions=["4.3.1"], client_versions=[None], protocols=["classic-cooperative", "consumer"])


class NoCluster:
    def __init__(self, backend, **kw):
        self.settings = kw["settings"]
        self.version = kw["version"]  # the Backend protocol\'s: what the night asked

    def start(self):
        pass

    def stop(self):
        pass


def _night(tmp_path, monkeypatch, *, repeat, fail_seeds=(), name="n"):
    monkeypatch.setattr("harness.drive.nightly.report", lambda *a, **k: None)
    shrunk = []
    monkeypatch.setattr("harness.drive.nightly.shrink_failure", lambda r, cfg, **k: shrunk.append(cfg.seed) or {
        "from_actions": 2, "to_actions": 1, "replay": "harness replay x"})
    ran = []

    def run(cfg, *, cluster, progress):
        ran.append(cfg.seed)
        d = Path(cfg.runs_root) / f"r{len(ran)}"
        d.mkdir()
        bad = cfg.seed in fail_seeds
        return RunResult(d, "fail" if bad else "pass",
                         {"exclusive_ownership": SimpleNamespace(status="invalid" if bad else "valid")})

    res = nightly(budget_s=10_000, seed=3, **MATRIX, runs_root=str(tmp_path / name), runs=4, repeat=repeat,
                  make_cluster=NoCluster, run=run, progress=lambda *_: None)
    return res, ran, shrunk


def test_every_draw_runs_under_n_seeds_from_its_own(tmp_path, monkeypatch):
    once, ran_once, _ = _night(tmp_path, monkeypatch, repeat=1, name="once")
    thrice, ran_thrice, _ = _night(tmp_path, monkeypatch, repeat=3, name="thrice")
    assert len(ran_once) == 4 and len(ran_thrice) == 12
    assert ran_thrice == [s for d in ran_once for s in seeds(d, 3)]  # each draw's own seed first
    assert [r.repeat for r in thrice.runs[:4]] == [1, 2, 3, 1] and {r.repeat for r in once.runs} == {None}
    assert [r.index for r in thrice.runs] == [i for i in range(4) for _ in range(3)]
    saved = json.loads((thrice.out_dir / "nightly.json").read_text())
    assert saved["repeat"] == 3 and len(saved["runs"]) == 12 and sum(c["runs"] for c in saved["rates"]) == 12


def test_a_draws_first_failure_only_is_shrunk_and_its_rate_shows(tmp_path, monkeypatch):
    once, ran_once, _ = _night(tmp_path, monkeypatch, repeat=1, name="once")
    first = once.runs[0]
    two_bad = list(seeds(first.seed, 3))[1:]  # the draw's second and third seeds fail
    res, _, shrunk = _night(tmp_path, monkeypatch, repeat=3, fail_seeds=two_bad, name="thrice")
    assert shrunk == [two_bad[0]]
    cell = next(c for c in rates(res.runs) if (c["scenario"], c["protocol"]) == (first.scenario, first.protocol))
    assert (cell["failed"], cell["runs"]) == (2, 3) and rates(res.runs)[0] == cell  # the highest rate first
    assert any(line.endswith("2/3 failed") and first.scenario in line for line in summary_lines(res))


def _run(scenario, status, kafka="4.3.1", client=None):
    return NightlyRun(scenario, "consumer", kafka, client, 1, "d", status)


def test_rates_per_scenario_and_version_with_undecided_runs_apart(tmp_path):
    runs = ([_run("member-kill", "pass")] * 19 + [_run("member-kill", "fail")]
            + [_run("member-kill", "pass", kafka="4.0.0")] * 2 + [_run("member-kill", "unknown", kafka="4.0.0")]
            + [_run("scale-out-in", "pass", client="2.12.2"), _run("scale-out-in", "error", client="2.12.2")])
    lines = summary_lines(NightlyResult(tmp_path, runs))
    assert lines[0].startswith("nightly: 25 runs (1 error, 1 fail, 22 pass, 1 unknown)")
    assert lines[1:4] == ["  member-kill consumer kafka=4.3.1 client=default: 1/20 failed",
                          "  member-kill consumer kafka=4.0.0 client=default: 0/3 failed (1 unknown)",
                          "  scale-out-in consumer kafka=4.3.1 client=2.12.2: 0/2 failed (1 error)"]


def test_runs_whose_schedule_did_not_all_happen_are_counted_apart_as_not_exercised(tmp_path, monkeypatch):
    idle = _run("random-mix", "unknown")
    idle.exercised = False
    runs = [_run("random-mix", "pass"), idle, _run("random-mix", "unknown")]
    lines = summary_lines(NightlyResult(tmp_path, runs))
    assert lines[0].startswith("nightly: 3 runs (1 did not exercise, 1 pass, 1 unknown)")
    assert lines[1] == "  random-mix consumer kafka=4.3.1 client=default: 0/3 failed (1 unknown, 1 did not exercise)"
    assert rates(runs)[0]["not_exercised"] == 1 and rates(runs)[0]["unknown"] == 1
    # the night marks a run so from its verdicts: schedule_performed unknown
    monkeypatch.setattr("harness.drive.nightly.report", lambda *a, **k: None)

    def run(cfg, *, cluster, progress):
        d = Path(cfg.runs_root) / f"r{cfg.seed}"
        d.mkdir()
        return RunResult(d, "unknown", {"schedule_performed": SimpleNamespace(status="unknown"),
                                        "exclusive_ownership": SimpleNamespace(status="valid")})
    res = nightly(budget_s=10_000, seed=3, **MATRIX, runs_root=str(tmp_path / "n"), runs=2, make_cluster=NoCluster,
                  run=run, progress=lambda *_: None)
    assert [r.exercised for r in res.runs] == [False, False]
    assert json.loads(next((tmp_path / "n").glob("*/nightly.json")).read_text())["runs"][0]["exercised"] is False


def test_the_cli_passes_repeat_to_the_night_and_prints_its_rates(tmp_path, monkeypatch, capsys):
    from harness.cli import main
    asked = {}

    def fake_night(**kw):
        asked.update(kw)
        return NightlyResult(tmp_path, [_run("member-kill", "pass"), _run("member-kill", "fail")])
    monkeypatch.setattr("harness.drive.nightly.nightly", fake_night)
    assert main(["nightly", "--seed", "1", "--runs", "1", "--repeat", "2", "--runs-root", str(tmp_path)]) == 1
    assert asked["repeat"] == 2 and asked["runs"] == 1
    assert "  member-kill consumer kafka=4.3.1 client=default: 1/2 failed" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["nightly", "--seed", "1", "--repeat", "0"])
    assert e.value.code == 2 and "argument --repeat: 0 is less than 1" in capsys.readouterr().err


def test_rates_carry_the_rebalance_time_with_the_unsettled_apart(tmp_path):
    from dataclasses import replace
    a = replace(_run("member-kill", "pass"), rebalance_s=[0.5, 2.0])
    b = replace(_run("member-kill", "unknown"), rebalance_s=[1.0, None])
    old = _run("member-kill", "pass")  # judged before the measurement: no times
    cell = rates([a, b, old])[0]
    assert (cell["rebalance_p50_s"], cell["rebalance_max_s"], cell["rebalance_unsettled"]) == (1.0, 2.0, 1)
    line = summary_lines(NightlyResult(tmp_path, [a, b, old]))[1]
    assert line.endswith("0/3 failed (1 unknown); rebalance time p50 1.0s, max 2.0s, 1 never settled")
    assert "rebalance_p50_s" not in rates([old])[0]
