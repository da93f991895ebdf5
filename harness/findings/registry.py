"""Known findings: failures the harness reproduces that are a client's or Kafka's, not the harness's.

Each is written up in docs/findings.md. The nightly mix keeps drawing the scenarios they show in; a failing
run that matches one is marked with it and its expected rate (`known` in nightly.json, and on the night's
progress line), so a night's summary tells a known finding from a new failure, and a suite test may be xfailed
with it (harness/suite/known.py). A finding matches a failed run only when all of these hold:

- the run failed only the finding's invariants; one it left undecided (`unknown`) is one of them too, and names
  what it could not judge as witnesses (a holding between two samples of the coordinator): an undecided verdict
  without witnesses is never excused, nor a run that failed nothing;
- it ran the finding's scenario, by identity: the built-in itself, or a scenario file whose text is the built-in's
  byte for byte (its digest, from the text run.json recorded); a file that only shares its name is another one;
- its protocol, member kind and client version are the finding's, and it is no self-test (`--misbehave`: a member
  breaking the rules on purpose fails the run by design, and no client bug excuses that);
- no witness names a member that ran a team's own program (`member_command`, `slot_commands`; the members whose
  `member_start` names their `program`, every member when the history predates that field): a client's bug never
  excuses a program the finding is not about (the near miss says so); the harness's members beside one are judged;
- the finding has an evidence function (harness/findings/evidence.py) and the marks it finds in the history cover
  every witness of every failing or undecided verdict (harness/findings/match.py): the same members, partitions (records) and
  time window. A finding without evidence never matches.

`KNOWN` is the registry (each with its `id`); an xfail's reason starts with `REASON` and the id.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.findings.evidence import (Mark, run_seconds, batch_skipped_at_rebalance, commits_refused_unheard,
                                       expired_behind_stalled_commit,
                                       first_assignment_never_reconciled,
                                       first_assignment_given_away, full_assignment_unrevoked,
                                       illegal_generation_lost,
                                       left_before_revoking, member_ids, program_starts,
                                       records_before_assigned,
                                       share_count_kept_after_reconnect)
from harness.base.versions import is_release, version_key
from harness.findings.match import compared, holding, outside, status
from harness.record.rundir import RUN_JSON, VERDICTS_JSON

#: how an excused test's reason begins, before the finding's id (JUnit's xfail message, Allure's categories)
REASON = "known finding: "


@dataclass(frozen=True)
class Finding:
    """A failure the harness shows on purpose, with where it shows and how often."""

    id: str
    title: str
    invariants: tuple[str, ...]  # the invariants it fails
    protocols: tuple[str, ...]  # the group protocols it shows under
    client_below: str | None  # client releases before this one (the fix; confluent-kafka's, or kafka-clients' for
    #                           a finding about the Java member); None: every release
    expected_rate: str  # how often it showed, with the runs and the command: docs/findings.md
    scenarios: tuple[str, ...] = ()  # the built-in scenarios it was measured on (by identity); empty: any
    members: tuple[str, ...] = ("python",)  # the member kinds that run the client it is about
    doc: str = "docs/findings.md"
    #: the bug's marks in a run's history (harness/findings/evidence.py); None: the finding never matches a run
    evidence: Callable[[Path], list[Mark]] | None = field(default=None, compare=False)

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "evidence"}


KNOWN = (
    Finding("librdkafka-2.0-batch-skip",
            "librdkafka before 2.1.0: a record fetched into a batch consume is dropped at a cooperative "
            "rebalance's pause and never fetched again (librdkafka #4208, fixed in 2.1.0)",
            invariants=("record_integrity",), protocols=("classic-cooperative",), client_below="2.1.0",
            evidence=batch_skipped_at_rebalance,
            expected_rate="member-kill: 5 of 5 runs with confluent-kafka 2.0.2 (seeds 1-5, 2 to 13 records lost "
                          "per run); 0 of 5 with 2.1.0 and with 2.16.1; 0 of 2 with 2.0.2 under classic-eager",
            doc="docs/findings.md#librdkafka-20x-drops-a-record-at-a-cooperative-rebalance"),
    Finding("librdkafka-4059-commit-during-cooperative-rebalance",
            "librdkafka before 2.10.0: a commit during a cooperative rebalance, refused with ILLEGAL_GENERATION "
            "after a second join bumped the generation, makes the member drop its assignment as lost and rejoin: "
            "a rebalance nothing drove, and another (librdkafka #4059, fixed in 2.10.0)",
            invariants=("convergence_balance", "commit_progress"), protocols=("classic-cooperative",),
            client_below="2.10.0", evidence=illegal_generation_lost,
            expected_rate="member-kill with confluent-kafka 2.3.0 (tests/integration/test_client_versions.py): 1 "
                          "failure seen, in a clean-clone CI run on 2026-11-25; that test now runs 2.3.0 under "
                          "classic-eager",
            doc="docs/findings.md#librdkafka-before-2100-a-commit-during-a-cooperative-rebalance-loses-the-assignment"),
    Finding("librdkafka-848-eager-callbacks",
            "librdkafka before 2.10.0, consumer protocol: with the default partition.assignment.strategy (eager) the "
            "client hands the rebalance callback each new whole assignment and takes away what it leaves out with no "
            "revoke, so the application is never told it lost partitions the coordinator gave to others (2.10.0 made "
            "the consumer protocol's callbacks incremental)",
            invariants=("exclusive_ownership", "coverage_liveness", "convergence_balance", "group_settled",
                        "coordinator_claims"), protocols=("consumer",),
            client_below="2.10.0", evidence=full_assignment_unrevoked,
            expected_rate="member-kill --protocol consumer --seed 1450751887 (local, Kafka 4.4.0): confluent-kafka "
                          "2.4.0 and 2.9.0 each failed 1 of 1 run, 2.10.0 passed 1 of 1 (2026-11-28); such runs also "
                          "leave invariants unknown (no stable point), so none is excused",
            doc="docs/findings.md#librdkafka-before-2100-consumer-protocol-partitions-taken-away-with-no-revoke"),
    Finding("kafka-clients-3.7-848-records-before-callback",
            "kafka-clients 3.7 (consumer protocol, early access): a poll returns records of newly assigned "
            "partitions before onPartitionsAssigned runs for them, which the listener's contract says runs first",
            invariants=("exclusive_ownership",), protocols=("consumer",), client_below="3.8.0", members=("java",),
            evidence=records_before_assigned,
            expected_rate="member-kill --protocol consumer --member java --seed 1450751887 (local, Kafka 4.4.0): "
                          "kafka-clients 3.7.0 1 of 1 run (m3 and m4, 54 and 18 ms before their callbacks), 3.7.2 0 of "
                          "1, 3.8.0 and 3.8.1 passed 1 of 1 each (2026-11-28); the 3.7.0 run also failed on a member "
                          "that never joined, which no evidence covers, so it is not excused",
            doc="docs/findings.md#kafka-clients-370-consumer-protocol-early-access-a-member-that-never-joins-and-"
                "records-before-the-callback"),
    Finding("librdkafka-848-commit-starves-heartbeat",
            "librdkafka, consumer protocol: a member fenced while its heartbeats were failing never heartbeats again "
            "while its commits are refused (each UNKNOWN_MEMBER_ID commit pushes the expedited heartbeat a backoff "
            "away), so it never hears it was fenced and keeps its partitions",
            invariants=("exclusive_ownership", "coverage_liveness", "convergence_balance", "group_settled",
                        "commit_progress", "coordinator_claims"), protocols=("consumer",),
            client_below=None, scenarios=("broker-partition", "livelock-commit-starves-heartbeat"),
            evidence=commits_refused_unheard,
            expected_rate="livelock-commit-starves-heartbeat --protocol consumer (local, Kafka 4.4.0, "
                          "confluent-kafka 2.16.1, --repeat 10 from seed 1): 10 of 10 runs with --client-set "
                          "debug=cgrp,consumer,protocol, 5 of 5 without (2026-11-27); broker-partition --protocol "
                          "consumer (docker, seed 2133575392): 2 of 46 runs alone, 2 of 30 in ./dev smoke beside "
                          "three local runs at a time (2026-11-25)",
            doc="docs/findings.md"
                "#librdkafka-consumer-protocol-a-fenced-member-whose-commits-fail-never-heartbeats-again"),
    Finding("librdkafka-848-first-assignment-given-away",
            "librdkafka, consumer protocol: while a member's first assignment waits for the topic's metadata, it "
            "heartbeats from join state INIT with an empty owned-partitions list at that assignment's epoch; a "
            "coordinator whose target moved meanwhile takes the empty list for the revocation done and gives the "
            "partitions to others, and the member hands the superseded assignment to the application all the same, "
            "revoking it only at its next reconciliation",
            invariants=("exclusive_ownership",), protocols=("consumer",), client_below=None,
            evidence=first_assignment_given_away,
            expected_rate="at the group's first assignment of any consumer-protocol run, on a loaded machine "
                          "(2026-11-27): the fenced-answer integration test 2 of 3 runs with two CPU hogs beside "
                          "it (load 20-35) and 1 in the lead's acceptance run (load 15-20); member-kill on the "
                          "consumer protocol in the report-page test 1 of 2 (load 22-35); 0 in the project's CI",
            doc="docs/findings.md#librdkafka-consumer-protocol-a-first-assignment-the-coordinator-already-gave-away"),
    Finding("librdkafka-848-first-assignment-not-reconciled",
            "librdkafka, consumer protocol: a member polling on keeps its first assignment since it joined or "
            "rejoined after the group's target moved (another member joined before it reconciled), never revokes, "
            "and is fenced at its rebalance "
            "timeout (\"failed to transition from epoch N within T ms\"); the coordinator gives its partitions "
            "to others while it still holds them, until it learns it was fenced (the heartbeat answer that moved "
            "it was lost to the client's own timeout of one heartbeat interval, and its next heartbeat was not a "
            "full one, so the coordinator never said it again)",
            # the fence and the handing over are rebalances nothing drove: convergence_balance may count a storm
            # coordinator_claims: a holding of the fenced member's partition by the member given it, between two
            # samples of the coordinator (undecided, its witness inside the mark)
            invariants=("exclusive_ownership", "rebalance_cause", "convergence_balance", "coordinator_claims"),
            protocols=("consumer",), client_below=None, evidence=first_assignment_never_reconciled,
            expected_rate="broker-partition --protocol consumer (docker, seed 2133575392) in a clean clone's "
                          "./dev smoke beside three local runs at a time: 1 run (2026-11-28), before the fault; "
                          "the group-actions integration test (consumer) in the next clean clone's ./dev test, two "
                          "files at a time: 1 run (rebalance_cause alone, the fence at m2's 12 s rebalance timeout); "
                          "the "
                          "fenced-answer integration test in the project's CI (2026-11-28), two files at a time: 1 "
                          "run, which member not recorded (0 of 19 runs here); the next clean clone's ./dev test "
                          "here: 2 runs (the fenced-answer test and the two-topic file through the plugin, m1 each "
                          "time, its first assignment of all six partitions at epoch 2); the two-topic file with "
                          "--client-set debug=cgrp beside a loop of member-kill runs (2026-11-28): 1 of 10 runs "
                          "(m2, its heartbeat timed out after 795 ms; another of the 10 was "
                          "librdkafka-848-first-assignment-given-away), 0 of 13 member-kill runs",
            doc="docs/findings.md#librdkafka-consumer-protocol-a-first-assignment-kept-past-the-groups-target"),
    Finding("librdkafka-close-leaves-before-revoking",
            "librdkafka, classic cooperative protocol: a consumer closed while a rebalance is under way sends its "
            "LeaveGroup at once and serves the revoke callback after it, so the coordinator gives the partitions to "
            "others while the application still holds them in its revoke handler (whose commit then fails, "
            "_DESTROY); closed in a stable group, the same client revokes first and leaves after",
            invariants=("exclusive_ownership", "coordinator_claims"), protocols=("classic-cooperative",),
            client_below=None, evidence=left_before_revoking,
            expected_rate="the revoke-delay integration test with the Python member (member-kill, classic-cooperative, "
                          "a 2 s revoke handler; its final stop reaches m3 while m1's leave rebalances the group): 1 "
                          "run in the integration tests two files at a time beside a CPU hog (2026-11-28); 0 in the "
                          "six clean clones' ./dev test before it",
            doc="docs/findings.md#librdkafka-classic-cooperative-a-consumer-closed-mid-rebalance-leaves-before-it-revokes"),
    Finding("kafka-848-heartbeat-behind-stalled-commit",
            "Kafka 4.x consumer protocol (by design): a broker cut off while it held an in-sync replica of the "
            "group's offsets partition stalls the coordinator's writes (and again after the heal, until the unfenced "
            "broker fetches); each member's OffsetCommit holds its coordinator connection, the broker reads no "
            "heartbeat behind it, and the coordinator expires live members and gives their partitions away while "
            "they hold them (a consumer-protocol client keeps no session timer of its own)",
            invariants=("exclusive_ownership", "rebalance_cause", "convergence_balance", "group_settled"),
            protocols=("consumer",), client_below=None, scenarios=("rack-partition",),
            evidence=expired_behind_stalled_commit,
            expected_rate="rack-partition --protocol consumer --seed 1170108724 (docker, Kafka 4.4.0, confluent-kafka "
                          "2.16.1, commit_mode sync): 2 of 2 runs of the matrix (2026-12-07, 2026-12-08); the "
                          "classic-cooperative cell's members lapsed in the same stall but gave their partitions up "
                          "first",
            doc="docs/findings.md#kafka-4x-consumer-protocol-heartbeats-held-behind-a-commit-the-cut-broker-stalled"),
    Finding("share-count-kept-after-reconnect",
            "Kafka 4.4.0 with librdkafka 2.16 (share groups): after a share consumer's connection to the "
            "share-partition leader is closed at its request timeout, a record is handed to it twice with the same "
            "delivery count, 13 ms apart, with no leader change between (open: mechanism not yet pinned down)",
            invariants=("share_redelivery",), protocols=("share",), client_below=None,
            scenarios=("share-ack-answer-lost",), evidence=share_count_kept_after_reconnect,
            expected_rate="share-ack-answer-lost (Kafka 4.4.0, confluent-kafka 2.16.1): 1 of 7 runs with the Python "
                          "member, 0 of 4 with the Java member (2026-11-26)",
            doc="docs/findings.md#kafka-440-share-groups-a-record-handed-over-twice-with-one-delivery-count-after-a-reconnect"),
)


@dataclass(frozen=True)
class Excuse:
    """A failed run taken for a known finding: the finding and its marks that hold the failing verdicts' witnesses."""

    finding: Finding
    marks: tuple[Mark, ...]

    @property
    def says(self) -> str:
        """What the run's history shows of the finding, mark by mark."""
        return "; ".join(m.says for m in self.marks)

    def reason(self) -> str:
        """The first line of an excused test's reason: `known finding: <id>`, then the finding's title."""
        return f"{REASON}{self.finding.id}: {self.finding.title}"


