"""A real broker-partition history, trimmed: a member cut off with its coordinator is a zombie, not an owner in
good standing (docs/findings.md, "broker-partition: the checker was wrong").

The fixture is `harness run broker-partition --protocol classic-cooperative --seed 4 --client-set debug=cgrp`
(Kafka 4.4.0, confluent-kafka 2.16.1, docker backend), times shifted so that the partition starts at 100.0; kept:
every ownership, member and harness event, the `processed` and `committed` events of partitions 2 and 5 around the
fault, and the brokers' lines that tell the story. Broker 3 coordinated the group and was cut off the quorum at
100.0 until 116.394. Broker 1 took over __consumer_offsets-4 (108.9), loaded the group with its three members and,
as m3 never heartbeated it, expired m3 (115.048). m1 and m2 had moved there and were given every partition,
m3's partition 2 to m1 (116.538). m3 had stayed with the cut-off broker: librdkafka timed its session out locally
at 105.8 (SESSTMOUT, its assignment LOST), but its synchronous commit of 100.171 kept the member's poll loop
blocked until the cut-off broker unloaded the group after the heal (118.2) and the commit failed with
UNKNOWN_MEMBER_ID (118.250); only then did the member learn, and write, `lost`. The harness recorded the fault
with no member affected, so exclusive_ownership read m3 as holding partition 2 in good standing when m1 was
given it (and partition 5 when m2 was), and failed. Recorded as the harness now does (every live member
affected), m3 is a zombie of both for 1.71 s that processed nothing and whose commit was fenced.
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.record.history import History
from harness.invariants import exclusive, judge
from harness.invariants.core import CheckSettings

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "broker-partition-zombie.jsonl"


def events() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]


def as_before_the_fix(evs: list[dict]) -> list[dict]:
    """The same run as the harness recorded it before: the fault names no member."""
    return [{**e, "members_affected": []} if e["type"] == "fault_start" else e for e in evs]


def settings_of(evs: list[dict]) -> CheckSettings:
    return CheckSettings.from_dict(next(e for e in evs if e["type"] == "run_start")["settings"])


#: the members' timings of this run, which neither its members' starts nor its run_start recorded (the harness of
#: 65f3ec9 wrote no `effective` and no heartbeat_interval_s): the runner's heartbeat.interval.ms then
#: (harness/plan.py:72 at 65f3ec9, 0.5 s) and the clients' max.poll.interval.ms, which it did not set (300 s)
THEN = {"heartbeat_interval_s": 0.5, "max_poll_interval_s": 300.0}


def with_timings(evs: list[dict]) -> list[dict]:
    """The run with its members' timings in its run_start, as the harness records them now."""
    return [{**e, "settings": {**e["settings"], **THEN}} if e["type"] == "run_start" else e for e in evs]


def test_as_kept_the_timings_it_lacks_make_the_zombie_tolerance_unknown():
    # judged with the checkers' defaults before (issue 45): the history holds no heartbeat interval of any member
    v = judge(History.from_events(events()))["exclusive_ownership"]
    assert v.status == "unknown", v.message
    assert "heartbeat.interval.ms" in v.message and "run_start.settings records no heartbeat_interval_s" in v.message


def test_the_fault_names_every_member_and_the_tolerance_covers_the_partition():
    evs = with_timings(events())
    fault = next(e for e in evs if e["type"] == "fault_start")
    assert fault["kind"] == "broker_partition" and fault["members_affected"] == ["m1", "m2", "m3"]
    v = exclusive.check(History.from_events(evs), settings_of(evs))
    # the partition's recorded span on m3 (from its taint), then the reconnect and m3's own detection
    assert v.measurements["zombie_tolerance_s"] > 16.4 + 36.0  # the partition lasted 16.394 s


def test_a_member_cut_off_with_its_coordinator_is_a_zombie_within_tolerance():
    evs = with_timings(events())
    v = judge(History.from_events(evs))["exclusive_ownership"]
    assert v.status == "valid", v.message
    m = v.measurements
    assert m["zombie_pairs"] == 2 and abs(m["max_zombie_window_s"] - 1.712) < 0.01
    assert m["zombie_commits_after_reassign"] == 0 and m["zombie_batches_after_reassign"] == 0
    assert m["double_assignments"] == 0


def test_recorded_as_before_it_was_judged_a_double_assignment():
    """What the run said before the fix: the verdict the finding was about."""
    evs = as_before_the_fix(events())
    v = exclusive.check(History.from_events(evs), settings_of(evs))
    assert v.status == "invalid"
    assert v.message.startswith("partition 2 assigned to m1 at 28.6s while m3 held it in good standing")


def test_a_zombie_commit_taking_effect_would_still_fail():
    """The check keeps its teeth: had the cut-off coordinator acknowledged m3's commit of partition 2 after m1
    was given it, that would be a violation whatever the tolerance."""
    evs = with_timings(events())
    fenced = next(e for e in evs if e["type"] == "committed" and e["member"] == "m3" and not e["ok"])
    assert fenced["error"].startswith("KafkaError{code=UNKNOWN_MEMBER_ID")
    taken = {**fenced, "ok": True, "error": None, "requested_mono": 117.0}
    evs = [taken if e is fenced else e for e in evs]
    v = exclusive.check(History.from_events(evs), settings_of(evs))
    assert v.status == "invalid" and "zombie m3 committed partition 2" in v.message
