"""Scenarios written as TOML files (docs/scenarios.md): read with `tomllib`, validated with pydantic.

A file gives the same `Scenario` a built-in is: its `build(rng, ctx)` draws every range, `after` and
`repeat` from the run's seeded rng, so a seed gives one schedule and `harness replay` reruns the recorded
one. A step's parameters are checked against the nemesis method that performs it (`Nemesis._do_<action>`):
an unknown parameter, a missing required one or a value of the wrong type is refused. Every refusal is one
`BadInput` line naming the file, the step (index and action) and the field, before anything starts.

The file's cluster, member, group and workload settings become RunConfig defaults (`run_defaults`); the
command line wins where both say something (harness/plan.py).
"""
from __future__ import annotations

import inspect
import shlex
import tomllib
import typing
from pathlib import Path
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from harness import scenarios
from harness.errors import BadInput
from harness.nemesis import Nemesis
from harness.scenarios import PROTOCOLS, Action, Scenario

Scalar = Union[bool, int, float, str]
Number = Union[int, float]
#: step fields that are not the action's parameters
STEP_FIELDS = ("action", "after", "repeat", "wait_stable")
ACTIONS = tuple(sorted(n[4:] for n, _ in inspect.getmembers(Nemesis, inspect.isfunction) if n.startswith("_do_")))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Members(_Strict):
    count: int = Field(3, ge=1)
    static: bool = False
    racks: bool = False
    kind: Literal["python", "java"] | None = None
    commit_mode: Literal["sync", "async", "auto", "never"] | None = None
    command: str | None = None
    slot_commands: dict[str, str] = {}
    client_settings: dict[str, Scalar] = {}


class Cluster(_Strict):
    brokers: int | None = Field(None, ge=1)
    kafka_version: str | None = None
    broker_settings: dict[str, Scalar] = {}


class Group(_Strict):
    settings: dict[str, Scalar] = {}
    session_timeout_s: float | None = Field(None, gt=0)


class Workload(_Strict):
    rate_per_s: float | None = Field(None, gt=0)
    partitions: int | None = Field(None, ge=1)


class Step(BaseModel):
    """One step; every field but these four is a parameter of the action (checked against the nemesis)."""

    model_config = ConfigDict(extra="allow")
    action: str
    after: Number | list[Number] | None = None
    repeat: int = Field(1, ge=1)
    wait_stable: bool | None = None  # default: true, except after sleep and wait_stable themselves


class ScenarioFile(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=100)
    doc: str = ""
    protocols: list[Literal[PROTOCOLS]] = Field(default_factory=lambda: list(PROTOCOLS), min_length=1)  # type: ignore[valid-type]
    members: Members = Members()
    cluster: Cluster = Cluster()
    group: Group = Group()
    workload: Workload = Workload()
    steps: list[Step] = Field(min_length=1)


def _where(path, loc: tuple, steps: list) -> str:
    """'file: steps[1] (broker_bounce): down_s' from a pydantic error location."""
    if len(loc) >= 2 and loc[0] == "steps" and isinstance(loc[1], int):
        i = loc[1]
        action = steps[i].get("action", "?") if i < len(steps) and isinstance(steps[i], dict) else "?"
        rest = ".".join(str(x) for x in loc[2:]) or "(the step)"
        return f"{path}: steps[{i}] ({action}): {rest}"
    return f"{path}: {'.'.join(str(x) for x in loc) or '(top level)'}"


def _is_range(v) -> bool:
    return isinstance(v, list)


def _check_value(hint, v, bad) -> None:
    if _is_range(v):
        if len(v) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            bad(f"a range is [lo, hi] of two numbers, got {v!r}")
        if v[0] > v[1]:
            bad(f"range [{v[0]}, {v[1]}] has lo > hi")
        values = v
    else:
        values = [v]
    for x in values:
        try:
            TypeAdapter(hint).validate_python(x)
        except ValidationError as e:
            bad(f"{x!r}: {e.errors()[0]['msg']}")


