"""What a run will do, checked before anything starts: the run configuration, scenarios and their files, the
action registry, topics, request-fault checks and the kinds' setting checks. The words a run is asked in (kinds,
protocols, commit modes, self-tests) are `harness.base.vocabulary`'s, its version gates `harness.base.versions`'.

Owns: `config` (RunConfig, what was asked, and RunPlan, what will run), `actions` (every schedule action described
once as data), `scenarios`, `scenario_file`, `scenario_format`, `scenario_values`, `scenario_model`, `scenario_near` (a
file's misspelt word named) and `builtin/` (the shipped scenario files), `listing` (`harness scenarios`), `topics`, `request_checks`, `backends` (the backends' names and abilities
as data), `kinds/` (each kind's settings and plan-time checks), `applicability` (the plan's facts the invariants'
applicability is decided from).
May import: `base`, `record`, `kafka`, `kproxy`, `invariants`. Never what starts a process, a container or a
download (`run`, `cluster`, `members`, `nemesis`, `kinds`): a plan is read and checked without touching the machine
(tests/unit/test_architecture.py holds both lines).
"""
