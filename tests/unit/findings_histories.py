"""Small run directories for the known findings about records and commits (harness/findings/evidence.py), with the
verdicts the checkers give them, witnessed as the checkers witness them (integrity.py: the acknowledged records never
processed; commits.py: the stalled batch, the refused commit, the cut; convergence.py: the `lost` of a member in good
standing, a rebalance of the storm)."""
import json
from pathlib import Path

from harness.record.format import HistoryWriter
from harness.invariants.core import Verdict, witness
from harness.record.rundir import RUN_JSON


def write_meta(run_dir: Path, **config) -> None:
    cfg = {"scenario": "member-kill", "protocol": "classic-cooperative", "member": "python", "client_version": None,
           "scenario_file": None, "scenario_text": None, **config}
    (run_dir / RUN_JSON).write_text(json.dumps({"config": cfg, "client_version": cfg["client_version"]}))


def _member(hist: Path, member: str, client: str, events: list[dict]) -> None:
    with HistoryWriter(hist / f"member-{member}.jsonl", source="member", member=member) as mw:
        mw.record({"type": "started", "mono": 1.0, "wall": 1.0, "member": member, "client": client})
        for e in events:
            mw.record({"wall": e["mono"], "member": member, **e})


def batch_skip_run(run_dir: Path, *, assigned_between: bool = True, client_version: str = "2.0.2", **config) -> Path:
    """m2 holds t-1 throughout and processes it in batches: offsets 100-130 at 422.695, then (after an `assigned` of
    t-3 at 422.849, an incremental rebalance that left it t-1) 132-140 at 423.150: offset 131 skipped."""
    hist = run_dir / "history"
    hist.mkdir(parents=True)
    write_meta(run_dir, client_version=client_version, **config)
    between = [{"type": "assigned", "mono": 422.849, "partitions": [["t", 3]]}] if assigned_between else []
    _member(hist, "m2", f"confluent-kafka {client_version} librdkafka {client_version}", [
        {"type": "assigned", "mono": 2.0, "partitions": [["t", 1]]},
        {"type": "processed", "mono": 422.695, "topic": "t", "partition": 1, "first_offset": 100, "last_offset": 130,
         "count": 31},
        *between,
        {"type": "processed", "mono": 423.150, "topic": "t", "partition": 1, "first_offset": 132, "last_offset": 140,
         "count": 9}])
    return run_dir


def lost_records(*offsets: tuple[int, int], lost: int | None = None) -> dict[str, Verdict]:
    """record_integrity invalid, witnessed by the producer's `acked` of each (partition, offset) never processed."""
    ws = [witness({"type": "acked", "mono": 420.0 + o / 1000, "topic": "t", "partition": p, "offset": o, "key": "k1",
                   "seq": o, "source": "producer"},
                  f"acknowledged record at offset {o} of partition {p} never processed") for p, o in offsets]
    n = len(offsets) if lost is None else lost
    return {"record_integrity": Verdict("record_integrity", "invalid", f"{n} acknowledged records were never processed",
                                        ws, {"lost": n}),
            "exclusive_ownership": Verdict("exclusive_ownership", "valid", "one owner at a time")}


ILLEGAL = "KafkaError{code=ILLEGAL_GENERATION,val=22}"


def commit_race_run(run_dir: Path, *, lost_at_once: bool = True, client_version: str = "2.3.0") -> Path:
    """m1 holds t-0 and t-3; its commit of t-0 (asked at 17.3 for the batch processed at 17.25) is refused with
    ILLEGAL_GENERATION at 17.34 and its assignment `lost` at once (17.36); m2 is given t-3 at 18.0; m1 is given t-0
    again at 19.0."""
    hist = run_dir / "history"
    hist.mkdir(parents=True)
    write_meta(run_dir, client_version=client_version)
    client = f"confluent-kafka {client_version} librdkafka {client_version}"
    told = [] if lost_at_once else [{"type": "revoked", "mono": 17.35, "partitions": [["t", 3]]}]
    _member(hist, "m1", client, [
        {"type": "assigned", "mono": 2.0, "partitions": [["t", 0], ["t", 3]]},
        {"type": "processed", "mono": 17.25, "topic": "t", "partition": 0, "first_offset": 140, "last_offset": 143,
         "count": 4},
        {"type": "committed", "mono": 17.34, "ok": False, "error": ILLEGAL, "requested_mono": 17.3,
         "offsets": [["t", 0, 144]]},
        *told,
        {"type": "lost", "mono": 17.36, "partitions": [["t", 0]] + ([] if told else [["t", 3]])},
        {"type": "assigned", "mono": 19.0, "partitions": [["t", 0]]}])
    _member(hist, "m2", client, [
        {"type": "assigned", "mono": 2.0, "partitions": [["t", 5]]},
        {"type": "assigned", "mono": 18.0, "partitions": [["t", 3]]},
        {"type": "revoked", "mono": 25.0, "partitions": [["t", 5]]}])
    return run_dir


