"""The nemesis's request faults: rules installed in the request proxy (harness/kproxy/) on one member's requests.

A performer translates the schedule's words into a rule: `slot` is the member in that slot now (its member id, the
client id its clients send), "all" every member; `broker` is 1-based or "all"; a hold's `until_slot` names the
member whose request of `until_api` releases it ("other": any member but the held one's), and `until_step` the
end of the step that many steps later (an event the runner sets through `step_done`). The step returns at once
with the rule live (its result names the rule), unless `wait_s`: then it waits at most that long until the rule is
spent (`count` requests taken, or `duration_s` over). Every rule still live is lifted by `clear_request_faults` and
when the schedule ends (`end_request_faults`), before the run's final wait for a stable group.

The proxy records each request it acts on (`fault_start`/`fault_end` with the member, API and broker); the
nemesis records nothing of its own for them: the windows are the requests', not the rule's.
"""
from __future__ import annotations

import threading
import time
import uuid

from harness.plan.actions import performs
from harness.base.errors import BadInput, Indeterminate
from harness.kproxy import rules
from harness.kproxy.rules import Seen
from harness.base.steps import Step

#: how often a step waiting for its rule looks (the proxy counts in its own thread)
WAIT_TICK_S = 0.05


def topic_id(cluster, topic: str):
    """A topic's id as a uuid.UUID, through the cluster's Admin API; None when the cluster cannot say (the fake
    backend, a client without topic ids): then an answer keyed by topic id matches the partition in every topic."""
    try:
        from confluent_kafka import TopicCollection
        d = cluster.admin().describe_topics(TopicCollection([topic]))[topic].result(timeout=30)
        hi, lo = d.topic_id.get_most_significant_bits(), d.topic_id.get_least_significant_bits()
        return uuid.UUID(int=((hi & (2**64 - 1)) << 64) | (lo & (2**64 - 1)))
    except Exception:  # noqa: BLE001 - any failure leaves the id unknown, said by the rule's match
        return None


def _count(count: int | None, duration_s: float | None) -> int | None:
    """A hold's, drop's or error's count as given, else one request, or every request while `duration_s` lasts."""
    return 1 if count is None and duration_s is None else count


