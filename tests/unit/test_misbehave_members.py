"""Which member carries out a consumer-group self-test, checked before anything starts: `--misbehave` asked of a
built-in member that does not carry it out is one BadInput line (it would run as a correct member, and a self-test
that cannot fail proves nothing); the assignor's self-test (`shuffle-assignor`) is the Java member's, under a
classic protocol, with no assignor of the run's own, and reaches every slot (the group leader's assignor decides);
the others reach slot 0 alone."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.base.errors import BadInput
from harness.base.vocabulary import ASSIGNOR_MISBEHAVIOURS, JAVA_MISBEHAVIOURS, misbehaviours, misbehaving_member
from harness.plan.config import RunConfig, scenario_of


def cfg(**given) -> RunConfig:
    return RunConfig.for_scenario("scale-out-in", seed=1, **given)


def test_each_consumer_self_test_has_one_member_that_carries_it_out():
    assert set(JAVA_MISBEHAVIOURS) | set(ASSIGNOR_MISBEHAVIOURS) <= set(misbehaviours("consumer"))
    assert misbehaving_member("shuffle-assignor") == "java"
    assert {misbehaving_member(m) for m in misbehaviours("consumer") if m not in JAVA_MISBEHAVIOURS} == {"python"}


@pytest.mark.parametrize("given, says", [
    (dict(misbehave="keep-dropped-topic", member="java"), "keep-dropped-topic is the python member's self-test: "
                                                          "use --member python"),
    (dict(misbehave="claim-extra", member="java"), "use --member python"),
    (dict(misbehave="shuffle-assignor"), "shuffle-assignor is the java member's, carried out by every member"),
    (dict(misbehave="shuffle-assignor", member="java", slot_commands=((1, ("my-app",)),)), "no member command"),
    (dict(misbehave="shuffle-assignor", member="java", protocol="consumer"),
     "under the consumer protocol the brokers assign"),
    (dict(misbehave="shuffle-assignor", member="java",
          client_settings=(("partition.assignment.strategy", "org.apache.kafka.clients.consumer.RangeAssignor"),)),
     "sets the members' partition.assignment.strategy itself"),
])
def test_a_self_test_the_member_cannot_carry_out_is_refused(given, says):
    with pytest.raises(BadInput, match=says):
        cfg(**given).validate()


@pytest.mark.parametrize("given", [
    dict(misbehave="keep-dropped-topic"), dict(misbehave="claim-extra"),
    dict(misbehave="shuffle-assignor", member="java"),
    dict(misbehave="shuffle-assignor", member="java", protocol="classic-eager"),
    dict(misbehave="claim-extra", member="java", slot_commands=((0, ("my-app",)),)),  # the team's program may
])
def test_a_self_test_its_member_carries_out_is_taken(given):
    assert cfg(**given).validate().kind == "consumer"


@pytest.mark.parametrize("bad, member, slots", [("shuffle-assignor", "java", [0, 1, 2, 3]),
                                                ("keep-dropped-topic", "python", [0])])
def test_the_assignors_self_test_reaches_every_slot_the_others_slot_0(monkeypatch, bad, member, slots):
    from harness.kinds.consumer import ConsumerGroup
    from harness.members import java_member
    from runctx import context
    monkeypatch.setattr(java_member, "java_member_command",
                        lambda *, kafka_version, client_version=None, progress: ("java", "Member"))
    c = cfg(misbehave=bad, member=member)
    kind = ConsumerGroup(context(SimpleNamespace(cfg=c, scenario=scenario_of("scale-out-in"), racks=("r0",),
                                                 kafka_version="4.4.0", schedule=())))
    kind.prepare()
    assert [s for s in range(4) if kind.member_spec(s).misbehave == bad] == slots
