"""commit_progress: each processed record is committed by its member, within the bound of that member life's own
commit mode, before the partition is given up gracefully; even while the group moves."""
from histbuild import (assigned, broker_event, committed, fault_end, fault_start, history, join, lost, member_exit,
                       member_start, processed, revoked, run_end, run_start, settings, started, steady)

from harness.invariants import commits


def check(*evs, **kw):
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


def ticking(m: str, p: int, t0: float, t1: float, tick: float, *, off0: int = 0) -> list[dict]:
    """An auto-committing member: a batch of ten records a second, a commit of what it consumed every `tick` s."""
    out = [processed(m, t, p, off0 + 10 * (t - t0), off0 + 10 * (t - t0) + 9) for t in range(t0, t1)]
    out += [committed(m, t + 0.5, {p: off0 + 10 * (t - t0) + 10}) for t in range(t0, t1, tick)]
    return out


def effective(mode: str, interval_ms: int = 5000, *, default_interval: bool = False) -> dict:
    """What a started event's member says its client runs with (the part commit_progress reads)."""
    return {"effective": {"commit_mode": mode, "enable.auto.commit": mode == "auto",
                          "auto.commit.interval.ms": interval_ms, "client": "confluent-kafka 2.12.2 librdkafka 2.12.2"},
            "effective_defaults": ["auto.commit.interval.ms"] if default_interval else []}


def life(m: str, t: float, parts, **eff) -> list[dict]:
    """A member life from t with `effective` settings (auto every 5 s by default), assigned parts at t + 0.5."""
    eff = {"mode": "auto", **eff}
    return [member_start(m, t), {**started(m, t + 0.1), **effective(**eff)}, assigned(m, t + 0.5, parts)]


def auto_pair(end: float = 40.0, **eff) -> list[dict]:
    """Like `steady`, with members that say they auto-commit (every 5 s unless `eff` says otherwise)."""
    return [run_start(0.0), *life("a", 0.1, [0, 1], **eff), *life("b", 0.2, [2, 3], **eff), run_end(end)]


# -- sync members (the run-wide default), calm
def test_valid_with_a_commit_after_every_batch():
    v = check(steady(40.0), work("a", 0, 2, 38), work("a", 1, 2, 38), work("b", 2, 2, 38), work("b", 3, 2, 38))
    assert v.status == "valid", v.message
    assert v.measurements["judged"] > 0 and v.measurements["stalls"] == 0
    assert "commit_mode sync (run-wide, the harness's default" in v.message  # older history: no effective settings


def test_processing_with_no_commit_ever_is_invalid():
    v = check(steady(40.0), work("a", 0, 2, 38, commit="none"), work("b", 2, 2, 38))
    assert v.status == "invalid"
    assert v.measurements["stalled_partitions"] == [0]
    assert "a, commits after each poll's records (commit_mode sync" in v.message
    assert "processed partition 0 up to offset 9 at 2.000" in v.message and "before it: none" in v.message
    assert v.witnesses[0]["type"] == "processed" and v.witnesses[0]["partition"] == 0


def test_a_member_in_mode_never_fails_and_says_so():
    evs = [run_start(0.0, commit_mode="never"), *join("a", 0.1, [0, 1]), *join("b", 0.2, [2, 3]), run_end(40.0)]
    v = check(evs, work("a", 0, 2, 38, commit="none"))
    assert v.status == "invalid"
    assert "commits nothing (commit_mode never, run-wide, run_start's commit_mode" in v.message


def test_commits_that_stop_advancing_are_invalid():
    evs = [*work("a", 0, 2, 20), *work("a", 0, 20, 38, commit="stuck", off0=180)]
    v = check(steady(40.0), evs)
    assert v.status == "invalid"
    first = v.witnesses[0]
    assert first["type"] == "processed" and first["mono"] >= 20.0
    assert v.witnesses[1]["type"] == "committed" and v.witnesses[1]["ok"] is True


def test_commits_that_all_fail_are_invalid():
    v = check(steady(40.0), work("a", 0, 2, 38, fail=True))
    assert v.status == "invalid"
    assert v.measurements["commits_failed"] > 0 and v.measurements["commits_ok"] == 0
    assert v.witnesses[1]["type"] == "committed" and v.witnesses[1]["ok"] is False


def test_a_commit_by_another_member_does_not_count_for_the_owner():
    evs = [*work("a", 0, 2, 38, commit="none"), *[committed("b", t, {0: 1000 + t}) for t in range(3, 38)]]
    assert check(steady(40.0), evs).status == "invalid"


def test_an_idle_partition_owes_nothing_and_reprocessing_owes_nothing_new():
    v = check(steady(40.0), work("a", 0, 2, 38), work("a", 1, 2, 38))
    assert v.status == "valid" and v.measurements["stalled_partitions"] == []
    evs = [processed("a", 2.0, 0, 0, 9), committed("a", 2.1, {0: 10}), processed("a", 5.0, 0, 0, 9)]
    assert check(steady(40.0), evs).status == "valid"