class RequestActions:
    """Mixed into `Nemesis` (which has `cluster`, `live_slot`, `waits`)."""

    _step = 0  # the index of the step being performed (the runner says so through `perform(..., step=)`)

    def _request_state(self) -> dict:
        if not hasattr(self, "_req"):
            self._req = {"rules": [], "events": {}}  # rule ids installed, step index -> its end's Event
        return self._req

    def _proxy(self):
        p = getattr(self.cluster, "kproxy", None)
        if p is None:
            raise Indeterminate("a request fault needs the request proxy, and this run's cluster was started "
                                "without it (a shared cluster started before the run asked for one)")
        return p

    def _member(self, slot) -> tuple[bool, str | None]:
        """(ok, member id or None for every member) of a slot word or number; ok is False for an empty slot."""
        if slot == "all":
            return True, None
        m = self.live_slot(int(slot))
        return (m is not None), (m.member_id if m is not None else None)

    def step_done(self, step: int) -> None:
        """The runner's word that step `step` of the schedule ended: a hold until it is released."""
        ev = self._request_state()["events"].get(step)
        if ev is not None:
            ev.set()

    def _install(self, build, *, api, slot, broker, duration_s=None, wait_s=None, **kw) -> dict:
        ok, member = self._member(slot)
        if not ok:
            return {"skipped": f"slot {slot} has no live member"}
        rule = build(api, member=member, broker=None if broker == "all" else int(broker), duration_s=duration_s, **kw)
        proxy = self._proxy()
        rid = proxy.install(rule)
        self._request_state()["rules"].append(rid)
        out = {"rule": rid, "member": member or "all", "count": rule.count}
        if wait_s is not None:
            out["spent"] = self._wait_spent(proxy, rid, rule, wait_s)
            out["applied"] = proxy.applied(rid)
        return out

    def _wait_spent(self, proxy, rid: str, rule, wait_s: float) -> bool:
        """Wait (at most wait_s) until the rule took `count` requests or its duration is over."""
        deadline = time.monotonic() + wait_s
        until = time.monotonic() + rule.duration_s if rule.duration_s is not None else None
        while rule.count is None or proxy.applied(rid) < rule.count:
            now = time.monotonic()
            if until is not None and now >= until:
                return True
            if now >= deadline:
                return False
            self.waits.sleep(min(WAIT_TICK_S, deadline - now))
        return True

    @performs(Step.DELAY_REQUEST)
    def _do_delay_request(self, api: str, delay_s: float | list[float], slot: int | str = "all",
                          broker: int | str = "all", count: int | None = None,
                          duration_s: float | None = None, wait_s: float | None = None):
        delay = tuple(delay_s) if isinstance(delay_s, list) else delay_s
        return self._install(rules.delay_request, api=api, slot=slot, broker=broker, duration_s=duration_s,
                             wait_s=wait_s, delay_s=delay, count=count, seed=self._step)

    @performs(Step.HOLD_REQUEST)
    def _do_hold_request(self, api: str, slot: int | str = "all", broker: int | str = "all", count: int | None = None,
                         timeout_s: float = 30.0, until_api: str | None = None, until_slot: int | str = "other",
                         until_step: int | None = None,
                         duration_s: float | None = None, wait_s: float | None = None):
        until: list = []
        if until_api is not None:
            if until_slot == "other":
                until.append(Seen(until_api))
            else:
                ok, who = self._member(until_slot)
                if not ok:
                    return {"skipped": f"until_slot {until_slot} has no live member"}
                until.append(Seen(until_api, who))
        if until_step is not None:
            until.append(self._request_state()["events"].setdefault(self._step + until_step, threading.Event()))
        return self._install(rules.hold_request, api=api, slot=slot, broker=broker, duration_s=duration_s,
                             wait_s=wait_s, until=until, timeout_s=timeout_s, count=_count(count, duration_s))

    @performs(Step.DROP_REQUEST)
    def _do_drop_request(self, api: str, slot: int | str = "all", broker: int | str = "all", count: int | None = None,
                         then: str = "stall",
                         duration_s: float | None = None, wait_s: float | None = None):
        return self._install(rules.drop_request, api=api, slot=slot, broker=broker, duration_s=duration_s,
                             wait_s=wait_s, count=_count(count, duration_s), then=then)

    @performs(Step.DROP_RESPONSE)
    def _do_drop_response(self, api: str, slot: int | str = "all", broker: int | str = "all",
                          count: int | None = None,
                          then: str = "stall",
                          duration_s: float | None = None, wait_s: float | None = None):
        return self._install(rules.drop_response, api=api, slot=slot, broker=broker, duration_s=duration_s,
                             wait_s=wait_s, count=_count(count, duration_s), then=then)

    @performs(Step.DISCONNECT)
    def _do_disconnect(self, api: str, slot: int | str = "all", broker: int | str = "all", count: int | None = None,
                       duration_s: float | None = None, wait_s: float | None = None):
        return self._install(rules.disconnect, api=api, slot=slot, broker=broker, duration_s=duration_s,
                             wait_s=wait_s, count=_count(count, duration_s))

    @performs(Step.ERROR_RESPONSE)
    def _do_error_response(self, api: str, error: str | int, slot: int | str = "all", broker: int | str = "all",
                           count: int | None = None,
                           duration_s: float | None = None, wait_s: float | None = None,
                           partition: int | None = None, topic: str | None = None):
        where = {} if partition is None else self._partition_target(topic, partition)
        out = self._install(rules.error_response, api=api, slot=slot, broker=broker, duration_s=duration_s,
                            wait_s=wait_s, error=error, count=_count(count, duration_s), **where)
        return out if partition is None else {**out, "partition": partition, "topic": where["topic"]}

    def _partition_target(self, topic: str | None, partition: int) -> dict:
        """A per-partition error's topic on the cluster (the run's topic of that name, the first by default) and its
        id (the answers that name topics by id: Fetch v13+, OffsetFetch v10); BadInput for a topic the run does not
        have. The partition may be one the topic does not have yet (an `add_partitions` step after it)."""
        ts = list(self.kind.input_topics())
        t = ts[0] if topic is None and ts else next(
            (t for t in ts if topic in (t[0],) or t[0].endswith(f"-{topic}")), None)
        if t is None:
            raise BadInput(f"error_response: no topic {topic!r} in this run "
                           f"({', '.join(n for n, _ in ts) or 'it has none'})")
        return {"partition": partition, "topic": t[0], "topic_id": topic_id(self.cluster, t[0])}

    @performs(Step.WAIT_REQUEST_FAULT)
    def _do_wait_request_fault(self, timeout_s: float = 30.0, applied: int = 1):
        ids = self._request_state()["rules"]
        if not ids:
            return {"skipped": "no request fault was installed before"}
        proxy = self._proxy()
        deadline = time.monotonic() + timeout_s
        while proxy.applied(ids[-1]) < applied and time.monotonic() < deadline:
            self.waits.sleep(min(WAIT_TICK_S, max(0.0, deadline - time.monotonic())))
        n = proxy.applied(ids[-1])
        return {"rule": ids[-1], "applied": n, "reached": n >= applied}

    @performs(Step.CLEAR_REQUEST_FAULTS)
    def _do_clear_request_faults(self):
        return {"lifted": self.end_request_faults()}

    def end_request_faults(self) -> int:
        """Lift every rule the schedule installed and release every hold waiting for a step's end; how many."""
        st = self._request_state()
        for ev in st["events"].values():
            ev.set()
        ids, st["rules"] = st["rules"], []
        proxy = getattr(self.cluster, "kproxy", None)
        for rid in ids if proxy is not None else ():
            proxy.remove(rid)
        return len(ids)
