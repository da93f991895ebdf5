"""One owner of the run directory's layout: harness/record/rundir.py alone spells the names of the files and
directories inside a run directory (docs/run-directory.md); every other module in harness/ takes them from it.

The test reads every module's string literals (docstrings and comments aside: they may name a file to a
reader) and fails on a run directory file name, the history files' suffix (owned by history_format.py, which
rundir.py builds its history names from), a per-member file name pattern, or a directory name of the layout
used as a path component (`x / "history"`, `os.path.join(x, "logs")`, `x / f"broker-{n}"`).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from harness.record import format as history_format
from harness.record import rundir

PKG = Path(__file__).resolve().parents[2] / "harness"
OWNERS = {PKG / "record" / "rundir.py", PKG / "record" / "format.py"}

FILE_NAMES = (rundir.RUN_JSON, rundir.SCHEDULE_JSON, rundir.VERDICTS_JSON, rundir.TIMELINE, rundir.SHRUNK_SCHEDULE_JSON,
              rundir.HARNESS_HISTORY, rundir.PRODUCER_HISTORY, rundir.BROKERS_HISTORY, rundir.OUTPUT_HISTORY,
              rundir.HARNESS_ERROR, rundir.BROKER_LOG, rundir.TOXIPROXY_LOG)
DIR_NAMES = (rundir.HISTORY, rundir.LOGS, rundir.CLUSTER, rundir.STREAMS_STATE, rundir.CONNECT_CONFIG)
#: per-member and per-broker names, as the f-string's text with each {...} as {}
PATTERNS = re.compile(r"(?:^|/)(?:member-\{\}\.(?:jsonl|log)|control-\{\}\.json)")
NAME_RE = re.compile("|".join(rf"(?<![\w.-]){re.escape(n)}(?![\w.-])" for n in FILE_NAMES)
                     + rf"|{re.escape(history_format.SUFFIX)}\b")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are statements of their own (docstrings)."""
    return {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}


def _skeleton(node: ast.JoinedStr) -> str:
    return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)


def _path_part(node: ast.AST) -> str | None:
    """The text of a literal used as a path component, else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return _skeleton(node)
    return None


def spellings(source: str, filename: str = "<string>") -> list[str]:
    """Where `source` spells a name of the run directory's layout: "line: text"."""
    tree = ast.parse(source, filename)
    skip = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            if node.value == rundir.STATUS or NAME_RE.search(node.value):
                out.append(f"{node.lineno}: {node.value!r}")
        elif isinstance(node, ast.JoinedStr) and PATTERNS.search(_skeleton(node)):
            out.append(f"{node.lineno}: f{_skeleton(node)!r}")
        parts = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and "__file__" not in ast.unparse(node.left):
            parts = [node.right]  # (a path under the module's own file is package data, not a run directory)
        elif isinstance(node, ast.Call) and (ast.unparse(node.func) in ("os.path.join", "Path")):
            parts = node.args[1:] if ast.unparse(node.func) == "os.path.join" else node.args
        for p in parts:
            text = _path_part(p)
            if text is not None and (text in DIR_NAMES or PATTERNS.search(text) or text.startswith("broker-{}")):
                out.append(f"{p.lineno}: path part {text!r}")
    return out


def test_no_module_but_rundir_spells_a_name_of_the_run_directory():
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        if path in OWNERS:
            continue
        if hits := spellings(path.read_text(), str(path)):
            found[str(path.relative_to(PKG.parent))] = hits
    assert not found, f"take these names from harness/record/rundir.py: {found}"


def test_rundir_defines_every_name_the_check_looks_for():
    text = (PKG / "record" / "rundir.py").read_text()
    for name in (*FILE_NAMES, *DIR_NAMES, rundir.STATUS):
        assert name in text or name.endswith(history_format.SUFFIX), name
    assert spellings(text)  # the owner does spell them: the check sees what it is meant to


def test_the_check_catches_each_way_of_spelling_a_name():
    planted = '''
import os
def f(d, run_dir, mid, nid):
    """run.json in a docstring is fine"""
    # so is run.json in a comment
    a = d / "run.json"
    b = os.path.join(run_dir, "history")
    c = d / f"member-{mid}.jsonl"
    e = d.with_name(f"control-{mid}.json")
    g = run_dir / "logs" / "x"
    h = d / f"broker-{nid}" / "data"
    i = "STATUS"
    j = sorted(d.glob("*.jsonl"))
    k = f"see {d}/verdicts.json"
    ok = ("history of the group", "cluster", f"broker-{nid}", "status", "shrunk", Path(__file__).parent / "connect")
'''
    lines = sorted({int(h.split(":")[0]) for h in spellings(planted)})
    assert lines == [6, 7, 8, 9, 10, 11, 12, 13, 14], spellings(planted)