def test_a_late_sync_commit_is_a_stall():
    """A sync member commits after each poll: 3 s after processing is too late."""
    evs = [processed("a", 2.0, 0, 0, 9), committed("a", 5.0, {0: 10})]
    v = check(steady(40.0), evs)
    assert v.status == "invalid", v.message
    assert "did not commit it by 3.000" in v.message


# -- the member's own commit mode, per life
def test_auto_commit_within_the_members_own_interval_is_valid():
    v = check(auto_pair(), ticking("a", 0, 2, 38, 5))
    assert v.status == "valid", v.message
    assert "auto-commit every 5 s (as set, from its started event): a;" in v.message  # b processed nothing


def test_auto_commit_slower_than_the_members_own_interval_is_invalid():
    v = check(auto_pair(interval_ms=2000), ticking("a", 0, 2, 38, 5))
    assert v.status == "invalid", v.message
    assert "a, auto-commit every 2 s (as set, from its started event) since its start at 0.1 s" in v.message


def test_the_library_default_is_named_as_such():
    v = check(auto_pair(default_interval=True), ticking("a", 0, 2, 38, 5))
    assert v.status == "valid" and "auto-commit every 5 s (librdkafka default)" in v.message


def test_the_members_own_settings_win_over_the_run_wide_ones_both_ways():
    """The run says auto every 10 s, the member says it commits after each poll: its commits every 5 s are late.
    And the reverse: the run says sync, the member auto-commits every 10 s: commits every 5 s are in time."""
    rs = run_start(0.0, commit_mode="auto", client_settings={"auto.commit.interval.ms": "10000"})
    plain = [rs, *join("a", 0.1, [0, 1]), *join("b", 0.2, [2, 3]), run_end(40.0)]
    ticks = ticking("a", 0, 2, 38, 5)
    assert check(plain, ticks).status == "valid"  # run-wide: auto every 10 s
    own_sync = [rs, *life("a", 0.1, [0, 1], mode="sync"), *life("b", 0.2, [2, 3], mode="sync"), run_end(40.0)]
    v = check(own_sync, ticks)
    assert v.status == "invalid" and "commit_mode sync, from its started event" in v.message
    rs_sync = run_start(0.0, commit_mode="sync")
    assert check([rs_sync, *join("a", 0.1, [0, 1]), *join("b", 0.2, [2, 3]), run_end(40.0)], ticks).status == \
        "invalid"  # run-wide: sync
    own_auto = [rs_sync, *life("a", 0.1, [0, 1], interval_ms=10000), *life("b", 0.2, [2, 3]), run_end(40.0)]
    assert check(own_auto, ticks).status == "valid"


def test_settings_that_change_mid_run_are_judged_per_life():
    """a auto-commits every 10 s, then restarts (a settings roll) auto-committing every 2 s: commits every 5 s are
    in time in its first life and late in its second."""
    first = [*life("a", 0.1, [0, 1], interval_ms=10000), *life("b", 0.2, [2, 3])]
    roll = [committed("a", 19.85, {0: 170}), revoked("a", 19.9, [0, 1]), member_exit("a", 20.0),
            *life("a", 20.5, [0, 1], interval_ms=2000)]
    evs = [run_start(0.0), *first, *roll, run_end(60.0)]
    ok = check(evs, ticking("a", 0, 2, 19, 5))
    assert ok.status == "valid", ok.message
    v = check(evs, ticking("a", 0, 2, 19, 5), ticking("a", 0, 22, 58, 5, off0=1000))
    assert v.status == "invalid", v.message
    assert "a, auto-commit every 2 s (as set, from its started event) since its start at 20.5 s" in v.message
    assert v.witnesses[0]["mono"] >= 22.0
    assert set(v.measurements["lives"]) == {"a@0.100", "a@20.500"}
    old = [run_start(0.0, commit_mode="auto", client_settings={"auto.commit.interval.ms": "10000"}),
           *join("a", 0.1, [0, 1]), *join("b", 0.2, [2, 3]), committed("a", 19.85, {0: 170}),
           revoked("a", 19.9, [0, 1]), member_exit("a", 20.0),
           *join("a", 20.5, [0, 1]), run_end(60.0)]
    assert check(old, ticking("a", 0, 2, 19, 5), ticking("a", 0, 22, 58, 5, off0=1000)).status == "valid"


