"""The Python member's claim-extra self-test (HARNESS_MISBEHAVE=claim-extra), without a broker: it claims a partition
it does not hold only from its main loop, once its assignment has been quiet for CLAIM_QUIET_S after its second one
(CLAIM_FIRST_QUIET_S after its first when no second comes),
so the claim lands in a settled group, held by another member; a rebalance callback never claims, and a metadata
call that fails is tried again later instead of ending the member."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from confluent_kafka import KafkaError, KafkaException

from harness.record.history import read_file
from harness.members import python_member as pm
from tests.unit.test_python_member_commits import member  # noqa: F401 (the fixture, shared)


@dataclass
class TP:
    topic: str
    partition: int


class Metadata:
    def __init__(self, n: int) -> None:
        self.topics = {"t": type("T", (), {"partitions": {p: None for p in range(n)}})()}


class Consumer:
    """Answers list_topics with six partitions (or fails once when told); nothing else is called."""

    def __init__(self, fail_once: bool = False) -> None:
        self.fail_once, self.asked = fail_once, 0

    def list_topics(self, topic, timeout):
        self.asked += 1
        if self.fail_once:
            self.fail_once = False
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
        return Metadata(6)


@pytest.fixture
def claimer(member, monkeypatch):
    """A consumer-protocol member with claim-extra whose side reader only notes what it would read."""
    monkeypatch.setattr(pm.Member, "_read_aside", lambda self, parts: self.side_parts.update(parts))
    return lambda **kw: member(None, consumer=Consumer(**kw), HARNESS_PROTOCOL="consumer",
                               HARNESS_MISBEHAVE="claim-extra")


def claims(tmp_path) -> list[list]:
    return [e["partitions"] for e in read_file(tmp_path / "m1.jsonl")[1] if e["type"] == "assigned"]


def test_the_claim_waits_for_a_quiet_assignment_after_the_second_one(claimer, tmp_path, monkeypatch):
    now = [100.0]
    monkeypatch.setattr(pm.time, "monotonic", lambda: now[0])
    m = claimer()
    m.on_assign(None, [TP("t", 0), TP("t", 1), TP("t", 2)])
    now[0] += pm.CLAIM_FIRST_QUIET_S - 0.1
    m._claim_extra()  # one assignment, quiet for less than CLAIM_FIRST_QUIET_S: the group's first may still be settling
    m.on_revoke(None, [TP("t", 2)])
    m.on_assign(None, [])  # the second, in a hand-over: partition 2 has no owner yet
    now[0] += pm.CLAIM_QUIET_S / 2
    m._claim_extra()
    assert not m.claimed and m.consumer.asked == 0
    now[0] += pm.CLAIM_QUIET_S / 2
    m._claim_extra()
    assert m.claimed and m.side_parts == {("t", 2)}
    assert claims(tmp_path)[-1] == [["t", 2]]  # the first partition it does not hold, recorded as assigned
    m._claim_extra()
    assert m.consumer.asked == 1  # one claim, until its next rebalance ends it


def test_a_rebalance_callback_never_claims_and_a_failed_metadata_call_is_tried_again(claimer, tmp_path,
                                                                                     monkeypatch):
    now = [100.0]
    monkeypatch.setattr(pm.time, "monotonic", lambda: now[0])
    m = claimer(fail_once=True)
    m.on_assign(None, [TP("t", 0)])
    now[0] += 10.0
    m.on_assign(None, [TP("t", 1)])
    assert m.consumer.asked == 0 and not m.claimed
    now[0] += pm.CLAIM_QUIET_S
    m._claim_extra()
    assert not m.claimed
    errors = [e for e in read_file(tmp_path / "m1.jsonl")[1] if e["type"] == "error"]
    assert errors and not errors[0]["fatal"] and "claim-extra: list_topics" in errors[0]["error"]
    m._claim_extra()
    assert m.claimed and m.side_parts == {("t", 2)}


def test_a_first_assignment_quiet_long_enough_is_claimed_on(claimer, tmp_path, monkeypatch):
    """A consumer-protocol member often gets all it will get in one assignment: it claims once that one has been
    quiet for CLAIM_FIRST_QUIET_S."""
    now = [100.0]
    monkeypatch.setattr(pm.time, "monotonic", lambda: now[0])
    m = claimer()
    m.on_assign(None, [TP("t", 0), TP("t", 1)])
    now[0] += pm.CLAIM_FIRST_QUIET_S - 0.1
    m._claim_extra()
    assert not m.claimed
    now[0] += 0.1
    m._claim_extra()
    assert m.claimed and claims(tmp_path)[-1] == [["t", 2]]


class Side:
    """The claim's own reader: only unassigned here."""

    def unassign(self) -> None:
        pass


def revokes(tmp_path) -> list[tuple[float, list]]:
    return [(e["mono"], e["partitions"]) for e in read_file(tmp_path / "m1.jsonl")[1] if e["type"] == "revoked"]


def test_a_claim_lasts_at_least_its_hold_through_a_rebalance_that_comes_sooner(claimer, tmp_path, monkeypatch):
    """A late join's rebalance 55 ms after the claim ended it between two of the coordinator watch's samples: the
    claim now lasts CLAIM_HOLD_S, then ends from the main loop; a rebalance after the hold ends it at once."""
    now = [100.0]
    monkeypatch.setattr(pm.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(pm.Member, "_final_commit", lambda self, *a, **kw: None)
    m = claimer()
    m.side = Side()
    m.on_assign(None, [TP("t", 0), TP("t", 1)])
    now[0] += pm.CLAIM_FIRST_QUIET_S
    m._claim_extra()
    assert m.side_parts == {("t", 2)}
    now[0] += 0.055
    m.on_revoke(None, [TP("t", 1)])  # the late join's rebalance
    assert m.side_parts == {("t", 2)} and not [r for r in revokes(tmp_path) if r[1] == [["t", 2]]]
    now[0] += pm.CLAIM_HOLD_S / 2
    m._end_claim()  # the loop, still within the hold
    assert m.side_parts == {("t", 2)}
    now[0] += pm.CLAIM_HOLD_S / 2
    m._claim_extra()
    m._end_claim()  # as the loop does while an end is pending
    assert m.side_parts == set() and revokes(tmp_path)[-1][1] == [["t", 2]]
    assert revokes(tmp_path)[-1][0] - 100.0 >= pm.CLAIM_FIRST_QUIET_S + pm.CLAIM_HOLD_S


def test_a_stopping_member_ends_its_claim_at_once(claimer, tmp_path, monkeypatch):
    now = [100.0]
    monkeypatch.setattr(pm.time, "monotonic", lambda: now[0])
    m = claimer()
    m.side = Side()
    m.on_assign(None, [TP("t", 0)])
    now[0] += pm.CLAIM_FIRST_QUIET_S
    m._claim_extra()
    m._end_claim(force=True)
    assert m.side_parts == set() and revokes(tmp_path)[-1] == (now[0], [["t", 1]])
