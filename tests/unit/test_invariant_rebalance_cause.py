"""rebalance_cause: each rebalance the coordinator logged has a cause in the history, by each member's own settings."""
from histbuild import (broker_said, broker_event, effective, ev, fault_end, fault_start, group_settings, history, join,
                       lost,
                       member_exit, run_end, run_start, settings, stopped)

from harness.invariants import rebalance_cause

U1, U2, U3 = ("11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222",
              "33333333-3333-3333-3333-333333333333")


def judged(evs, **kw):
    h = history(evs)
    h.headers = [{"source": "broker-log", "group_id": "g"}]
    return rebalance_cause.check(h, settings(**kw))


def preparing(t: float, gen: int, reason: str) -> dict:
    return broker_said(t, f"[GroupCoordinator id=1 topic=__consumer_offsets partition=5] Preparing to rebalance group g "
                          f"in state PreparingRebalance with old generation {gen} (reason: {reason}).")


def adding(t: float, gen: int, mid: str, why: str = "not provided") -> dict:
    return preparing(t, gen, f"Adding new member {mid} with group instance id null; client reason: {why}")


def classic_pair() -> list[dict]:
    """a and b start, join (generations 1 and 2) and get t-0, t-1 and t-2, t-3."""
    return [run_start(0.0), *join("a", 0.1, [0, 1], effective=effective()), adding(0.3, 0, f"a-{U1}"),
            *join("b", 0.2, [2, 3], effective=effective()), adding(0.4, 1, f"b-{U2}")]


def test_joins_of_started_members_are_caused():
    v = judged([*classic_pair(), run_end(20.0)])
    assert v.status == "valid", v.message
    assert v.measurements["causes"] == {"join": 2}


def test_the_second_half_of_a_join_is_the_same_join():
    """KIP-394: the first JoinGroup gets a member id and joins again with it."""
    v = judged([*classic_pair(), adding(0.45, 2, f"b-{U2}", "need to re-join with the given member-id"), run_end(20.0)])
    assert v.status == "valid", v.message


def test_a_member_joining_again_with_a_new_id_for_no_reason_is_invalid():
    v = judged([*classic_pair(), adding(10.0, 2, f"a-{U3}"), run_end(20.0)])
    assert v.status == "invalid", v.message
    assert "a joined again (member id a-3333" in v.message and "nothing since made it lose its membership" in v.message
    assert v.witnesses[0]["type"] == "broker"


def test_a_member_joining_again_after_it_lost_its_partitions_is_caused():
    v = judged([*classic_pair(), lost("a", 9.0, [0, 1]), adding(10.0, 2, f"a-{U3}"), run_end(20.0)])
    assert v.status == "valid", v.message


def leave(t: float, gen: int, mid: str) -> dict:
    return preparing(t, gen, f"explicit `LeaveGroup` request for ({mid}) members.")


def test_a_leave_needs_a_stop():
    v = judged([*classic_pair(), leave(10.0, 2, f"a-{U1}"), run_end(20.0)])
    assert v.status == "invalid" and "a left the group while it ran on" in v.message, v.message
    stop = ev("member_stop", 9.9, "harness", member="a")
    v = judged([*classic_pair(), stop, stopped("a", 10.0), leave(10.0, 2, f"a-{U1}"),
                member_exit("a", 10.2), run_end(20.0)])
    assert v.status == "valid", v.message


def test_kafka_3s_leave_line_names_one_member_and_needs_a_stop():
    """Kafka 3.x's Scala coordinator says `Removing member M on LeaveGroup; client reason: C` (a 3.9.2 run's line)."""
    left = preparing(10.0, 2, f"Removing member a-{U1} on LeaveGroup; client reason: not provided")
    v = judged([*classic_pair(), left, run_end(20.0)])
    assert v.status == "invalid" and "a left the group while it ran on" in v.message, v.message
    stop = ev("member_stop", 9.9, "harness", member="a")
    v = judged([*classic_pair(), stop, stopped("a", 10.0), left, member_exit("a", 10.2), run_end(20.0)])
    assert v.status == "valid", v.message
    assert v.measurements["causes"] == {"join": 2, "leave": 1}


def test_the_kept_kafka_3_9_member_kill_run_holds_every_verdict():
    """A member-kill run on Kafka 3.9.2 (classic cooperative), as the local backend records 3.x brokers since their
    second SLF4J binding is left out (harness/kafka/dist.py): its coordinator's lines are read, each rebalance caused."""
    assert kept_run_holds("kafka-3.9-member-kill") == {"expire": 1, "join": 2, "leave": 1, "rejoin": 1}