# -- while the group moves
def test_a_record_must_be_committed_before_its_partition_is_revoked():
    """b joins and a gives partition 1 up at 10.3, 0.3 s after processing it: an auto-committing member commits on
    revoke (as librdkafka does); one that does not, has not committed it before giving it up."""
    base = [*auto_pair(40.0), *join("c", 9.5), revoked("a", 10.3, [1]), assigned("c", 10.8, [1])]
    done = [processed("a", 10.0, 1, 0, 9), committed("a", 10.35, {1: 10})]
    assert check(base, done).status == "valid"
    v = check(base, processed("a", 10.0, 1, 0, 9), committed("a", 14.0, {1: 10}))
    assert v.status == "invalid", v.message
    assert "it gave the partition up at 10.300" in v.message
    assert [w["type"] for w in v.witnesses] == ["processed", "revoked"]


def test_a_refused_commit_is_judged_against_its_retry():
    """A sync commit asked for mid-rebalance waits and is refused (ILLEGAL_GENERATION) 4 s later; the member's next
    commit, after the rebalance, covers the record: valid. Without that retry, or with the partition revoked after
    the refusal and nothing committed before, a stall."""
    refused = committed("a", 15.0, {0: 30}, ok=False)
    refused["requested_mono"] = 11.0
    base = [*steady(40.0), *work("a", 0, 2, 10), processed("a", 11.0, 0, 80, 89), refused]
    v = check(base, committed("a", 15.3, {0: 100}))
    assert v.status == "valid", v.message
    assert v.measurements["retried"] == 1
    assert check(base).status == "invalid"
    gone = check(base, revoked("a", 15.1, [0, 1]), assigned("b", 16.0, [0, 1]), committed("a", 17.0, {0: 100}))
    assert gone.status == "invalid" and "its commit of it was refused at 15.000" in gone.message
    assert "it gave the partition up at 15.100s without committing it again" in gone.message
    assert [w["type"] for w in gone.witnesses] == ["processed", "committed", "revoked"]
    assert gone.witnesses[1]["ok"] is False


def test_a_refused_commits_retry_counts_from_the_members_next_poll():
    """A member refused at 11.1 s is seen again only at 12.9 s (its next poll held by the client, as a classic leader's
    metadata fetch for its assignment holds it, or by a loaded machine): its retry then covers the record. A member
    seen back from that poll with records at 12.9 s that does not retry within 1 s stalls, the message naming when it
    was seen back; one never seen again stalls 1 s after the refusal."""
    refused = committed("a", 11.1, {0: 30}, ok=False)
    refused["requested_mono"] = 11.05
    base = [*steady(40.0), *work("a", 0, 2, 11), processed("a", 11.0, 0, 90, 99), refused]
    v = check(base, processed("a", 12.9, 0, 100, 109), committed("a", 12.95, {0: 110}))
    assert v.status == "valid" and v.measurements["retried"] == 1, v.message
    v = check(base, processed("a", 12.9, 0, 100, 109), committed("a", 14.2, {0: 110}))
    assert v.status == "invalid", v.message
    assert "refused at 11.100s, and no retry succeeded within 1 s of its next poll (seen back at 12.900s)" in v.message
    v = check(base, committed("a", 14.2, {0: 110}))  # asked at 14.2: that is its retry, seen back then
    assert v.status == "valid", v.message
    v = check(base, processed("a", 12.0, 1, 0, 9), committed("a", 14.2, {0: 110}))  # back at 12.0 (partition 1)
    assert v.status == "invalid" and "seen back at 12.000" in v.message, v.message


def test_an_async_commit_asked_for_before_the_revoke_counts():
    ask = committed("a", 10.6, {1: 10})
    ask["requested_mono"] = 10.05
    evs = [*steady(40.0), processed("a", 10.0, 1, 0, 9), revoked("a", 10.3, [1]), ask, assigned("b", 10.8, [1])]
    assert check(evs).status == "valid"


def test_a_lost_partition_or_a_killed_member_need_not_have_committed():
    lost_it = [*steady(40.0), processed("a", 10.0, 1, 0, 9), lost("a", 10.3, [0, 1]), assigned("b", 12.0, [0, 1])]
    v = check(lost_it)
    assert v.status == "skipped" and v.measurements["excused"]["lost_or_killed"] == 1, v.message
    killed = [*steady(40.0), processed("a", 10.0, 1, 0, 9), member_exit("a", 10.2, how="kill")]
    assert check(killed).measurements["excused"]["lost_or_killed"] == 1
    graceful = [*steady(40.0), processed("a", 10.0, 1, 0, 9), member_exit("a", 10.2, how="graceful")]
    assert check(graceful).status == "invalid"  # a graceful stop commits before it closes


