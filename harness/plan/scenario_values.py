"""The values a scenario file may give a step's parameter, `after`, `settle`, `repeat` or a named draw.

Each raw TOML value is read once into a `Value`: a fixed value, a range `[lo, hi]`, a `{ choice = [...] }`,
a `{ session_timeout = ... }` (seconds relative to the run's session timeout), a `{ draw = "name" }` (a value
drawn once for the run, under `[draws]`), a `{ draw = "name", item = i }` (the i-th of the distinct member slots
a `[draws]` entry `{ slots = N }` drew), or one of the words a parameter takes from the run's context
(`slot = "any"`/`"each"`, `broker = "any"`, `rack = "any"`, `version`/`client_version = "target"`).
`examples` gives what to check against the parameter's type; `draw` gives the value a seed draws.
docs/scenarios.md teaches them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

#: the words a parameter may take, and what each means (docs/scenarios.md)
WORDS = {"slot": ("any", "each"), "broker": ("any",), "rack": ("any",), "version": ("target",),
         "client_version": ("target",)}
FORMS = ("choice", "session_timeout", "draw", "slots")
RACK = re.compile(r"^r[0-9]+$")


@dataclass(frozen=True)
class Value:
    """A value read from a file: `form` is fixed, range, choice, session_timeout, draw, slots, item or word."""

    form: str
    arg: object


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _range(v) -> tuple:
    if len(v) != 2 or not all(_number(x) for x in v):
        raise ValueError(f"a range is [lo, hi] of two numbers, got {v!r}")
    if v[0] > v[1]:
        raise ValueError(f"range [{v[0]}, {v[1]}] has lo > hi")
    return tuple(v)


def read(v, *, param: str | None = None, draws: dict | None = None, slots: int = 0) -> Value:
    """The Value of a raw TOML value; ValueError (one line) when it is not one. `param` names the action's
    parameter it is for (None: `after`, `settle`, `repeat` or a draw, which take no words); `draws` are the
    file's named draws (None while reading them: a draw names no other draw; `slots` is then the member count)."""
    if isinstance(v, list):
        return Value("range", _range(v))
    if isinstance(v, dict) and set(v) == {"draw", "item"}:
        return _item(v["draw"], v["item"], draws)
    if isinstance(v, dict):
        if len(v) != 1 or next(iter(v)) not in FORMS:
            raise ValueError(f"a table value is one of {{ choice = [...] }}, {{ session_timeout = ... }}, "
                             f"{{ draw = \"name\" }}; got {{ {', '.join(v)} }}")
        form, arg = next(iter(v.items()))
        if form == "choice":
            if not isinstance(arg, list) or not arg or any(isinstance(x, (list, dict)) for x in arg):
                raise ValueError(f"choice is a non-empty list of plain values, got {arg!r}")
            return Value("choice", tuple(arg))
        if form == "session_timeout":
            factors = _range(arg) if isinstance(arg, list) else (arg, arg)
            if not all(_number(x) and x >= 0 for x in factors):
                raise ValueError(f"session_timeout is a factor or a range [lo, hi] of factors, 0 or more; got {arg!r}")
            return Value("session_timeout", factors)
        if form == "slots":
            if draws is not None:
                raise ValueError("{ slots = N } is a named draw: write it under [draws], take one with "
                                 "{ draw = \"name\", item = i }")
            if not isinstance(arg, int) or isinstance(arg, bool) or not 1 <= arg <= slots:
                raise ValueError(f"slots is how many distinct member slots to draw, 1 to members.count ({slots}); "
                                 f"got {arg!r}")
            return Value("slots", arg)
        if draws is None:
            raise ValueError("a named draw cannot name another draw")
        if not isinstance(arg, str) or arg not in draws:
            raise ValueError(f"unknown draw {arg!r}; the file's [draws]: {', '.join(draws) or 'none'}")
        if draws[arg].form == "slots":
            raise ValueError(f"draw {arg!r} is {draws[arg].arg} member slots: take one with "
                             f"{{ draw = \"{arg}\", item = 0 }}")
        return Value("draw", arg)
    if isinstance(v, str) and param in WORDS and v in WORDS[param]:
        return Value("word", v)
    if param == "rack" and isinstance(v, str) and not RACK.match(v):
        raise ValueError(f"{v!r} is not a rack (r0, r1, ...) nor \"any\" (a rack of the cluster)")
    return Value("fixed", v)


def _item(name, item, draws: dict | None) -> Value:
    if draws is None:
        raise ValueError("a named draw cannot name another draw")
    if not isinstance(name, str) or name not in draws or draws[name].form != "slots":
        raise ValueError(f"{{ draw = ..., item = ... }} takes one of a {{ slots = N }} draw; {name!r} is none "
                         f"(the file's [draws]: {', '.join(draws) or 'none'})")
    n = draws[name].arg
    if not isinstance(item, int) or isinstance(item, bool) or not 0 <= item < n:  # type: ignore[operator]
        raise ValueError(f"item is 0 to {n - 1} (draw {name!r} is {n} slots); got {item!r}")  # type: ignore[operator]
    return Value("item", (name, item))


def draw_name(value: Value) -> str | None:
    """The named draw a value uses, or None."""
    return value.arg if value.form == "draw" else value.arg[0] if value.form == "item" else None  # type: ignore[index]


def examples(value: Value, draws: dict) -> list:
    """Values this one can take, to check against the parameter's type (empty for words: typed by meaning)."""
    if value.form in ("fixed",):
        return [value.arg]
    if value.form in ("range", "choice"):
        return list(value.arg)  # type: ignore[arg-type]
    if value.form == "session_timeout":
        return [0.5]  # seconds: a float
    if value.form == "draw":
        return examples(draws[value.arg], draws)
    if value.form == "item":
        return [0]  # a member slot: an integer
    return []


def word_error(param: str, v) -> str | None:
    """Why a string is refused for an integer parameter that takes words, or None."""
    if isinstance(v, str) and param in WORDS:
        return f"{v!r} is not a valid integer nor one of the words {param} takes: {', '.join(WORDS[param])}"
    return None


def draw(value: Value, rng, ctx, *, param: str | None = None, slots: int = 0, drawn: dict | None = None):
    """The value a seed draws: ranges uniform (2 decimals; an integer when both ends are), choices uniform."""
    if value.form == "fixed":
        return value.arg
    if value.form == "range":
        lo, hi = value.arg  # type: ignore[misc]
        if isinstance(lo, int) and isinstance(hi, int):
            return rng.randint(lo, hi)
        return round(rng.uniform(lo, hi), 2)
    if value.form == "choice":
        return rng.choice(value.arg)
    if value.form == "session_timeout":
        lo, hi = value.arg  # type: ignore[misc]
        return round((lo if lo == hi else rng.uniform(lo, hi)) * ctx.session_timeout_s, 2)
    if value.form == "draw":
        return (drawn or {})[value.arg]
    if value.form == "slots":  # distinct slots in a drawn order (random.sample)
        return rng.sample(range(slots), value.arg)
    if value.form == "item":
        name, i = value.arg  # type: ignore[misc]
        return (drawn or {})[name][i]
    if param == "slot":  # "any"; "each" is the step's loop over the slots (scenario_file)
        return rng.randrange(slots)
    if param == "broker":
        return rng.randint(1, ctx.brokers)
    if param == "rack":
        return f"r{rng.randrange(ctx.racks)}"
    return ctx.target_kafka if param == "version" else ctx.target_client
