"""Two real random-mix histories under the consumer protocol, trimmed: what KIP-848 promises a static member.

Both are `harness run random-mix --repeat 20 --seed 1 --protocol consumer` (Kafka 4.4.0, confluent-kafka 2.16.1,
local backend, group heartbeat 0.5 s), every event but the per-record ones, with the group coordinator's log lines.

`random-mix-consumer-static-kill.jsonl` (run 2, seed 577090037, group session timeout 20 s) failed
static_membership: static member s1 (m11) was SIGKILLed and its replacement m12 started 2.0 s later "was never
given its partitions back". Under the consumer protocol it cannot be: the coordinator hands a static member's
assignment to a new instance only when the old one left with epoch -2; until the old member's session expires the
new one is refused with UNRELEASED_INSTANCE_ID (broker 3: "Static member ... cannot join the group because the
instance id is owned by member ..."), which librdkafka raises as a fatal error (m12's `error`, then its exit). The
partitions went to m10 when the old member's session expired, 20.0 s after the kill. The checker now judges such a
kill as an expulsion: nothing moves before the session timeout, and everything after it.

`random-mix-consumer-static-leaves.jsonl` (run 9, seed 1630434966, group session timeouts 6 s then 10 s) failed
static_membership and bounded_migrations, both on static members stopped gracefully by a non-static settings roll:
- "partition 2 of static member s1 (m8) was given to m12 9.4 s after it left, before its session timeout (10 s
  less a 0.5 s heartbeat)": the coordinator times the session from the member's last heartbeat, which comes before
  its "temporarily left" heartbeat (epoch -2) at the start of its shutdown, 0.8 s before its exit; the bound now
  runs from the shutdown's start (m8's member_stop);
- "partition 5 moved from m8 to m11 although m8 stayed": the departed static member m7 stays in the group with its
  assignment until its session timeout runs out, so the newcomer m11 was balanced against it and m8 had to give
  one partition up; the static member is now a phantom of that transition, as a killed member is.

The must-fail twins: the replacement given the killed member's partitions before the expiry; a partition of a
leaving static member given away 1 s earlier than its session allows; the same roll had its members been dynamic
(no phantom, the move is one too many).
"""
from __future__ import annotations

import json
from pathlib import Path

from harness.record.history import History
from harness.invariants import judge

HERE = Path(__file__).resolve().parents[2] / "fixtures" / "histories"
KILL = HERE / "random-mix-consumer-static-kill.jsonl"
LEAVES = HERE / "random-mix-consumer-static-leaves.jsonl"
#: the checkers of the per-record events, which the fixtures leave out
PER_RECORD = ("record_integrity", "commit_progress")
#: the checkers of the assignment's shape, which need the brokers' group.consumer.assignors: the fixtures were
#: recorded before the runs wrote it, so these say unknown on them (the assignor in force cannot be told)
BEFORE_ASSIGNORS = ("assignor_shape", "strict_stickiness")
#: recorded before the coordinator's assignment was (`group_assignment`): unknown, never a pass
BEFORE_WATCH = ("coordinator_claims",)


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def verdicts(evs: list[dict]):
    return judge(History.from_events(evs))


def first(evs: list[dict], type_: str, member: str) -> dict:
    return next(e for e in evs if e["type"] == type_ and e.get("member") == member)


def test_a_static_member_killed_under_the_consumer_protocol_keeps_its_partitions_until_its_session_expires():
    v = verdicts(events(KILL))
    s = v["static_membership"]
    assert s.status == "valid", s.message
    assert s.measurements["held_until_expiry"] == 1
    assert "cannot join the group because the instance id is owned by member" in s.message  # the broker's refusal
    assert "m12" in s.message
    assert all(v[k].status in ("unknown", "skipped") for k in BEFORE_ASSIGNORS)
    assert v["coordinator_claims"].status == "unknown" and "not recorded" in v["coordinator_claims"].message
    judged = {k: x for k, x in v.items() if k not in PER_RECORD + BEFORE_ASSIGNORS + BEFORE_WATCH}
    assert all(x.status in ("valid", "skipped") for x in judged.values()), {
        k: x.message for k, x in judged.items() if x.status not in ("valid", "skipped")}


def test_the_new_instance_given_the_partitions_before_the_expiry_is_invalid():
    """Had the coordinator given m12 what m11 held 1 s after it started (before the old member's session ran out),
    it would have broken KIP-848's rule: the instance id was not released."""
    evs = events(KILL)
    kill = next(e for e in evs if e["type"] == "member_exit" and e["member"] == "m11")
    tps = next(e for e in evs if e["type"] == "assigned" and e["member"] == "m10" and e["mono"] > kill["mono"])
    start = first(evs, "member_start", "m12")
    early = dict(tps, member="m12", mono=start["mono"] + 1.0, source="member")
    s = verdicts(evs + [early])["static_membership"]
    assert s.status == "invalid", s.message
    assert "was given to m12" in s.message and "before its session timeout" in s.message


def test_static_members_leaving_gracefully_are_judged_from_their_shutdown_and_balanced_against():
    v = verdicts(events(LEAVES))
    for name in ("static_membership", "bounded_migrations"):
        assert v[name].status == "valid", v[name].message
    assert v["static_membership"].measurements["late_restarts"] == 3
    rows = v["bounded_migrations"].measurements["per_transition"]
    assert sum(r["phantoms"] for r in rows) >= 2 and all(r["moves"] <= r["min_moves"] for r in rows)


def test_a_leaving_static_members_partition_given_away_early_is_invalid():
    """m8's partition 2 went to m12 9.4 s after its exit (10.2 s after its member_stop): 1.0 s earlier is 0.7 s
    before its shutdown's start + 10 s - 0.5 s."""
    evs = events(LEAVES)
    stop = next(e for e in evs if e["type"] == "member_stop" and e["member"] == "m8" and e["mono"] > 16140)
    given = next(e for e in evs if e["type"] == "assigned" and e["member"] == "m12" and [e["partitions"][0][0], 2]
                 in e["partitions"])
    evs = [dict(e, mono=e["mono"] - 1.0) if e is given else e for e in evs]
    s = verdicts(evs)["static_membership"]
    assert s.status == "invalid", s.message
    assert "given to m12" in s.message and "after its shutdown began" in s.message
    assert given["mono"] - 1.0 < stop["mono"] + 10.0 - 0.5


def test_the_same_roll_of_dynamic_members_moves_one_partition_too_many():
    """Without instance ids the members that left are gone at their exit: nobody holds their partitions for a
    session timeout, the newcomer could have taken them, and moving m8's partition 5 to m11 is one move too many."""
    evs = [dict(e, instance_id=None) if e.get("instance_id") else e for e in events(LEAVES)]
    evs = [dict(e, effective=dict(e["effective"], **{"group.instance.id": None}))
           if e["type"] == "started" and isinstance(e.get("effective"), dict) else e for e in evs]
    b = verdicts(evs)["bounded_migrations"]
    assert b.status == "invalid", b.message
    assert "moved from m8 to m11" in " ".join(w.get("why", "") for w in b.witnesses)