def expiry(t: float, gen: int, mid: str) -> dict:
    return preparing(t, gen, f"removing member {mid} on heartbeat expiration.")


def test_an_expiry_after_a_kill_is_caused_and_of_a_live_member_is_not():
    v = judged([*classic_pair(), member_exit("b", 10.0, how="kill"), expiry(15.8, 2, f"b-{U2}"), run_end(20.0)])
    assert v.status == "valid", v.message
    v = judged([*classic_pair(), expiry(15.8, 2, f"b-{U2}"), run_end(20.0)])
    assert v.status == "invalid", v.message
    assert "b was alive, untouched by any fault and polling" in v.message and "session timeout 6s" in v.message


def test_the_members_own_session_timeout_decides_how_far_back_a_broker_event_counts():
    """A broker bounced 20 s before b's session expired: outside b's own 6 s session (as its start recorded it), so
    the expiry has no cause; judged with a 45 s session (librdkafka's default, a run-wide value) it would have one."""
    evs = [*classic_pair(), broker_event(10.0, 2, "stopped"), expiry(30.0, 2, f"b-{U2}"), run_end(40.0)]
    v = judged(evs)
    assert v.status == "invalid" and "session timeout 6s" in v.message, v.message
    long = [e for e in evs if not (e["type"] == "started")] + [
        *[x for x in join("a", 0.1, effective=effective(session_ms=45000)) if x["type"] == "started"],
        *[x for x in join("b", 0.2, effective=effective(session_ms=45000)) if x["type"] == "started"]]
    v = judged(long)
    assert v.status == "valid", v.message


def rejoin(t: float, gen: int, mid: str, why: str = "not provided") -> dict:
    return preparing(t, gen, f"Updating metadata for member {mid} during Stable; client reason: {why}")


def test_a_rejoin_needs_a_cause_of_the_members_own():
    v = judged([*classic_pair(), rejoin(10.0, 2, f"a-{U1}"), run_end(20.0)])
    assert v.status == "invalid" and "a rejoined a stable group" in v.message, v.message
    v = judged([*classic_pair(), rejoin(10.0, 2, f"a-{U1}", "need to revoke partitions and re-join"), run_end(20.0)])
    assert v.status == "valid", v.message
    change = ev("control", 9.0, "member", member="a", seq=1, subscription=["t"])
    v = judged([*classic_pair(), change, rejoin(10.0, 2, f"a-{U1}"), run_end(20.0)])
    assert v.status == "valid", v.message


def consumer_line(t: float, text: str) -> dict:
    return broker_said(t, f"[GroupCoordinator id=1 topic=__consumer_offsets partition=5] [GroupId g] {text}")


def consumer_run() -> list[dict]:
    """a starts and joins with the client-drawn id AAAA... (epoch 1)."""
    return [run_start(0.0), *join("a", 0.1, [0, 1, 2, 3], effective=effective(protocol="consumer")),
            consumer_line(0.3, f"Member {A_ID} joins the consumer group using the consumer protocol."),
            consumer_line(0.3, "Bumped group epoch to 1 with metadata hash 5.")]


A_ID, B_ID = "AAAAAAAAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBBBBBBBB"


def test_a_consumer_protocol_id_is_the_member_that_held_none_when_it_first_joined():
    """The coordinator names a by its client-drawn id: its leave later needs a's stop."""
    left = [consumer_line(10.0, f"Member {A_ID} left the consumer group."),
            consumer_line(10.0, "Bumped group epoch to 2 with metadata hash 5.")]
    v = judged([*consumer_run(), *left, run_end(20.0)])
    assert v.status == "invalid" and "a left the group while it ran on" in v.message, v.message
    v = judged([*consumer_run(), ev("member_stop", 9.9, "harness", member="a"), *left, member_exit("a", 10.1),
                run_end(20.0)])
    assert v.status == "valid" and v.measurements["rebalances"] == {"consumer": 1 + 1}, v.message


