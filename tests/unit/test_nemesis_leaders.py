"""The actions on partition leaders (harness/nemesis/leaders.py) on the fake backend, the turn of a replica list
(harness/cluster/leadership.py), the topics' replication and the share kind's refusal of a roll onto brokers
without share groups."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.cluster.fake import FakeCluster
from harness.cluster.leadership import turned
from harness.base.errors import BadInput, Indeterminate
from harness.plan.kinds.checks import ShareChecks
from harness.nemesis.core import Nemesis
from harness.plan.config import RunConfig
from harness.plan.scenarios import Action, SCENARIOS
from runctx import context
from test_nemesis import StubPool, StubWaits, types


class TopicKind:
    def input_topics(self):
        return [("t-1", 6)]


@pytest.fixture
def world(tmp_path):
    events: list = []
    cluster = FakeCluster(work_dir=tmp_path / "cluster", on_event=lambda t, **f: events.append((t, f)))
    cluster.start()
    cluster.create_topic("t-1", partitions=6)
    events.clear()
    nem = Nemesis(context(event=lambda t, **f: events.append((t, f)), cluster=cluster, pool=StubPool(),
                          waits=StubWaits()), kind=TopicKind())
    yield SimpleNamespace(nem=nem, cluster=cluster, events=events)
    cluster.stop()


def test_move_leaders_moves_every_partition_the_broker_leads_and_no_broker_stops(world):
    info = world.nem.perform(Action("move_leaders", {"broker": 2}))
    assert info == {"broker": 2, "topic": "t-1", "moved": {"1": [2, 3], "4": [2, 3]}}
    assert {p: d["leader"] for p, d in world.cluster.partition_leaders("t-1").items()} == {
        0: 1, 1: 3, 2: 3, 3: 1, 4: 3, 5: 3}
    assert types(world.events) == ["fault_start", "fault_end"] and world.cluster.up == {1, 2, 3}
    assert world.events[0][1]["kind"] == "leader_move" and world.events[0][1]["brokers_affected"] == [2]


def test_move_leaders_says_when_there_was_nothing_to_move(world):
    world.cluster.create_topic("t-1", partitions=1)  # partition 0 only, led by broker 1
    assert world.nem.perform(Action("move_leaders", {"broker": 2}))["skipped"].startswith("broker 2 leads no partition")


def test_restart_partition_leader_says_the_leader_before_while_down_and_after(world):
    info = world.nem.perform(Action("restart_partition_leader", {"partition": 2, "down_s": 0.5}))
    assert info == {"broker": 3, "topic": "t-1", "partition": 2, "leader_before": 3, "leader_while_down": -1,
                    "leader_after": 3, "offline": [2, 5]}
    assert types(world.events) == ["fault_start", "broker_event:terminate", "broker_event:start",
                                   "broker_event:ready", "fault_end"]


def test_restart_partition_leader_with_same_leader_is_indeterminate_when_the_leadership_changed(world):
    world.cluster.moved[("t-1", 2)] = 3
    real = world.cluster.start_broker

    def start_elsewhere(broker_id, **kw):  # the partition comes back led by another broker
        real(broker_id, **kw)
        world.cluster.moved[("t-1", 2)] = 1
    world.cluster.start_broker = start_elsewhere
    with pytest.raises(Indeterminate, match="led by broker 3 before its restart and by 1 after"):
        world.nem.perform(Action("restart_partition_leader", {"partition": 2, "down_s": 0.5, "same_leader": True}))
    assert world.cluster.up == {1, 2, 3} and types(world.events)[-1] == "fault_end"


def test_a_replica_list_is_turned_to_the_first_other_in_sync_replica():
    assert turned([2, 3, 1], [2, 3, 1], away_from=2) == [3, 2, 1]
    assert turned([2, 3, 1], [2, 1], away_from=2) == [1, 2, 3]
    assert turned([2, 3, 1], [2], away_from=2) is None
    assert turned([2], [2], away_from=2) is None


def test_a_roll_onto_brokers_without_share_groups_is_refused():
    sc = SCENARIOS["share-rolling-upgrade"]
    cfg = RunConfig.for_scenario("share-rolling-upgrade", seed=1)
    for to in ("4.1.1", "3.9", "latest-3"):
        with pytest.raises(BadInput, match=rf"step 0 \(broker_upgrade\) rolls .* onto Kafka {to}, which has no share"):
            ShareChecks.check_versions(cfg, sc, "4.3.1", [Action("broker_upgrade", {"version": to})])
    for to in ("4.4.0", "4.2", "latest"):
        ShareChecks.check_versions(cfg, sc, "4.3.1", [Action("broker_upgrade", {"version": to})])


def test_replication_is_from_one_to_the_brokers_and_for_consumer_and_share_groups():
    assert RunConfig.for_scenario("share-leader-restart", seed=1).replication == 1
    RunConfig.for_scenario("share-member-kill", seed=1, replication=3).validate()
    for name, r in (("share-member-kill", 4), ("share-member-kill", 0), ("streams-scale-out", 1)):
        with pytest.raises(BadInput, match=f"replication {r}: from 1 to the 3 brokers"):
            RunConfig.for_scenario(name, seed=1, replication=r).validate()
