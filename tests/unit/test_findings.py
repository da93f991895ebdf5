"""Known findings (harness/findings/registry.py, docs/findings.md): which failing runs they excuse (only those whose failing
witnesses lie inside the bug's marks in the history, in the finding's scenario by identity), and nightly() marking
such a run with its expected rate instead of shrinking it."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness.findings.registry import KNOWN, REASON, known, near_misses
from harness.findings.evidence import (batch_skipped_at_rebalance, commits_refused_unheard, full_assignment_unrevoked,
                                       illegal_generation_lost, records_before_assigned)
from harness.invariants.brokers import BROKER_CONTEXT
from harness.invariants.core import Verdict
from harness.drive.nightly import nightly
from harness.plan.config import config_dict
from harness.record.format import read_file
from harness.record.rundir import RunResult
from harness.plan.scenarios import builtin_text
from tests.unit.findings_histories import (batch_skip_run, commit_race_run, commit_race_verdicts,
                                           eager_callbacks_run, lost_records, records_before_callback_run, write_meta)
from tests.unit.livelock_history import events, livelock_verdicts, write_run

BATCH_SKIP = "librdkafka-2.0-batch-skip"


def test_the_batch_skip_mark_is_a_gap_between_two_batches_with_an_assignment_between(tmp_path):
    (mark,) = batch_skipped_at_rebalance(batch_skip_run(tmp_path / "a"))
    assert (mark.members, mark.partitions, mark.records) == ({"m2"}, {("t", 1)}, {("t", 1, 131)})
    assert (mark.start, mark.end) == (422.695, 423.150) and "offsets 131-131 skipped" in mark.says
    assert batch_skipped_at_rebalance(batch_skip_run(tmp_path / "b", assigned_between=False)) == []


def test_the_batch_skip_finding_excuses_only_the_records_its_mark_left_out(tmp_path):
    run = batch_skip_run(tmp_path / "run")
    assert known(run, lost_records((1, 131))).finding.id == BATCH_SKIP
    assert known(run, lost_records((1, 150))) is None  # a lost record the gap does not hold
    assert known(run, lost_records((2, 131))) is None  # another partition
    assert known(run, lost_records((1, 131), lost=5)) is None  # more lost than the marks name
    more = {**lost_records((1, 131)), "exclusive_ownership": Verdict("exclusive_ownership", "invalid", "x")}
    assert known(run, more) is None  # another invariant failing as well
    assert "not librdkafka-2.0-batch-skip: record_integrity's witness" in near_misses(run, lost_records((1, 150)))[0]
    # the verdicts as the run directory keeps them (verdicts.json), when none are given
    (run / "verdicts.json").write_text(json.dumps({k: v.to_dict() for k, v in lost_records((1, 131)).items()}))
    assert known(run).finding.id == BATCH_SKIP


@pytest.mark.parametrize("client_version", ["2.1.0", "2.16.1", "default"])
def test_the_batch_skip_finding_is_about_old_clients_on_the_cooperative_protocol(tmp_path, client_version):
    assert known(batch_skip_run(tmp_path / "new", client_version=client_version), lost_records((1, 131))) is None
    for d, cfg in (("eager", {"protocol": "classic-eager"}), ("java", {"member": "java"})):
        assert known(batch_skip_run(tmp_path / d, **cfg), lost_records((1, 131))) is None


def test_a_whole_assignment_handed_to_the_callback_marks_what_it_took_away_unrevoked(tmp_path):
    (mark,) = full_assignment_unrevoked(eager_callbacks_run(tmp_path / "a"))
    assert (mark.members, mark.partitions) == ({"m3"}, {("t", 2), ("t", 3), ("t", 4), ("t", 5)})
    assert (mark.start, mark.end, mark.held_from) == (7.2, 252.3, 6.4)
    assert "taken away with no revoke" in mark.says
    # an incremental client revokes first and never assigns a partition twice: no mark
    assert full_assignment_unrevoked(eager_callbacks_run(tmp_path / "b", incremental=True)) == []


def test_the_eager_callbacks_finding_excuses_only_witnesses_inside_its_mark_on_clients_before_2_10(tmp_path):
    from harness.invariants.core import witness
    given = witness({"type": "assigned", "mono": 7.4, "member": "m1", "partitions": [["t", 2], ["t", 3]]},
                    "partition t-2 assigned to m1 while m3 held it in good standing")
    v = {"exclusive_ownership": Verdict("exclusive_ownership", "invalid", "partition 2 assigned to m1", (given,))}
    got = known(eager_callbacks_run(tmp_path / "a"), v)
    assert got is not None and got.finding.id == "librdkafka-848-eager-callbacks"
    assert known(eager_callbacks_run(tmp_path / "b", client_version="2.10.0"), v) is None  # the fixed release
    assert known(eager_callbacks_run(tmp_path / "c", incremental=True), v) is None  # no mark: told of its revocation
    elsewhere = witness({"type": "assigned", "mono": 7.4, "member": "m1", "partitions": [["t", 0]]}, "t-0 to m1")
    assert known(eager_callbacks_run(tmp_path / "d"), {"exclusive_ownership": Verdict(
        "exclusive_ownership", "invalid", "partition 0 assigned to m1", (elsewhere,))}) is None  # not what it took


def test_records_processed_before_the_assigned_callback_are_marked_on_java_members(tmp_path):
    (mark,) = records_before_assigned(records_before_callback_run(tmp_path / "a"))
    assert (mark.members, mark.partitions) == ({"m3"}, {("t", 3), ("t", 4)})
    assert (mark.start, mark.end) == (13072.364, 13072.418) and "before its onPartitionsAssigned" in mark.says
    assert records_before_assigned(records_before_callback_run(tmp_path / "b", callback_first=True)) == []


def test_the_records_before_callback_finding_is_about_kafka_clients_before_3_8(tmp_path):
    from harness.invariants.core import witness
    seen = witness({"type": "processed", "mono": 13072.364, "member": "m3", "topic": "t", "partition": 3},
                   "m3 processed partition 3 while not holding it")
    v = {"exclusive_ownership": Verdict("exclusive_ownership", "invalid", "m3 processed partition 3", (seen,))}
    got = known(records_before_callback_run(tmp_path / "a"), v)
    assert got is not None and got.finding.id == "kafka-clients-3.7-848-records-before-callback"
    assert known(records_before_callback_run(tmp_path / "b", client_version="3.8.1"), v) is None
    assert known(records_before_callback_run(tmp_path / "c", callback_first=True), v) is None
    shape = {**v, "assignor_shape": Verdict("assignor_shape", "invalid", "m2 held 3 partitions and m1 0", (seen,))}
    assert known(records_before_callback_run(tmp_path / "d"), shape) is None  # another invariant failing as well


def test_the_cooperative_commit_race_shows_as_a_refused_commit_then_lost_at_once(tmp_path):
    run = commit_race_run(tmp_path / "a")
    (mark,) = illegal_generation_lost(run)
    assert mark.says.startswith("m1's commit refused with ILLEGAL_GENERATION at 17.340")
    assert (mark.members, mark.partitions, mark.start, mark.end) == ({"m1"}, {("t", 0), ("t", 3)}, 17.25, 19.0)
    assert illegal_generation_lost(commit_race_run(tmp_path / "b", lost_at_once=False)) == []
    assert known(run, commit_race_verdicts(run)).finding.id == "librdkafka-4059-commit-during-cooperative-rebalance"
    # a storm witnessed by another member's own partition: not the race's
    assert known(run, commit_race_verdicts(run, storm_witness="m2-revoked")) is None
    assert known(commit_race_run(tmp_path / "c", client_version="2.10.0"), commit_race_verdicts(run)) is None


def test_the_commit_starves_heartbeat_finding_matches_the_consumer_protocol_on_broker_partition(tmp_path):
    run = write_run(tmp_path / "livelock", refused_s=8.0)
    assert known(run, livelock_verdicts(run)).finding.id == "librdkafka-848-commit-starves-heartbeat"
    only = {k: v for k, v in livelock_verdicts(run).items() if k in ("exclusive_ownership", "commit_progress")}
    assert known(run, only) is not None
    brief = write_run(tmp_path / "brief", refused_s=2.0)
    assert known(brief, livelock_verdicts(brief)) is None
    for d, kw in (("coop", {"protocol": "classic-cooperative"}), ("kill", {"scenario": "member-kill"})):
        other = write_run(tmp_path / d, refused_s=8.0, **kw)
        assert known(other, livelock_verdicts(other)) is None


def test_the_commit_starves_heartbeat_finding_matches_its_own_reproduction_too(tmp_path):
    name = "livelock-commit-starves-heartbeat"
    f = next(f for f in KNOWN if f.id == "librdkafka-848-commit-starves-heartbeat")
    assert name in f.scenarios and "broker-partition" in f.scenarios
    run = write_run(tmp_path / "builtin", refused_s=8.0, scenario=name)
    # as a run of it fails (witnesses shaped as the checkers wrote them in its runs): the zombie's last batch before
    # its refused commits never committed
    batch = {"type": "processed", "mono": 9.9, "member": "m2", "topic": "t", "partition": 0, "first_offset": 5,
             "last_offset": 5, "count": 1, "source": "member"}
    refused = next(e for e in events(run, "m2") if e["type"] == "committed" and not e["ok"])
    verdicts = {**livelock_verdicts(run), "commit_progress": Verdict(
        "commit_progress", "invalid", "m2 did not commit", (batch, {**refused, "why": "its commit was refused"}))}
    assert known(run, verdicts).finding.id == f.id
    # the runner's final wait timing out names no member, partition or record: inside the window by its time alone,
    # which explains nothing (it used to excuse group_settled); a fencing line naming no member id the history maps
    # to a member is no better
    fenced = {"type": "broker", "mono": 9.4, "broker": 1, "source": "broker-log",
              "message": "Member x fenced from the group because the member session expired."}
    for alone in ({"type": "wait_timeout", "mono": 12.0, "what": "final", "why": "the runner gave up waiting"},
                  fenced):
        settled = Verdict("group_settled", "invalid", "never settled", (alone,), found=1)
        assert known(run, {**verdicts, "group_settled": settled}) is None
        assert "group_settled's witness" in near_misses(run, {**verdicts, "group_settled": settled})[0]
    # the same wait naming the partitions that were not settled then (settled.py names them): the zombie's is the bug's
    named = {"type": "wait_timeout", "mono": 12.0, "what": "final", "partitions": [["t", 0]],
             "why": "the runner gave up waiting for a settled group: t-0 held by m1, m2"}
    settled = Verdict("group_settled", "invalid", "never settled", (named,), found=1)
    assert known(run, {**verdicts, "group_settled": settled}).finding.id == f.id
    elsewhere = Verdict("group_settled", "invalid", "never settled", ({**named, "partitions": [["t", 3]]},), found=1)
    assert known(run, {**verdicts, "group_settled": elsewhere}) is None
    # a batch the zombie processed before its last word from the group (its last good commit at 8.0) is not the bug's
    early = Verdict("commit_progress", "invalid", "m2 did not commit", ({**batch, "mono": 7.5},))
    assert known(run, {**verdicts, "commit_progress": early}) is None
    shipped = builtin_text(name)
    copy = write_run(tmp_path / "copy", refused_s=8.0, scenario=name, scenario_file=f"mine/{name}.toml",
                     scenario_text=shipped)
    assert known(copy, livelock_verdicts(copy)) is not None
    edited = write_run(tmp_path / "edited", refused_s=8.0, scenario=name, scenario_file=f"mine/{name}.toml",
                       scenario_text=shipped.replace("duration_s = 8.0", "duration_s = 4.0"))
    assert "duration_s = 8.0" in shipped and known(edited, livelock_verdicts(edited)) is None


def _heartbeat_fault(member: str, start: float, end: float) -> tuple[dict, dict]:
    """A request fault aimed at one member (its heartbeats answered with an error), as the nemesis records it."""
    return ({"type": "fault_start", "mono": start, "fault_id": f"kp-{member}", "kind": "error_response",
             "member": member, "targets": [member], "members_affected": [member], "api": "ConsumerGroupHeartbeat"},
            {"type": "fault_end", "mono": end, "fault_id": f"kp-{member}", "outcome": "answered"})


def test_the_livelock_matches_when_its_trigger_ends_just_before_the_members_last_word(tmp_path):
    # the member's last failed heartbeat (7.9) came before its last successful commit (8.0, the mark's start): the
    # convergence failure witnessed by that fault's end is the bug's; the same fault aimed at another member is not
    settled = "the last disturbance"
    for member, matched in (("m2", True), ("m3", False)):
        run = write_run(tmp_path / member, refused_s=8.0, control=_heartbeat_fault(member, 2.5, 7.9))
        (mark,) = commits_refused_unheard(run)
        # f1, the broker partition that cut off m1, m2 and m3, names m2 too (its members_affected)
        assert mark.faults == ({"kp-m2", "f1"} if matched else {"f1"}) and mark.start == 8.0
        end = next(e for e in read_file(run / "history" / "harness.jsonl")[1] if e.get("fault_id") == f"kp-{member}"
                   and e["type"] == "fault_end")
        verdicts = {**livelock_verdicts(run), "convergence_balance": Verdict(
            "convergence_balance", "invalid", "never converged", ({**end, "why": settled},))}
        assert (known(run, verdicts) is not None) is matched


def test_the_brokers_lines_a_checker_appends_as_context_are_not_compared(tmp_path):
    run = write_run(tmp_path / "run", refused_s=8.0)
    line = {"type": "broker", "mono": 3.0, "broker": 1, "source": "broker-log",
            "message": "Member x fenced from the group because it failed to transition from epoch 2 within 20000ms."}
    verdicts = livelock_verdicts(run)
    zombie = verdicts["exclusive_ownership"]

    def with_line(why, *, alone=False):
        ws = () if alone else zombie.witnesses
        return {**verdicts, "exclusive_ownership": dataclasses.replace(zombie, witnesses=ws + ({**line, "why": why},))}
    # an earlier fencing of the same member (before its last word at 8.0), cited as context: the failure is the bug's
    assert known(run, with_line(BROKER_CONTEXT)) is not None
    # the same line as a witness of the failure itself lies outside the mark; context alone is no witness
    assert known(run, with_line("the broker fenced the member")) is None
    assert near_misses(run, with_line(BROKER_CONTEXT, alone=True)) == [
        "not librdkafka-848-commit-starves-heartbeat: exclusive_ownership has no witness to compare"]


def test_the_scenario_is_matched_by_identity_not_by_its_files_name(tmp_path):
    shipped = builtin_text("broker-partition")
    assert shipped is not None and 'name = "broker-partition"' in shipped

    def excused(d, **kw):
        run = write_run(tmp_path / d, refused_s=8.0, **kw)
        return known(run, livelock_verdicts(run)) is not None
    assert excused("builtin")  # the built-in itself: no file, its name
    # a file with the built-in's text, byte for byte (its digest): the same scenario
    assert excused("copy", scenario_file="mine/broker-partition.toml", scenario_text=shipped)
    # a file of the built-in's name (and `name`) with other steps: another scenario
    changed = shipped.replace("[[steps]]", "[[steps]]\n# one more comment: another file", 1)
    assert not excused("edited", scenario_file="mine/broker-partition.toml", scenario_text=changed)
    assert not excused("no-text", scenario_file="mine/broker-partition.toml")
    # the built-in's text under another name
    assert not excused("renamed", scenario="my-partition", scenario_file="broker-partition.toml",
                       scenario_text=shipped.replace('name = "broker-partition"', 'name = "my-partition"'))


def test_a_finding_without_evidence_never_excuses(tmp_path, monkeypatch):
    run = write_run(tmp_path / "run", refused_s=8.0)
    f = next(f for f in KNOWN if f.id == "librdkafka-848-commit-starves-heartbeat")
    monkeypatch.setattr("harness.findings.registry.KNOWN", (dataclasses.replace(f, evidence=None),))
    assert known(run, livelock_verdicts(run)) is None
    assert near_misses(run, livelock_verdicts(run)) == [
        "not librdkafka-848-commit-starves-heartbeat: it has no evidence function, so it never matches"]


def test_every_finding_has_evidence_says_how_often_and_where_it_is_written_up():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "findings.md").read_text()
    assert len({f.id for f in KNOWN}) == len(KNOWN) and REASON == "known finding: "
    for f in KNOWN:
        assert f.expected_rate and f.invariants and f.protocols and f.evidence is not None
        anchor = f.doc.partition("#")[2]
        assert anchor and any(_anchor(line) == anchor for line in doc.splitlines() if line.startswith("#"))


def _anchor(heading: str) -> str:
    """GitHub's anchor of a markdown heading."""
    text = heading.lstrip("#").strip().lower()
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


