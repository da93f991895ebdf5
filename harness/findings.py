"""Known findings: failures the harness reproduces that are a client's or Kafka's, not the harness's.

Each is written up in docs/findings.md. The nightly mix keeps drawing the scenarios they show in; a failing
run that matches one is marked with it and its expected rate (`known` in nightly.json, and on the night's
progress line), so a night's summary tells a known finding from a new failure. A run that matches a finding
and fails for another invariant as well is not excused: only the finding's invariants are.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.findings_evidence import (commits_refused_unheard, illegal_generation_lost,
                                       share_count_kept_after_reconnect)


@dataclass(frozen=True)
class Finding:
    """A failure the harness shows on purpose, with where it shows and how often."""

    id: str
    title: str
    invariants: tuple[str, ...]  # the invariants it fails
    protocols: tuple[str, ...]  # the group protocols it shows under
    client_below: str | None  # confluent-kafka releases before this one (the fix); None: every release
    expected_rate: str  # how often it showed, with the runs and the command: docs/findings.md
    scenarios: tuple[str, ...] = ()  # the scenarios it was measured on; empty: any
    members: tuple[str, ...] = ("python",)  # the member kinds that run the client it is about
    doc: str = "docs/findings.md"
    #: what the run's history must show besides the failed invariants (harness/findings_evidence.py): a
    #: description of it, or None; without it any failure of the invariants in the scenario would match
    evidence: Callable[[Path], str | None] | None = field(default=None, compare=False)

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "evidence"}


FINDINGS = (
    Finding("librdkafka-2.0-batch-skip",
            "librdkafka before 2.1.0: a record fetched into a batch consume is dropped at a cooperative "
            "rebalance's pause and never fetched again (librdkafka #4208, fixed in 2.1.0)",
            invariants=("record_integrity",), protocols=("classic-cooperative",), client_below="2.1.0",
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
    Finding("librdkafka-848-commit-starves-heartbeat",
            "librdkafka, consumer protocol: a member fenced by a new coordinator while its heartbeats were failing "
            "never heartbeats again while its commits are refused (each UNKNOWN_MEMBER_ID commit pushes the "
            "expedited heartbeat a backoff away), so it never hears it was fenced and keeps its partitions",
            invariants=("exclusive_ownership", "coverage_liveness", "convergence_balance"), protocols=("consumer",),
            client_below=None, scenarios=("broker-partition",), evidence=commits_refused_unheard,
            expected_rate="broker-partition --protocol consumer (docker, seed 2133575392): 2 of 46 runs alone (2 of 11 "
                          "with a broker's clients network connected after start, 0 of 35 with both before); 2 of 30 "
                          "in ./dev smoke, beside three local runs at a time (2026-11-25)",
            doc="docs/findings.md"
                "#librdkafka-consumer-protocol-a-fenced-member-whose-commits-fail-never-heartbeats-again"),
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


def known(*, scenario: str, protocol: str, client_version: str | None, member: str | None,
          failed: set[str] | frozenset[str], run_dir: str | Path | None = None) -> Finding | None:
    """The known finding a failing run shows, or None. The run must fail only invariants of the finding and
    match its protocol and client versions (`client_version` None: the harness's own confluent-kafka, newer
    than every fix listed here). Only the Python member runs confluent-kafka. A finding with `evidence` matches
    only a run directory whose history shows it."""
    if not failed:
        return None
    for f in FINDINGS:
        if not set(failed) <= set(f.invariants) or protocol not in f.protocols:
            continue
        if (member or "python") not in f.members:
            continue
        if f.scenarios and scenario not in f.scenarios and scenario.split("/")[-1].removesuffix(".toml") \
                not in f.scenarios:
            continue
        if f.client_below is not None:
            if (member or "python") != "python" or not client_version or client_version == "default":
                continue
            if _key(client_version) >= _key(f.client_below):
                continue
        if f.evidence is not None and (run_dir is None or f.evidence(Path(run_dir)) is None):
            continue
        return f
    return None


def _key(version: str) -> tuple[int, ...]:
    """x.y.z (or x.y.z.postN) as numbers to compare."""
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])
