"""The nemesis: performs a schedule's actions and faults on the cluster and the members.

Every fault goes through one bracket, `with self.fault(kind, ...)`: `fault_start` is recorded before
the fault acts and `fault_end` after it was lifted, whatever happens in between, so a timeline and the
invariants always see the window. Members live in numbered slots (a slot keeps its spec across a
bounce or a replacement; the process in it gets a new member id each time). Waiting is left to `Waits`.
Each action of the registry (harness/plan/actions.py) has one performer here or in the mixins, marked
`@performs(name)`; `PERFORMERS` maps the names to them.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import replace

from harness.plan.actions import Setting, performs
from harness.base.errors import BadInput, Indeterminate
from harness.members import clients
from harness.nemesis.coordinator import CoordinatorActions
from harness.nemesis.group import GroupActions
from harness.nemesis.leaders import LeaderActions
from harness.nemesis.requests import RequestActions
from harness.nemesis.topics import TopicActions
from harness.base.steps import Step, fault_of


class Nemesis(GroupActions, CoordinatorActions, RequestActions, LeaderActions, TopicActions):
    """Actions on a run's cluster and member slots; `perform(action)` returns what the action did (the actions
    on how members run are in `harness.nemesis.group`, those on the group's coordinator in
    `harness.nemesis.coordinator`, the request faults in `harness.nemesis.requests`, those on partition leaders in
    `harness.nemesis.leaders`). `ctx` is what it is handed of the run (harness/run/context.py), once the cluster,
    the pool and the waits are set on it."""

    def __init__(self, ctx, *, kind, workload=None) -> None:
        self.ctx = ctx
        self.cluster, self.pool, self.waits = ctx.cluster, ctx.pool, ctx.waits
        self.event, self.say, self.group_id = ctx.event, ctx.say, ctx.group_id
        self.workload = workload  # the producer (`set_rate`); None where no run produces
        self.kind = kind
        self.slots: list = []
        self.specs: list = []
        self._faults = 0

    # -- the bracket every fault goes through
    @contextmanager
    def fault(self, kind: str, *, targets, members=(), brokers=()):
        self._faults += 1
        fid = f"f{self._faults}"
        self.event("fault_start", fault_id=fid, kind=kind, targets=list(targets), members_affected=list(members),
                   brokers_affected=list(brokers))
        try:
            yield fid
        finally:
            self.event("fault_end", fault_id=fid)

    def perform(self, action, *, step: int = 0) -> dict:
        """Do one action (the schedule's step `step`: a hold until a later step's end counts from it)."""
        do = PERFORMERS.get(action.kind.replace("-", "_"))
        if do is None:
            raise BadInput(f"unknown action {action.kind!r}")
        self._step = step
        return do(self, **action.params) or {}

    # -- member slots
    def add_member(self):
        return self.add_members(1)[0]

    def add_members(self, count: int) -> list:
        """`count` members in the next slots: each in its own process, or with `members_per_process` above one
        (RunConfig, docs/member-contract.md "Hosted members") that many to a process."""
        per = max(1, int(getattr(getattr(self.kind, "cfg", None), "members_per_process", 1) or 1))
        out: list = []
        while len(out) < count:
            specs = [self.kind.member_spec(len(self.specs) + i) for i in range(min(per, count - len(out)))]
            self.specs.extend(specs)
            ms = self.pool.start_hosted(specs) if per > 1 else [self.pool.start(specs[0])]
            self.slots.extend(ms)
            out.extend(ms)
        return out

    def live_slot(self, slot: int):
        """The live member in a slot, or None (a shrunk or mixed schedule may name an empty slot)."""
        m = self.slots[slot] if 0 <= slot < len(self.slots) else None
        return m if m is not None and not m.exited else None

    def _live_ids(self) -> list[str]:
        return [m.member_id for m in self.pool.live()]

    def live_count(self) -> int:
        """How many slots hold a live member."""
        return sum(1 for i in range(len(self.slots)) if self.live_slot(i) is not None)

    # -- actions
    @performs(Step.SLEEP)
    def _do_sleep(self, s: float):
        self.waits.sleep(s)

    @performs(Step.WORKLOAD_RATE)
    def _do_workload_rate(self, rate_per_s: float):
        """The producer writes this many records per second (the total over the topics) from now on."""
        if self.workload is None:
            raise Indeterminate("this run has no producer whose rate could change")
        return {"rate_per_s": rate_per_s, "before": self.workload.set_rate(rate_per_s)}

    @performs(Step.WAIT_STABLE)
    def _do_wait_stable(self):
        return {"stable": self.waits.wait_stable("after action")}

    @performs(Step.SCALE_OUT)
    def _do_scale_out(self, count: int = 1):
        if count < 1:
            raise BadInput(f"scale_out: count must be 1 or more, not {count!r}")
        ms = self.add_members(count)
        return {"member": ms[0].member_id} if count == 1 else {"members": [m.member_id for m in ms]}

    @performs(Step.SCALE_IN)
    def _do_scale_in(self, pick: str = "newest", count: int = 1):
        live = [i for i, m in enumerate(self.slots) if m is not None and not m.exited]
        if len(live) <= 1:
            return {"skipped": "one member left"}
        if count < 1:
            raise BadInput(f"scale_in: count must be 1 or more, not {count!r}")
        n = min(count, len(live) - 1)  # one member stays
        chosen = live[-n:][::-1] if pick == "newest" else live[:n]
        ms = [self.slots[i] for i in chosen]
        self.pool.stop(ms[0]) if n == 1 else self.pool.stop_many(ms)
        for i in chosen:
            self.slots[i] = None
        return {"member": ms[0].member_id} if count == 1 else {"members": [m.member_id for m in ms]}

    @performs(Step.BOUNCE)
    def _do_bounce(self, slot: int, down_s: float = 0.5, client_version: str | None = None,
                   protocol: str | None = None, client_settings: dict[str, Setting] | None = None,
                   static: bool | None = None, wipe_state: bool = False):
        old = self.live_slot(slot)
        if old is None:
            return {"skipped": f"slot {slot} has no live member"}
        self.respec(slot, client_settings, static)  # a settings change rolled through the group
        if client_version and hasattr(self.kind, "with_version"):  # a kind that runs its own library (Connect)
            self.specs[slot] = self.kind.with_version(self.specs[slot], client_version)
        elif client_version:  # a rolling client upgrade: the member comes back on another library version
            _, path = clients.client_path(client_version, progress=self.say)
            self.specs[slot] = replace(self.specs[slot], client_path=path)
        if protocol:  # an online group protocol migration, one member at a time
            self.on_protocol(slot, protocol)
        self.pool.stop(old)
        wiped = self.kind.wipe_state(slot) if wipe_state else {}  # a fresh pod; kept: a StatefulSet's volume
        self.waits.sleep(down_s)
        new = self.pool.start(self.specs[slot])
        self.slots[slot] = new
        return {"stopped": old.member_id, "started": new.member_id, **wiped}

    def on_protocol(self, slot: int, protocol: str) -> None:
        """The slot's next start speaks another group protocol; a kind whose settings depend on the protocol
        (Kafka Streams: group timings are client settings under classic only) gives its own spec."""
        if hasattr(self.kind, "with_protocol"):
            self.specs[slot] = self.kind.with_protocol(self.specs[slot], slot, protocol)
        else:
            self.specs[slot] = replace(self.specs[slot], protocol=protocol)

    @performs(Step.KILL_MEMBER)
    def _do_kill_member(self, slot: int, replace_after_s: float | None = None):
        m = self.live_slot(slot)
        if m is None:
            return {"skipped": f"slot {slot} has no live member"}
        self.pool.kill(m)
        if replace_after_s is None:
            return {"member": m.member_id}
        self.waits.sleep(replace_after_s)
        return {"member": m.member_id, **self._do_replace_member(slot)}

    @performs(Step.REPLACE_MEMBER)
    def _do_replace_member(self, slot: int, protocol: str | None = None):
        if slot >= len(self.specs) or self.live_slot(slot) is not None:
            return {"skipped": f"slot {slot} is not empty"}
        if protocol:  # the replacement speaks another group protocol (a migration rolled back after a refusal)
            self.on_protocol(slot, protocol)
        self.slots[slot] = self.pool.start(self.specs[slot])
        return {"replacement": self.slots[slot].member_id}

    @performs(Step.RESTART_CRASHED)
    def _do_restart_crashed(self, count: int, timeout_s: float = 120.0):
        if count < 1:
            raise BadInput(f"restart_crashed: count must be 1 or more, not {count!r}")
        done, deadline = [], self.waits.clock() + timeout_s
        while len(done) < count and self.waits.clock() < deadline:
            self.waits.sleep(0.2)  # notices the members that exited meanwhile
            for i, m in enumerate(self.slots):
                if m is not None and m.exited and m.exit_how == "crash" and len(done) < count:
                    self.slots[i] = self.pool.start(self.specs[i])
                    done.append({"slot": i, "crashed": m.member_id, "code": m.exit_code,
                                 "replacement": self.slots[i].member_id})
        if not done:
            return {"skipped": f"no member crashed within {timeout_s:g}s"}
        return {"restarted": done, "crashes": len(done), "count": count}

    @performs(Step.PAUSE_MEMBER)
    def _do_pause_member(self, slot: int, duration_s: float):
        m = self.live_slot(slot)
        if m is None:
            return {"skipped": f"slot {slot} has no live member"}
        with self.fault(fault_of(Step.PAUSE_MEMBER), targets=[m.member_id], members=[m.member_id]):
            self.pool.pause(m)
            try:
                self.waits.sleep(duration_s)
            finally:
                self.pool.resume(m)
        return {"member": m.member_id}

    @performs(Step.BROKER_BOUNCE)
    def _do_broker_bounce(self, broker: int, down_s: float = 1.0):
        with self.fault(fault_of(Step.BROKER_BOUNCE), targets=[broker], brokers=[broker]):
            self.cluster.terminate_broker(broker)
            self.waits.sleep(down_s)
            self.cluster.start_broker(broker)
        return {"broker": broker}

    @performs(Step.BROKER_ROLLING_RESTART)
    def _do_broker_rolling_restart(self):
        ids = self.cluster.broker_ids()
        with self.fault(fault_of(Step.BROKER_ROLLING_RESTART), targets=ids, brokers=ids):
            self.cluster.rolling_restart()

    @performs(Step.BROKER_UPGRADE)
    def _do_broker_upgrade(self, version: str):
        before, ids = self.cluster.version, self.cluster.broker_ids()
        with self.fault(fault_of(Step.BROKER_UPGRADE), targets=ids, brokers=ids):
            self.cluster.rolling_upgrade(version)
        return {"from": before, "to": self.cluster.broker_version(ids[0])}

    def coordinator(self, *, timeout_s: float = 30.0) -> int:
        """The broker coordinating the group (retried: mid-rebalance or mid-failover it may not answer)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fut = self.cluster.admin().describe_consumer_groups([self.group_id])[self.group_id]
                return fut.result(timeout=10).coordinator.id
            except Exception as e:
                if time.monotonic() >= deadline:
                    raise Indeterminate(f"could not find the coordinator of {self.group_id}: {e}") from None
                # after a coordinator failover the admin client can keep asking the old coordinator
                # (NOT_COORDINATOR over and over): a new client looks it up afresh
                self.cluster.reset_admin()
                self.waits.sleep(0.5)

    def coordinator_or_skip(self) -> tuple[int | None, dict | None]:
        """(the coordinator a step acts on, None), or (None, the step's `skipped` result) when none could be found:
        nothing was done yet, so the step says why and the run goes on (`schedule_performed` names it)."""
        try:
            return self.coordinator(), None
        except Indeterminate as e:
            return None, {"skipped": str(e)}

    @performs(Step.KILL_COORDINATOR)
    def _do_kill_coordinator(self, down_s: float):
        bid, skipped = self.coordinator_or_skip()
        if skipped:
            return skipped
        with self.fault(fault_of(Step.KILL_COORDINATOR), targets=[bid], brokers=[bid]):
            self.cluster.kill_broker(bid)
            self.waits.sleep(down_s)
            self.cluster.start_broker(bid)
        return {"broker": bid}

    @performs(Step.RACK_OUTAGE)
    def _do_rack_outage(self, rack: str, down_s: float):
        brokers = self.cluster.brokers_of_rack(rack)
        victims = [i for i, m in enumerate(self.slots) if m is not None and not m.exited and m.spec.rack == rack]
        with self.fault(fault_of(Step.RACK_OUTAGE), targets=[rack], brokers=brokers,
                        members=[self.slots[i].member_id for i in victims]):
            for i in victims:
                self.pool.kill(self.slots[i])
            self.cluster.rack_outage(rack)
            self.waits.sleep(down_s)
            self.cluster.rack_restore(rack)
            for i in victims:
                self.slots[i] = self.pool.start(self.specs[i])
        return {"brokers": brokers, "members": len(victims)}

    @performs(Step.NETWORK_LATENCY)
    def _do_network_latency(self, latency_ms: int, jitter_ms: int, duration_s: float):
        with self.fault(fault_of(Step.NETWORK_LATENCY), targets=self.cluster.broker_ids(), members=self._live_ids()):
            try:
                self.cluster.add_latency(latency_ms=latency_ms, jitter_ms=jitter_ms)
                self.waits.sleep(duration_s)
            finally:
                self.cluster.heal()

    @performs(Step.NETWORK_BLACKHOLE)
    def _do_network_blackhole(self, broker: int, duration_s: float):
        with self.fault(fault_of(Step.NETWORK_BLACKHOLE), targets=[broker], members=self._live_ids(), brokers=[broker]):
            try:
                self.cluster.blackhole(broker_ids=[broker])
                self.waits.sleep(duration_s)
            finally:
                self.cluster.heal()


def _performers(cls) -> dict:
    """Action name -> the method marked as its performer, over the class and its mixins."""
    out: dict = {}
    for klass in reversed(cls.__mro__):
        for fn in vars(klass).values():
            if hasattr(fn, "performs"):
                out[fn.performs] = fn
    return out


PERFORMERS = _performers(Nemesis)