def test_nightly_marks_a_known_finding_and_does_not_shrink_it(tmp_path, monkeypatch):
    monkeypatch.setattr("harness.drive.nightly.report", lambda *a, **k: None)
    shrunk = []
    monkeypatch.setattr("harness.drive.nightly.shrink_failure", lambda *a, **k: shrunk.append(a) or {
        "from_actions": 2, "to_actions": 1, "replay": "harness replay shrunk"})

    class NoCluster:
        def __init__(self, backend, **kw):
            self.settings = kw["settings"]
            self.version = kw["version"]  # the Backend protocol\'s: what the night asked

        def start(self):
            pass

        def stop(self):
            pass

    def run(cfg, *, cluster, progress):  # every run leaves offset 131 out; odd seeds lose offset 150 as well
        d = batch_skip_run(Path(cfg.runs_root) / f"r{cfg.seed}")
        write_meta(d, **{**config_dict(cfg), "client_version": cfg.client_version})
        v = lost_records((1, 131), (1, 150)) if cfg.seed % 2 else lost_records((1, 131))
        (d / "verdicts.json").write_text(json.dumps({k: x.to_dict() for k, x in v.items()}))
        return RunResult(d, "fail", v)

    res = nightly(budget_s=10_000, seed=5, kafka_versions=["4.4.0"], client_versions=["2.0.2"],
                  protocols=["classic-cooperative"], runs_root=str(tmp_path), runs=12,
                  make_cluster=lambda backend, **kw: NoCluster(backend, **kw), run=run, progress=lambda *_: None)
    summary = json.loads((res.out_dir / "nightly.json").read_text())
    marked = [r for r in summary["runs"] if r["known"]]
    assert marked and all(r["known"]["id"] == BATCH_SKIP and r["known"]["expected_rate"]
                          and "offsets 131-131 skipped" in r["known"]["this_run"] for r in marked)
    assert {r["seed"] % 2 for r in marked} == {0}  # only the runs whose every lost record is the gap's
    assert marked[0]["known"]["marks"] == [{"members": ["m2"], "partitions": [["t", 1]], "records": [["t", 1, 131]],
                                            "start": 422.695, "end": 423.15, "held_from": None,
                                            "says": marked[0]["known"]["this_run"]}]
    assert shrunk and len(marked) + len(shrunk) <= len(summary["runs"])


