"""The action registry (harness/plan/actions.py) and everything that reads it.

Verify: the nemesis has exactly one performer per action, whose signature is the action's parameters (names,
order, types, defaults); reading or planning a scenario imports nothing that starts a process; the backends'
abilities are the protocols their classes implement; docs/scenarios.md's table is the registry's; the random mix
draws only actions the registry puts in the mix, with parameters they take; the plan refuses an action the kind
or the backend cannot take, in one line.
"""
from __future__ import annotations

import inspect
import random
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from harness.plan import actions
from harness.plan.actions import ACTIONS, ALL_KINDS
from harness.base.errors import BadInput

ROOT = Path(__file__).resolve().parents[2]
#: the modules that start processes or containers, or drive them: members, clusters, Toxiproxy, the nemesis, the
#: runner, the kinds' runtime parts, Maven and Java lookups, and the client libraries that reach a cluster
STARTS_PROCESSES = ("harness.base.procs", "harness.run.runner", "harness.nemesis.core", "harness.nemesis.group",
                    "harness.nemesis.coordinator", "harness.members", "harness.cluster.local", "harness.cluster.docker",
                    "harness.cluster.docker_engine", "harness.cluster.docker_images", "harness.cluster.toxiproxy", "harness.kinds.consumer",
                    "harness.kinds.streams", "harness.kinds.connect", "harness.kinds.share", "harness.members.workload",
                    "harness.run.waits",
                    "harness.run.observe", "harness.nemesis.lag", "harness.cluster.broker_log", "harness.kafka.dist", "harness.kafka.config_names",
                    "harness.drive.nightly", "confluent_kafka", "docker", "testcontainers")


def _imported_by(module: str) -> set[str]:
    """Every module a fresh interpreter holds after importing `module` (this worktree's harness first)."""
    code = f"import {module}, sys; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, cwd=ROOT)
    return set(out.stdout.split())


def _process_starters(mods: set[str]) -> list[str]:
    return sorted(m for m in mods if any(m == p or m.startswith(p + ".") for p in STARTS_PROCESSES))


@pytest.mark.parametrize("module", ["harness.plan.actions", "harness.plan.scenario_file", "harness.plan.config", "harness.plan.scenarios"])
def test_reading_and_planning_a_scenario_imports_nothing_that_starts_a_process(module):
    mods = _imported_by(module)
    assert module in mods  # the import ran
    assert not _process_starters(mods), f"{module} imports {_process_starters(mods)}"


def test_the_import_check_sees_a_process_starter():
    """The same check flags the runner, which starts everything: it is not vacuous."""
    found = _process_starters(_imported_by("harness.run.runner"))
    assert {"harness.run.runner", "harness.nemesis.core", "harness.members.pool", "harness.base.procs"} <= set(found)


def test_every_action_has_one_performer_and_every_performer_an_action():
    from harness.nemesis.core import PERFORMERS
    assert set(PERFORMERS) == set(ACTIONS), (sorted(set(ACTIONS) - set(PERFORMERS)), sorted(set(PERFORMERS) - set(ACTIONS)))
    for name, fn in PERFORMERS.items():
        assert fn.performs == name and fn.__name__ == f"_do_{name}"


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_a_performers_signature_is_its_actions_parameters(name):
    from harness.nemesis.core import PERFORMERS
    fn = PERFORMERS[name]
    sig = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
    hints = typing.get_type_hints(fn)
    spec = ACTIONS[name]
    assert [p.name for p in sig] == [p.name for p in spec.params]
    for p, q in zip(sig, spec.params):
        assert hints[p.name] == q.type, (p.name, hints[p.name], q.type)
        assert (p.default is inspect.Parameter.empty) == q.required, p.name
        if not q.required:
            assert p.default == q.default, p.name


def test_performs_refuses_a_name_the_registry_does_not_know():
    with pytest.raises(ValueError, match="no action 'teleport'"):
        actions.performs("teleport")