def _check_step(path, i: int, step: Step) -> None:
    def bad(field, msg):
        raise BadInput(f"{path}: steps[{i}] ({step.action}): {field}: {msg}")

    if step.action not in ACTIONS:
        bad("action", f"unknown action {step.action!r}; known: {', '.join(ACTIONS)}")
    fn = getattr(Nemesis, "_do_" + step.action)
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn)
    takes = [p for p in sig.parameters if p != "self"]
    params = step.model_extra or {}
    for k, v in params.items():
        if k not in takes:
            bad(k, f"unknown parameter of {step.action} (it takes: {', '.join(takes) or 'none'}; "
                   f"every step: {', '.join(STEP_FIELDS[1:])})")
        _check_value(hints.get(k, typing.Any), v, lambda msg, k=k: bad(k, msg))
    for name, p in sig.parameters.items():
        if name != "self" and p.default is inspect.Parameter.empty and name not in params:
            bad(name, f"missing required parameter of {step.action}")
    if step.after is not None:
        _check_value(float, step.after, lambda msg: bad("after", msg))
        if min(step.after if _is_range(step.after) else [step.after]) < 0:
            bad("after", "a wait before a step is 0 or more seconds")


def parse(text: str, path) -> ScenarioFile:
    """The validated model of a file's text; BadInput (one line) when it is not a good scenario file."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"{path}: not valid TOML: {e}") from None
    try:
        model = ScenarioFile.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
        raise BadInput(f"{_where(path, tuple(err['loc']), raw.get('steps') or [])}: {msg}") from None
    for i, step in enumerate(model.steps):
        _check_step(path, i, step)
    for slot in model.members.slot_commands:
        if not slot.isdigit():
            raise BadInput(f"{path}: members.slot_commands: slot {slot!r} is not a number (0-based slot)")
    return model


def read(path) -> tuple[str, ScenarioFile]:
    """A file's text and model; BadInput when it cannot be read or is not a good scenario file."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"{path}: cannot read the scenario file: {e.strerror or e}") from None
    return text, parse(text, path)


def _draw(rng, v):
    if not _is_range(v):
        return v
    lo, hi = v
    if isinstance(lo, int) and isinstance(hi, int):
        return rng.randint(lo, hi)
    return round(rng.uniform(lo, hi), 2)


def _builder(model: ScenarioFile):
    def build(rng, ctx) -> list[Action]:
        out: list[Action] = []
        for step in model.steps:
            stable = step.wait_stable if step.wait_stable is not None else step.action not in ("sleep", "wait_stable")
            for _ in range(step.repeat):
                if step.after is not None:
                    out.append(Action("sleep", {"s": _draw(rng, step.after)}))
                out.append(Action(step.action, {k: _draw(rng, v) for k, v in (step.model_extra or {}).items()}))
                if stable:
                    out.append(Action("wait_stable", {}))
        return out
    return build


def scenario_of(model: ScenarioFile) -> Scenario:
    pauses = any(s.action == "pause_member" for s in model.steps)
    extra = {"check_overrides": scenarios.pause_tolerance} if pauses else {}
    return Scenario(model.name, model.doc or f"scenario file {model.name}", _builder(model),
                    members=model.members.count, static=model.members.static, racks=model.members.racks,
                    protocols=tuple(model.protocols), **extra)


def loads(text: str, path) -> Scenario:
    return scenario_of(parse(text, path))


def load(path) -> Scenario:
    """The Scenario of a file (BadInput, one line, when it cannot be)."""
    return scenario_of(read(path)[1])


def _text(v) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def run_defaults(model: ScenarioFile) -> dict:
    """RunConfig fields the file sets (only those it says something about)."""
    m, c, g, w = model.members, model.cluster, model.group, model.workload
    out = {"brokers": c.brokers, "kafka_version": c.kafka_version, "member": m.kind, "commit_mode": m.commit_mode,
           "member_command": tuple(shlex.split(m.command)) if m.command else None,
           "slot_commands": tuple(sorted((int(s), tuple(shlex.split(cmd))) for s, cmd in m.slot_commands.items())),
           "client_settings": tuple((k, _text(v)) for k, v in m.client_settings.items()),
           "broker_settings": tuple((k, _text(v)) for k, v in c.broker_settings.items()),
           "group_settings": tuple((k, _text(v)) for k, v in g.settings.items()),
           "session_timeout_s": g.session_timeout_s, "rate_per_s": w.rate_per_s, "partitions": w.partitions}
    return {k: v for k, v in out.items() if v}