SHARE_RECONNECT = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "share-count-kept-after-reconnect"


def _share_verdicts():
    """The trimmed history's verdicts but two it cannot speak to: group_settled (the trimming kept m1's events only,
    m2's and m3's files hold their headers, so judged it is invalid: m2 and m3 delivered nothing) and
    share_dead_letter (the run predates the plan's `applies` in run_start, so its skip is unknown)."""
    from harness.record.history import History
    from harness.invariants import judge
    verdicts = judge(History.load(SHARE_RECONNECT / "history"))
    assert verdicts.pop("group_settled").status == "invalid"
    assert verdicts.pop("share_dead_letter").status == "unknown"
    assert verdicts.pop("share_poison").status == "unknown"  # likewise
    return verdicts


def test_the_share_count_kept_after_a_reconnect_matches_only_at_its_own_mark(tmp_path):
    # share-ack-answer-lost (Kafka 4.4.0, confluent-kafka 2.16.1), trimmed: m1's stalled connection closed at
    # 2951.546; offsets 22 and 23 of partition 0 handed to m1 with delivery count 3 twice each, 13 ms after
    verdicts = _share_verdicts()
    v = verdicts["share_redelivery"]
    assert v.status == "invalid" and "delivery count 3, expected 4" in v.witnesses[0]["why"]
    got = known(SHARE_RECONNECT, verdicts)
    assert got is not None and got.finding.id == "share-count-kept-after-reconnect"
    assert "0.013s after its connection was closed at 19.6 s" in got.says  # of the run (2951.546 on its clock)
    topic = v.witnesses[0]["topic"]
    assert {r for m in got.marks for r in m.records} == {(topic, 0, 22), (topic, 0, 23)}
    more = {**verdicts, "share_completion": Verdict("share_completion", "invalid", "lost")}
    assert known(SHARE_RECONNECT, more) is None
    # a share_redelivery failure at another record, or another member's: not this finding
    for change in ({"offset": 30}, {"member": "m2"}, {"mono": 2960.0}):
        w = {**v.witnesses[0], **change}
        assert known(SHARE_RECONNECT, {**verdicts, "share_redelivery": dataclasses.replace(v, witnesses=(w,))}) is None