def known(run_dir: str | Path, verdicts: dict | None = None) -> Excuse | None:
    """The known finding a failed run shows, with its marks, or None (the module docstring says when). `verdicts`:
    name -> Verdict (or its dict), else the run's verdicts.json."""
    return next((x for x in _judged(run_dir, verdicts) if isinstance(x, Excuse)), None)


def near_misses(run_dir: str | Path, verdicts: dict | None = None) -> list[str]:
    """Why each finding whose scenario, protocol, client and invariants fit a failed run does not match it."""
    judged = list(_judged(run_dir, verdicts))
    return [] if any(isinstance(x, Excuse) for x in judged) else [x for x in judged if isinstance(x, str)]


def _judged(run_dir, verdicts):
    """For each finding in scope of the failed run: its Excuse, or why not (a string)."""
    run_dir = Path(run_dir)
    try:
        meta = json.loads((run_dir / RUN_JSON).read_text())
        if verdicts is None:
            verdicts = json.loads((run_dir / VERDICTS_JSON).read_text())
    except (OSError, ValueError):
        return
    failed = {n: v for n, v in verdicts.items() if status(v) == "invalid"}
    undecided = {n: v for n, v in verdicts.items() if status(v) == "unknown"}
    if not failed:
        return  # nothing failed: an undecided run alone is never a known finding
    for f in KNOWN:
        if not _in_scope(f, meta, set(failed) | set(undecided)):
            continue
        if (team := team_program(meta.get("config") or {})) is not None and \
                _names_a_program(run_dir, [*failed.values(), *undecided.values()]):
            yield f"not {f.id}: {team}, not the client the finding is about"
            continue
        if f.evidence is None:
            yield f"not {f.id}: it has no evidence function, so it never matches"
            continue
        marks = f.evidence(run_dir)
        if not marks:
            yield f"not {f.id}: its mark is not in the history"
            continue
        ids = member_ids(run_dir)
        at = run_seconds(run_dir)
        why = next((w for v in [*failed.values(), *undecided.values()]
                    if (w := outside(v, marks, ids, at=at)) is not None), None)
        if why is not None:
            yield f"not {f.id}: {why}"
            continue
        yield Excuse(f, holding(failed.values(), marks, ids))


