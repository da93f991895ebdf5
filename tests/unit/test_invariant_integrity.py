"""record_integrity: every acknowledged record processed; duplicates only above the previous owner's commit."""
from histbuild import (TOPIC, acked, assigned, committed, drained, ev, history, join, member_exit, processed, run_end,
                       settings)

from harness.invariants import integrity


def check(h, **kw):
    return integrity.check(h, settings(partitions=1, **kw))


def produced(n=10, partition=0):
    return [acked(0.5 + i * 0.01, partition, i) for i in range(n)]


def handover(commit_before_kill: int, b_from: int = 5):
    """a processes 0-4, commits, processes 5-9, is killed; b takes over and reads from b_from to 12."""
    return [*join("a", 0.0, [0]), *produced(13), processed("a", 2.0, 0, 0, 4), committed("a", 2.1, {0: 5}),
            processed("a", 3.0, 0, 5, 9), committed("a", 3.05, {0: commit_before_kill}),
            member_exit("a", 4.0, how="kill"), *join("b", 5.0, [0]), processed("b", 6.0, 0, b_from, 12),
            run_end(10.0)]


def test_all_processed_once_is_valid():
    h = history(join("a", 0.0, [0]), produced(), processed("a", 2.0, 0, 0, 9), committed("a", 2.1, {0: 10}),
                run_end(5.0))
    v = check(h)
    assert v.status == "valid", v.message
    assert v.measurements == {"acked": 10, "lost": 0, "lost_by_partition": {}, "duplicates": 0,
                              "allowed_duplicates": 0, "bad_duplicates": 0, "unplaced": 0}


def test_unprocessed_acked_records_are_lost():
    h = history(join("a", 0.0, [0]), produced(30), processed("a", 2.0, 0, 0, 4), run_end(5.0))
    v = check(h)
    assert v.status == "invalid"
    assert v.message.startswith("25 of 30 acknowledged records were never processed")
    assert v.measurements["lost"] == 25
    assert len(v.witnesses) == 10
    assert all(w["type"] == "acked" and w["offset"] >= 5 for w in v.witnesses)


def test_lost_after_a_failed_drain_is_still_lost():
    h = history(join("a", 0.0, [0]), produced(), processed("a", 2.0, 0, 0, 8), drained(4.0, ok=False, missing=1),
                run_end(5.0))
    v = check(h)
    assert v.status == "invalid"
    assert "drain did not finish" in v.message


def test_unacknowledged_gaps_need_no_processing():
    # offset 2 was never acknowledged (the send failed): only 0, 1, 3 must be processed
    h = history(join("a", 0.0, [0]), acked(0.5, 0, 0), acked(0.6, 0, 1), acked(0.7, 0, 3),
                processed("a", 2.0, 0, 0, 1), processed("a", 2.1, 0, 3, 3), run_end(5.0))
    assert check(h).status == "valid"


def test_duplicates_above_the_last_commit_are_allowed():
    v = check(history(handover(commit_before_kill=5)))  # the commit of 5-9 never happened: 5 is the bound
    assert v.status == "valid", v.message
    assert v.measurements["duplicates"] == 5
    assert v.measurements["allowed_duplicates"] == 5


def test_duplicates_below_the_last_commit_are_invalid():
    v = check(history(handover(commit_before_kill=10)))  # b re-reads 5-9 although 10 was committed
    assert v.status == "invalid"
    assert "5 records of partition 0 processed again by b" in v.message
    assert v.measurements["bad_duplicates"] == 5
    assert [w["type"] for w in v.witnesses] == ["processed", "processed", "committed"]


def test_exactly_once_allows_no_duplicate():
    v = check(history(handover(commit_before_kill=5)), exactly_once=True)
    assert v.status == "invalid"
    assert v.measurements["bad_duplicates"] == 5


def test_commit_after_the_new_owner_began_does_not_raise_the_bound():
    evs = [e for e in handover(commit_before_kill=5)]
    evs.append(committed("a", 5.6, {0: 10}))  # a zombie's late commit is not what b started from
    assert check(history(evs)).status == "valid"


