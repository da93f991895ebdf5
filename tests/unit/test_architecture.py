"""The shape of the code: parts in their own rooms, data flowing one way (docs/design.md).

- no import cycle anywhere in harness/ (imports inside functions count too: a lazy import that closes
  a cycle still ties two parts together);
- the invariants reach nothing that does I/O: every harness module they import, directly or not, is
  the history reader, the vocabulary or the versions, or another invariant module;
- modules stay small: none over 400 lines, the runner under 250.
"""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "harness"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Harness modules this file imports (resolved to modules, not names inside them)."""
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t.startswith("harness") and t != name:
                out.add(t)
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {n: _imports(p, n, known) for n, p in mods.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as a path of module names, or None. A package importing its own submodules
    (its __init__ re-exporting them) is not a cycle unless a submodule imports the package back."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if n.startswith(m + "."):
                continue  # a submodule naming its own package: Python loads the package first, no cycle
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (found := visit(m)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_the_graph_is_read():
    g = _graph()
    assert "harness.run.runner" in g and "harness.plan.config" in g["harness.run.runner"]
    assert "harness.invariants" in g["harness.run.runner"]


def test_no_import_cycle_in_harness():
    assert _cycle(_graph()) is None, " -> ".join(_cycle(_graph()))


def test_cycle_finder_finds_a_planted_cycle():
    g = {"harness.a": {"harness.b"}, "harness.b": {"harness.c"}, "harness.c": {"harness.a"}}
    assert _cycle(g) == ["harness.a", "harness.b", "harness.c", "harness.a"]


def test_invariants_reach_no_io():
    g = _graph()
    seen, todo = set(), [n for n in g if n.startswith("harness.invariants")]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(g[n])
    allowed = {"harness", "harness.record.history", "harness.record.format", "harness.record.columns",
               "harness.base", "harness.base.vocabulary", "harness.base.versions"}  # the pure words and numbers
    bad = sorted(n for n in seen if n not in allowed and not n.startswith("harness.invariants"))
    assert not bad, f"harness/invariants reaches modules that may do I/O: {bad}"


def test_modules_stay_small():
    sizes = {n: len(p.read_text().splitlines()) for n, p in _modules().items()}
    assert sizes["harness.run.runner"] < 250, sizes["harness.run.runner"]
    big = {n: s for n, s in sizes.items() if s > 400}
    assert not big, f"modules over 400 lines: {big}"
