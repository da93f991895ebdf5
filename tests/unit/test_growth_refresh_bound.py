"""Partitions added under a classic protocol: the group's leader learns of them at its client's next metadata refresh
(librdkafka's topic.metadata.refresh.interval.ms, the Java client's metadata.max.age.ms; 300 s by default), so the
bounds of coverage_liveness and convergence_balance add the longest refresh the live members' clients were given,
or the default; the consumer protocol's coordinator learns of them itself and adds nothing.

Setup: two members a:[0,1], b:[2,3]; the topic grows from 4 to 8 partitions at 10.0-10.1; the new ones are assigned
at 250 s (a correct classic group on librdkafka's default refresh takes up to 300 s); max.poll.interval.ms 10 s.
"""
import pytest
from histbuild import (assigned, effective, ev, fault_end, fault_start, history, member_start, run_end, run_start,
                       settings, started)

from harness.invariants import convergence, coverage


def grown(refresh_ms: int | None, protocol: str = "classic-eager", key: str = "topic.metadata.refresh.interval.ms"):
    given = {} if refresh_ms is None else {key: str(refresh_ms)}
    evs = [run_start(0.0)]
    for m, t, parts in (("a", 0.1, [0, 1]), ("b", 0.2, [2, 3])):
        st = started(m, t + 0.1, protocol=protocol, effective=effective(max_poll_ms=10000))
        st["client_config"] = given
        evs += [member_start(m, t), st, assigned(m, t + 0.5, parts)]
    evs += [ev("action_start", 10.0, "harness", action_id="a1", kind="add_partitions", params={"count": 8}),
            fault_start(10.0, "f1", kind="add_partitions"), fault_end(10.09, "f1"),  # as a real run records it
            ev("action_end", 10.1, "harness", action_id="a1", kind="add_partitions", ok=True, error=None,
               topic="t", before=4, count=8),
            assigned("a", 250.0, [4, 5]), assigned("b", 250.0, [6, 7]), run_end(400.0)]
    return history(evs)


def judged(h, protocol: str = "classic-eager"):
    s = settings(protocol=protocol, max_poll_interval_s=10.0)
    return coverage.check(h, s), convergence.check(h, s)


def test_librdkafkas_default_refresh_allows_the_classic_leader_300_s_to_notice():
    cov, conv = judged(grown(None))
    assert cov.status == "valid", cov.message
    assert conv.status == "valid", conv.message
    assert "bound 310.0s" in conv.message


@pytest.mark.parametrize("key", ["topic.metadata.refresh.interval.ms", "metadata.max.age.ms"])
def test_a_5_s_refresh_given_to_the_clients_bounds_it_to_5_s_and_a_round(key):
    cov, conv = judged(grown(5000, key=key))
    assert cov.status == "invalid" and conv.status == "invalid"
    assert "bound 15.0s" in cov.message and f"metadata refresh 5s ({key}=5000 given)" in cov.message, cov.message
    assert "bound 15.0s" in conv.message and "metadata refresh 5s" in conv.message, conv.message


def test_the_consumer_protocols_coordinator_learns_itself_and_adds_no_refresh():
    cov, conv = judged(grown(None, protocol="consumer"), protocol="consumer")
    assert cov.status == "invalid" and "metadata refresh" not in cov.message, cov.message
    assert conv.status == "invalid" and "metadata refresh" not in conv.message, conv.message