def _share_copy(tmp_path, *, keep=lambda line: True, **config) -> Path:
    hist = tmp_path / "run" / "history"
    hist.mkdir(parents=True)
    for p in (SHARE_RECONNECT / "history").iterdir():
        hist.joinpath(p.name).write_text("".join(x for x in p.read_text().splitlines(keepends=True) if keep(x)))
    meta = json.loads((SHARE_RECONNECT / "run.json").read_text())
    meta["config"].update(config)
    (tmp_path / "run" / "run.json").write_text(json.dumps(meta))
    return tmp_path / "run"


def test_the_share_count_kept_needs_the_reconnect_and_its_scenario(tmp_path):
    verdicts = _share_verdicts()
    assert known(_share_copy(tmp_path / "a", scenario="share-member-kill"), verdicts) is None
    # the same deliveries without the connection's close in the history: not this finding
    assert known(_share_copy(tmp_path / "b", keep=lambda x: '"outcome":"closed"' not in x), verdicts) is None
    assert known(_share_copy(tmp_path / "c"), verdicts) is not None


FIRST_GIVEN_AWAY = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "first-assignment-given-away"
FIRST_ID = "librdkafka-848-first-assignment-given-away"


def _first_verdicts(run_dir: Path = FIRST_GIVEN_AWAY) -> dict:
    """The kept history's verdicts but record_integrity, which the trimming left undecided (the producer's acks cut)."""
    from harness.record.history import History
    from harness.invariants import judge
    verdicts = judge(History.load(run_dir / "history"))
    assert verdicts.pop("record_integrity").status == "unknown"
    # the history was recorded before the runs wrote the brokers' group.consumer.assignors: the assignor in force
    # cannot be told, so the checkers of the assignment's shape and stickiness say unknown (not this finding's)
    for name in ("assignor_shape", "strict_stickiness"):
        assert verdicts.pop(name).status == "unknown", name
    # and before the coordinator's assignment was recorded (group_assignment): the members' claims are unjudged
    assert "not recorded" in verdicts.pop("coordinator_claims").message
    return verdicts


