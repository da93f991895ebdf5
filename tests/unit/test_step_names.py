"""The table of steps (harness/base/steps.py) is complete, and the only place an action's name is spelled.

Verify: every action the nemesis performs and every action a scenario file can name has a row, and every row has
a performer; no module of harness/ but the table spells an action's name as a string literal in its code.

What counts as spelling a name: a string literal (`ast.Constant` of type str) in a module's code whose whole value
is an action's name (`"sleep"`, `"kill_member"`, ...), wherever it stands: a comparison, a dict key, a call's
argument, a set of kinds. Not counted: docstrings (the first statement of a module, class or function), comments
(not in the syntax tree), the parts of an f-string, a string of which the name is only a part (`"the sleep"`,
`"slot 0 (bounce)"`), and the names in an `__all__` list (Python names of the module's functions, which
harness/kproxy/ calls as its rules are named). A word that is both an action's name and something else (the
request proxy's rule kinds, the backend abilities `rack_outage` and `broker_partition`, a fault kind, the history's
`group_config` event) is spelled through the table too (`Step.DISCONNECT`, `Ability.RACK_OUTAGE`,
`fault_of(Step.POLL_STALL)`, `GROUP_CONFIG_EVENT`): the same word, defined once.
"""
from __future__ import annotations

import ast
from pathlib import Path

from harness.base.steps import ACTIONS, Step

PKG = Path(__file__).resolve().parents[2] / "harness"
TABLE = "harness/base/steps.py"
#: modules allowed to spell action names, each with why: none (the table alone names the actions)
STILL_SPELLED: dict[str, str] = {}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body:
            first = n.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _skipped(tree: ast.AST) -> set[int]:
    """The string nodes that are not code's words: docstrings, f-string parts, `__all__` entries."""
    out = _docstrings(tree)
    for n in ast.walk(tree):
        if isinstance(n, ast.JoinedStr) or (isinstance(n, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)):
            out |= {id(c) for c in ast.walk(n)}
    return out


def spelled(source: str, filename: str = "<source>") -> list[str]:
    """`file:line "name"` of every action name a module's code spells as a string literal (the rule above)."""
    tree = ast.parse(source, filename)
    skip = _skipped(tree)
    hits = [n for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in ACTIONS and id(n) not in skip]
    return [f"{filename}:{n.lineno} {n.value!r}" for n in sorted(hits, key=lambda n: (n.lineno, n.col_offset))]


def _spelled_in_harness() -> dict[str, list[str]]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        rel = str(p.relative_to(PKG.parent))
        if rel != TABLE and (hits := spelled(p.read_text(), rel)):
            out[rel] = hits
    return out


def test_no_action_name_is_spelled_outside_the_table():
    found = _spelled_in_harness()
    bad = [h for f, hits in found.items() if f not in STILL_SPELLED for h in hits]
    assert not bad, "action names spelled outside harness/base/steps.py (use Step.X, Ability.X or fault_of): " + \
        "; ".join(bad)


def test_the_allow_list_holds_only_files_that_still_spell_names():
    """A file converted leaves the list: the list says what is left to do, not what once was."""
    found = _spelled_in_harness()
    stale = sorted(f for f in STILL_SPELLED if f not in found)
    assert not stale, f"files in STILL_SPELLED that spell no action name any more (remove them): {stale}"


def test_the_rule_sees_code_and_not_prose():
    src = ('"""A module about sleep."""\n'
           '__all__ = ["disconnect"]\n'
           'def f(kind, slot):\n'
           '    """Does a bounce."""\n'
           '    # a sleep\n'
           '    msg = f"step {slot} (bounce)" + "the sleep"\n'
           '    if kind == "sleep":\n'
           '        return {"kill_member": 1}\n'
           '    return fault("poll_stall")\n')
    assert spelled(src, "m.py") == ["m.py:7 'sleep'", "m.py:8 'kill_member'", "m.py:9 'poll_stall'"]


def test_every_action_has_a_row_and_a_performer_and_every_performer_a_row():
    from harness.nemesis.core import PERFORMERS
    from harness.plan import scenario_file
    assert set(PERFORMERS) == set(ACTIONS), (sorted(set(ACTIONS) - set(PERFORMERS)), sorted(set(PERFORMERS) - set(ACTIONS)))
    assert set(scenario_file.ACTIONS) == set(ACTIONS)  # what a scenario file may name is the table's rows
    assert {s.value for s in Step} == set(ACTIONS)  # every name a row, every row a name
    for name, row in ACTIONS.items():
        assert row.name == name and isinstance(row.name, Step)
        assert row.proof is not None and row.doc


def test_a_performer_for_a_name_without_a_row_is_refused():
    import pytest
    from harness.base.steps import performs
    with pytest.raises(ValueError, match="no action 'teleport' in harness/base/steps.py"):
        performs("teleport")
