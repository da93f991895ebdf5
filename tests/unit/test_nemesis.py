"""The nemesis on the fake backend: actions, skipped slots, the fault bracket (harness/nemesis/core.py).

Members here are stand-ins (no processes): the member pool is exercised by tests/unit/test_runner_fake.py.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.cluster.fake import FakeCluster
from harness.base.errors import BadInput, Indeterminate, SetupError
from harness.members import MemberSpec
from harness.nemesis.core import Nemesis
from harness.plan.scenarios import Action
from runctx import context


class StubPool:
    """Records what the nemesis asks of the member pool."""

    def __init__(self) -> None:
        self.n = 0
        self.members: list = []
        self.did: list[tuple[str, str]] = []

    def start(self, spec):
        self.n += 1
        m = SimpleNamespace(member_id=f"m{self.n}", spec=spec, exited=False)
        self.members.append(m)
        self.did.append(("start", m.member_id))
        return m

    def live(self):
        return [m for m in self.members if not m.exited]

    def stop(self, m):
        self.did.append(("stop", m.member_id))
        m.exited = True

    def kill(self, m):
        self.did.append(("kill", m.member_id))
        m.exited = True

    def pause(self, m):
        self.did.append(("pause", m.member_id))

    def resume(self, m):
        self.did.append(("resume", m.member_id))


class StubKind:
    def member_spec(self, slot: int) -> MemberSpec:
        return MemberSpec(protocol="classic-cooperative", rack=f"r{slot % 3}")


class StubWaits:
    def __init__(self) -> None:
        self.slept: list[float] = []

    def sleep(self, s: float) -> None:
        self.slept.append(s)

    def wait_stable(self, what: str) -> bool:
        return True


@pytest.fixture
def world(tmp_path):
    events: list[tuple[str, dict]] = []
    sink = lambda t, **f: events.append((t, f))  # noqa: E731
    cluster = FakeCluster(work_dir=tmp_path / "cluster", on_event=sink)
    cluster.start()
    assert types(events) == ["broker_event:start", "broker_event:ready"] * 3
    events.clear()
    nem = Nemesis(context(group_id="g-test", event=sink, cluster=cluster, pool=StubPool(), waits=StubWaits()),
                  kind=StubKind())
    yield SimpleNamespace(nem=nem, cluster=cluster, events=events, pool=nem.pool, waits=nem.waits)
    cluster.stop()
    assert not cluster.errors


def types(events) -> list[str]:
    return [t if t != "broker_event" else f"broker_event:{f['what']}" for t, f in events]


def test_unknown_action_kind_is_bad_input(world):
    with pytest.raises(BadInput, match="unknown action 'teleport'"):
        world.nem.perform(Action("teleport", {}))


@pytest.mark.parametrize("action", [
    Action("bounce", {"slot": 5, "down_s": 0.1}),
    Action("kill_member", {"slot": 1}),
    Action("kill_member", {"slot": -1, "replace_after_s": 0.1}),
    Action("pause_member", {"slot": 2, "duration_s": 1.0}),
])
def test_member_actions_on_an_empty_slot_are_skipped_with_a_reason(world, action):
    world.nem.add_member()
    world.pool.kill(world.nem.slots[0])  # slot 0 holds a dead member, slots 1.. do not exist
    for a in (action, Action(action.kind, {**action.params, "slot": 0})):
        info = world.nem.perform(a)
        assert "has no live member" in info["skipped"], info
    assert world.pool.did == [("start", "m1"), ("kill", "m1")]
    assert not [t for t, _ in world.events if t.startswith("fault")]  # no fault window for a skipped action


def test_replace_member_needs_an_empty_slot(world):
    world.nem.add_member()
    assert world.nem.perform(Action("replace_member", {"slot": 0})) == {"skipped": "slot 0 is not empty"}
    assert world.nem.perform(Action("replace_member", {"slot": 3})) == {"skipped": "slot 3 is not empty"}
    world.nem.perform(Action("kill_member", {"slot": 0}))
    assert world.nem.perform(Action("replace_member", {"slot": 0})) == {"replacement": "m2"}
    assert world.nem.slots[0].spec == world.nem.specs[0]


def test_scale_in_keeps_the_last_member(world):
    world.nem.add_member()
    assert world.nem.perform(Action("scale_in", {"pick": "newest"})) == {"skipped": "one member left"}
    assert world.nem.perform(Action("scale_out", {})) == {"member": "m2"}
    assert world.nem.perform(Action("scale_in", {"pick": "oldest"})) == {"member": "m1"}
    assert world.nem.slots[0] is None and world.pool.did[-1] == ("stop", "m1")


def test_kill_member_with_replacement(world):
    world.nem.add_member()
    info = world.nem.perform(Action("kill_member", {"slot": 0, "replace_after_s": 0.25}))
    assert info == {"member": "m1", "replacement": "m2"}
    assert world.waits.slept == [0.25]


def test_pause_is_a_fault_window_around_pause_and_resume(world):
    world.nem.add_member()
    world.nem.perform(Action("pause_member", {"slot": 0, "duration_s": 2.0}))
    assert types(world.events) == ["fault_start", "fault_end"]
    start = world.events[0][1]
    assert start["kind"] == "pause" and start["members_affected"] == ["m1"]
    assert world.pool.did[1:] == [("pause", "m1"), ("resume", "m1")] and world.waits.slept == [2.0]


def test_the_bracket_records_both_ends_when_the_action_raises(world, monkeypatch):
    def broken(broker_id, **kw):
        raise SetupError(f"broker {broker_id} did not come back")
    monkeypatch.setattr(world.cluster, "start_broker", broken)
    with pytest.raises(SetupError, match="did not come back"):
        world.nem.perform(Action("broker_bounce", {"broker": 2, "down_s": 0.5}))
    assert types(world.events) == ["fault_start", "broker_event:terminate", "fault_end"]
    assert world.events[0][1]["fault_id"] == world.events[-1][1]["fault_id"] == "f1"
    assert world.events[0][1]["brokers_affected"] == [2]


def test_a_network_fault_is_healed_and_closed_on_ctrl_c(world, monkeypatch):
    world.nem.add_member()
    def interrupted(s):
        raise KeyboardInterrupt
    monkeypatch.setattr(world.waits, "sleep", interrupted)
    with pytest.raises(KeyboardInterrupt):
        world.nem.perform(Action("network_latency", {"latency_ms": 100, "jitter_ms": 10, "duration_s": 3}))
    assert types(world.events) == ["fault_start", "fault_end"]
    assert world.cluster.call_names()[-2:] == ["add_latency", "heal"] and world.cluster.latency is None


def test_broker_bounce_on_the_fake_cluster(world):
    assert world.nem.perform(Action("broker_bounce", {"broker": 3, "down_s": 0.5})) == {"broker": 3}
    assert types(world.events) == ["fault_start", "broker_event:terminate", "broker_event:start",
                                   "broker_event:ready", "fault_end"]
    assert world.cluster.call_names()[-2:] == ["terminate_broker", "start_broker"]
    assert world.cluster.up == {1, 2, 3}


def test_kill_coordinator_kills_the_broker_the_admin_names(world):
    bid = world.cluster.admin().describe_consumer_groups(["g-test"])["g-test"].result(timeout=1).coordinator.id
    assert world.nem.perform(Action("kill_coordinator", {"down_s": 0.5})) == {"broker": bid}
    assert ("kill_broker", {"broker_id": bid}) in world.cluster.calls
    fault = next(f for t, f in world.events if t == "fault_start")
    assert fault["kind"] == "broker_kill" and fault["brokers_affected"] == [bid]


def test_no_coordinator_is_indeterminate_after_retries(world):
    for b in world.cluster.broker_ids():
        world.cluster.kill_broker(b)
    with pytest.raises(Indeterminate, match="could not find the coordinator of g-test"):
        world.nem.coordinator(timeout_s=0.2)
    assert "reset_admin" in world.cluster.call_names()


@pytest.mark.parametrize("kind, params", [("kill_coordinator", {"down_s": 0.5}), ("restart_coordinator", {}),
                                          ("broker_partition", {})])
def test_a_coordinator_step_without_a_coordinator_does_nothing_and_says_so(world, monkeypatch, kind, params):
    def none(**_):
        raise Indeterminate("could not find the coordinator of g-test: timed out")
    monkeypatch.setattr(world.nem, "coordinator", none)
    before = list(world.cluster.calls)
    assert world.nem.perform(Action(kind, params)) == {"skipped": "could not find the coordinator of g-test: timed out"}
    assert world.cluster.calls == before and not [t for t, _ in world.events if t == "fault_start"]


def test_rack_outage_kills_and_restarts_the_racks_members_and_brokers(world):
    for _ in range(3):
        world.nem.add_member()  # racks r0, r1, r2
    info = world.nem.perform(Action("rack_outage", {"rack": "r1", "down_s": 1.0}))
    assert info == {"brokers": [2], "members": 1}
    fault = next(f for t, f in world.events if t == "fault_start")
    assert fault["members_affected"] == ["m2"] and fault["brokers_affected"] == [2]
    assert ("kill", "m2") in world.pool.did and world.nem.slots[1].member_id == "m4"
    assert world.cluster.call_names()[-2:] == ["rack_outage", "rack_restore"] and 2 in world.cluster.up


def test_broker_upgrade_and_rolling_restart(world):
    world.cluster.version = "3.9.2"
    assert world.nem.perform(Action("broker_upgrade", {"version": "4.3.1"})) == {"from": "3.9.2", "to": "4.3.1"}
    world.nem.perform(Action("broker_rolling_restart", {}))
    assert world.cluster.call_names()[-2:] == ["rolling_upgrade", "rolling_restart"]
    kinds = [f["kind"] for t, f in world.events if t == "fault_start"]
    assert kinds == ["broker_upgrade", "broker_rolling_restart"]


def test_network_blackhole_is_lifted(world):
    world.nem.perform(Action("network_blackhole", {"broker": 1, "duration_s": 0.5}))
    assert world.cluster.call_names()[-2:] == ["blackhole", "heal"] and not world.cluster.blackholed


def _partitionable(cluster):
    """Give the fake cluster the docker backend's broker partitions, recorded."""
    cut: list = []
    cluster.partition_broker = lambda bid: cut.append(("cut", bid))
    cluster.heal_partitions = lambda: cut.append(("heal",))
    return cut


