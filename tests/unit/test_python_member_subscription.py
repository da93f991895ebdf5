"""The Python member's subscription control, without a broker: a correct member subscribes its client to the new
subscription and records it; with the keep-dropped-topic self-test (HARNESS_MISBEHAVE=keep-dropped-topic) it records
the new one all the same (its `control` event) while its client keeps the old one, also when it subscribes again
later (a rejoin)."""
from __future__ import annotations

import json

import pytest

from harness.record.history import read_file
from tests.unit.test_python_member_commits import member  # noqa: F401 (the fixture, shared)


class Consumer:
    """Records what it was subscribed to."""

    def __init__(self) -> None:
        self.subscribed: list[list[str]] = []
        self.calls: list[str] = []

    def subscribe(self, topics, **callbacks):
        self.subscribed.append(list(topics))
        self.calls.append("subscribe")

    def unsubscribe(self):
        self.calls.append("unsubscribe")


@pytest.fixture
def told(member, tmp_path):
    """A member on topics a and b, told through its control file to subscribe to a alone."""
    def make(by: str | None = None, **env):
        control = tmp_path / "m1.control"
        m = member(None, consumer=Consumer(), HARNESS_TOPICS="a,b", HARNESS_CONTROL=str(control), **env)
        control.write_text(json.dumps({"seq": 1, "subscription": ["a"], **({"subscribe_by": by} if by else {})}))
        m.control_pending = True
        m._control()
        return m
    return make


def controls(tmp_path) -> list[dict]:
    return [e for e in read_file(tmp_path / "m1.jsonl")[1] if e["type"] == "control"]


def test_a_correct_member_subscribes_its_client_to_the_new_subscription(told, tmp_path):
    m = told()
    assert m.consumer.subscribed == [["a"]]
    assert [c["subscription"] for c in controls(tmp_path)] == [["a"]]


def test_keep_dropped_topic_records_the_change_and_keeps_the_old_subscription(told, tmp_path):
    m = told(HARNESS_MISBEHAVE="keep-dropped-topic")
    assert m.consumer.subscribed == []  # its client was not told
    assert [c["subscription"] for c in controls(tmp_path)] == [["a"]]  # the history says it was
    assert m.subscription == ["a"]
    m._subscribe()  # a later subscribe (a rejoin, a resubscribe after a lost assignment) keeps the old one too
    assert m.consumer.subscribed == [["a", "b"]]


def test_the_default_way_is_one_subscribe_call_and_the_event_says_so(told, tmp_path):
    m = told()
    assert m.consumer.calls == ["subscribe"]
    assert [c["subscribe_by"] for c in controls(tmp_path)] == ["subscribe"]


def test_unsubscribe_subscribe_leaves_first_then_subscribes_and_the_event_says_so(told, tmp_path):
    m = told("unsubscribe-subscribe")
    assert m.consumer.calls == ["unsubscribe", "subscribe"] and m.consumer.subscribed == [["a"]]
    assert [(c["subscription"], c["subscribe_by"]) for c in controls(tmp_path)] == [(["a"], "unsubscribe-subscribe")]


def test_a_way_it_does_not_know_is_an_error_and_no_control(told, tmp_path):
    m = told("resubscribe")
    assert m.consumer.calls == [] and controls(tmp_path) == []
    errors = [e for e in read_file(tmp_path / "m1.jsonl")[1] if e["type"] == "error"]
    assert "subscribe_by 'resubscribe' is none of subscribe, unsubscribe-subscribe" in errors[0]["error"]