def test_a_member_killed_with_its_commit_in_flight_is_excused_but_not_one_that_polled_on():
    """A sync member killed 1.5 s after its last poll's records, having recorded nothing since (its commit in flight
    when it died, as a loaded machine makes a commit take over the 1 s grace): excused. The same member having
    recorded a commit outcome after that poll (of another partition) is judged; and one that went on polling
    partition 1 without ever committing it stalls on its earlier polls all the same."""
    last_poll = [processed("a", 10.0, 1, 0, 9), processed("a", 10.002, 0, 0, 4)]
    in_flight = [*steady(40.0), *last_poll, member_exit("a", 11.5, how="kill")]
    v = check(in_flight)
    assert v.status == "skipped" and v.measurements["excused"]["lost_or_killed"] == 2, v.message
    other_commit = [*steady(40.0), *last_poll, committed("a", 10.3, {0: 5}), member_exit("a", 11.5, how="kill")]
    v = check(other_commit)
    assert v.status == "invalid" and v.measurements["stalled_partitions"] == [1], v.message
    polled_on = [*steady(40.0), processed("a", 8.0, 1, 0, 9), processed("a", 9.0, 1, 10, 19),
                 processed("a", 10.0, 1, 20, 29), member_exit("a", 11.5, how="kill")]
    v = check(polled_on)
    assert v.status == "invalid" and v.measurements["stalls"] == 2, v.message


def test_a_rebalance_or_another_members_fault_excuses_nothing():
    """A fault naming only b, and an autoscaler naming no one, do not excuse a's missing commits."""
    others = [fault_start(5.0, "f1", members=["b"]), fault_end(30.0, "f1"),
              fault_start(6.0, "f2", kind="autoscale"), fault_end(35.0, "f2")]
    assert check(steady(40.0), others, work("a", 0, 2, 38, commit="none")).status == "invalid"


def test_a_stall_during_a_fault_of_the_member_or_a_broker_is_excused():
    evs = [*work("a", 0, 2, 10), *work("a", 0, 10, 20, commit="none", off0=80), *work("a", 0, 20, 38, off0=180)]
    assert check(steady(40.0), evs).status == "invalid"
    v = check(steady(40.0), evs, fault_start(9.0, "f1", brokers=[1], kind="broker_kill"), fault_end(20.5, "f1"))
    assert v.status == "valid", v.message
    assert v.measurements["excused"]["fault"] == 13  # 10..19, and 8, 9 and 20, whose second to commit meets it
    assert check(steady(40.0), evs, fault_start(9.0, "f2", members=["a"]), fault_end(20.5, "f2")).status == "valid"


def test_a_broker_event_excuses_only_the_records_whose_window_it_falls_in():
    evs = [*work("a", 0, 2, 10), processed("a", 10.0, 0, 80, 89), processed("a", 14.0, 0, 90, 99),
           *work("a", 0, 20, 38, off0=100)]
    v = check(steady(40.0), evs, broker_event(10.5, 1, "restart"))
    assert v.status == "invalid" and v.measurements["stalls"] == 1, v.message  # 14.0 is judged


def test_unknown_when_too_short_or_nothing_processed_and_skipped_when_all_excused():
    assert check(steady(5.0), processed("a", 4.5, 0, 0, 9)).status == "unknown"
    assert check(steady(40.0)).status == "unknown"  # nothing processed
    busy = [fault_start(1.0, "f0", brokers=[1], kind="broker_kill"), fault_end(39.0, "f0")]
    v = check(steady(40.0), work("a", 0, 2, 38, commit="none"), busy)
    assert v.status == "skipped", v.message
    assert "every one was excused" in v.message


def test_a_refused_commit_may_wait_for_the_members_own_revoke_handler_delay():
    """A refused commit's retry comes after the next poll, which may first run the revoke handler; a member whose
    handler waits 2 s before its commit (its started event says so) commits 2.2 s after the refusal: valid. The same
    history from a member that says its handler does not wait is a stall: the bound is the member's own."""
    def history_of(delay_ms):
        eff = {**effective("sync")["effective"], "revoke_delay_ms": delay_ms}
        refused = committed("a", 11.1, {0: 30}, ok=False)
        in_handler = committed("a", 13.3, {0: 90})
        in_handler["revoke_began"] = 11.2
        return [run_start(0.0), member_start("a", 0.1), {**started("a", 0.2), "effective": eff},
                assigned("a", 0.5, [0, 1]), *join("b", 0.2, [2, 3]), run_end(40.0), *work("a", 0, 2, 10),
                processed("a", 11.0, 0, 80, 89), refused, in_handler, revoked("a", 13.4, [0]),
                assigned("b", 14.0, [0])]
    v = check(history_of(2000))
    assert v.status == "valid" and v.measurements["retried"] == 1, v.message
    bad = check(history_of(0))
    assert bad.status == "invalid" and "no retry succeeded within 1 s" in bad.message, bad.message
    assert "revoke handler waiting" not in bad.message
    wait = check(history_of(500))  # a wait shorter than what the member took: a stall, named with its own wait
    assert wait.status == "invalid" and "its revoke handler waiting 0.5 s before its commit" in wait.message