def test_a_new_id_while_every_running_member_holds_one_is_invalid():
    """a rejoins with a second id while its first is still in the group and no member started: no cause. The same
    line after b started is b's join."""
    again = [consumer_line(10.0, f"Member {B_ID} joins the consumer group using the consumer protocol."),
             consumer_line(10.0, "Bumped group epoch to 2 with metadata hash 5.")]
    v = judged([*consumer_run(), *again, run_end(20.0)])
    assert v.status == "invalid" and f"member id {B_ID} joined while every running member held an id" in v.message
    v = judged([*consumer_run(), *join("b", 9.5, effective=effective(protocol="consumer")), *again, run_end(20.0)])
    assert v.status == "valid", v.message


def test_a_metadata_change_needs_a_topic_that_grew_or_a_broker_event():
    bump = [consumer_line(10.0, "Computed new metadata hash: 7."),
            consumer_line(10.0, "Bumped group epoch to 2 with metadata hash 7.")]
    v = judged([*consumer_run(), *bump, run_end(20.0)])
    assert v.status == "invalid" and "no topic grew" in v.message, v.message
    v = judged([*consumer_run(), broker_event(9.0, 2, "stopped"), *bump, run_end(20.0)])
    assert v.status == "valid", v.message


def test_without_the_brokers_logs_it_is_unknown_and_on_the_fake_backend_skipped():
    h = history([e for e in classic_pair() if e["type"] != "broker"], run_end(20.0))
    v = rebalance_cause.check(h, settings())
    assert v.status == "unknown" and "the brokers' logs were not collected" in v.message, v.message
    v = judged([run_start(0.0, backend="fake"), *join("a", 0.1, [0, 1, 2, 3], effective=effective()), run_end(9.0)])
    assert v.status == "skipped" and "fake backend" in v.message


def test_an_epoch_that_applies_a_regex_refresh_logged_before_the_epoch_in_between_is_caused():
    """As CI's two-topics run on the consumer protocol logged it: b joins with a regex, the coordinator scans the
    topics (its executor logs the scan), c's join bumps epoch 2 and takes the scan line, then the scan's result is
    written as epoch 3 with no line of its own. Without the scan before epoch 2, epoch 3 has no cause."""
    regex = effective(protocol="consumer")
    scan = consumer_line(5.01, "Scanned 3 topics to refresh regular expressions [(^pay.*)] in 5ms.")
    lines = [*join("b", 4.9, effective=regex, subscription=["^pay.*"]), *join("c", 4.95, effective=regex),
             consumer_line(5.0, f"Member {B_ID} joins the consumer group using the consumer protocol."),
             scan, consumer_line(5.02, "Member CCCCCCCCCCCCCCCCCCCCCC joins the consumer group using the consumer "
                                       "protocol."),
             consumer_line(5.02, "Bumped group epoch to 2 with metadata hash 5."),
             consumer_line(5.3, "Bumped group epoch to 3 with metadata hash 8.")]
    v = judged([*consumer_run(), *lines, run_end(20.0)])
    assert v.status == "valid" and v.measurements["causes"]["unstated"] == 1, v.message
    v = judged([*consumer_run(), *[e for e in lines if e is not scan], run_end(20.0)])
    assert v.status == "invalid" and "no regex refresh was pending" in v.message, v.message


def test_a_regex_refresh_applied_two_epochs_after_the_one_that_took_its_line_is_caused():
    """As a CI run of the two-topic file on the consumer protocol logged it (kept below): b joins with a regex, the
    coordinator scans, then c's join bumps epoch 2 (taking the scan line) and d's join bumps epoch 3, and only then is
    the scan's result written as epoch 4, with no line. Epoch 4 is the scan's. Must fail: the scan line alone on an
    epoch of its own (it was applied there), or a second unstated epoch after the one that applied it."""
    regex = effective(protocol="consumer")
    scan = consumer_line(5.01, "Scanned 3 topics to refresh regular expressions [(^pay.*)] in 5ms.")
    joins = [*join("b", 4.9, effective=regex, subscription=["^pay.*"]), *join("c", 4.95, effective=regex),
             *join("d", 4.96, effective=regex),
             consumer_line(5.0, f"Member {B_ID} joins the consumer group using the consumer protocol."), scan,
             consumer_line(5.02, "Member CCCCCCCCCCCCCCCCCCCCCC joins the consumer group using the consumer protocol."),
             consumer_line(5.02, "Bumped group epoch to 2 with metadata hash 5."),
             consumer_line(5.03, "Member DDDDDDDDDDDDDDDDDDDDDD joins the consumer group using the consumer protocol."),
             consumer_line(5.03, "Bumped group epoch to 3 with metadata hash 8.")]
    applied = consumer_line(5.04, "Bumped group epoch to 4 with metadata hash 8.")
    v = judged([*consumer_run(), *joins, applied, run_end(20.0)])
    assert v.status == "valid" and v.measurements["causes"]["unstated"] == 1, v.message
    again = consumer_line(9.0, "Bumped group epoch to 5 with metadata hash 8.")
    v = judged([*consumer_run(), *joins, applied, again, run_end(20.0)])
    assert v.status == "invalid" and "started group epoch 5" in v.message, v.message
    assert "started group epoch 4" not in v.message, v.message
    own = [*join("b", 4.9, effective=regex, subscription=["^pay.*"]), *join("c", 4.95, effective=regex),
           consumer_line(5.0, f"Member {B_ID} joins the consumer group using the consumer protocol."),
           consumer_line(5.0, "Bumped group epoch to 2 with metadata hash 5."), scan,
           consumer_line(5.01, "Bumped group epoch to 3 with metadata hash 5."),
           consumer_line(5.02, "Member CCCCCCCCCCCCCCCCCCCCCC joins the consumer group using the consumer protocol."),
           consumer_line(5.02, "Bumped group epoch to 4 with metadata hash 8.")]
    v = judged([*consumer_run(), *own, consumer_line(5.04, "Bumped group epoch to 5 with metadata hash 8."),
                run_end(20.0)])
    assert v.status == "invalid" and "started group epoch 5" in v.message, v.message


