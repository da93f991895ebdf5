"""The bounds of the table of steps (harness/base/steps.py): a step's value outside its row's bound is refused by the
plan in one line (exit 2) before anything starts; every built-in scenario and the random mix stay inside them.

Verify: negative or zero durations, sleeps and latencies, a slot the run does not have (7 of 3, -1), a broker the
cluster does not have (9 of 3) and a `scale_in` of more members than can stop (5 of 3) each end `harness run` with
exit 2 and one line, with no run directory and no process started; a slot a `scale_out` added earlier is taken;
the pure `refusal` says the step, the parameter and the bound.
"""
from __future__ import annotations

import subprocess

import pytest

from harness.base import steps
from harness.base.steps import Step, refusal
from harness.kafka import dist as kafka_dist
from harness.plan import scenarios
from harness.plan.config import RunConfig, plan, precheck
from harness.plan.scenario_model import Action, ScenarioContext


@pytest.fixture
def nothing_starts(monkeypatch, tmp_path):
    """No Kafka lookup, and any process the run would start fails the test."""
    monkeypatch.setattr(kafka_dist, "resolve", lambda v, progress=None: kafka_dist.KafkaDist("4.3.1", tmp_path))

    def refuse(*a, **k):
        raise AssertionError(f"a process was started: {a[1:2]}")
    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)


def _file(tmp_path, steps_toml: str, members: int | None = None) -> str:
    p = tmp_path / "bad.toml"
    p.write_text('name = "bounds"\n' + (f"[members]\ncount = {members}\n" if members else "") + steps_toml)
    return str(p)


def _step(action: str, **params) -> str:
    return f'[[steps]]\naction = "{action}"\n' + "".join(f"{k} = {v}\n" for k, v in params.items())


BAD = [
    (_step("sleep", s=-1), "step 0 (sleep): s must be more than 0, not -1"),
    (_step("sleep", s=0), "step 0 (sleep): s must be more than 0, not 0"),
    (_step("pause_member", slot=0, duration_s=-5), "step 0 (pause_member): duration_s must be more than 0, not -5"),
    (_step("poll_stall", slot=0, duration_s=0.0), "step 0 (poll_stall): duration_s must be more than 0, not 0.0"),
    (_step("broker_bounce", broker=1, down_s=-1), "step 0 (broker_bounce): down_s must be more than 0, not -1"),
    (_step("bounce", slot=0, down_s=0), "step 0 (bounce): down_s must be more than 0, not 0"),
    (_step("network_latency", latency_ms=-100, jitter_ms=0, duration_s=2),
     "step 0 (network_latency): latency_ms must be more than 0, not -100"),
    (_step("bounce", slot=7), "step 0 (bounce): slot is a member slot from 0 to 2"),
    (_step("kill_member", slot=-1), "step 0 (kill_member): slot is a member slot from 0 to 2"),
    (_step("broker_bounce", broker=9), "step 0 (broker_bounce): broker is a broker from 1 to 3 (the cluster's brokers)"),
    (_step("scale_in", count=5), "step 0 (scale_in): count is from 1 to 2: at most 3 members are live"),
    # a slot past the ones a scale_out added
    (_step("scale_out", count=2, wait_stable="false") + _step("bounce", slot=5),
     "step 1 (bounce): slot is a member slot from 0 to 4"),
]


