"""commit_progress on histories of each offset store path (the Python member's `harness.offset.store`): a member whose
commits carry what librdkafka's offset store holds is judged by its commit mode's own bound, as one that names its
offsets: 0 after each poll (`commit()` of the stored offsets, sync or async), its own auto.commit.interval.ms under the
auto-commit timer; and the messages name the path from its `started` event."""
import pytest
from histbuild import (assigned, committed, history, member_start, processed, revoked, run_end, run_start, settings,
                       started)

from harness.base.vocabulary import MANUAL_OFFSET_STORES, OFFSET_STORES
from harness.invariants import commits

STORES = [s for s in OFFSET_STORES if s != "explicit"]


def life(m: str, t: float, parts, *, mode: str, store: str, interval_ms: int = 5000) -> list[dict]:
    """A member life from t whose `started` says its commit mode and offset store path, assigned parts at t + 0.5."""
    eff = {"commit_mode": mode, "offset_store": store, "enable.auto.commit": mode == "auto",
           "enable.auto.offset.store": store not in MANUAL_OFFSET_STORES, "auto.commit.interval.ms": interval_ms,
           "client": "confluent-kafka 2.16.1 librdkafka 2.13.0"}
    return [member_start(m, t), {**started(m, t + 0.1), "effective": eff, "effective_defaults": []},
            assigned(m, t + 0.5, parts)]


def pair(mode: str, store: str, end: float = 40.0, **kw) -> list[dict]:
    return [run_start(0.0), *life("a", 0.1, [0, 1], mode=mode, store=store, **kw),
            *life("b", 0.2, [2, 3], mode=mode, store=store, **kw), run_end(end)]


def after_each_poll(m: str, p: int, t0: int, t1: int, *, stuck_from: int | None = None, lag: float = 0.05) -> list:
    """m processes ten records of p a second and commits the store `lag` s later (from `stuck_from` on, the commit
    carries the offset stored then: a store that stopped advancing)."""
    out = []
    for t in range(t0, t1):
        off = 10 * (t - t0)
        out.append(processed(m, t, p, off, off + 9))
        stored = off + 10 if stuck_from is None or t < stuck_from else 10 * (stuck_from - t0)
        c = committed(m, t + lag, {p: stored})
        c["requested_mono"] = t + lag - 0.04  # asked for just before its outcome
        out.append(c)
    return out


def ticking(m: str, p: int, t0: int, t1: int, tick: int) -> list:
    """An auto-committing member: ten records a second, the store committed every `tick` s."""
    out = [processed(m, t, p, 10 * (t - t0), 10 * (t - t0) + 9) for t in range(t0, t1)]
    return out + [committed(m, t + 0.5, {p: 10 * (t - t0) + 10}) for t in range(t0, t1, tick)]


def check(*evs):
    return commits.check(history(*evs), settings())


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("store", STORES)
def test_a_commit_of_the_store_after_each_poll_is_valid_and_named(store, mode):
    v = check(pair(mode, store), after_each_poll("a", 0, 2, 38), after_each_poll("b", 2, 2, 38))
    assert v.status == "valid", v.message
    assert f"commit_mode {mode} (from its started event), offset_store {store}: a, b" in v.message
    assert v.measurements["lives"]["a@0.100"]["offset_store"] == store
    assert v.measurements["lives"]["a@0.100"]["bound_s"] == 0.0


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("store", STORES)
def test_a_store_that_stops_advancing_is_a_stall_named_with_its_path(store, mode):
    v = check(pair(mode, store), after_each_poll("a", 0, 2, 38, stuck_from=20), after_each_poll("b", 2, 2, 38))
    assert v.status == "invalid", v.message
    assert f"(offset_store {store}) (commit_mode {mode}, from its started event)" in v.message
    assert v.measurements["stalled_partitions"] == [0] and v.witnesses[0]["mono"] >= 20


@pytest.mark.parametrize("store", STORES)
def test_a_commit_of_the_store_a_poll_late_is_a_stall_under_sync(store):
    """Bound 0 plus 1 s grace: a commit 1.5 s after the poll's records is late, whatever the path."""
    v = check(pair("sync", store), after_each_poll("a", 0, 2, 38, lag=1.5))
    assert v.status == "invalid" and "plus 1 s grace after processing: it commits after each poll" in v.message


@pytest.mark.parametrize("store", STORES)
def test_the_auto_commit_timer_is_judged_by_the_members_own_interval(store):
    ok = check(pair("auto", store, interval_ms=5000), ticking("a", 0, 2, 38, 5))
    assert ok.status == "valid", ok.message
    assert f"auto-commit every 5 s (as set, from its started event), offset_store {store}: a" in ok.message
    assert ok.measurements["lives"]["a@0.100"]["bound_s"] == 5.0
    late = check(pair("auto", store, interval_ms=2000), ticking("a", 0, 2, 38, 5))
    assert late.status == "invalid", late.message
    assert f"auto-commit every 2 s (as set, from its started event), the offsets" in late.message
    assert f"(offset_store {store})" in late.message


@pytest.mark.parametrize("store", STORES)
def test_what_was_stored_must_be_committed_before_the_partition_is_revoked(store):
    """Under the auto-commit timer (5 s) librdkafka commits the store on revoke; at the next tick is too late."""
    base = [*pair("auto", store), revoked("a", 10.3, [1]), assigned("b", 10.8, [1])]
    assert check(base, processed("a", 10.0, 1, 0, 9), committed("a", 10.35, {1: 10})).status == "valid"
    v = check(base, processed("a", 10.0, 1, 0, 9), committed("a", 14.0, {1: 10}))
    assert v.status == "invalid" and "it gave the partition up at 10.300" in v.message