def test_the_kept_run_whose_regex_refresh_was_applied_two_epochs_later_holds_every_verdict():
    # CI's run of the two-topic file through the plugin (consumer protocol, 2026-11-28): m3's regex scanned at 3.4 s,
    # m1's and m2's joins bumped epochs 2 and 3, the scan's result epoch 4 (no line); once judged uncaused
    assert kept_run_holds("regex-applied-two-epochs-later")["unstated"] == 1


def kept_run_holds(name: str) -> dict:
    """Judge the kept run fixtures/histories/<name>; assert every verdict holds; rebalance_cause's causes by kind."""
    from pathlib import Path

    from harness.invariants import judge
    from harness.record.history import History
    kept = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / name / "history"
    verdicts = judge(History.load(kept))
    assert all(v.status in ("valid", "skipped") for v in verdicts.values()), \
        {n: v.message for n, v in verdicts.items() if v.status not in ("valid", "skipped")}
    return verdicts["rebalance_cause"].measurements["causes"]


def test_a_scan_that_changed_nothing_gives_its_line_to_the_next_epoch_whose_cause_is_its_own():
    """As a loaded CI run logged it: b joined with a regex (first scan, epoch 3); ten seconds on the coordinator scans
    again (a topic was created somewhere in the cluster), finds the same topics and bumps nothing; a's subscription
    change then bumps epoch 4, logged with no reason (DEBUG), after the scan's line. Epoch 4 is a's subscription
    change. Without it nothing caused epoch 4: invalid. A second scan counting more topics than the first is the
    coordinator's image gaining one: a cause of the epoch that applies it."""
    regex = effective(protocol="consumer")
    first = [*join("b", 4.9, effective=regex, subscription=["^pay.*"]),
             consumer_line(5.0, f"Member {B_ID} joins the consumer group using the consumer protocol."),
             consumer_line(5.0, "Bumped group epoch to 2 with metadata hash 5."),
             consumer_line(5.2, "Scanned 3 topics to refresh regular expressions [(^pay.*)] in 5ms."),
             consumer_line(5.21, "Bumped group epoch to 3 with metadata hash 5.")]
    again = consumer_line(15.3, "Scanned 3 topics to refresh regular expressions [(^pay.*)] in 4ms.")
    change = ev("control", 16.0, "member", member="a", seq=1, subscription=["t", "u"])
    bump = consumer_line(16.1, "Bumped group epoch to 4 with metadata hash 9.")
    v = judged([*consumer_run(), *first, again, change, bump, run_end(30.0)])
    assert v.status == "valid", v.message
    v = judged([*consumer_run(), *first, again, bump, run_end(30.0)])
    assert v.status == "invalid" and "no member brought a new regex since the last refresh" in v.message, v.message
    grew = consumer_line(15.3, "Scanned 4 topics to refresh regular expressions [(^pay.*)] in 4ms.")
    v = judged([*consumer_run(), *first, grew, consumer_line(15.31, "Bumped group epoch to 4 with metadata hash 9."),
                run_end(30.0)])
    assert v.status == "valid", v.message


