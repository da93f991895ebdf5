"""The harness's reads of the group's committed offsets (harness/kinds/offsets_read.py) and where a run makes them:
after each step on brokers (harness/nemesis/coordinator.py, `step_done`) and after the members' final stop."""
from types import SimpleNamespace

from harness.kinds import offsets_read
from harness.kinds.consumer import ConsumerGroup
from harness.nemesis.coordinator import CoordinatorActions


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


def test_a_read_asks_again_until_an_answer_and_records_when_the_answered_request_was_sent():
    clock, events, answers = Clock(), [], [RuntimeError("ListConsumerGroupOffsets: NOT_COORDINATOR"),
                                           RuntimeError("ListConsumerGroupOffsets: COORDINATOR_LOAD_IN_PROGRESS"),
                                           {"coordinator": 3, "offsets": [["t", 0, 10]], "partition_errors": []}]

    def ask():
        got = answers.pop(0)
        if isinstance(got, Exception):
            raise got
        return got

    got = offsets_read.read(ask, lambda t, **f: events.append((t, f)), "g", after="a2", step_kind="kill_coordinator",
                            sleep=clock.sleep, clock=clock)
    assert events == [("offsets_read", got)]
    assert got == {"group_id": "g", "after": "a2", "step_kind": "kill_coordinator", "asked_mono": 102.0,
                   "coordinator": 3, "offsets": [["t", 0, 10]], "partition_errors": [], "error": None, "tries": 3}


def test_a_read_with_no_answer_in_time_records_the_last_refusal():
    clock, events = Clock(), []

    def ask():
        raise RuntimeError("ListConsumerGroupOffsets: COORDINATOR_NOT_AVAILABLE")

    got = offsets_read.read(ask, lambda t, **f: events.append(f), "g", after="end", sleep=clock.sleep, clock=clock,
                            within_s=5.0)
    assert got["offsets"] is None and got["coordinator"] is None
    assert got["error"] == "ListConsumerGroupOffsets: COORDINATOR_NOT_AVAILABLE"
    assert got["tries"] == 6 and got["asked_mono"] == 105.0 and events == [got]  # asked at 0, 1, ... 5 s


class FakeAdmin:
    """The two Admin calls a read makes, answered as confluent-kafka does."""

    def __init__(self, describe_fails: bool = False) -> None:
        self.describe_fails = describe_fails

    @staticmethod
    def _done(value):
        return SimpleNamespace(result=lambda timeout: value)

    def describe_consumer_groups(self, groups, request_timeout):
        if self.describe_fails:
            raise RuntimeError("no coordinator")
        return {groups[0]: self._done(SimpleNamespace(coordinator=SimpleNamespace(id=2)))}

    def list_consumer_group_offsets(self, requests, request_timeout):
        tps = [SimpleNamespace(topic="t", partition=1, offset=7, error=None),
               SimpleNamespace(topic="t", partition=0, offset=12, error=None),
               SimpleNamespace(topic="t", partition=2, offset=-1001, error=None),  # none committed
               SimpleNamespace(topic="t", partition=3, offset=-1001, error="UNSTABLE_OFFSET_COMMIT")]
        return {requests[0].group_id: self._done(SimpleNamespace(topic_partitions=tps))}


def test_committed_offsets_names_the_coordinator_and_every_committed_partition():
    got = offsets_read.committed_offsets(FakeAdmin(), "g", timeout_s=1.0)
    assert got == {"coordinator": 2, "offsets": [["t", 0, 12], ["t", 1, 7]],
                   "partition_errors": [["t", 3, "UNSTABLE_OFFSET_COMMIT"]]}
    assert offsets_read.committed_offsets(FakeAdmin(describe_fails=True), "g", timeout_s=1.0)["coordinator"] is None


class Base:
    def step_done(self, step: int) -> None:
        self.done.append(step)


class Nem(CoordinatorActions, Base):
    def __init__(self, kinds: list[str], kind) -> None:
        self.ctx = SimpleNamespace(plan=SimpleNamespace(schedule=[SimpleNamespace(kind=k) for k in kinds]))
        self.kind, self.done = kind, []


def test_the_nemesis_reads_after_a_step_on_brokers_only_and_passes_the_step_on():
    reads = []
    kind = SimpleNamespace(read_offsets=lambda **kw: reads.append(kw))
    nem = Nem(["sleep", "kill_coordinator", "kill_member", "broker_bounce"], kind)
    for i in range(4):
        nem.step_done(i)
    assert nem.done == [0, 1, 2, 3]
    assert reads == [{"after": "a2", "step_kind": "kill_coordinator"}, {"after": "a4", "step_kind": "broker_bounce"}]
    Nem(["kill_coordinator"], SimpleNamespace()).step_done(0)  # a kind without reads: nothing asked


def test_the_consumer_kind_reads_at_the_end_on_real_brokers_only():
    events, said = [], []

    class Reader:
        def __init__(self, bootstrap, group_id, event) -> None:
            self.closed = False

        def read(self, **kw):
            events.append(kw)

        def close(self):
            events.append("closed")

    import harness.kinds.offsets_read as mod
    real = mod.OffsetsReader
    mod.OffsetsReader = Reader
    try:
        for backend in ("local", "fake"):
            g = ConsumerGroup.__new__(ConsumerGroup)
            g.ctx = SimpleNamespace(cluster=SimpleNamespace(backend=backend, bootstrap=lambda: "b:9092"),
                                    group_id="g", event=None, say=said.append)
            g.finish()
    finally:
        mod.OffsetsReader = real
    assert events == [{"after": "end", "step_kind": None}, "closed"]
    assert said == ["reading the group's committed offsets (ListConsumerGroupOffsets)"]


def test_after_a_failed_ask_the_next_try_is_a_new_clients():
    """A read whose first ask fails: the asker's process is ended before the next try (a fresh admin client), and
    the read's answer is the second try's."""
    from harness.kinds import offsets_read as mod

    class Asker:
        def __init__(self):
            self.calls, self.closed = 0, 0

        def __call__(self):
            self.calls += 1
            if self.calls == 1:
                raise RuntimeError("ListConsumerGroupOffsets: Local: Timed out")
            return {"coordinator": 2, "offsets": [["t", 0, 5]], "partition_errors": []}

        def close(self):
            self.closed += 1
    r = mod.OffsetsReader.__new__(mod.OffsetsReader)
    events = []
    r.ask, r.group_id, r.event = Asker(), "g", lambda t, **f: events.append(f)
    got = mod.read(r._ask_afresh_after_a_failure, r.event, "g", after="end", sleep=lambda s: None)
    assert r.ask.closed == 1 and r.ask.calls == 2
    assert got["offsets"] == [["t", 0, 5]] and got["tries"] == 2 and events[0]["error"] is None
