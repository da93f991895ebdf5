"""What a kind and the nemesis are handed of a run: the `RunContext` (harness/run/context.py), never the runner.

- no module under harness/kinds or harness/nemesis takes or names a `run`, reads an attribute `.run` (but
  `subprocess.run`), or imports anything of harness/run (the runner least of all): the AST of each module;
- the checker finds each of those in planted code (a check that cannot fail would prove nothing);
- `RunContext` has exactly the fields its docstring lists; each is written once; one set later in the run reads,
  until then, as an error naming the step that sets it.
The runner filling it in as set-up goes is in tests/unit/test_runner_fake.py.
"""
from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from harness.run import context as context_module
from harness.run.context import LATER, RunContext

PKG = Path(__file__).resolve().parents[2] / "harness"


def reaches_the_run(source: str) -> list[str]:
    """Where a module's code takes, names or imports the run rather than its context (line: what)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.arg) and node.arg == "run":
            found.append(f"{line}: a parameter named run")
        elif isinstance(node, ast.Name) and node.id == "run":
            found.append(f"{line}: the name run")
        elif isinstance(node, ast.Attribute) and node.attr == "run" and \
                not (isinstance(node.value, ast.Name) and node.value.id == "subprocess"):
            found.append(f"{line}: an attribute .run")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[:2] == ["harness", "run"]:
            found.append(f"{line}: imports {node.module}")
        elif isinstance(node, ast.Import) and any(a.name.split(".")[:2] == ["harness", "run"] for a in node.names):
            found.append(f"{line}: imports {', '.join(a.name for a in node.names)}")
    return found


def _modules():
    return sorted(p for part in ("kinds", "nemesis") for p in (PKG / part).rglob("*.py"))


def test_kinds_and_the_nemesis_are_handed_the_context_not_the_run():
    assert len(_modules()) >= 12  # every kind, its helpers and every part of the nemesis are read
    bad = {str(p.relative_to(PKG.parent)): found for p in _modules() if (found := reaches_the_run(p.read_text()))}
    assert not bad, f"modules that reach the run itself: {bad}"


@pytest.mark.parametrize("planted, what", [
    ("def prepare(self, run):\n    pass\n", "a parameter named run"),
    ("def f(ctx):\n    run = ctx\n", "the name run"),
    ("def f(self):\n    return self.kind.run\n", "an attribute .run"),
    ("from harness.run.runner import Run\n", "imports harness.run.runner"),
    ("import harness.run.runner\n", "imports harness.run.runner"),
    ("from harness.run.context import RunContext\n", "imports harness.run.context"),
])
def test_the_check_finds_the_run_where_it_was_planted(planted, what):
    assert [f.split(": ", 1)[1] for f in reaches_the_run(planted)] == [what]


def test_subprocess_run_is_no_run():
    assert reaches_the_run("import subprocess\nsubprocess.run(['true'])\n") == []


def test_the_context_has_exactly_the_fields_its_docstring_lists():
    listed = re.findall(r"^- `(\w+)`:", context_module.__doc__, re.M)
    assert [f.name for f in dataclasses.fields(RunContext)] == listed
    assert set(LATER) <= set(listed) and all(f"`{n}`" in context_module.__doc__ for n in LATER)


def _ctx() -> RunContext:
    return RunContext(plan=None, run_id="r", group_id="g", topics=[], run_dir=None, say=print, event=print)


def test_each_field_is_set_once():
    ctx = _ctx()
    with pytest.raises(AttributeError, match="set once"):
        ctx.group_id = "another"
    ctx.pool = pool = object()
    assert ctx.pool is pool
    with pytest.raises(AttributeError, match="set once"):
        ctx.pool = object()
    with pytest.raises(AttributeError, match="no field 'nemesis'"):
        ctx.nemesis = object()


@pytest.mark.parametrize("name", sorted(LATER))
def test_a_field_set_later_reads_before_then_as_the_step_that_sets_it(name):
    with pytest.raises(AttributeError, match=f"RunContext.{name} is not set yet: the runner sets it {LATER[name]}"):
        getattr(_ctx(), name)
    assert not hasattr(_ctx(), name)
