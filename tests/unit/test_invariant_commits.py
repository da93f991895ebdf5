"""commit_progress: an owner in good standing that processes a partition commits it, advancing, within S."""
from histbuild import (broker_event, committed, fault_end, fault_start, history, join, member_exit, processed,
                       run_end, run_start, settings, steady)

from harness.invariants import commits

S = 10.0


def check(*evs, **kw):
    kw.setdefault("commit_stall_s", S)
    return commits.check(history(*evs), settings(**kw))


def work(m: str, p: int, t0: float, t1: float, *, every: float = 1.0, commit: str = "each", off0: int = 0,
         fail: bool = False) -> list[dict]:
    """m processes partition p once a second from t0 to t1, ten records a batch; commits after each batch
    ("each"), never ("none"), or the same offset every time after the first ("stuck")."""
    out, off, t = [], off0, t0
    while t < t1:
        out.append(processed(m, t, p, off, off + 9))
        off += 10
        if commit == "each":
            out.append(committed(m, t + 0.01, {p: off}, ok=not fail))
        elif commit == "stuck":
            out.append(committed(m, t + 0.01, {p: off0 + 10}))
        t += every
    return out


def test_valid_with_a_commit_after_every_batch():
    v = check(steady(40.0), work("a", 0, 2, 38), work("a", 1, 2, 38), work("b", 2, 2, 38), work("b", 3, 2, 38))
    assert v.status == "valid", v.message
    assert v.measurements["judged"] > 0 and v.measurements["stalls"] == 0


def test_valid_with_commits_less_often_than_batches_within_s():
    """An auto-committing member: batches every second, a commit of what it consumed every 5 s."""
    evs = [processed("a", t, 0, 10 * t, 10 * t + 9) for t in range(2, 38)]
    evs += [committed("a", t + 0.5, {0: 10 * t + 10}) for t in range(6, 40, 5)]
    assert check(steady(40.0), evs).status == "valid"


def test_a_stall_during_a_fault_is_allowed():
    """No commit while a broker is down (a fault naming no member) nor while the owner is paused."""
    evs = [*work("a", 0, 2, 10), *work("a", 0, 10, 20, commit="none", off0=80), *work("a", 0, 20, 38, off0=180)]
    assert check(steady(40.0), evs).status == "invalid"  # without the fault: a stall of 10 s and more
    v = check(steady(40.0), evs, fault_start(9.0, "f1", brokers=[1], kind="broker_kill"), fault_end(20.5, "f1"))
    assert v.status == "valid", v.message
    paused = [*work("a", 0, 2, 10), *work("a", 0, 10, 20, commit="none", off0=80), *work("a", 0, 20, 38, off0=180)]
    assert check(steady(40.0), paused, fault_start(9.0, "f2", members=["a"]), fault_end(20.5, "f2")).status == "valid"


def test_a_broker_event_breaks_a_stretch():
    """No commit for 12 s (over S): a stall, unless a broker event splits it into stretches shorter than S."""
    evs = [*work("a", 0, 2, 10), *work("a", 0, 10, 22, commit="none", off0=80), *work("a", 0, 22, 38, off0=200)]
    assert check(steady(40.0), evs).status == "invalid"
    assert check(steady(40.0), evs, broker_event(15.0, 1, "restart")).status == "valid"


def test_an_idle_partition_owes_nothing():
    """Partitions 2 and 3 of b receive no record: nothing to commit there."""
    v = check(steady(40.0), work("a", 0, 2, 38), work("a", 1, 2, 38))
    assert v.status == "valid"
    assert v.measurements["stalled_partitions"] == []


def test_nothing_committed_again_when_nothing_new_was_processed():
    """Re-processing below the committed offset owes no new commit."""
    evs = [processed("a", 2.0, 0, 0, 9), committed("a", 2.1, {0: 10}), processed("a", 5.0, 0, 0, 9)]
    assert check(steady(40.0), evs).status == "valid"


def test_processing_with_no_commit_ever_is_invalid():
    v = check(steady(40.0), work("a", 0, 2, 38, commit="none"), work("b", 2, 2, 38))
    assert v.status == "invalid"
    assert v.measurements["stalled_partitions"] == [0]
    assert "a processed partition 0 at 2.000" in v.message and "(none)" in v.message
    assert v.witnesses[0]["type"] == "processed" and v.witnesses[0]["partition"] == 0


def test_commits_that_stop_advancing_are_invalid():
    evs = [*work("a", 0, 2, 20), *work("a", 0, 20, 38, commit="stuck", off0=180)]
    v = check(steady(40.0), evs)
    assert v.status == "invalid"
    first = v.witnesses[0]
    assert first["type"] == "processed" and first["mono"] >= 20.0
    assert v.witnesses[1]["type"] == "committed" and v.witnesses[1]["ok"] is True
    assert "offset 190" in v.message


def test_commits_that_all_fail_are_invalid():
    v = check(steady(40.0), work("a", 0, 2, 38, fail=True))
    assert v.status == "invalid"
    assert v.measurements["commits_failed"] > 0 and v.measurements["commits_ok"] == 0
    assert v.witnesses[1]["type"] == "committed" and v.witnesses[1]["ok"] is False


def test_a_commit_by_another_member_does_not_count_for_the_owner():
    evs = [*work("a", 0, 2, 38, commit="none"), *[committed("b", t, {0: 1000 + t}) for t in range(3, 38)]]
    assert check(steady(40.0), evs).status == "invalid"


def test_a_stall_longer_than_s_only_where_stretches_are_long_enough():
    """The last batches before the owner stops fall within S of its exit: not judged."""
    evs = [*work("a", 0, 2, 25), *work("a", 0, 25, 30, commit="none", off0=230)]
    h = [run_start(0.0), *join("a", 0.1, [0, 1]), *join("b", 0.2, [2, 3]), member_exit("a", 32.0), run_end(40.0)]
    assert check(h, evs).status == "valid"
    assert check(h, evs, commit_stall_s=2.0).status == "invalid"


def test_unknown_when_too_short_and_skipped_when_never_calm():
    assert check(steady(5.0), work("a", 0, 2, 4, commit="none")).status == "unknown"
    busy = [fault_start(1.0, "f0", brokers=[1], kind="broker_kill"), fault_end(39.0, "f0")]
    v = check(steady(40.0), work("a", 0, 2, 38, commit="none"), busy)
    assert v.status == "skipped", v.message
    assert check(steady(40.0)).status == "unknown"  # nothing processed