# -- a subscription changed by unsubscribe() then subscribe(): the member leaves the group and joins afresh

def resubscribe(m: str, asked: float, answered: float, fid: str = "f1") -> list[dict]:
    """The harness asks m to unsubscribe, then subscribe to u (its `subscription_change` fault from `asked`), and m
    answers with its `control` event at `answered`, once its client has left and subscribed again."""
    return [fault_start(asked, fid, kind="subscription_change", members=()) | {"targets": [m]},
            ev("control", answered, "member", member=m, seq=1, subscription=["u"], subscribe_by="unsubscribe-subscribe"),
            fault_end(answered + 0.01, fid)]


def test_an_unsubscribe_leave_and_the_join_after_it_are_caused_under_classic():
    """a unsubscribes (its LeaveGroup: generation 3), then subscribes and joins with a new id (generation 4). Its
    `control` event comes after both lines: it is written once the change is made; the change's fault brackets them."""
    lines = [leave(10.05, 2, f"a-{U1}"), adding(10.1, 3, f"a-{U3}")]
    v = judged([*classic_pair(), *resubscribe("a", 10.0, 10.2), *lines, run_end(20.0)])
    assert v.status == "valid", v.message
    assert v.measurements["causes"] == {"join": 3, "leave": 1}


def test_the_same_leave_and_join_with_no_subscription_change_are_invalid():
    v = judged([*classic_pair(), leave(10.05, 2, f"a-{U1}"), adding(10.1, 3, f"a-{U3}"), run_end(20.0)])
    assert v.status == "invalid" and "a left the group while it ran on" in v.message, v.message
    assert v.measurements["uncaused"] == 1  # the join after the leave is a member that held no id: caused


def test_a_subscription_control_asked_for_after_the_leave_is_no_cause_of_it():
    """The same lines, the change asked for only after them (its fault starting at 10.5 s): the leave came first."""
    lines = [leave(10.05, 2, f"a-{U1}"), adding(10.1, 3, f"a-{U3}")]
    v = judged([*classic_pair(), *lines, *resubscribe("a", 10.5, 10.6), run_end(20.0)])
    assert v.status == "invalid" and "a left the group while it ran on" in v.message, v.message


def test_after_the_unsubscribe_join_a_second_new_id_is_invalid():
    """a's join after its unsubscribe took the id a-U3; another new id while a-U3 is still in the group and nothing
    made a lose it is no join of that change."""
    lines = [leave(10.05, 2, f"a-{U1}"), adding(10.1, 3, f"a-{U3}"),
             adding(12.0, 4, "a-44444444-4444-4444-4444-444444444444")]
    v = judged([*classic_pair(), *resubscribe("a", 10.0, 10.2), *lines, run_end(20.0)])
    assert v.status == "invalid", v.message
    assert "a joined again (member id a-4444" in v.message and "nothing since made it lose" in v.message


def led(t: float, gen: int, mid: str) -> dict:
    return broker_said(t, f"[GroupCoordinator id=1 topic=__consumer_offsets partition=5] Assignment received from "
                          f"leader {mid} for group g for generation {gen}. The group has 2 members, 0 of which are static.")


def test_a_former_leaders_cached_metadata_rejoin_after_its_unsubscribe_is_caused():
    """A Java client keeps the metadata it took when it last led (generation 2) through an unsubscribe and subscribe:
    its first generation afterwards (4) done, it rejoins, `cached metadata has changed` (a clean clone's run). The
    change it rejoins for came before the previous generation, after the assignment it led."""
    lines = [led(0.5, 2, f"a-{U1}"), leave(10.05, 2, f"a-{U1}"), adding(10.1, 3, f"a-{U3}"),
             rejoin(11.0, 4, f"a-{U3}", "cached metadata has changed")]
    v = judged([*classic_pair(), *resubscribe("a", 10.0, 10.02), *lines, run_end(20.0)])
    assert v.status == "valid", v.message
    assert v.measurements["causes"] == {"join": 3, "leave": 1, "rejoin": 1}


