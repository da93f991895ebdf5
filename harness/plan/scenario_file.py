"""Scenarios written as TOML files (docs/scenarios.md): read with `tomllib`, validated with pydantic.

A file gives the same `Scenario` a Python builder does (most built-ins are such files, harness/plan/builtin/):
its `build(rng, ctx)` draws the named draws, then every value of every step (harness/plan/scenario_values.py)
from the run's seeded rng, so a seed gives one schedule and `harness replay` reruns the recorded one. A step's
parameters are checked against the action's description in the registry (harness/plan/actions.py): an unknown
parameter, a missing required one or a value of the wrong type is refused. Every refusal is one
`BadInput` line naming the file, the step (index and action) and the field, before anything starts.

The format itself (its tables and fields, and what each kind of group allows) is harness/plan/scenario_format.py.
The file's cluster, member, group and workload settings become RunConfig defaults (`run_defaults`); the
command line wins where both say something (harness/plan/config.py); its Kafka Streams and Kafka Connect settings are
the scenario's own, under `--streams-set` and `--connect-set`.
"""
from __future__ import annotations

import shlex
import tomllib
import types
import typing
from pathlib import Path
from typing import NamedTuple, Union

from pydantic import TypeAdapter, ValidationError

from harness.plan import scenario_near as near
from harness.plan import scenario_values as values
from harness.plan.actions import ACTIONS as SPECS
from harness.plan.actions import Step as Act
from harness.plan.actions import kind_refusal as action_refusal
from harness.kafka.config_keys import setting_text as _text
from harness.base.errors import BadInput
from harness.plan.scenario_format import ScenarioFile, Step, kind_refusal
from harness.plan.scenario_model import Action, Scenario
from harness.plan.scenario_values import Value
from harness.plan.topics import check as check_topics

#: step fields that are not the action's parameters
STEP_FIELDS = ("action", "after", "settle", "repeat", str(Act.WAIT_STABLE))  # the last: wait as that step does
ACTIONS = tuple(sorted(SPECS))


def _literal(hint) -> bool:
    """Whether a parameter's type is a list or a table (or one of them or None)."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return any(_literal(h) for h in typing.get_args(hint))
    return origin in (list, dict)


#: (action, parameter) whose value is a list (a subscription) or a table (settings): written as it is, never
#: read as a range or a value form
LITERAL_PARAMS = frozenset((a.name, p.name) for a in SPECS.values() for p in a.params if _literal(p.type))


def _where(path, loc: tuple, steps: list) -> str:
    """'file: steps[1] (broker_bounce): down_s' from a pydantic error location."""
    if len(loc) >= 2 and loc[0] == "steps" and isinstance(loc[1], int):
        i = loc[1]
        action = steps[i].get("action", "?") if i < len(steps) and isinstance(steps[i], dict) else "?"
        rest = ".".join(str(x) for x in loc[2:]) or "(the step)"
        return f"{path}: steps[{i}] ({action}): {rest}"
    return f"{path}: {'.'.join(str(x) for x in loc) or '(top level)'}"


class StepValues(NamedTuple):
    """A step's values, read (harness/plan/scenario_values.py); `each`: once per member slot, in a seeded order."""

    after: Value | None
    settle: Value | None
    repeat: Value
    params: dict[str, Value]
    each: bool


def _value(raw, hint, bad, *, param: str | None = None, draws: dict, least: float | None = None) -> Value:
    """A raw value read and checked against the type `hint` (and a least value); `bad(msg)` raises."""
    try:
        v = values.read(raw, param=param, draws=draws)
    except ValueError as e:
        bad(str(e))
    for x in values.examples(v, draws):
        if hint is int and param is not None and (why := values.word_error(param, x)):
            bad(why)
        try:
            TypeAdapter(hint).validate_python(x, strict=True)
        except ValidationError as e:
            what = "seconds (session_timeout)" if v.form == "session_timeout" else repr(x)
            bad(f"{what}: {e.errors()[0]['msg']}")
        if least is not None and x < least:
            bad(f"{x!r}: at least {least:g}")
    return v