def test_backend_abilities_are_the_protocols_their_classes_implement():
    from harness.cluster import base
    from harness.cluster.backends import backend_class
    from harness.plan.backends import ABILITIES, BACKENDS
    protocol = {"kill": base.Killable, "network": base.Partitionable, "rack_outage": base.RackOutages,
                "broker_partition": base.BrokerPartitions, "requests": base.RequestFaults,
                "leaders": base.Leadership}
    assert set(protocol) == set(actions.NEEDS)
    assert set(BACKENDS) <= set(ABILITIES)
    for name in BACKENDS:
        cls = backend_class(name)
        have = {a for a, proto in protocol.items() if issubclass(cls, proto)}
        assert have == set(ABILITIES[name]), (name, have)
    assert "broker_partition" not in ABILITIES["local"] and "broker_partition" in ABILITIES["docker"]


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return f'"{v}"' if isinstance(v, str) else repr(v)


def _param(p) -> str:
    bound = f" ({p.bound.value})" if p.bound else ""
    words = f" or {', '.join(_value(w) for w in p.words if w != p.default)}" if set(p.words) - {p.default} else ""
    if p.required:
        return f"`{p.name}`{bound}{words}"
    return (f"`[{p.name}]`" if p.default is None else f"`{p.name} = {_value(p.default)}`") + bound + words


def table() -> str:
    """docs/scenarios.md's table of actions, as the registry gives it."""
    rows = ["| action | parameters | groups | needs of the backend | what it does |", "|---|---|---|---|---|"]
    for s in ACTIONS.values():
        params = ", ".join(_param(p) for p in s.params) or "(none)"
        kinds = "every kind" if s.kinds == ALL_KINDS else ", ".join(sorted(s.kinds))
        rows.append(f"| `{s.name}` | {params} | {kinds} | {', '.join(sorted(s.needs))} | {s.doc} |")
    return "\n".join(rows) + "\n"


def test_the_docs_table_of_actions_is_the_registrys():
    docs = (ROOT / "docs" / "scenarios.md").read_text()
    assert table() in docs, "docs/scenarios.md's table of actions differs from harness/base/steps.py; it should read:\n" + table()


def test_every_parameter_has_a_type_and_no_required_one_follows_a_default():
    for s in ACTIONS.values():
        seen_default = False
        for p in s.params:
            assert p.type is not None, (s.name, p.name)
            assert not (p.required and seen_default), (s.name, p.name)
            seen_default = seen_default or not p.required


def test_the_random_mix_draws_only_actions_in_the_mix_with_parameters_they_take():
    from harness.plan.scenarios import SCENARIOS, ScenarioContext, schedule
    ctx = ScenarioContext(session_timeout_s=6.0, brokers=3, racks=3)
    mixed = {n for n, s in ACTIONS.items() if s.mix}
    seen = set()
    for seed in range(60):
        for a in schedule(SCENARIOS["random-mix"], seed=seed, ctx=ctx):
            if a.kind == "wait_stable":
                continue
            seen.add(a.kind)
            spec = ACTIONS[a.kind]
            assert a.kind in mixed and "consumer" in spec.kinds
            assert set(a.params) <= {p.name for p in spec.params}
            assert {p.name for p in spec.params if p.required} <= set(a.params)
    assert seen == mixed
    assert actions.MIX_CHOICES.count("pause_member") == 2 and len(set(actions.MIX_CHOICES)) == len(mixed)
    rng = random.Random(1)
    assert all(isinstance(ACTIONS[n].mix(rng, ctx, 0), dict) for n in mixed)


@pytest.mark.parametrize("sched, backend, says", [
    ([{"kind": "poll_stall", "params": {"slot": 0, "duration_s": 1.0}}], "local",
     r"step 0 \(poll_stall\) is for consumer groups; these members are streams"),
    ([{"kind": "sleep", "params": {"s": 1}}, {"kind": "teleport", "params": {}}], "local",
     r"step 1 \(teleport\) unknown action 'teleport'"),
])
def test_the_plan_refuses_an_action_the_kind_cannot_take(tmp_path, monkeypatch, sched, backend, says):
    from harness.kafka import dist as kafka_dist
    from harness.plan.config import RunConfig
    from harness.run.resolve import resolve
    monkeypatch.setattr(kafka_dist, "resolve", lambda v, progress=None: kafka_dist.KafkaDist("4.3.1", tmp_path))
    cfg = RunConfig(scenario="streams-broker-bounce", seed=1, protocol="classic", kafka_version="4.3.1",
                    backend=backend, schedule=tuple(sched), runs_root=str(tmp_path / "runs"))
    with pytest.raises(BadInput, match=says) as e:
        resolve(cfg, progress=lambda *_: None)
    assert "\n" not in str(e.value)