def _kept_copy(source: Path, tmp_path, drop, config: dict) -> Path:
    """A kept run directory copied with the lines `drop(file name, line)` says left out, its config changed."""
    hist = tmp_path / "run" / "history"
    hist.mkdir(parents=True)
    for p in (source / "history").iterdir():
        hist.joinpath(p.name).write_text("".join(x for x in p.read_text().splitlines(keepends=True)
                                                 if not drop(p.name, x)))
    meta = json.loads((source / "run.json").read_text())
    meta["config"].update(config)
    (tmp_path / "run" / "run.json").write_text(json.dumps(meta))
    return tmp_path / "run"


def _first_copy(tmp_path, *, drop=lambda name, line: False, **config) -> Path:
    """The kept run directory with the lines `drop(file name, line)` says left out, its config changed by `config`."""
    return _kept_copy(FIRST_GIVEN_AWAY, tmp_path, drop, config)


def test_a_first_assignment_the_coordinator_gave_away_fails_exclusive_ownership_and_names_the_finding():
    # the fenced-answer integration test on a loaded machine (Kafka 4.4.0, confluent-kafka 2.16.1), before the fault:
    # m3 joined first and took all six partitions at 16532.408 from a target the coordinator had moved (m1 and m2
    # joined, epochs 3 and 4) while m3 waited for the topic's metadata; m1 was given 4 and 5 at 16533.188 and m2 2
    # and 3 at 16533.247, before m3 revoked them at 16533.290. The checker is right: m3's application held them.
    verdicts = _first_verdicts()
    v = verdicts["exclusive_ownership"]
    assert v.status == "invalid" and v.message.startswith("partition 2 assigned to m2 at 12.4s while m3 held it "
                                                          "in good standing (and 3 more)")
    assert {w["member"] for w in v.witnesses} == {"m1", "m2", "m3"}
    assert all(x.status in ("valid", "skipped") for n, x in verdicts.items() if n != "exclusive_ownership")
    got = known(FIRST_GIVEN_AWAY, verdicts)
    assert got is not None and got.finding.id == FIRST_ID
    (mark,) = got.marks
    assert mark.members == {"m3"} and {p for _, p in mark.partitions} == {2, 3, 4, 5}
    assert (round(mark.start, 3), round(mark.end, 3)) == (16532.408, 16533.290)
    assert "the group's target moved before it, its next change revoking" in got.says


