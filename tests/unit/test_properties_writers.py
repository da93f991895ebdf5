"""Verify: the properties files' writers refuse a setting that could write a line of its own (the second line of
defence behind the plan's check): harness/base/properties.py and the local and docker backends' server.properties.

Setup: `properties_text` on small dicts; a LocalCluster and a DockerCluster made but never started (no process, no
engine), their `_write_config` called on one node under tmp_path.
Then: a good setting is written as `key=value` lines; a newline, a carriage return, NUL, DEL, a C1 control or a line
separator in a value or a key, or a key with `=`, `:` or a space, is refused (BadInput, one line naming the file and
the setting) and no file is written.
"""
from __future__ import annotations

import pytest

from harness.base.errors import BadInput
from harness.base.properties import control_char, properties_text, setting_problem
from harness.cluster.base import BrokerSettings
from harness.cluster.local import LocalCluster, Node


def test_good_settings_are_lines():
    assert properties_text({"a.b": 1, "c": "x y:z=w", "d": None}, what="f") == "a.b=1\nc=x y:z=w\nd=None\n"


@pytest.mark.parametrize("key, value", [("a", "1\nlisteners=x"), ("a", "1\r"), ("a", "\x00"), ("a", "\x7f"),
                                        ("a", "\x85"), ("a", "1\u2028"), ("a", "1\u2029"), ("a\nb", "1"),
                                        ("a=b", "1"), ("a:b", "1"), ("a b", "1"), ("#a", "1"), ("!a", "1")])
def test_a_setting_that_could_write_another_line_is_refused(key, value):
    assert setting_problem(key, value) is not None
    with pytest.raises(BadInput) as e:
        properties_text({"ok": "1", key: value}, what="broker 1's server.properties")
    assert "\n" not in str(e.value) and str(e.value).startswith("broker 1's server.properties: refused setting ")


def test_control_char_names_the_character():
    assert control_char("ab") is None and control_char("a\tb") == r"'\t'" and control_char("\u2028") == r"'\u2028'"


def _node(tmp_path) -> Node:
    d = tmp_path / "broker-1"
    d.mkdir()
    return Node(1, "r1", 1, 2, 3, 4, d / "data", d / "server.properties", d / "broker.log", "4.1.0")


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_the_brokers_server_properties_refuse_a_newline(tmp_path, backend):
    if backend == "docker":
        from harness.cluster.docker import DockerCluster as cls
    else:
        cls = LocalCluster
    good = cls(work_dir=tmp_path, brokers=1, settings=BrokerSettings.for_brokers(1, {"num.io.threads": "8"}))
    node = _node(tmp_path)
    good.nodes[1] = node
    good._write_config(node)
    assert "num.io.threads=8\n" in node.config.read_text()
    node.config.unlink()
    bad = cls(work_dir=tmp_path, brokers=1,
              settings=BrokerSettings.for_brokers(1, {"num.io.threads": "8\nlisteners=CLIENT://0.0.0.0:1"}))
    bad.nodes[1] = node
    with pytest.raises(BadInput, match=r"broker 1's server.properties: refused setting 'num.io.threads': its value "
                                       r"holds the control character '\\n'"):
        bad._write_config(node)
    assert not node.config.exists()