def _in_scope(f: Finding, meta: dict, failed: set[str]) -> bool:
    """Whether a run is one the finding is about: its invariants, protocol, member kind, client version, scenario;
    never a self-test's (a member misbehaving on purpose)."""
    cfg = meta.get("config") or {}
    member = cfg.get("member") or "python"
    if not failed <= set(f.invariants) or cfg.get("protocol") not in f.protocols or member not in f.members:
        return False
    if cfg.get("misbehave"):
        return False
    if f.scenarios and not any(same_scenario(cfg, name) for name in f.scenarios):
        return False
    if f.client_below is not None:  # the client that ran (run.json), else the one asked for
        version = meta.get("client_version") or cfg.get("client_version")
        if not is_release(str(version), post=True) or version_key(version) >= version_key(f.client_below):
            return False
    return True


def team_program(cfg: dict) -> str | None:
    """What of a team's own program a run (its recorded config) ran, or None when every member ran the harness's."""
    if cfg.get("member_command"):
        return "every member ran a team's own program (member_command)"
    if cfg.get("slot_commands"):
        slots = [str(x[0]) for x in cfg["slot_commands"] if isinstance(x, (list, tuple)) and x] \
            if isinstance(cfg["slot_commands"], (list, tuple)) else []
        return f"a member ran a team's own program (slot_commands: slot {', '.join(slots) or '?'})"
    return None


def _names_a_program(run_dir: Path, verdicts: list) -> bool:
    """Whether a witness of the verdicts names a member that ran a team's own program (its `member_start` names its
    `program`), or the history cannot tell (no `member_start` names one: a run recorded before the field)."""
    programs = {e.get("member") for e in program_starts(run_dir)}
    if not programs:
        return True
    return any(w.get("member") in programs for v in verdicts for w in compared(v))


def same_scenario(cfg: dict, name: str) -> bool:
    """Whether a run (its recorded config) ran the built-in scenario `name`: the built-in itself (no file), or a
    scenario file whose text has the built-in's digest. A file merely named after it, or naming itself so, is not."""
    from harness.plan.scenarios import SCENARIOS, builtin_text
    if cfg.get("scenario") != name:
        return False
    if not cfg.get("scenario_file"):
        return name in SCENARIOS
    text, shipped = cfg.get("scenario_text"), builtin_text(name)
    return text is not None and shipped is not None and _digest(text) == _digest(shipped)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()