def test_the_first_assignment_finding_needs_the_moved_target_and_the_revocation_that_follows(tmp_path):
    verdicts = _first_verdicts()
    # the coordinator's new epochs for m1's and m2's joining not in the history: m3's target was not superseded
    no_bumps = _first_copy(tmp_path / "a", drop=lambda n, x: "Bumped group epoch to 3" in x or "epoch to 4" in x)
    assert known(no_bumps, verdicts) is None
    # m3 never revoked them (its next change is not the revocation): a member in good standing keeping partitions
    kept = _first_copy(tmp_path / "b", drop=lambda n, x: n == "member-m3.jsonl" and '"type":"revoked"' in x)
    assert known(kept, _first_verdicts(kept)) is None
    # the same run on another protocol, or a witness on a partition m3 was not revoked: not this finding
    assert known(_first_copy(tmp_path / "c", protocol="classic-cooperative"), verdicts) is None
    # a self-test's run (a member misbehaving on purpose) is never excused, whatever its history shows
    assert known(_first_copy(tmp_path / "e", misbehave="claim-extra"), verdicts) is None
    v = verdicts["exclusive_ownership"]
    elsewhere = {**v.witnesses[1], "partitions": [[v.witnesses[1]["partitions"][0][0], 0]]}
    moved = {**verdicts, "exclusive_ownership": dataclasses.replace(v, witnesses=(v.witnesses[0], elsewhere))}
    assert known(FIRST_GIVEN_AWAY, moved) is None
    assert known(_first_copy(tmp_path / "d"), verdicts) is not None


NOT_RECONCILED = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "first-assignment-not-reconciled"
NOT_RECONCILED_ID = "librdkafka-848-first-assignment-not-reconciled"


def _not_reconciled_copy(tmp_path, *, drop=lambda name, line: False, **config) -> Path:
    return _kept_copy(NOT_RECONCILED, tmp_path, drop, config)


