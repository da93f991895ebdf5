"""Verify: members that join one after another under the consumer protocol are judged by the fewest moves summed
over the coordinator's targets, each sticky to the one before (KIP-848's uniform assignor).

Setup: the kept run fixtures/histories/scale-group-consumer-joins-one-by-one (matrix cell newest-scale-group-consumer:
Kafka 4.4.0, confluent-kafka 2.16.1, four members on 12 partitions, seven joiners m5..m11 from 8.4 s to 11.8 s; the
coordinator bumped epochs 6..12, one per join, and computed targets for 6, 7, 9, 11 and 12). Then: every verdict
holds (bounded_migrations failed it before, "at 13.5s 8 partitions moved where 7 would reach balance": the fewest
summed over the five targets, 4 -> 5 -> 6 -> 8 -> 10 -> 11 members, is 2+2+2+2+1 = 9); its twin without the
coordinator's lines of the joins but the last (the cause absent, the moves the same) still fails; hand-made twins: one
join with one extra move fails, and several joins with a move to a member that was there before fails.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from histbuild import assigned, broker_said, history, join, revoked, run_end, run_start, settings

from harness.invariants import epoch_steps, judge, migrations
from harness.record.history import History

KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "scale-group-consumer-joins-one-by-one"


def test_the_kept_joins_one_by_one_hold_every_verdict():
    v = judge(History.load(KEPT / "history"))
    assert all(x.status in ("valid", "skipped") for x in v.values()), \
        {n: x.message for n, x in v.items() if x.status not in ("valid", "skipped")}
    bm = v["bounded_migrations"]
    assert "1 judged by the fewest summed over the coordinator's targets" in bm.message
    row = next(r for r in bm.measurements["per_transition"] if "targets" in r)
    assert (row["moves"], row["min_moves"], row["targets"], row["targets_min_moves"]) == (8, 7, 5, 9)


def test_the_same_moves_without_the_coordinators_joins_fail(tmp_path):
    copy = tmp_path / "history"
    shutil.copytree(KEPT / "history", copy)
    f = copy / "brokers.jsonl"
    out = []
    for line in f.read_text().splitlines():
        msg = json.loads(line).get("message", "")
        if any(f"epoch to {n} " in msg or f"for epoch {n} " in msg for n in range(6, 12)):
            continue  # epochs 6..11 unsaid: the last join's bump alone, one target
        out.append(line)
    f.write_text("\n".join(out) + "\n")
    bm = judge(History.load(copy))["bounded_migrations"]
    assert bm.status == "invalid" and "8 partitions moved where 7 would reach balance (slack 0)" in bm.message


G = "g"


def _said(t: float, epoch: int, computed: bool = True) -> list[dict]:
    """A join the coordinator logged at t, its epoch bump and (when `computed`) its target."""
    out = [broker_said(t, f"[GroupId {G}] Member id{epoch} joins the consumer group using the consumer protocol."),
           broker_said(t + 0.01, f"[GroupId {G}] Bumped group epoch to {epoch} with metadata hash 5.")]
    if computed:
        out.append(broker_said(t + 0.02, f"[GroupId {G}] Computed a new target assignment for epoch {epoch} with "
                                         "'uniform' assignor in 0ms."))
    return out


def _run(final: dict[str, list[int]], joins: int = 2) -> list[dict]:
    """a:[0,1,2] b:[3,4,5] on the consumer protocol; c joins at 5 s (and d at 6.2 s when `joins` is 2), logged
    by the coordinator; a and b give up what they no longer hold in `final` at 6 s, the joiners get theirs at 7 s."""
    evs = [run_start(0.0), *join("a", 0.1, [0, 1, 2]), *join("b", 0.2, [3, 4, 5]), *join("c", 5.0), *_said(5.05, 2)]
    if joins == 2:
        evs += [*join("d", 6.2), *_said(6.3, 3)]
    for x, held in (("a", [0, 1, 2]), ("b", [3, 4, 5])):
        evs.append(revoked(x, 6.0, [p for p in held if p not in final[x]]))
        if got := [p for p in final[x] if p not in held]:
            evs.append(assigned(x, 7.0, got))
    evs += [assigned(x, 7.0, ps) for x, ps in final.items() if x not in ("a", "b")]
    evs = [{**e, "protocol": "consumer"} if e["type"] == "started" else e for e in evs]
    return [*evs, run_end(20.0)]


def _check(evs):
    return migrations.check(history(evs), settings(partitions=6, protocol="consumer"))


def test_two_joins_judged_by_the_fewest_summed_over_two_targets():
    # the first target gives c [2, 5] (a and b over 2); the second gives d one of a's (a, b and c hold 2; quota 2, 2, 1,
    # 1): 3 moves of a's and b's, where the net change 2 -> 4 members needs 2
    v = _check(_run({"a": [0], "b": [3, 4], "c": [2, 5], "d": [1]}))
    assert v.status == "valid", v.message
    row = v.measurements["per_transition"][-1]
    assert (row["moves"], row["min_moves"], row["targets"], row["targets_min_moves"]) == (3, 2, 2, 3)


def test_one_join_with_one_extra_move_fails():
    v = _check(_run({"a": [0], "b": [3, 4], "c": [1, 2, 5]}, joins=1))
    assert v.status == "invalid" and "3 partitions moved where 2 would reach balance (slack 0)" in v.message, v.message


def test_several_joins_with_a_move_to_a_member_there_before_fail():
    # as many moves as the two targets allow, but b's 5 went to a: no join takes a partition to a member that was there
    v = _check(_run({"a": [0, 5], "b": [3, 4], "c": [2], "d": [1]}))
    assert v.status == "invalid" and "3 partitions moved where 2 would reach balance (slack 0)" in v.message, v.message


def test_more_moves_than_the_targets_summed_fail():
    v = _check(_run({"a": [0], "b": [3], "c": [2, 5], "d": [1, 4]}))
    assert v.status == "invalid", v.message
    assert "4 partitions moved where 2 would reach balance and at most 3 summed over 2 targets" in v.message


def test_the_targets_read_fold_a_bump_with_no_target_into_the_next():
    evs = [run_start(0.0), *join("a", 0.1, [0]), *_said(1.0, 2, computed=False), *_said(2.0, 3), *_said(3.0, 4),
           run_end(9.0)]
    assert epoch_steps.targets(history(evs), 0.5, 5.0) == [(3, 2), (4, 1)]
    leave = broker_said(4.0, f"[GroupId {G}] Member id9 left the consumer group.")
    bump = broker_said(4.01, f"[GroupId {G}] Bumped group epoch to 5 with metadata hash 5.")
    assert epoch_steps.targets(history([*evs, leave, bump]), 0.5, 5.0) is None  # a leave: not joins alone
