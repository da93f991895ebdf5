"""The one settings merge of every kind (harness/plan/kinds/settings.py): defaults, then the scenario's, then the
run's own; an unknown Streams or Connect key is refused with the close known one; whole numbers read once; a
consumer group's client settings are merged once for the check of the client, run.json and the members."""
from __future__ import annotations

import ast
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.base.errors import BadInput
from harness.plan.kinds import connect as connect_settings
from harness.plan.kinds import streams as streams_settings
from harness.plan.kinds.settings import client_settings, merge, whole

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


TIMINGS = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "max.poll.interval.ms": 20000}


def test_a_consumer_groups_client_settings_take_the_protocols_timings_then_the_given_ones():
    assert client_settings("classic-eager", TIMINGS, {"fetch.min.bytes": "1"}) == {**TIMINGS, "fetch.min.bytes": "1"}
    assert client_settings("consumer", TIMINGS, {}) == {"max.poll.interval.ms": 20000}  # the group's timings
    assert client_settings("classic-cooperative", TIMINGS, {"session.timeout.ms": "45000"})["max.poll.interval.ms"] \
        == 45000  # raised to a longer session timeout: clients refuse a shorter poll interval
    assert client_settings("classic-eager", TIMINGS, {"session.timeout.ms": "45000", "max.poll.interval.ms": "9000"}) \
        == {"session.timeout.ms": "45000", "heartbeat.interval.ms": 500, "max.poll.interval.ms": "9000"}
    assert client_settings("streams", {}, {"harness.misreport": {"a": 1}}) == {"harness.misreport": {"a": 1}}


def test_under_the_consumer_protocol_a_client_before_2_10_gets_a_poll_interval_its_session_check_takes():
    """librdkafka before 2.10.0 compares max.poll.interval.ms with session.timeout.ms under every protocol (its default
    45000 when none is given): the harness's own 20000 is raised for it, not for the classic protocols, a newer
    client, or a poll interval the run gives."""
    assert client_settings("consumer", TIMINGS, {}, "2.4.0") == {"max.poll.interval.ms": 45000}
    assert client_settings("consumer", TIMINGS, {}, "2.9.0") == {"max.poll.interval.ms": 45000}
    assert client_settings("consumer", TIMINGS, {"session.timeout.ms": "10000"}, "2.4.0")["max.poll.interval.ms"] == 20000
    assert client_settings("consumer", TIMINGS, {}, "2.10.0") == {"max.poll.interval.ms": 20000}
    assert client_settings("consumer", TIMINGS, {}, None) == {"max.poll.interval.ms": 20000}
    assert client_settings("classic-eager", TIMINGS, {}, "2.4.0")["max.poll.interval.ms"] == 20000
    assert client_settings("consumer", TIMINGS, {"max.poll.interval.ms": "9000"}, "2.4.0") == {"max.poll.interval.ms": "9000"}


def test_a_share_groups_configs_merge_any_key_the_brokers_know():
    from harness.plan.kinds.share import share_group_configs
    cfg = SimpleNamespace(session_timeout_s=6.0, heartbeat_interval_s=0.5,
                          group_settings=(("share.delivery.count.limit", "3"), ("share.isolation.level", "read_committed")))
    out = share_group_configs(cfg)
    assert out["share.delivery.count.limit"] == "3" and out["share.isolation.level"] == "read_committed"
    assert out["share.session.timeout.ms"] == "6000" and out["share.auto.offset.reset"] == "earliest"


def test_the_consumer_group_checks_records_and_starts_with_the_one_merge(monkeypatch):
    """What the Python member's client is checked with, what run.json records and what each member is started with
    are one merge of the same settings (under the consumer protocol, without the classic-only timings)."""
    from harness.kinds import consumer
    from harness.members import clients
    from harness.members.pool import MemberPool
    from harness.plan.config import RunConfig
    checked = []
    monkeypatch.setattr(clients, "client_path", lambda version, progress=None: ("2.12.0", None))
    monkeypatch.setattr(clients, "version_at", lambda path: "2.12.0")
    modes = []
    monkeypatch.setattr(clients, "check_settings", lambda path, version, protocol, conf, commit_mode:
                        (checked.append(conf), modes.append(commit_mode)))
    cfg = RunConfig.for_scenario("member-kill", seed=1, protocol="consumer", client_settings=(("fetch.min.bytes", "7"),),
                                 commit_mode="auto")
    plan = SimpleNamespace(cfg=cfg, scenario=cfg.scenario_spec, schedule=(), kafka_version="4.3.1", racks=("r0",))
    from runctx import context
    consumer.check_client_settings(plan, progress=None)  # before the run began (harness/run/resolve.py)
    kind = consumer.ConsumerGroup(context(plan, topics=[SimpleNamespace(real="t-r", partitions=6)]))
    recorded = kind.prepare()["client_settings"]
    assert checked == [recorded] and "session.timeout.ms" not in recorded and recorded["fetch.min.bytes"] == "7"
    assert modes == ["auto"]  # checked in the commit mode it runs with (the member's own settings depend on it)
    pool = MemberPool(merge_settings=client_settings, bootstrap="b", group_id="g", topic="t", history_dir=Path("/nonexistent"), log_dir=Path("/x"),
                      on_event=lambda *a, **k: None, client_config=kind.pool_config())
    assert json.loads(pool._env(kind.member_spec(0), "m1")["HARNESS_CLIENT_CONFIG"]) == recorded