def test_a_cached_metadata_rejoin_needs_a_change_since_the_member_last_led():
    """The same rejoin where a never led (b did), or where the change came before a's last assignment: no cause."""
    lines = [leave(10.05, 2, f"a-{U1}"), adding(10.1, 3, f"a-{U3}"),
             rejoin(11.0, 4, f"a-{U3}", "cached metadata has changed")]
    v = judged([*classic_pair(), led(0.5, 2, f"b-{U2}"), *resubscribe("a", 10.0, 10.02), *lines, run_end(20.0)])
    assert v.status == "invalid" and "a rejoined a stable group (cached metadata has changed)" in v.message, v.message
    v = judged([*classic_pair(), *resubscribe("a", 10.0, 10.02), *lines[:2], led(10.5, 3, f"a-{U3}"), lines[2],
                run_end(20.0)])
    assert v.status == "invalid" and "a rejoined a stable group" in v.message, v.message


def test_an_unsubscribe_leave_and_the_join_after_it_are_caused_under_the_consumer_protocol():
    """Under KIP-848 the client keeps its member id: it leaves (epoch -1) and joins again (epoch 0) with it."""
    lines = [consumer_line(10.05, f"Member {A_ID} left the consumer group."),
             consumer_line(10.05, "Bumped group epoch to 2 with metadata hash 5."),
             consumer_line(10.1, f"Member {A_ID} joins the consumer group using the consumer protocol."),
             consumer_line(10.1, "Bumped group epoch to 3 with metadata hash 6.")]
    v = judged([*consumer_run(), *resubscribe("a", 10.0, 10.2), *lines, run_end(20.0)])
    assert v.status == "valid", v.message
    assert v.measurements["causes"] == {"join": 2, "leave": 1}
    v = judged([*consumer_run(), *lines, run_end(20.0)])
    assert v.status == "invalid" and "a left the group while it ran on" in v.message, v.message


def test_a_metadata_change_while_partitions_are_being_added_is_caused_from_the_actions_start():
    """The partitions exist from the controller's commit, before CreatePartitions answers: a classic member that saw
    them and rejoined before the action's end (a real 100-member run: 0.15 s before it) rejoined for them."""
    grow = [ev("action_start", 9.0, "harness", action_id="a1", kind="add_partitions", params={"count": 8}),
            ev("action_end", 10.5, "harness", action_id="a1", kind="add_partitions", ok=True, error=None, topic="t",
               before=4, count=8)]
    rejoin = broker_said(10.0, "[GroupCoordinator id=1 topic=__consumer_offsets partition=5] Preparing to rebalance "
                               f"group g in state PreparingRebalance with old generation 2 (reason: Updating metadata "
                               f"for member a-{U1} during Stable; client reason: not provided).")
    v = judged([*classic_pair(), *grow, rejoin, run_end(20.0)])
    assert v.status == "valid", v.message
    v = judged([*classic_pair(), rejoin, run_end(20.0)])  # no partitions added: no cause
    assert v.status == "invalid" and "no subscription change, topic growth" in v.message, v.message


def test_a_second_member_noticing_added_partitions_at_its_own_refresh_is_caused_within_that_refresh():
    """Each classic member's client notices the new partition count at its own next metadata refresh: b rejoins for
    them after a's rejoin already started a generation. Caused within b's refresh interval (as given to its client,
    or the default 300 s), not beyond it."""
    grow = [ev("action_start", 9.0, "harness", action_id="a1", kind="add_partitions", params={"count": 8}),
            ev("action_end", 9.5, "harness", action_id="a1", kind="add_partitions", ok=True, error=None, topic="t",
               before=4, count=8)]

    def updating(t: float, gen: int, mid: str) -> dict:
        return preparing(t, gen, f"Updating metadata for member {mid} during Stable; client reason: not provided")

    def run(refresh_ms: str | None):
        evs = [*classic_pair(), *grow, updating(10.0, 2, f"a-{U1}"), updating(14.0, 3, f"b-{U2}"), run_end(20.0)]
        if refresh_ms is not None:
            for e in evs:
                if e["type"] == "started":
                    e["client_config"] = {"topic.metadata.refresh.interval.ms": refresh_ms}
        return judged(evs)

    assert run(None).status == "valid", run(None).message
    assert run("5000").status == "valid"
    v = run("2000")
    assert v.status == "invalid" and "b rejoined a stable group" in v.message and "refresh (2s)" in v.message, v.message


def loading(t: float, broker: int, epoch: int) -> dict:
    return broker_said(t, f"[GroupCoordinator id={broker}] Scheduling loading of metadata from __consumer_offsets-5 "
                          f"with epoch {epoch}", broker=broker)


