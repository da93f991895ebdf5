"""A known finding excuses only what its marks explain (issue 45, "Findings excuse only what they explain"): every
witness a checker found, not the first MAX_WITNESSES it keeps; nothing by its time alone; never a team's program.

The run is tests/unit/livelock_history.py's: the livelock's mark is m2 on t-0 from 8.0, while m3 is given t-0 at 9.5.
"""
from __future__ import annotations

import json

from harness.findings.evidence import commits_refused_unheard
from harness.findings.registry import known, near_misses
from harness.invariants.core import MAX_WITNESSES, verdict
from harness.record.rundir import RUN_JSON
from tests.unit.livelock_history import events, livelock_verdicts, write_run

LIVELOCK = "librdkafka-848-commit-starves-heartbeat"


def _inside(run) -> dict:
    """m3's assignment of the zombie's partition: a witness inside the mark."""
    return {**next(e for e in events(run, "m3") if e["type"] == "assigned"), "why": "m3 assigned t-0 while m2 held it"}


def _elsewhere() -> dict:
    """m1's assignment of its own partition at 2.0: before the mark, on another member and partition."""
    return {"type": "assigned", "mono": 2.0, "member": "m1", "partitions": [["t", 1]], "why": "m1 held t-1"}


def _with(run, **verdicts) -> dict:
    return {**livelock_verdicts(run), **verdicts}


def test_every_witness_found_is_held_against_the_marks_not_the_first_twelve(tmp_path):
    run = write_run(tmp_path / "run", refused_s=8.0)
    inside = _inside(run)
    # must pass: as many witnesses as the verdict keeps, each inside the mark, and it says it found no more
    full = verdict("exclusive_ownership", "invalid", "zombie", [inside] * MAX_WITNESSES, found=MAX_WITNESSES)
    assert full.found == MAX_WITNESSES and full.to_dict()["witnesses_found"] == MAX_WITNESSES
    assert known(run, _with(run, exclusive_ownership=full)).finding.id == LIVELOCK
    assert known(run, _with(run, exclusive_ownership=full.to_dict())).finding.id == LIVELOCK  # as verdicts.json
    # must fail: 13 found, only the 13th outside the mark; the verdict keeps the first 12, all of them inside
    cut = verdict("exclusive_ownership", "invalid", "zombie", [inside] * MAX_WITNESSES + [_elsewhere()])
    assert len(cut.witnesses) == MAX_WITNESSES and cut.found == MAX_WITNESSES + 1
    for v in (cut, cut.to_dict()):
        assert known(run, _with(run, exclusive_ownership=v)) is None
        assert any("exclusive_ownership found 13 witnesses and keeps 12: 1 were not kept" in m
                   for m in near_misses(run, _with(run, exclusive_ownership=v)))


def test_a_verdict_keeping_twelve_without_saying_how_many_it_found_is_not_excused(tmp_path):
    # a checker that cut its own list to MAX_WITNESSES before `verdict` may have found more: not known, not excused
    run = write_run(tmp_path / "run", refused_s=8.0)
    v = verdict("exclusive_ownership", "invalid", "zombie", [_inside(run)] * MAX_WITNESSES)
    assert v.found is None and "witnesses_found" not in v.to_dict()
    assert known(run, _with(run, exclusive_ownership=v)) is None
    assert any("does not say how many it found" in m for m in near_misses(run, _with(run, exclusive_ownership=v)))
    # fewer than that, all inside: every one was seen
    assert known(run, _with(run, exclusive_ownership=verdict("exclusive_ownership", "invalid", "zombie",
                                                              [_inside(run)] * 3))).finding.id == LIVELOCK


def test_a_witness_naming_no_member_partition_or_record_is_not_inside_by_its_time(tmp_path):
    run = write_run(tmp_path / "run", refused_s=8.0)
    (mark,) = commits_refused_unheard(run)
    at = (mark.start + mark.end) / 2  # well inside the mark's window
    for alone in ({"type": "wait_timeout", "mono": at, "what": "final", "why": "the runner gave up waiting"},
                  {"type": "fault_start", "mono": at, "fault_id": "other", "kind": "pause", "why": "a disturbance"},
                  {"type": "broker", "mono": at, "broker": 1, "message": "Member x fenced", "why": "fenced"}):
        v = verdict("convergence_balance", "invalid", "never converged", [alone])
        assert known(run, _with(run, convergence_balance=v)) is None, alone
        assert any("convergence_balance's witness" in m for m in near_misses(run, _with(run, convergence_balance=v)))
    # must pass: the end of a fault that struck m2 (f1: the broker partition, its members_affected name m2)
    heal = {"type": "fault_end", "mono": 9.0, "fault_id": "f1", "why": "the last disturbance"}
    assert known(run, _with(run, convergence_balance=verdict("convergence_balance", "invalid", "x", [heal])))


def test_a_brokers_line_naming_the_struck_member_by_its_group_id_is_that_members(tmp_path):
    line = {"type": "broker", "mono": 9.2, "broker": 1, "message": "Member abc/123 fenced from the group", "why": "x"}
    ids = {"type": "group_assignment", "mono": 3.0, "members": [
        {"member": "m2", "consumer_id": "abc/123", "partitions": [["t", 0]]},
        {"member": "m1", "consumer_id": "def/456", "partitions": [["t", 1]]}]}
    run = write_run(tmp_path / "m2", refused_s=8.0, control=(ids,))
    assert known(run, _with(run, convergence_balance=verdict("convergence_balance", "invalid", "x", [line])))
    other = write_run(tmp_path / "m1", refused_s=8.0, control=({**ids, "members": [
        {"member": "m1", "consumer_id": "abc/123"}]},))
    assert known(other, _with(other, convergence_balance=verdict("convergence_balance", "invalid", "x", [line]))) \
        is None


