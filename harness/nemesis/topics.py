"""The nemesis's actions on the run's topics themselves: a topic created while the group runs (with records of its
own when asked) and a topic deleted (issue 47).

Only the topics `[[topics]]` declares with `created = "later"` come and go (harness/plan/topics.py): the workload
never writes to them, so no record the producer acknowledged is lost with a deleted topic, and the checkers'
settings (recorded when the run starts) leave them out; `topic_changes` judges them from these steps' results.
Each step is bracketed as a fault (a disturbance the invariants count) and ends only once the cluster's metadata
says it is done: a created topic listed with its partitions, a deleted one no longer listed (so a `create_topic`
after it creates the topic anew, never finds the old one on its way out). The run's topic list (`ctx.topics`, what
the stable wait and the lag read) gains the created topic and loses the deleted one; the runner's observer follows the
created topic's partitions from then on (and a deleted one's until its members release them).
"""
from __future__ import annotations

import time
from dataclasses import replace

from harness.base.errors import BadInput, Indeterminate
from harness.base.steps import Step, fault_of, performs
from harness.plan.topics import declared

#: how long a created topic may take to be listed with its partitions, or a deleted one to be gone
METADATA_WAIT_S = 60.0


def _listed(admin, topic: str) -> int | None:
    """The topic's partition count as the cluster's metadata lists it now, or None when it does not list it."""
    md = admin.list_topics(timeout=10)
    t = md.topics.get(topic)
    return None if t is None or t.error is not None else len(t.partitions)


def _wait_listed(admin, topic: str, want: int | None, timeout_s: float = METADATA_WAIT_S) -> float:
    """Wait until the metadata lists the topic with `want` partitions (None: until it no longer lists it); returns
    the seconds it took; Indeterminate when it does not within `timeout_s`."""
    t0 = time.monotonic()
    while (got := _listed(admin, topic)) != want:
        if time.monotonic() - t0 > timeout_s:
            raise Indeterminate(f"topic {topic}: the cluster's metadata lists {got} partitions, not {want}, "
                                f"{timeout_s:g}s after the step asked for it")
        time.sleep(0.2)
    return round(time.monotonic() - t0, 3)


def _produce(bootstrap: str, topic: str, partitions: int, records: int) -> dict[int, list[int]]:
    """Write `records` records to the topic, in turn to each partition, and wait for their acknowledgements;
    returns partition -> [first offset, last offset] of the records each got."""
    from confluent_kafka import Producer
    got: dict[int, list[int]] = {}
    failed: list[str] = []

    def done(err, msg) -> None:
        if err is not None:
            failed.append(str(err))
            return
        span = got.setdefault(msg.partition(), [msg.offset(), msg.offset()])
        span[0], span[1] = min(span[0], msg.offset()), max(span[1], msg.offset())

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for n in range(records):
        p.produce(topic, key=f"c{n}".encode(), value=f"c{n}".encode(), partition=n % partitions, on_delivery=done)
        p.poll(0)
    if p.flush(30) or failed:
        raise Indeterminate(f"create_topic: {len(failed)} of {records} records to {topic} failed "
                            f"({failed[:1] or 'not acknowledged within 30 s'})")
    return got


class TopicActions:
    """Mixed into `Nemesis` (which has the run's context, cluster, fault bracket and event)."""

    def _later_topic(self, name: str):
        t = next((t for t in declared(self.ctx.run_id, self.ctx.plan.cfg.topics) if t.name == name and t.later), None)
        if t is None:
            raise BadInput(f"no topic {name!r} of [[topics]] is created later")
        return t

    @performs(Step.CREATE_TOPIC)
    def _do_create_topic(self, topic: str, partitions: int | None = None, records: int = 0):
        """Create the topic with `partitions` (default: its declared count), wait until the metadata lists it, then
        write `records` records to it; the run's topic list gains it."""
        t = self._later_topic(topic)
        cfg, n = self.ctx.plan.cfg, partitions or t.partitions
        r = cfg.replication or min(3, cfg.brokers)
        isr = getattr(getattr(self.cluster, "settings", None), "min_insync_replicas", r)
        observer = getattr(self.ctx, "observer", None)  # the stable wait counts its partitions from now on
        if observer is not None:
            observer.topics = observer.topics | {t.real}
        with self.fault(fault_of(Step.CREATE_TOPIC), targets=[t.real]):
            self.cluster.create_topic(t.real, partitions=n, replication=r,
                                      config={"min.insync.replicas": str(r)} if r < isr else None)
            listed = _wait_listed(self.cluster.admin(), t.real, n)
            written = _produce(self.cluster.bootstrap(), t.real, n, records) if records else {}
        self.ctx.topics.append(replace(t, partitions=n, later=False))
        return {"topic": t.real, "partitions": n, "listed_after_s": listed, "records": records,
                "offsets": [[p, a, b] for p, (a, b) in sorted(written.items())]}

    @performs(Step.DELETE_TOPIC)
    def _do_delete_topic(self, topic: str):
        """Delete the topic and wait until the metadata no longer lists it; the run's topic list loses it."""
        t = self._later_topic(topic)
        i = next((k for k, x in enumerate(self.ctx.topics) if x.real == t.real), None)
        if i is None:
            raise BadInput(f"delete_topic: topic {topic!r} does not exist now")
        with self.fault(fault_of(Step.DELETE_TOPIC), targets=[t.real]):
            admin = self.cluster.admin()
            admin.delete_topics([t.real])[t.real].result(timeout=60)
            gone = _wait_listed(admin, t.real, None)
        had = self.ctx.topics.pop(i).partitions
        return {"topic": t.real, "partitions": had, "gone_after_s": gone}
