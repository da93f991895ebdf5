"""What a scenario file probably meant by a field, an action or a parameter it misspelt (harness/base/near.py),
said in the one line harness/plan/scenario_file.py refuses it with (`members.cont: unknown field; did you mean
count?`).

The fields a table takes are read from the file's format (harness/plan/scenario_format.py): the fields of the
pydantic model at the error's place, so a field added there is offered here with no list to keep.
"""
from __future__ import annotations

import typing

from pydantic import BaseModel

from harness.base import near
from harness.plan.scenario_format import ScenarioFile


def fields_at(loc: tuple) -> tuple[str, ...]:
    """The fields the table holding `loc`'s last part takes (none when the place is no table of the format)."""
    cls: type[BaseModel] = ScenarioFile
    for part in loc[:-1]:
        if isinstance(part, int):  # an entry of a list of tables ([[topics]], [[steps]])
            continue
        f = cls.model_fields.get(part)
        if f is None:
            return ()
        sub = next((c for c in (f.annotation, *typing.get_args(f.annotation))
                    if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if sub is None:
            return ()
        cls = sub
    return tuple(cls.model_fields)


def unknown_field(loc: tuple) -> str:
    """`unknown field`, and the field of that table probably meant."""
    close = near.closest(str(loc[-1]), fields_at(loc)) if loc else []
    return "unknown field" + (f"; did you mean {close[0]}?" if close else "")


def unknown_action(action: str, actions) -> str:
    """`unknown action 'x'`, and the action probably meant, else every action."""
    close = near.closest(action, actions)
    return f"unknown action {action!r}; " + (f"did you mean {close[0]}?" if close else f"known: {', '.join(actions)}")


def unknown_parameter(param: str, action: str, takes, every) -> str:
    """`unknown parameter of <action>`, the parameter (or step field) probably meant, and what it takes."""
    close = near.closest(param, [*takes, *every])
    return (f"unknown parameter of {action}" + (f"; did you mean {close[0]}?" if close else "")
            + f" (it takes: {', '.join(takes) or 'none'}; every step: {', '.join(every)})")
