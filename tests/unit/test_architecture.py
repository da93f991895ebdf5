"""The shape of the code: parts in their own rooms, data flowing one way (docs/design.md).

- no import cycle anywhere in harness/ (imports inside functions count too: a lazy import that closes
  a cycle still ties two parts together);
- the invariants reach nothing that does I/O: every harness module they import, directly or not, is
  the history reader, the vocabulary or the versions, or another invariant module;
- functions stay short: none in harness/ over 80 lines, the runner module under 250 lines, and no module
  over 800 lines (a backstop against one file doing many jobs; a package may hold many modules).
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


def _compiled() -> set[str]:
    """The compiled modules: a C source each, built at install as the module of its name; they import no harness
    module."""
    return {_module_name(p) for p in PKG.rglob("*.c")}


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods) | _compiled()
    return {n: _imports(p, n, known) for n, p in mods.items()} | {n: set() for n in _compiled()}


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
               "harness.record._bulkscan", "harness.base", "harness.base.vocabulary",
               "harness.base.versions", "harness.base.steps"}  # the pure words and numbers, the table of steps
    bad = sorted(n for n in seen if n not in allowed and not n.startswith("harness.invariants"))
    assert not bad, f"harness/invariants reaches modules that may do I/O: {bad}"


#: the longest a function or method may be, from its `def` to its last line (decorators not counted)
MAX_FUNCTION_LINES = 80
#: a backstop against one module doing many jobs; the function cap is the rule that keeps code readable
MAX_MODULE_LINES = 800


def _long_functions(source: str, filename: str, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """`file:line name (N lines)` of every function or method of the source longer than `limit` lines, counted
    from its `def` to its last line (decorators not counted); a nested function counts toward its parent and is
    measured on its own too."""
    out = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = node.end_lineno - node.lineno + 1  # lineno is the `def` line, after any decorator
            if n > limit:
                out.append(f"{filename}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_functions_stay_short():
    """No function or method in harness/ is longer than MAX_FUNCTION_LINES: the end the old 400-line module cap
    served (code a reader can hold in mind), met where reading happens, so a part can grow as a package of many
    modules instead of a family of prefixed file names. A nested function counts toward its parent: it is read
    as part of it (it shares its names), and moving a long body into closures would meet the cap without making
    anything shorter to read."""
    long = [f for p in sorted(PKG.rglob("*.py"))
            for f in _long_functions(p.read_text(), str(p.relative_to(PKG.parent)))]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them into helpers that each do one job): " \
                     + "; ".join(long)


def _planted(name: str, body_lines: int, indent: str = "") -> str:
    """A function of `body_lines` lines below its `def` (so 1 + body_lines lines long)."""
    return f"{indent}def {name}():\n" + "".join(f"{indent}    x = {i}\n" for i in range(body_lines))


def test_the_function_cap_flags_a_long_function():
    src = ("import functools\n\n"
           "@functools.cache\n@functools.wraps(print)\n" + _planted("long_one", 80) + "\n"  # 81 lines: flagged
           "@functools.cache\n" + _planted("just_fits", 79) + "\n"  # 80 lines, decorators aside: allowed
           "class C:\n    def method(self):\n" + _planted("inner", 80, "        ") + "        return inner\n")
    assert _long_functions(src, "planted.py") == ["planted.py:5 long_one (81 lines)",
                                                  "planted.py:170 method (83 lines)",
                                                  "planted.py:171 inner (81 lines)"]


def test_modules_stay_small():
    sizes = {n: len(p.read_text().splitlines()) for n, p in _modules().items()}
    assert sizes["harness.run.runner"] < 250, sizes["harness.run.runner"]
    big = {n: s for n, s in sizes.items() if s > MAX_MODULE_LINES}
    assert not big, f"modules over {MAX_MODULE_LINES} lines: {big}"


# -- the packages and what each may import (their docstrings say the same; docs/design.md draws it)

#: package -> the harness packages it may import (besides itself and the root package's version); `suite` and
#: `cli` are the faces: nothing imports them but `__main__`, which runs the CLI
MAY_IMPORT = {
    "base": set(),
    "record": {"base"},
    "invariants": {"base", "record"},
    "kafka": {"base", "record"},
    "kproxy": {"base", "kafka"},
    "plan": {"base", "record", "kafka", "kproxy", "invariants"},
    "members": {"base", "record", "kafka"},
    "cluster": {"base", "record", "kafka", "kproxy", "plan", "members"},
    "kinds": {"base", "record", "kafka", "plan", "invariants", "members", "cluster"},
    "nemesis": {"base", "record", "kafka", "kproxy", "plan", "cluster", "members", "kinds"},
    "run": {"base", "record", "kafka", "kproxy", "plan", "cluster", "members", "kinds", "nemesis", "invariants"},
    "findings": {"base", "record", "invariants", "plan"},
    "report": {"base", "record", "invariants", "findings"},
    "analytics": {"base", "record", "invariants"},
    "drive": {"base", "record", "invariants", "kafka", "kproxy", "plan", "cluster", "members", "kinds", "nemesis",
              "run", "findings", "report", "analytics"},
    "suite": {"base", "record", "invariants", "kafka", "kproxy", "plan", "cluster", "members", "kinds", "nemesis",
              "run", "findings", "report", "analytics", "drive"},
    "cli": {"base", "record", "invariants", "kafka", "kproxy", "plan", "cluster", "members", "kinds", "nemesis",
            "run", "findings", "report", "analytics", "drive"},
    "__main__": {"cli"},
}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _forbidden(graph: dict[str, set[str]]) -> list[str]:
    """Every import from one package to another that MAY_IMPORT does not allow, as 'a -> b'."""
    bad = []
    for n, deps in graph.items():
        a = _package(n)
        for m in deps:
            b = _package(m)
            if b and b != a and b not in MAY_IMPORT.get(a, set()):
                bad.append(f"{n} -> {m} ({a} may import {sorted(MAY_IMPORT.get(a, set())) or 'nothing of harness'})")
    return sorted(bad)


def test_every_package_is_in_the_rules_and_has_a_docstring_saying_what_it_owns_and_may_import():
    packages = {p.parent.name for p in PKG.glob("*/__init__.py")} | {"cli", "__main__"}
    assert packages == set(MAY_IMPORT), f"packages without a rule, or rules without a package: " \
                                        f"{sorted(packages ^ set(MAY_IMPORT))}"
    for p in PKG.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(p.read_text())) or ""
        assert doc, f"{p.relative_to(PKG.parent)} has no docstring"
        assert "May import" in doc or "may import" in doc, f"{p.relative_to(PKG.parent)}'s docstring says not what it may import"


def test_packages_import_only_what_their_rules_allow():
    assert not _forbidden(_graph()), "imports the package rules forbid:\n" + "\n".join(_forbidden(_graph()))


def test_the_rules_catch_a_forbidden_import():
    g = _graph()
    g["harness.plan.config"] = g["harness.plan.config"] | {"harness.run.runner"}
    g["harness.invariants.core"] = g["harness.invariants.core"] | {"harness.cluster.local"}
    g["harness.run.runner"] = g["harness.run.runner"] | {"harness.suite.plugin"}
    assert _forbidden(g) == sorted([
        "harness.invariants.core -> harness.cluster.local (invariants may import ['base', 'record'])",
        "harness.plan.config -> harness.run.runner (plan may import ['base', 'invariants', 'kafka', 'kproxy', "
        "'record'])",
        f"harness.run.runner -> harness.suite.plugin (run may import {sorted(MAY_IMPORT['run'])})"])


#: planning every built-in scenario under every protocol it runs with, in a fresh interpreter that refuses to start
#: a process, then the harness modules it holds
PLAN_EVERY_BUILTIN = """
import os, subprocess, sys
def refuse(*a, **k):
    raise AssertionError("planning started a process")
subprocess.Popen.__init__ = refuse
os.fork = os.posix_spawn = os.posix_spawnp = os.system = refuse
from harness.plan import scenarios
from harness.plan.config import RunConfig, plan, precheck
planned = 0
for name in scenarios.SCENARIOS:
    for protocol in scenarios.get(name).protocols:
        cfg = RunConfig.for_scenario(name, seed=1, protocol=protocol)
        precheck(cfg)
        plan(cfg, version=cfg.scenario_spec.initial_kafka or "4.4.0")
        planned += 1
print(planned)
print("\\n".join(sorted(m for m in sys.modules if m.startswith("harness."))))
"""


def test_planning_every_builtin_loads_no_running_part_and_starts_no_process():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", PLAN_EVERY_BUILTIN], capture_output=True, text=True,
                         cwd=PKG.parent, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    planned, *mods = out.stdout.split()
    assert int(planned) >= 75
    running = [m for m in mods if _package(m) in ("run", "cluster", "members", "nemesis", "kinds")]
    assert not running, f"planning loaded modules that start processes: {running}"