def _team(run, **cfg) -> None:
    meta = json.loads((run / RUN_JSON).read_text())
    meta["config"].update(cfg)
    (run / RUN_JSON).write_text(json.dumps(meta))


def test_a_teams_own_program_is_never_excused_as_a_clients_bug(tmp_path):
    run = write_run(tmp_path / "builtin", refused_s=8.0)
    assert known(run, livelock_verdicts(run)).finding.id == LIVELOCK  # must pass: the harness's member
    for name, cfg in (("every", {"member_command": ["./my-consumer"]}),
                      ("slot", {"slot_commands": [[1, ["./my-consumer"]]]})):
        run = write_run(tmp_path / name, refused_s=8.0)
        _team(run, **cfg)
        assert known(run, livelock_verdicts(run)) is None
        why = near_misses(run, livelock_verdicts(run))
        assert any(m.startswith(f"not {LIVELOCK}: ") and "team's own program" in m for m in why), why
    assert "slot 1" in why[0]


def test_a_teams_program_beside_the_struck_members_leaves_their_failure_excused(tmp_path):
    """A clean clone's two-topics test (slot 2 runs the team's program, m3): the client's members m1 and m2 met the
    finding; no witness names the program's member, so the finding holds for them. A witness naming the program's
    member (its `member_start` names its `program`) keeps the run unexcused."""
    for member, excused in (("m1", True), ("m2", False)):
        start = {"type": "member_start", "mono": 1.0, "member": member, "pid": 7, "instance_id": None, "rack": None,
                 "program": ["./my-consumer"]}
        run = write_run(tmp_path / member, refused_s=8.0, control=(start,))
        _team(run, slot_commands=[[int(member[1:]) - 1, ["./my-consumer"]]])
        assert (known(run, livelock_verdicts(run)) is not None) is excused, near_misses(run, livelock_verdicts(run))
    assert any("team's own program (slot_commands: slot 1)" in m for m in near_misses(run, livelock_verdicts(run)))


def test_a_member_whose_history_names_no_client_is_not_read_for_the_marks(tmp_path):
    # a team's program (or a start never written) says nothing of its client: no librdkafka bug is read into it
    for drop, marked in ((None, 1), ("client", 0)):  # the same file rewritten: with its client, then without
        run = write_run(tmp_path / str(drop), refused_s=8.0)
        path = run / "history" / "member-m2.jsonl"
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        path.write_text("".join(json.dumps({k: v for k, v in e.items() if k != drop}) + "\n" for e in lines))
        assert len(commits_refused_unheard(run)) == marked
        assert (known(run, livelock_verdicts(run)) is not None) == bool(marked)


def test_a_checker_that_counts_more_problems_than_it_shows_is_not_excused(tmp_path):
    # commit_progress cuts its stalls to a few before `verdict` and counts them all in `stalls`
    run = write_run(tmp_path / "run", refused_s=8.0)
    batch = {"type": "processed", "mono": 9.9, "member": "m2", "topic": "t", "partition": 0, "first_offset": 5,
             "last_offset": 5, "count": 1, "why": "never committed"}
    for stalls, excused in ((1, True), (2, False)):
        v = verdict("commit_progress", "invalid", "m2 did not commit", [batch], {"stalls": stalls})
        assert (known(run, _with(run, commit_progress=v)) is not None) is excused
    why = near_misses(run, _with(run, commit_progress=v))
    assert any("commit_progress counts 2 stalls and shows 1" in m for m in why), why
    # a pair's first stall standing for its stalled events (`stalls`, up to `until_mono`): all of them inside the marks
    # excuse, one of them past the window does not
    for until, excused in ((9.95, True), (1e6, False)):
        grouped = {**batch, "stalls": 2, "until_mono": until}
        v = verdict("commit_progress", "invalid", "m2 did not commit", [grouped], {"stalls": 2})
        assert (known(run, _with(run, commit_progress=v)) is not None) is excused, until


def test_the_coordinators_answers_showing_the_zombies_holding_are_the_livelock_too(tmp_path):
    """The matrix's livelock-commit-starves-heartbeat (consumer protocol, Kafka 4.4.0, confluent-kafka 2.16.1) failed
    coordinator_claims besides the finding's invariants: the coordinator's answers no longer listed the partition for
    the zombie while it held it. Its witness, the zombie's holding inside the mark, is the finding's; one on another
    member outside the mark keeps the run unexcused."""
    run = write_run(tmp_path / "run", refused_s=8.0)
    held = next(e for e in events(run, "m2") if e["type"] == "assigned")
    claims = verdict("coordinator_claims", "invalid", "m2 held partition 0 past the coordinator's revocation",
                     [{**held, "why": "m2 held partition 0"}, _inside(run)])
    assert known(run, _with(run, coordinator_claims=claims)).finding.id == LIVELOCK
    other = verdict("coordinator_claims", "invalid", "m1 held partition 1", [_elsewhere()])
    assert known(run, _with(run, coordinator_claims=other)) is None