def _check_step(path, i: int, step: Step, draws: dict, kind: str) -> StepValues:
    def bad(field, msg):
        raise BadInput(f"{path}: steps[{i}] ({step.action}): {field}: {msg}")

    if step.action not in SPECS:
        bad("action", near.unknown_action(step.action, ACTIONS))
    if why := action_refusal(step.action, kind):
        bad("action", why)
    spec = SPECS[step.action]
    hints = {p.name: p.type for p in spec.params}
    takes = list(hints)
    params = {}
    for k, v in (step.model_extra or {}).items():
        if k not in takes:
            bad(k, near.unknown_parameter(k, step.action, takes, STEP_FIELDS[1:]))
        if (step.action, k) in LITERAL_PARAMS:  # a list or a table is the value itself, never a range or form
            try:
                TypeAdapter(hints[k]).validate_python(v)
            except ValidationError as e:
                bad(k, f"{v!r}: {e.errors()[0]['msg']}")
            params[k] = values.Value("fixed", v)
            continue
        params[k] = _value(v, hints.get(k, typing.Any), lambda msg, k=k: bad(k, msg), param=k, draws=draws)
    for p in spec.params:
        if p.required and p.name not in params:
            bad(p.name, f"missing required parameter of {step.action}")

    def seconds(field, raw) -> Value | None:
        return None if raw is None else _value(raw, float, lambda msg: bad(field, msg), draws=draws, least=0)

    after, settle = seconds("after", step.after), seconds("settle", step.settle)
    repeat = _value(step.repeat, int, lambda msg: bad("repeat", msg), draws=draws, least=1)
    each = "slot" in params and params["slot"] == Value("word", "each")
    return StepValues(after, settle, repeat, params, each)


def _draws(path, model: ScenarioFile) -> dict[str, Value]:
    out: dict[str, Value] = {}
    for name, raw in model.draws.items():
        try:
            out[name] = values.read(raw, slots=model.members.count)
        except ValueError as e:
            raise BadInput(f"{path}: draws.{name}: {e}") from None
    return out


def _read_values(path, model: ScenarioFile) -> tuple[dict[str, Value], list[StepValues]]:
    """The file's named draws and every step's values, checked; BadInput (one line) naming the field."""
    draws = _draws(path, model)
    steps = [_check_step(path, i, step, draws, model.members.kind) for i, step in enumerate(model.steps)]
    used = {values.draw_name(v) for s in steps for v in (s.after, s.settle, s.repeat, *s.params.values()) if v}
    for name in draws:
        if name not in used:
            raise BadInput(f"{path}: draws.{name}: drawn but used by no step (a step says {{ draw = \"{name}\" }})")
    return draws, steps


def parse(text: str, path) -> ScenarioFile:
    """The validated model of a file's text; BadInput (one line) when it is not a good scenario file."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"{path}: not valid TOML: {e}") from None
    try:
        model = ScenarioFile.model_validate(raw, strict=True)  # a count is a whole number: not true, not "3"
    except ValidationError as e:
        err = e.errors()[0]
        msg = near.unknown_field(tuple(err["loc"])) if err["type"] == "extra_forbidden" else err["msg"]
        if err["type"].endswith("_type"):
            msg = f"{msg}, not {err['input']!r}"[:200]
        raise BadInput(f"{_where(path, tuple(err['loc']), raw.get('steps') or [])}: {msg}") from None
    if refused := kind_refusal(model):
        raise BadInput(f"{path}: {refused[0]}: {refused[1]}")
    _read_values(path, model)
    for key in ("slot_commands", "slot_subscriptions"):
        for slot in getattr(model.members, key):
            if not slot.isdigit():
                raise BadInput(f"{path}: members.{key}: slot {slot!r} is not a number (0-based slot)")
    subs = {"members.subscription": model.members.subscription} if model.members.subscription else {}
    subs.update({f"members.slot_subscriptions.{n}": e for n, e in model.members.slot_subscriptions.items()})
    try:
        check_topics(_topics(model), subs)
    except BadInput as e:
        raise BadInput(f"{path}: {e}") from None
    return model


def _topics(model: ScenarioFile) -> tuple[tuple, ...]:
    """The file's `[[topics]]` as the plan holds them: (name, partitions), with `"later"` third when created later."""
    return tuple((t.name, t.partitions) + ((t.created,) if t.created != "start" else ()) for t in model.topics)