def test_a_deposed_coordinators_epochs_are_not_the_groups():
    """The docker broker-partition run: broker 1, the coordinator, was cut off from 1 s to 9 s; broker 2 loaded the
    group's partition at leader epoch 1 at 8 s, and broker 1, not knowing, fenced a live member for its session at
    20 s (more than its 6 s session after the fault). Those lines are not the group's: valid, counted. The same line
    from broker 1 while it still led the partition is judged (invalid), and so is one of broker 2 after it took over."""
    fence = f"Member {A_ID} fenced from the group because the member session expired."
    gs = group_settings(0.05, broker={"group.consumer.session.timeout.ms": "6000",
                                      "group.consumer.heartbeat.interval.ms": "500"})
    run = [*consumer_run(), gs, loading(0.05, 1, 0), fault_start(1.0, "f1", ["a"], kind="broker_partition", brokers=[1]),
           loading(8.0, 2, 1), fault_end(9.0, "f1")]
    v = judged([*run, consumer_line(20.0, fence), consumer_line(20.0, "Bumped group epoch to 2 with metadata hash 5."),
                run_end(30.0)])
    assert v.status == "valid" and v.measurements["deposed"] == 1, v.message
    assert "deposed coordinator" in v.message and "broker 2 at 1" in v.message, v.message
    alone = [*consumer_run(), gs, loading(0.05, 1, 0), consumer_line(20.0, fence),
             consumer_line(20.0, "Bumped group epoch to 2 with metadata hash 5."), run_end(30.0)]
    v = judged(alone)
    assert v.status == "invalid" and "a was alive, untouched by any fault" in v.message, v.message
    taken = [*run, broker_said(20.0, f"[GroupCoordinator id=2 topic=__consumer_offsets partition=5] [GroupId g] {fence}",
                               broker=2),
             broker_said(20.0, "[GroupCoordinator id=2 topic=__consumer_offsets partition=5] [GroupId g] Bumped group "
                               "epoch to 2 with metadata hash 5.", broker=2), run_end(30.0)]
    v = judged(taken)
    assert v.status == "invalid" and v.measurements["deposed"] == 0, v.message


C_ID = "CCCCCCCCCCCCCCCCCCCCCC"


def watched(t: float, **ids: str) -> dict:
    """The group watch's answer listing each member with its consumer-protocol id."""
    return ev("group_assignment", t, "harness", group_type="consumer", state="unknown", asked_mono=t - 0.05,
              interval_s=0.5, longest_gap_s=None, error=None,
              members=[{"member": m, "consumer_id": i, "instance_id": None, "partitions": [], "target": []}
                       for m, i in ids.items()])


def fenced_in_transition(faulted: str, watch: bool, at: float = 24.0, kind: str = "error_response") -> list[dict]:
    """a and b start together (ids A and B, epochs 1 and 2), c joins at 5 s (epoch 3), a fault of `kind` touches
    `faulted` at `at` for 0.1 s, and the coordinator fences B at 25.5 s for not moving off epoch 2 within its 20 s
    (the group's session timeout 6 s, heartbeat interval 0.5 s)."""
    eff = effective(protocol="consumer", max_poll_ms=20000)
    gs = group_settings(0.05, broker={"group.consumer.session.timeout.ms": "6000",
                                      "group.consumer.heartbeat.interval.ms": "500"})
    return [run_start(0.0), gs, *join("a", 0.1, [0, 1], effective=eff), *join("b", 0.1, [2, 3], effective=eff),
            consumer_line(0.3, f"Member {A_ID} joins the consumer group using the consumer protocol."),
            consumer_line(0.3, "Bumped group epoch to 1 with metadata hash 5."),
            consumer_line(0.35, f"Member {B_ID} joins the consumer group using the consumer protocol."),
            consumer_line(0.35, "Bumped group epoch to 2 with metadata hash 5."),
            *([watched(1.0, a=A_ID, b=B_ID)] if watch else []),
            *join("c", 4.8, effective=eff),
            consumer_line(5.0, f"Member {C_ID} joins the consumer group using the consumer protocol."),
            consumer_line(5.0, "Bumped group epoch to 3 with metadata hash 5."),
            fault_start(at, "f1", [faulted], kind=kind), fault_end(at + 0.1, "f1"),
            consumer_line(25.5, f"Member {B_ID} fenced from the group because it failed to transition from epoch 2 "
                                f"within 20000ms."),
            consumer_line(25.5, "Bumped group epoch to 4 with metadata hash 5."), run_end(30.0)]


