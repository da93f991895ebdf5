"""The nemesis's actions on how a group's members run, rather than on whether they run: a poll stall, a
subscription change, a rolling change of client settings, a member leaving while another joins, a group
setting changed at run time, and an autoscaler that adds and removes members as the group's lag says.

A poll stall and a subscription change are asked of a live member through its control file
(docs/member-contract.md, "Controls"); a member that does not list the control in its `started` event cannot
be asked, and the run is then indeterminate, never a pass. Each action is bracketed as a fault (`fault_start`
.. `fault_end`), so that the timeline shows it and the invariants count it as a disturbance; only a poll
stall lists its member as affected (it may hold partitions it does not serve meanwhile).
"""
from __future__ import annotations

import time
from dataclasses import replace

from harness.base.errors import Indeterminate
from harness.base.vocabulary import DEFAULT_SUBSCRIBE_BY
from harness.plan.actions import Setting, SubscribeBy, performs
from harness.kafka.config_keys import setting_text as _text
from harness.kinds.consumer import record_group_settings, set_group_configs
from harness.nemesis.lag import Autoscaler, Policy, group_lag
from harness.base.versions import GROUP_CONFIGS_SINCE, major_minor
from harness.base.steps import Step, fault_of


class GroupActions:
    """Mixed into `Nemesis` (which has the run's context, slots, specs, pool, kind, waits, fault and the basic
    actions)."""

    @performs(Step.POLL_STALL)
    def _do_poll_stall(self, slot: int, duration_s: float, if_supported: bool = False):
        """The member stops calling poll for duration_s while its client stays up (heartbeats go on in the
        background): past `max.poll.interval.ms` the client leaves the group; what it does when it polls
        again is in its history (lost or revoked partitions, errors). A member that takes no stall control
        makes the run an error, unless `if_supported` (the random mix): then the action is skipped and says so."""
        m = self.live_slot(slot)
        if m is None:
            return {"skipped": f"slot {slot} has no live member"}
        if if_supported and "stall" not in (m.started.get("controls") or ()):
            return {"skipped": f"member {m.member_id} takes no stall control"}
        with self.fault(fault_of(Step.POLL_STALL), targets=[m.member_id], members=[m.member_id]):
            self.pool.control(m, stall=True)
            try:
                self.waits.sleep(duration_s)
            finally:
                if not m.exited:
                    self.pool.control(m, stall=False)
        return {"member": m.member_id}

    @performs(Step.ADD_PARTITIONS)
    def _do_add_partitions(self, count: int, topic: str | None = None):
        """The topic's partitions up to `count` in all (CreatePartitions through the Admin API), bracketed as a
        fault (a disturbance the invariants count), and the producer made to write to them at once
        (`producer_saw_s`: how long its metadata took to show them; None: not within 30 s, or no producer); the
        timeline reads the new count from this action's result."""
        with self.fault(fault_of(Step.ADD_PARTITIONS), targets=[topic or "first topic"]):
            real, before = self.kind.add_partitions(topic, count)
            learn = getattr(self.workload, "learn_partitions", None)
            saw = learn(real, count) if learn else None
        return {"topic": real, "before": before, "count": count, "producer_saw_s": saw}

    @performs(Step.CHANGE_SUBSCRIPTION)
    def _do_change_subscription(self, slot: int, subscription: list[str],
                                subscribe_by: SubscribeBy = DEFAULT_SUBSCRIBE_BY):
        """The member in the slot subscribes to these topics (names of the run's topics, or ^regexes) from now
        on, without a restart; a later restart of the slot keeps the new subscription. An empty list: every
        topic of the run (with an unchanged subscription, a resubscribe). `subscribe_by` says how (vocabulary's
        SUBSCRIBE_BY): one subscribe() call, or unsubscribe() then subscribe(); a member whose `control` event
        does not say it went the way asked (a team's program that does not know the field) makes the run
        indeterminate, unless the way asked is the default."""
        m = self.live_slot(slot)
        if m is None:
            return {"skipped": f"slot {slot} has no live member"}
        real = self.kind.real_subscription(tuple(subscription))
        self.specs[slot] = replace(self.specs[slot], topics=real)
        with self.fault(fault_of(Step.CHANGE_SUBSCRIPTION), targets=[m.member_id]):
            done = self.pool.control(m, subscription=list(real), subscribe_by=subscribe_by)
        went = done.get("subscribe_by", DEFAULT_SUBSCRIBE_BY)
        if went != subscribe_by:
            raise Indeterminate(f"member {m.member_id} was asked to change its subscription by {subscribe_by} and "
                                f"its control event says {went!r} (docs/member-contract.md, Controls)")
        return {"member": m.member_id, "subscription": list(real), "subscribe_by": went}

    @performs(Step.SETTINGS_ROLL)
    def _do_settings_roll(self, client_settings: dict[str, Setting] | None = None, static: bool | None = None,
                          down_s: float = 0.5):
        """Every live member in turn, in slot order, restarts with these client settings over its own (and
        static membership switched on or off when `static` is given), the group settling in between."""
        done = []
        for slot in [i for i in range(len(self.slots)) if self.live_slot(i) is not None]:
            done.append(self._do_bounce(slot, down_s=down_s, client_settings=client_settings, static=static))
            self.waits.wait_stable(f"settings roll, slot {slot}")
        return {"restarted": done}

    @performs(Step.RESTART_ALL)
    def _do_restart_all(self, down_s: float = 2.0, protocol: str | None = None):
        """An offline change: every live member stops, the group is left empty for `down_s`, then every slot
        starts again (on `protocol` when given: an offline protocol migration; a Streams instance keeps its
        state directory, as a bounce does)."""
        slots = [i for i in range(len(self.slots)) if self.live_slot(i) is not None]
        stopped = []
        with self.fault(fault_of(Step.RESTART_ALL), targets=[self.slots[i].member_id for i in slots]):
            for i in slots:
                stopped.append(self.slots[i].member_id)
                self.pool.stop(self.slots[i])
            self.waits.sleep(down_s)
            for i in slots:
                if protocol:
                    self.on_protocol(i, protocol)
                self.slots[i] = self.pool.start(self.specs[i])
        return {"stopped": stopped, "started": [self.slots[i].member_id for i in slots]}

    def respec(self, slot: int, client_settings: dict | None, static: bool | None) -> None:
        """The slot's spec with changed client settings and static membership, for its next start."""
        spec = self.specs[slot]
        if client_settings:
            spec = replace(spec, client_config={**spec.client_config,
                                                **{k: _text(v) for k, v in client_settings.items()}})
        if static is not None:
            spec = replace(spec, instance_id=f"{self.group_id}-s{slot}" if static else None)
        self.specs[slot] = spec

    @performs(Step.LEAVE_DURING_JOIN)
    def _do_leave_during_join(self, slot: int):
        """A new member starts joining (its `started` event: subscribed, join under way) and at once the member
        in the slot leaves gracefully."""
        m = self.live_slot(slot)
        if m is None:
            return {"skipped": f"slot {slot} has no live member"}
        with self.fault(fault_of(Step.LEAVE_DURING_JOIN), targets=[m.member_id]):
            new = self.add_member()
            self.pool.stop(m)
        self.slots[slot] = None
        return {"joined": new.member_id, "left": m.member_id}

    @performs(Step.GROUP_CONFIG)
    def _do_group_config(self, settings: dict[str, Setting], if_supported: bool = False):
        """Set group configs (KIP-848's, Kafka 4.0+) through the Admin API while the group runs. Brokers older
        than 4.0 refuse the run before it starts, unless `if_supported` (the random mix): then the action is
        skipped and says so."""
        if if_supported and major_minor(self.cluster.version) < GROUP_CONFIGS_SINCE:
            return {"skipped": f"Kafka {self.cluster.version} has no group configs"}
        text = {k: _text(v) for k, v in settings.items()}
        with self.fault(fault_of(Step.GROUP_CONFIG), targets=[self.group_id]):
            set_group_configs(self.ctx, text)
            record_group_settings(self.ctx)
        return {"settings": text}

    @performs(Step.AUTOSCALE)
    def _do_autoscale(self, duration_s: float, scale_out_lag: int, scale_in_lag: int, min_members: int = 1,
                      max_members: int = 6, interval_s: float = 1.0, cooldown_s: float = 10.0,
                      burst_rate_per_s: float | None = None, burst_s: float | None = None):
        """For duration_s, as a horizontal autoscaler on a lag metric: sample the group's lag every interval_s
        and scale out one member or in the newest by the rule of harness/nemesis/lag.py. With burst_rate_per_s the
        producer runs at that rate from the start for burst_s (the whole duration without it), then at its
        rate before. Returns the samples [t, lag, members], the decisions and the rate changes (t: seconds
        from the start)."""
        scaler = Autoscaler(Policy(scale_out_lag=scale_out_lag, scale_in_lag=scale_in_lag, min_members=min_members,
                                   max_members=max_members, cooldown_s=cooldown_s))
        topics, samples, decisions, rates = self.kind.input_topics(), [], [], []
        base = None
        # a fresh admin client for the lag reads: librdkafka 2.16.0 segfaults in ListConsumerGroupOffsets on a client
        # that knew the group's coordinator before it was killed and restarted (docs/findings.md)
        self.cluster.reset_admin()
        with self.fault(fault_of(Step.AUTOSCALE), targets=[self.group_id]):
            t0 = time.monotonic()
            try:
                if burst_rate_per_s is not None:
                    base = self._do_workload_rate(burst_rate_per_s)["before"]
                    rates.append([0.0, burst_rate_per_s])
                while (t := time.monotonic() - t0) < duration_s:
                    if base is not None and burst_s is not None and t >= burst_s:
                        self._do_workload_rate(base)
                        rates.append([round(t, 1), base])
                        base = None
                    lag, n = group_lag(self.cluster.admin(), self.group_id, topics), self.live_count()
                    samples.append([round(t, 1), lag, n])
                    what = scaler.decide(t, lag, n)
                    if what is not None:
                        self.say(f"autoscale at {t:.1f}s: lag {lag}, {n} members: scale {what}")
                        did = self._do_scale_out() if what == "out" else self._do_scale_in("newest")
                        decisions.append({"t": round(t, 1), "scale": what, "lag": lag, "members": n, **did})
                    self.waits.sleep(max(0.0, t0 + t + interval_s - time.monotonic()))
            finally:
                if base is not None:
                    self.workload.set_rate(base)
                    rates.append([round(time.monotonic() - t0, 1), base])
        return {"samples": samples, "decisions": decisions, "rates": rates}