def read(path) -> tuple[str, ScenarioFile]:
    """A file's text and model; BadInput when it cannot be read or is not a good scenario file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: cannot read the scenario file: not UTF-8 text (byte {e.start}: "
                       f"{e.object[e.start:e.start + 1]!r})") from None
    except OSError as e:
        raise BadInput(f"{path}: cannot read the scenario file: {e.strerror or e}") from None
    return text, parse(text, path)


def _builder(model: ScenarioFile, path):
    draws, steps = _read_values(path, model)
    slots = model.members.count

    def build(rng, ctx) -> list[Action]:
        drawn = {name: values.draw(v, rng, ctx, slots=slots) for name, v in draws.items()}
        out: list[Action] = []

        def sleep(v: Value | None) -> None:
            if v is not None:
                out.append(Action(Act.SLEEP, {"s": values.draw(v, rng, ctx, drawn=drawn)}))

        for step, vals in zip(model.steps, steps):
            stable = step.wait_stable if step.wait_stable is not None else \
                step.action not in (Act.SLEEP, Act.WAIT_STABLE) and SPECS[step.action].settles
            for _ in range(values.draw(vals.repeat, rng, ctx, drawn=drawn)):
                for slot in rng.sample(range(slots), slots) if vals.each else [None]:
                    sleep(vals.after)
                    out.append(Action(step.action, {
                        k: slot if vals.each and k == "slot" else values.draw(v, rng, ctx, param=k, slots=slots,
                                                                              drawn=drawn)
                        for k, v in vals.params.items()}))
                    sleep(vals.settle)
                    if stable:
                        out.append(Action(Act.WAIT_STABLE, {}))
        return out
    return build


def scenario_of(model: ScenarioFile, path="(scenario file)") -> Scenario:
    """The Scenario of a checked model (the one interpreter of built-in files and users' files)."""
    expect = {"expect_broker": model.expect.broker_refusal} if model.expect.broker_refusal else {}
    extra = {"check_overrides": lambda ctx, sched: dict(expect)} if expect else {}
    m = model.members
    return Scenario(model.name, model.doc or f"scenario file {model.name}", _builder(model, path),
                    members=m.count, max_members=m.max_count, static=m.static, racks=m.racks,
                    protocols=model.kind_protocols, smoke=model.smoke, initial_kafka=model.cluster.initial_kafka,
                    initial_client=m.initial_client, processing_ms=m.processing_ms or 0.0,
                    backend=model.cluster.backend, kind=m.kind, streams=dict(model.streams.settings),
                    connect=dict(model.connect.settings),
                    needs=frozenset().union(*(SPECS[st.action].needs for st in model.steps)), **extra)


def loads(text: str, path) -> Scenario:
    """The Scenario of a file's text (BadInput, one line, when it cannot be)."""
    return scenario_of(parse(text, path), path)


def load(path) -> Scenario:
    """The Scenario of a file (BadInput, one line, when it cannot be)."""
    return scenario_of(read(path)[1], path)


def run_defaults(model: ScenarioFile) -> dict:
    """RunConfig fields the file sets (only those it says something about)."""
    m, c, g, w = model.members, model.cluster, model.group, model.workload
    out = {"brokers": c.brokers, "kafka_version": c.kafka_version, "backend": c.backend, "member": m.member, "commit_mode": m.commit_mode,
           "processing_ms": m.processing_ms, "revoke_delay_ms": m.revoke_delay_ms,
           "members_per_process": m.members_per_process,
           "member_command": tuple(shlex.split(m.command)) if m.command else None,
           "slot_commands": tuple(sorted((int(s), tuple(shlex.split(cmd))) for s, cmd in m.slot_commands.items())),
           "client_settings": tuple((k, _text(v)) for k, v in m.client_settings.items()),
           "broker_settings": tuple((k, _text(v)) for k, v in c.broker_settings.items()),
           "group_settings": tuple((k, _text(v)) for k, v in g.settings.items()),
           "session_timeout_s": g.session_timeout_s, "rate_per_s": w.rate_per_s, "partitions": w.partitions,
           "replication": w.replication,
           "topics": _topics(model), "subscription": tuple(m.subscription),
           "slot_subscriptions": tuple(sorted((int(n), tuple(e)) for n, e in m.slot_subscriptions.items()))}
    return {k: v for k, v in out.items() if v}

