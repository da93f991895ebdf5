"""docs/invariants.md's table of constants against the code: every number a checker module defines (a module
constant, or a numeric default of a checker settings class) has a row with the same value, and every row names one.

Setup: the table under "## Constants" read from the doc; the checker modules (every module of harness.invariants)
read with `ast` for their module-level numbers (plain, or a dict of numbers); the settings classes' fields.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import pkgutil
import re
from pathlib import Path

import harness.invariants as inv
from harness.invariants.connect.view import ConnectCheckSettings
from harness.invariants.core import CheckSettings
from harness.invariants.share.view import ShareCheckSettings
from harness.invariants.streams.view import StreamsCheckSettings

DOC = Path(__file__).resolve().parents[2] / "docs" / "invariants.md"
SETTINGS = {"core": CheckSettings, "streams.view": StreamsCheckSettings, "connect.view": ConnectCheckSettings,
            "share.view": ShareCheckSettings}


def table() -> dict[str, str]:
    """name -> value, as the doc's Constants table gives them."""
    text = DOC.read_text().split("\n## Constants\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    out = {}
    for row in rows:
        name, value = re.match(r"\| `([^`]+)` \| ([^|]+) \|", row).groups()
        assert name not in out, f"{name} listed twice"
        out[name] = value.strip()
    return out


def _modules() -> list[str]:
    names = []
    for m in pkgutil.walk_packages(inv.__path__, "harness.invariants."):
        names.append(m.name)
    return names


def _numbers(node) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp):  # 1 << 16
        return _numbers(node.left) and _numbers(node.right)
    return False


def code_constants() -> dict[str, object]:
    """name -> value of every number the checker modules define (module level, and dict entries of numbers)."""
    out = {}
    for modname in _modules():
        mod = importlib.import_module(modname)
        rel = modname.removeprefix("harness.invariants.")
        tree = ast.parse(Path(mod.__file__).read_text())
        for node in tree.body:
            if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                continue
            name = node.targets[0].id
            if _numbers(node.value):
                out[f"{rel}.{name}"] = getattr(mod, name)
            elif isinstance(node.value, ast.Dict) and node.value.values and all(_numbers(v) for v in node.value.values):
                for k, v in getattr(mod, name).items():
                    out[f'{rel}.{name}["{k}"]'] = v
    for rel, cls in SETTINGS.items():
        for f in dataclasses.fields(cls):
            if isinstance(f.default, (int, float)) and not isinstance(f.default, bool):
                out[f"{rel}.{cls.__name__}.{f.name}"] = f.default
    return out


def test_every_constant_of_a_checker_is_in_the_doc_with_its_value():
    doc, code = table(), code_constants()
    missing = sorted(set(code) - set(doc))
    assert not missing, f"constants of the checkers docs/invariants.md's Constants table does not list: {missing}"
    differ = {n: (doc[n], code[n]) for n in code if float(doc[n]) != float(code[n])}
    assert not differ, f"the doc says another value (doc, code): {differ}"


def test_every_row_of_the_table_is_a_constant_of_the_code():
    stale = sorted(set(table()) - set(code_constants()))
    assert not stale, f"docs/invariants.md lists constants the code no longer has: {stale}"


def test_the_storm_rule_the_doc_states_is_the_codes():
    from harness.invariants import convergence
    text = DOC.read_text()
    assert f"F = `FOLLOW_UP_REBALANCES` ({convergence.FOLLOW_UP_REBALANCES}) follow-up" in text
    assert f"`STORM_REBALANCES` ({convergence.STORM_REBALANCES}) or more is a storm" in text
    assert "rounds + 1 per window" not in text and "three or more ownership-change bursts after a window" not in text


def test_the_table_catches_a_constant_that_drifts(monkeypatch):
    """The check above can fail: a value changed in the code is a difference."""
    from harness.invariants import commits
    monkeypatch.setattr(commits, "COMMIT_GRACE_S", 2.0)
    code = code_constants()
    assert float(table()["commits.COMMIT_GRACE_S"]) != float(code["commits.COMMIT_GRACE_S"])