@pytest.mark.parametrize("toml, says", BAD, ids=[b[1].split(":")[0] + " " + b[1].split(": ")[1][:24] for b in BAD])
def test_a_value_outside_its_bound_is_exit_2_in_one_line_before_anything_starts(tmp_path, nothing_starts, capsys,
                                                                                 toml, says):
    from harness.cli import main
    path = _file(tmp_path, toml)
    runs = tmp_path / "runs"
    assert main(["run", path, "--runs-root", str(runs), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and "(scenario bounds)" in err[0], err
    assert not runs.exists()


@pytest.mark.parametrize("toml", [
    _step("sleep", s=0.1) + _step("bounce", slot=2, down_s=0.2),
    _step("scale_out", count=2, wait_stable="false") + _step("bounce", slot=4) + _step("scale_in", count=4),
    _step("kill_member", slot=0, replace_after_s=0) + _step("broker_bounce", broker=3)
    + _step("network_latency", latency_ms=1, jitter_ms=0, duration_s=0.5),
])
def test_values_inside_their_bounds_are_planned(tmp_path, nothing_starts, toml):
    cfg = RunConfig.for_scenario(_file(tmp_path, toml), seed=1, runs_root=str(tmp_path / "runs"))
    precheck(cfg)
    assert plan(cfg, version="4.3.1").schedule


def _a(kind, **params) -> Action:
    return Action(kind, params)


def test_refusal_bounds_slots_by_the_slots_the_schedule_has_by_then():
    assert refusal([_a(Step.BOUNCE, slot=3)], members=3, brokers=3).startswith("step 0 (bounce): slot")
    assert refusal([_a(Step.SCALE_OUT, count=1), _a(Step.BOUNCE, slot=3)], members=3, brokers=3) is None
    assert refusal([_a(Step.SCALE_OUT), _a(Step.BOUNCE, slot=3)], members=3, brokers=3) is None  # count 1 by default
    assert refusal([_a(Step.LEAVE_DURING_JOIN, slot=0), _a(Step.KILL_MEMBER, slot=3)], members=3, brokers=3) is None
    # an autoscaler may add any number of slots: later slots are not bounded by a count the plan cannot know
    auto = _a(Step.AUTOSCALE, duration_s=5, scale_out_lag=1, scale_in_lag=0)
    assert refusal([auto, _a(Step.BOUNCE, slot=9)], members=3, brokers=3) is None
    assert "step 1 (bounce): slot" in refusal([_a(Step.SLEEP, s=1), _a(Step.BOUNCE, slot=9)], members=3, brokers=3)


def test_refusal_keeps_one_member_live_across_scale_ins():
    assert refusal([_a(Step.SCALE_IN, count=2)], members=3, brokers=3) is None
    why = refusal([_a(Step.SCALE_IN, count=2), _a(Step.SCALE_IN, count=1)], members=3, brokers=3)
    assert why == "step 1 (scale_in): count cannot stop 1: at most one member is live by then and one always stays"
    assert refusal([_a(Step.SCALE_IN, count=3)], members=3, brokers=3).startswith("step 0 (scale_in): count is from 1 to 2")
    assert refusal([_a(Step.SCALE_OUT, count=2), _a(Step.SCALE_IN, count=4)], members=3, brokers=3) is None
    assert refusal([_a(Step.KILL_MEMBER, slot=0), _a(Step.REPLACE_MEMBER, slot=0), _a(Step.SCALE_IN, count=2)],
                   members=3, brokers=3) is None


def test_refusal_takes_the_words_a_parameter_allows_and_refuses_other_types():
    ok = [_a(Step.BROKER_PARTITION, broker="coordinator"), _a(Step.DROP_REQUEST, api="Heartbeat", slot="all"),
          _a(Step.HOLD_REQUEST, api="JoinGroup", until_slot="other"), _a(Step.KILL_MEMBER, slot=0, replace_after_s=None)]
    assert refusal(ok, members=3, brokers=3) is None
    assert "broker is 'coordinator' or a number, not 'leader'" in \
        refusal([_a(Step.BROKER_PARTITION, broker="leader")], members=3, brokers=3)
    assert "slot is a whole number, not 1.5" in refusal([_a(Step.BOUNCE, slot=1.5)], members=3, brokers=3)
    assert "slot is a whole number, not True" in refusal([_a(Step.BOUNCE, slot=True)], members=3, brokers=3)
    assert "s is a finite number, not inf" in refusal([_a(Step.SLEEP, s=float("inf"))], members=3, brokers=3)
    assert "slot is a member slot from 0 to 2 or \"all\"" in \
        refusal([_a(Step.DELAY_REQUEST, api="Fetch", delay_s=1.0, slot=3)], members=3, brokers=3)
    assert "broker is a broker from 1 to 5" in refusal([_a(Step.MOVE_LEADERS, broker=6)], members=3, brokers=5)
    assert "pick is 'newest' or 'oldest', not 'middle'" in refusal([_a(Step.SCALE_IN, pick="middle")], members=3, brokers=3)
    assert "count must be 1 or more, not 0" in refusal([_a(Step.SCALE_OUT, count=0)], members=3, brokers=3)
    assert "jitter_ms must be 0 or more, not -1" in \
        refusal([_a(Step.NETWORK_LATENCY, latency_ms=5, jitter_ms=-1, duration_s=1)], members=3, brokers=3)


def test_every_builtin_and_the_random_mix_stay_inside_the_bounds():
    planned = 0
    for name in scenarios.SCENARIOS:
        sc = scenarios.get(name)
        for seed in (range(80) if name == "random-mix" else range(3)):
            for protocol in sc.protocols[:1] if seed else sc.protocols:
                cfg = RunConfig.for_scenario(name, seed=seed, protocol=protocol)
                precheck(cfg)
                plan(cfg, version=sc.initial_kafka or "4.4.0")  # raises BadInput on a value out of bounds
                planned += 1
    assert planned > 150
    ctx = ScenarioContext(session_timeout_s=6.0, brokers=3, racks=3)
    for seed in range(200):
        sched = scenarios.schedule(scenarios.get("random-mix"), seed=seed, ctx=ctx)
        assert refusal(sched, members=scenarios.get("random-mix").members, brokers=3) is None, seed


def test_every_bound_in_the_table_is_one_refusal_knows():
    for row in steps.ACTIONS.values():
        for p in row.params:
            assert p.bound is None or p.bound in steps.Bound, (row.name, p.name)
            if p.bound is not None and not p.required and p.default is not None and p.default not in p.words:
                assert steps._beyond(p, p.default, steps._Reach(slots=3, live=3), 3) is None, (row.name, p.name)


def test_a_shrink_cut_that_leaves_a_step_out_of_bounds_starts_no_run(tmp_path, monkeypatch):
    """Cutting the scale_out that made slot 3 leaves a bounce of a slot the run does not have: the shrinker counts
    it as not failing, without a run (the plan would refuse it, and a refusal is no failure of the run's)."""
    import json
    from types import SimpleNamespace
    from harness.drive import nightly
    from harness.invariants.core import verdict
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    sched = [{"kind": Step.SCALE_OUT, "params": {}}, {"kind": Step.BOUNCE, "params": {"slot": 3}}]
    (run_dir / "run.json").write_text(json.dumps({"schedule": sched}))
    failing = SimpleNamespace(run_dir=run_dir, verdicts={"x": verdict("x", "invalid", "broke", (), {})}, status="fail")
    ran = []

    def run_scenario(cfg, **_):
        ran.append([a["kind"] for a in cfg.schedule])
        return failing  # every candidate that runs fails as the run did
    monkeypatch.setattr(nightly, "run_scenario", run_scenario)
    said = []
    out = nightly.shrink_failure(failing, RunConfig.for_scenario("member-kill", seed=1), cluster=None, max_attempts=10,
                                 deadline=float("inf"), progress=said.append)
    assert [Step.BOUNCE] not in ran and any("refused by the plan (step 0 (bounce): slot" in s for s in said), said
    assert [a["kind"] for a in out["schedule"]] == [Step.SCALE_OUT]  # cutting the bounce still fails: kept


def test_refusal_names_a_parameter_the_row_does_not_take_or_a_required_one_missing():
    assert refusal([_a(Step.SLEEP, s=1, seconds=2)], members=3, brokers=3) == \
        "step 0 (sleep): no parameter 'seconds'; it takes s"
    assert refusal([_a(Step.WAIT_STABLE, s=1)], members=3, brokers=3) == \
        "step 0 (wait_stable): no parameter 's'; it takes none"
    assert refusal([_a(Step.PAUSE_MEMBER, slot=0)], members=3, brokers=3) == \
        "step 0 (pause_member): duration_s is required (it takes slot, duration_s)"


def test_a_recorded_schedule_with_a_value_out_of_bounds_is_refused_before_anything_starts(tmp_path, nothing_starts):
    """A replayed or hand-edited schedule (`RunConfig.schedule`) meets the same rows as a drawn one."""
    from harness.base.errors import BadInput
    cfg = RunConfig.for_scenario("member-kill", seed=1, runs_root=str(tmp_path / "runs"),
                                 schedule=({"kind": "kill_member", "params": {"slot": 7}},))
    precheck(cfg)
    with pytest.raises(BadInput, match=r"^step 0 \(kill_member\): slot is a member slot from 0 to 2 .*not 7 "
                                       r"\(scenario member-kill\)$"):
        plan(cfg, version="4.3.1")
    assert not (tmp_path / "runs").exists()


def test_check_actions_bounds_brokers_by_the_count_it_is_given():
    """A run on a shared cluster has that cluster's brokers: `_check_actions(brokers=...)` bounds by them; without
    it, by the run's own cluster's (`--brokers`)."""
    from harness.base.errors import BadInput
    from harness.plan import config
    cfg = RunConfig.for_scenario("member-kill", seed=1)
    step = (Action(Step.BROKER_BOUNCE, {"broker": 5}),)
    config._check_actions(cfg, cfg.scenario_spec, step, backend="local", brokers=5)
    with pytest.raises(BadInput, match=r"broker is a broker from 1 to 3 \(the cluster's brokers\), not 5"):
        config._check_actions(cfg, cfg.scenario_spec, step, backend="local")