def test_a_first_assignment_kept_past_the_groups_target_fails_and_names_its_finding(tmp_path):
    # a clean clone's ./dev smoke (docker, broker-partition, consumer protocol, Kafka 4.4.0, confluent-kafka 2.16.1),
    # before the fault: m2 took all six partitions at epoch 2 and kept them, polling, while the target moved to
    # epoch 4 (two each); the coordinator fenced it 20 s later for not moving off epoch 2 and gave its partitions to
    # m3 and m1 before m2 learnt it (its `lost` 20 ms after m3's assignment)
    from harness.record.history import History
    from harness.invariants import judge
    verdicts = judge(History.load(NOT_RECONCILED / "history"))
    failed = {n for n, v in verdicts.items() if v.status not in ("valid", "skipped")}
    assert failed == {"exclusive_ownership", "rebalance_cause"}, {n: verdicts[n].message for n in failed}
    got = known(NOT_RECONCILED, verdicts)
    assert got is not None and got.finding.id == NOT_RECONCILED_ID
    (mark,) = got.marks
    assert mark.members == {"m2"} and {p for _, p in mark.partitions} == set(range(6))
    # not without the coordinator's fencing line, not when m2 revoked in between, not on another protocol
    no_fence = _not_reconciled_copy(tmp_path / "a", drop=lambda n, x: "failed to transition from epoch" in x)
    assert known(no_fence, verdicts) is None
    first = next(x for x in (NOT_RECONCILED / "history" / "member-m2.jsonl").read_text().splitlines()
                 if '"type":"assigned"' in x)

    moved = _not_reconciled_copy(tmp_path / "b", drop=lambda n, x: False)
    lines = (moved / "history" / "member-m2.jsonl").read_text().splitlines(keepends=True)
    at = lines.index(first + "\n")
    t = json.loads(first)["mono"] + 1.0
    lines.insert(at + 1, json.dumps({**json.loads(first), "type": "revoked", "mono": t, "wall": t}) + "\n")
    (moved / "history" / "member-m2.jsonl").write_text("".join(lines))
    assert known(moved, verdicts) is None
    assert known(_not_reconciled_copy(tmp_path / "c", protocol="classic-cooperative"), verdicts) is None
    assert known(_not_reconciled_copy(tmp_path / "d"), verdicts) is not None


def test_the_marks_account_names_the_heartbeats_the_members_log_says_timed_out(tmp_path):
    # the mechanism (docs/findings.md): the answer that moved the member was lost to librdkafka's own timeout; its
    # log's REQTMOUT notices between the first assignment and the fence are named, those after the fence are not
    from harness.findings.evidence import first_assignment_never_reconciled
    run = _not_reconciled_copy(tmp_path, drop=lambda n, x: False)
    (mark,) = first_assignment_never_reconciled(run)
    assert "timed out at the client" not in mark.says
    got = json.loads(next(x for x in (run / "history" / "member-m2.jsonl").read_text().splitlines()
                          if '"type":"assigned"' in x))
    wall = got["wall"] - got["mono"]
    (run / "logs").mkdir()
    notice = "%5|{:.3f}|REQTMOUT|m2#consumer-1| [thrd:GroupCoordinator]: GroupCoordinator/1: Timed out " \
             "ConsumerGroupHeartbeatRequest in flight (after 795ms, timeout #0)\n"
    (run / "logs" / "member-m2.log").write_text(notice.format(got["wall"] + 1.0) + notice.format(mark.end + wall + 5))
    (mark,) = first_assignment_never_reconciled(run)
    from harness.record.history import History
    t0 = History.load(run / "history").run_start()["mono"]
    assert f"1 heartbeat request(s) timed out at the client meanwhile, the first at {got['mono'] + 1.0 - t0:.1f} s" \
        in mark.says, mark.says


def _with_rejoin_before(tmp_path, fault_on: str, fault_at_hold: str | None = None) -> Path:
    """The kept run with m2's first assignment made a rejoin's: an earlier assignment of the same partitions 2 s
    before it, lost 1 s before it under a request fault on `fault_on` (a FENCED_MEMBER_EPOCH answer makes librdkafka
    drop its partitions and rejoin); with `fault_at_hold`, a fault on that member while m2 then holds them."""
    run = _not_reconciled_copy(tmp_path, drop=lambda n, x: False)
    path = run / "history" / "member-m2.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    first = next(x for x in lines if '"type":"assigned"' in x)
    got = json.loads(first)
    t = got["mono"]
    earlier = [json.dumps({**got, "mono": t - 2.0, "wall": got["wall"] - 2.0}) + "\n",
               json.dumps({**got, "type": "lost", "mono": t - 1.0, "wall": got["wall"] - 1.0}) + "\n"]
    at = lines.index(first)
    path.write_text("".join(lines[:at] + earlier + lines[at:]))

    def fault(fid, who, when):
        return json.dumps({"type": "fault_start", "mono": when, "wall": got["wall"] + when - t, "fault_id": fid,
                           "kind": "error_response", "targets": [who], "members_affected": [who],
                           "brokers_affected": [1]}) + "\n"
    control = run / "history" / "harness.jsonl"
    extra = fault("kp1", fault_on, t - 1.05) + (fault("kp2", fault_at_hold, t + 0.5) if fault_at_hold else "")
    control.write_text(control.read_text() + extra)
    return run


