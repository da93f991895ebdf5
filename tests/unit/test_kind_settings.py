"""The one settings merge of the Streams and Connect kinds (harness/plan/kinds/settings.py): defaults, then the
scenario's, then the run's own; an unknown key is refused with the close known one; whole numbers read once."""
from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.base.errors import BadInput
from harness.plan.kinds import connect as connect_settings
from harness.plan.kinds import streams as streams_settings
from harness.plan.kinds.settings import merge, whole

DEFAULTS = {"commit.interval.ms": 1, "harness.name": "x"}


def test_the_runs_own_settings_win_over_the_scenarios_which_win_over_the_defaults():
    assert merge("K", DEFAULTS, {"commit.interval.ms": 2}, ()) == {"commit.interval.ms": 2, "harness.name": "x"}
    assert (merge("K", DEFAULTS, {"commit.interval.ms": 2}, [("commit.interval.ms", 3), ("harness.name", "y")])
            == {"commit.interval.ms": 3, "harness.name": "y"})
    assert DEFAULTS == {"commit.interval.ms": 1, "harness.name": "x"}  # the defaults are not changed


def test_an_unknown_key_is_refused_with_the_close_one_or_the_known_ones():
    with pytest.raises(BadInput, match=r"unknown K setting 'commit\.interval'; did you mean commit\.interval\.ms\?"):
        merge("K", DEFAULTS, {}, [("commit.interval", 1)])
    with pytest.raises(BadInput, match=r"unknown K setting 'zzzzzz'; known: commit\.interval\.ms, harness\.name"):
        merge("K", DEFAULTS, {}, [("zzzzzz", 1)])


@pytest.mark.parametrize("value, lo, want", [(3, 0, 3), ("7", 1, 7), (5.0, 5, 5)])
def test_a_whole_number_is_read(value, lo, want):
    assert whole("K", {"n": value}, "n", lo) == want


@pytest.mark.parametrize("value, lo, said", [("x", 0, "is not a whole number"), (None, 0, "is not a whole number"),
                                             (2.5, 0, "must be a whole number of at least 0"),
                                             (-1, 0, "must be a whole number of at least 0")])
def test_anything_else_is_refused_naming_the_kind_and_key(value, lo, said):
    with pytest.raises(BadInput, match=f"K setting n={value!r}".replace("(", r"\(").replace(".", r"\.") + ".*" + said):
        whole("K", {"n": value}, "n", lo)


def _cfg(**kw):
    return SimpleNamespace(streams_settings=(), connect_settings=(), misbehave=None, protocol="classic", **kw)


def test_both_kinds_merge_and_refuse_through_the_helper():
    sc = SimpleNamespace(name="s", members=3, max_members=None, static=False,
                         streams={"max.warmup.replicas": 3}, connect={"harness.sink.tasks": 0})
    s = streams_settings.streams_settings(_cfg(), sc)
    assert s["max.warmup.replicas"] == 3 and s["num.standby.replicas"] == 0
    c = connect_settings.connect_settings(_cfg(), sc)
    assert c["harness.sink.tasks"] == 0 and c["harness.source.tasks"] == 4
    with pytest.raises(BadInput, match="unknown Streams setting 'max.warmup.replica'; did you mean max.warmup.replicas"):
        streams_settings.streams_settings(SimpleNamespace(**{**vars(_cfg()), "streams_settings": (("max.warmup.replica", 1),)}), sc)
    with pytest.raises(BadInput, match="Connect setting harness.batch.size='many' is not a whole number"):
        connect_settings.connect_settings(SimpleNamespace(**{**vars(_cfg()), "connect_settings": (("harness.batch.size", "many"),)}), sc)


def test_neither_kind_keeps_a_merge_or_number_reader_of_its_own():
    for mod in (streams_settings, connect_settings):
        tree = ast.parse(Path(mod.__file__).read_text())
        own = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        assert "_int" not in own, mod.__name__
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert "closest" not in names and {"merge", "whole"} <= names, mod.__name__