def test_a_partitioned_coordinator_affects_every_live_member(world):
    """The members of a group whose coordinator is cut off the quorum are not in good standing: the cut-off
    broker answers their heartbeats from memory while another one takes the group over and expires them
    (docs/findings.md, the broker-partition finding)."""
    cut = _partitionable(world.cluster)
    for _ in range(3):
        world.nem.add_member()
    coord = world.nem.coordinator()
    info = world.nem.perform(Action("broker_partition", {"broker": "coordinator", "duration_s": 1.0}))
    assert info["broker"] == coord and cut == [("cut", coord), ("heal",)]
    fault = next(f for t, f in world.events if t == "fault_start")
    assert fault["kind"] == "broker_partition" and fault["brokers_affected"] == [coord]
    assert fault["members_affected"] == ["m1", "m2", "m3"]


def test_a_partitioned_broker_that_is_not_the_coordinator_affects_no_member(world):
    _partitionable(world.cluster)
    world.nem.add_member()
    other = next(b for b in world.cluster.broker_ids() if b != world.nem.coordinator())
    world.nem.perform(Action("broker_partition", {"broker": other, "duration_s": 1.0}))
    fault = next(f for t, f in world.events if t == "fault_start")
    assert fault["brokers_affected"] == [other] and fault["members_affected"] == []


def test_a_rack_partition_affects_the_members_when_it_holds_the_coordinator(world):
    _partitionable(world.cluster)
    for _ in range(2):
        world.nem.add_member()
    coord = world.nem.coordinator()
    racks = {b: r for r in ("r0", "r1", "r2") for b in world.cluster.brokers_of_rack(r)}
    for rack in (racks[coord], next(r for b, r in racks.items() if b != coord)):
        world.events.clear()
        world.nem.perform(Action("rack_partition", {"rack": rack, "duration_s": 1.0}))
        fault = next(f for t, f in world.events if t == "fault_start")
        assert fault["members_affected"] == (["m1", "m2"] if rack == racks[coord] else [])