def test_the_first_assignment_after_a_rejoin_kept_past_the_target_is_the_same_finding(tmp_path):
    # CI's fenced-answer test (2026-11-28): a member that rejoined after a FENCED_MEMBER_EPOCH answer kept the
    # assignment its rejoin got and was fenced 20 s later for not moving off the epoch; librdkafka rejoins from the
    # join state it first joins from, so that assignment is a first one too
    from harness.findings.evidence import first_assignment_never_reconciled
    from harness.record.history import History
    from harness.invariants import judge
    verdicts = judge(History.load(NOT_RECONCILED / "history"))
    rejoined = _with_rejoin_before(tmp_path / "a", fault_on="m2")
    (mark,) = first_assignment_never_reconciled(rejoined)
    assert mark.members == {"m2"} and "first assignment since it joined" in mark.says
    got = known(rejoined, verdicts)
    assert got is not None and got.finding.id == NOT_RECONCILED_ID
    # a fault on another member while m2 holds it does not touch m2; one on m2 does, and is then no mark
    assert len(first_assignment_never_reconciled(_with_rejoin_before(tmp_path / "b", "m2", "m1"))) == 1
    assert first_assignment_never_reconciled(_with_rejoin_before(tmp_path / "c", "m2", "m2")) == []


CLOSE_LEAVES = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "close-leaves-before-revoking"
CLOSE_ID = "librdkafka-close-leaves-before-revoking"


def _close_copy(tmp_path, *, drop=lambda name, line: False, **config) -> Path:
    return _kept_copy(CLOSE_LEAVES, tmp_path, drop, config)


def test_a_member_closed_mid_rebalance_that_left_before_revoking_names_the_finding():
    # the revoke-delay integration test with the Python member (classic-cooperative, a 2 s revoke handler), its
    # final stop: m3 was stopped at 89079.687 while m1's leave rebalanced the group; the coordinator logged m3's
    # LeaveGroup at 89079.820, gave 2, 4 and 5 to m4 at 89080.844, and m3's handler revoked them at 89081.820 (its
    # commit failing: _DESTROY). The checkers are right: m3's application held them.
    from harness.record.history import History
    from harness.invariants import judge
    verdicts = judge(History.load(CLOSE_LEAVES / "history"))
    failed = {n for n, v in verdicts.items() if v.status not in ("valid", "skipped")}
    assert failed == {"exclusive_ownership", "coordinator_claims"}, failed
    assert verdicts["exclusive_ownership"].message.startswith("partition 2 assigned to m4 at 31.9s while m3 held it")
    got = known(CLOSE_LEAVES, verdicts)
    assert got is not None and got.finding.id == CLOSE_ID
    (mark,) = got.marks
    assert mark.members == {"m3"} and {p for _, p in mark.partitions} == {2, 4, 5}
    assert (round(mark.start, 3), round(mark.end, 3)) == (89079.82, 89081.82)
    assert "left the group at 30.8 s (the coordinator's line) and revoked" in got.says


def test_the_close_finding_needs_the_leave_before_the_revocation_and_the_classic_protocol(tmp_path):
    from harness.record.history import History
    from harness.invariants import judge
    verdicts = judge(History.load(CLOSE_LEAVES / "history"))
    # the coordinator's line of m3's LeaveGroup not in the history: nothing says it left before it revoked
    no_leave = _close_copy(tmp_path / "a", drop=lambda n, x: n == "brokers.jsonl" and "Member m3-" in x
                           and "has left group" in x)
    assert known(no_leave, verdicts) is None
    # m3 never revoked after its stop: no revocation the leave came before
    no_revoke = _close_copy(tmp_path / "b", drop=lambda n, x: n == "member-m3.jsonl" and '"type":"revoked"' in x
                            and "89081." in x)
    assert known(no_revoke, verdicts) is None
    # the same run under another protocol, or as a self-test: not this finding
    assert known(_close_copy(tmp_path / "c", protocol="consumer"), verdicts) is None
    assert known(_close_copy(tmp_path / "d", misbehave="claim-extra"), verdicts) is None
    assert known(_close_copy(tmp_path / "e"), verdicts) is not None