def test_a_consumer_protocol_id_the_group_watch_listed_is_that_member():
    """a and b joined together, so from the lines alone B may be either, and a's fault excuses B's fence. The group
    watch listed B with b: the fence is b's, and b was untouched (invalid, naming b alone); a fault on b causes it."""
    v = judged(fenced_in_transition("a", watch=False))
    assert v.status == "valid", v.message
    v = judged(fenced_in_transition("a", watch=True))
    assert v.status == "invalid" and "b was alive, untouched by any fault" in v.message, v.message
    assert "may be any of" not in v.message and "a was alive" not in v.message, v.message
    assert "rebalance timeout 20s, max.poll.interval.ms of its client as it started" in v.message, v.message
    v = judged(fenced_in_transition("b", watch=True))
    assert v.status == "valid", v.message


def test_a_request_fault_that_ended_a_session_and_a_heartbeat_before_the_fence_does_not_cause_it():
    """b's request fault at 6.0-6.1 s, the fence at 25.5 s: after a lost or refused answer a client sends a full
    heartbeat and is given its assignment again (KIP-848), and b, never expired, heartbeated within its 6 s session:
    from 12.6 s on it could have known what to revoke (invalid, naming the fault and the group's timings). A request
    fault ending within 6.5 s of the fence (19.0 s) may have kept it from learning; a fault of another kind may too."""
    v = judged(fenced_in_transition("b", watch=True, at=6.0))
    assert v.status == "invalid", v.message
    assert "b was alive, polling and not told to wait in its revoke handler" in v.message, v.message
    assert "the last request fault on it ended at 6.1s, more than its session timeout 6s and heartbeat interval " \
           "0.5s" in v.message, v.message
    assert "consumer.session.timeout.ms=6000" in v.message, v.message
    assert judged(fenced_in_transition("b", watch=True, at=19.0)).status == "valid"
    assert judged(fenced_in_transition("b", watch=True, at=6.0, kind="network_blackhole")).status == "valid"


def test_the_kept_run_whose_former_leader_rejoined_for_its_cached_metadata_holds_every_verdict():
    # a run of the unsubscribe-subscribe example (Java member, classic-cooperative; 2026-11-28, two at a time beside a
    # CPU hog): m2 led generations 1-2, unsubscribed and subscribed to payments (16.9 s), joined generation 3 as a
    # follower, then rejoined with `cached metadata has changed` (18.0 s); once judged a rebalance without a cause
    assert kept_run_holds("former-leader-cached-metadata")["rejoin"] == 1


def test_a_downgrade_to_classic_needs_a_member_departing():
    """Kafka 4.4.0's line when the last consumer-protocol member of a consumer group departs and the group becomes a
    classic one (seen in `harness matrix`, protocol-downgrade): the member is not named; a departure since the
    previous generation is its cause."""
    down = preparing(10.0, 2, "Downgrade group g from consumer to classic for member leaving.")
    v = judged([*classic_pair(), down, run_end(20.0)])
    assert v.status == "invalid", v.message
    assert "converted the group to the classic protocol for a member departing (leaving)" in v.message
    stop = ev("member_stop", 9.9, "harness", member="a")
    v = judged([*classic_pair(), stop, stopped("a", 10.0), down, member_exit("a", 10.2), run_end(20.0)])
    assert v.status == "valid", v.message
    assert v.measurements["causes"] == {"join": 2, "downgrade": 1}


def test_a_member_that_lost_its_membership_may_join_again_with_a_new_id_while_its_old_one_lingers():
    """A classic member in a consumer group whose coordinator moved lost its partitions, then joined with no id: the
    coordinator named a new one (not its client's) while its old id was still in the group until it expired (seen in
    `harness matrix`, protocol-migration-coordinator, Kafka 4.4.0). Its `lost` is the cause; without it the new id
    is still a join with no cause (the twin above)."""
    again = [consumer_line(10.0, f"Member {B_ID} joins the consumer group using the classic protocol."),
             consumer_line(10.0, "Bumped group epoch to 2 with metadata hash 5.")]
    v = judged([*consumer_run(), lost("a", 9.0, [0, 1, 2, 3]), *again, run_end(20.0)])
    assert v.status == "valid", v.message
    v = judged([*consumer_run(), *again, run_end(20.0)])
    assert v.status == "invalid" and f"member id {B_ID} joined while every running member held an id" in v.message