def commit_race_verdicts(run_dir: Path, *, storm_witness: str = "m2-assigned") -> dict[str, Verdict]:
    from tests.unit.livelock_history import events
    m1, m2 = events(run_dir, "m1"), events(run_dir, "m2")
    of = {(e["type"], e["mono"]): e for e in m1 + m2}
    storm = {"m2-assigned": of[("assigned", 18.0)], "m2-revoked": of[("revoked", 25.0)]}[storm_witness]
    return {
        "convergence_balance": Verdict("convergence_balance", "invalid", "rebalance storm", (
            witness(of[("lost", 17.36)], "lost by a member in good standing"),
            witness(storm, "the first rebalance of the storm"))),
        "commit_progress": Verdict("commit_progress", "invalid", "m1 did not commit t-0", (
            witness(of[("processed", 17.25)], "processed partition 0 up to offset 143"),
            witness(of[("committed", 17.34)], "m1's commit of partition 0, refused"),
            witness(of[("lost", 17.36)], "m1 gave partition 0 up here"))),
    }


def eager_callbacks_run(run_dir: Path, *, incremental: bool = False, client_version: str = "2.9.0") -> Path:
    """A consumer-protocol group as member-kill showed it on confluent-kafka 2.9.0: m3 is assigned t-0..t-5 at 6.4,
    then (m1 and m2 joining) t-0, t-1 at 7.2, no revoke between; m1 is assigned t-2, t-3 at 7.4; m3 revokes t-0, t-1 at
    252.3 (its stop). `incremental`: the same group as an incremental client tells it (m3 revokes t-2..t-5 at 7.1)."""
    hist = run_dir / "history"
    hist.mkdir(parents=True)
    write_meta(run_dir, protocol="consumer", client_version=client_version)
    client = f"confluent-kafka {client_version} librdkafka {client_version}"
    t = lambda *ps: [["t", p] for p in ps]  # noqa: E731
    m3 = [{"type": "assigned", "mono": 6.4, "partitions": t(0, 1, 2, 3, 4, 5)},
          *([{"type": "revoked", "mono": 7.1, "partitions": t(2, 3, 4, 5)}] if incremental else []),
          *([] if incremental else [{"type": "assigned", "mono": 7.2, "partitions": t(0, 1)}]),
          {"type": "revoked", "mono": 252.3, "partitions": t(0, 1)}]
    for member, events in (("m3", m3), ("m1", [{"type": "assigned", "mono": 7.4, "partitions": t(2, 3)}])):
        with HistoryWriter(hist / f"member-{member}.jsonl", source="member", member=member) as mw:
            mw.record({"type": "started", "mono": 1.0, "wall": 1.0, "member": member, "client": client,
                       "protocol": "consumer"})
            for e in events:
                mw.record({"wall": e["mono"], "member": member, **e})
    return run_dir


def records_before_callback_run(run_dir: Path, *, callback_first: bool = False, client_version: str = "3.7.0") -> Path:
    """A consumer-protocol group of Java members as member-kill showed it on kafka-clients 3.7.0: m3 processes t-3 and
    t-4 at 13072.364, then its onPartitionsAssigned gives them at 13072.418. `callback_first`: the callback at
    13072.300, before the records."""
    hist = run_dir / "history"
    hist.mkdir(parents=True)
    write_meta(run_dir, protocol="consumer", member="java", client_version=client_version)
    assigned = {"type": "assigned", "mono": 13072.300 if callback_first else 13072.418,
                "partitions": [["t", 3], ["t", 4]]}
    batches = [{"type": "processed", "mono": 13072.364 + i / 1000, "topic": "t", "partition": p, "first_offset": 0,
                "last_offset": 9, "count": 10} for i, p in enumerate((3, 4))]
    with HistoryWriter(hist / "member-m3.jsonl", source="member", member="m3") as mw:
        mw.record({"type": "started", "mono": 13071.3, "wall": 1.0, "member": "m3",
                   "client": f"apache-kafka-java {client_version}", "protocol": "consumer"})
        for e in sorted([assigned, *batches], key=lambda e: e["mono"]):
            mw.record({"wall": e["mono"], "member": "m3", **e})
    return run_dir