def test_no_acknowledged_record_is_unknown():
    assert check(history(join("a", 0.0, [0]), run_end(5.0))).status == "unknown"


def test_other_topics_are_ignored():
    h = history(join("a", 0.0, [0]), produced(), acked(0.9, 0, 0, topic="other"), processed("a", 2.0, 0, 0, 9),
                assigned("a", 0.6, [0], topic="other"), run_end(5.0))
    assert check(h).status == "valid"


def test_ranges():
    r = integrity.Ranges()
    r.add(5, 9)
    r.add(0, 2)
    assert r.overlap(1, 6) == [(1, 2), (5, 6)]
    r.add(3, 4)  # adjacent: merges into one range
    assert (r.lo, r.hi) == ([0], [9])
    r.add(20, 25)
    r.add(8, 21)
    assert (r.lo, r.hi) == ([0], [25])
    assert 25 in r and 26 not in r and -1 not in r


def test_no_member_setting_moves_the_duplicate_bound():
    """record_integrity derives nothing from timings: its bound is the previous owner's last commit, as recorded.
    A roll mid-run (a restarted into a2 with auto-commit every 60 s, whatever the run says of commits) changes
    no verdict: a duplicate below a2's last commit is still one too many, and valid stays valid without it."""
    from histbuild import effective, started
    evs = [e for e in handover(10, b_from=5) if not (e["type"] == "started" and e["member"] == "a")]
    evs += [started("a", 0.1, effective=effective(commit_mode="sync")),
            started("a", 0.2, effective=effective(commit_mode="auto", auto_commit_ms=60000))]
    v = check(history(evs), session_timeout_s=60.0, max_poll_interval_s=600.0)
    assert v.status == "invalid" and v.measurements["bad_duplicates"] == 5, v.message
    evs = [e for e in handover(5, b_from=5) if not (e["type"] == "started" and e["member"] == "a")]
    evs += [started("a", 0.1, effective=effective(commit_mode="auto", auto_commit_ms=60000))]
    assert check(history(evs), session_timeout_s=1.0).status == "valid"


def test_a_record_acknowledged_without_its_offset_cannot_be_looked_for():
    """An idempotent retry the broker answered as a duplicate (DUPLICATE_SEQUENCE_NUMBER) comes back without an offset
    (seen in the classic-cooperative acceptance series: the producer wrote it as an `acked` with a null offset and the
    run ended in error reading it): nothing else wrong, the verdict is unknown and names the record."""
    unplaced = ev("acked_unplaced", 0.7, "producer", topic=TOPIC, partition=0, key="k49", seq=77)
    h = history(join("a", 0.0, [0]), produced(), unplaced, processed("a", 2.0, 0, 0, 10), run_end(5.0))
    v = check(h)
    assert v.status == "unknown" and "1 more were acknowledged without one" in v.message, v.message
    assert "k49#77 of partition 0" in v.message and v.measurements["unplaced"] == 1
    lost = history(join("a", 0.0, [0]), produced(), unplaced, processed("a", 2.0, 0, 0, 4), run_end(5.0))
    assert check(lost).status == "invalid"  # a record lost among those with offsets is still a loss


def test_the_producer_writes_an_acknowledgement_without_an_offset_apart(tmp_path):
    from harness.members.workload import Workload
    from harness.record.history import History

    class Msg:
        def __init__(self, offset):
            self._o = offset

        def key(self):
            return b"k49"

        def value(self):
            return b"k49:77"

        def topic(self):
            return TOPIC

        def partition(self):
            return 2

        def offset(self):
            return self._o

    (tmp_path / "h").mkdir()
    w = Workload(bootstrap="127.0.0.1:9", topics=[TOPIC], history_path=tmp_path / "h" / "producer.jsonl")
    w._on_delivery(None, Msg(None))
    w._on_delivery(None, Msg(5))
    w.hist.close()
    evs = [e for e in History.load(tmp_path / "h").events if e["type"] != "header"]
    assert [(e["type"], e.get("offset")) for e in evs] == [("acked_unplaced", None), ("acked", 5)]
    assert w.acked == 2
