"""A small run directory for the known finding librdkafka-848 (harness/findings/evidence.py), and verdicts whose
witnesses are chosen as the checkers choose them (harness/invariants/exclusive.py `_zombie`, coverage.py's owners
at the end, convergence.py's disturbance).

The group: m1 holds partition t-1 and m2 partition t-0 from 2.0; m2's last successful commit is at 8.0; the
coordinator's broker is cut off from 5.0 to 9.0 (the heal); m3 is given t-0 at 9.5 (the group fenced m2). Then
the `marked` member's commits are refused with UNKNOWN_MEMBER_ID every 0.2 s, for `refused_s` seconds, before it
writes `lost` (or, with `then="assigned"`, hears of a new assignment without ever writing `lost`).
"""
import json
from pathlib import Path

from harness.record.format import HistoryWriter
from harness.invariants.core import Verdict, witness
from harness.record.rundir import RUN_JSON

HELD = {"m1": 1, "m2": 0}
REFUSED = 'KafkaError{code=UNKNOWN_MEMBER_ID,val=25,str="Commit failed: Broker: Unknown member"}'


def write_run(run_dir: Path, *, refused_s: float, session_ms: int = 6000, protocol: str = "consumer",
              scenario: str = "broker-partition", marked: str = "m2", then: str = "lost",
              scenario_file: str | None = None, scenario_text: str | None = None,
              taken_at: float | None = None, control: tuple[dict, ...] = ()) -> Path:
    """The run directory; `taken_at`: a commit of the marked member the group took at that time (amid the
    refusals: a broker whose fencing failed); `control`: more events of the harness's history (faults)."""
    hist = run_dir / "history"
    hist.mkdir(parents=True)
    (run_dir / RUN_JSON).write_text(json.dumps({"config": {
        "scenario": scenario, "protocol": protocol, "client_version": None, "member": "python",
        "scenario_file": scenario_file, "scenario_text": scenario_text}, "client_version": "2.16.1"}))
    with HistoryWriter(hist / "harness.jsonl", source="harness") as hw:
        hw.record({"type": "group_settings", "mono": 1.0, "wall": 1.0, "group_id": "g", "via": "DescribeConfigs",
                   "broker": {"group.consumer.session.timeout.ms": str(session_ms)}, "group": {}})
        hw.record({"type": "fault_start", "mono": 5.0, "wall": 5.0, "fault_id": "f1", "kind": "broker_partition",
                   "targets": [3], "brokers_affected": [3], "members_affected": ["m1", "m2", "m3"]})
        hw.record({"type": "fault_end", "mono": 9.0, "wall": 9.0, "fault_id": "f1"})
        for e in control:
            hw.record({"wall": e["mono"], **e})
    for m in ("m1", "m2", "m3"):
        with HistoryWriter(hist / f"member-{m}.jsonl", source="member", member=m) as mw:
            def rec(e):
                mw.record({"wall": e["mono"], "member": m, **e})
            rec({"type": "started", "mono": 1.5, "client": "confluent-kafka 2.16.1 librdkafka 2.16.0"})
            if m in HELD:
                rec({"type": "assigned", "mono": 2.0, "partitions": [["t", HELD[m]]]})
                rec({"type": "committed", "mono": 8.0, "ok": True, "requested_mono": 7.99,
                     "offsets": [["t", HELD[m], 4]]})
            if m == "m3":
                rec({"type": "assigned", "mono": 9.5, "partitions": [["t", 0]]})
            if m != marked:
                continue
            t = 10.0
            while t <= 10.0 + refused_s + 1e-9:
                rec({"type": "committed", "mono": t, "ok": False, "error": REFUSED, "requested_mono": t - 0.01,
                     "offsets": [["t", HELD.get(m, 0), 5]]})
                if taken_at is not None and t < taken_at <= t + 0.2:
                    rec({"type": "committed", "mono": taken_at, "ok": True, "requested_mono": taken_at - 0.01,
                         "offsets": [["t", HELD.get(m, 0), 5]]})
                t = round(t + 0.2, 6)
            rec({"type": then, "mono": t, "partitions": [["t", HELD.get(m, 0)]]})
    return run_dir


def events(run_dir: Path, member: str) -> list[dict]:
    from harness.record.format import read_file
    return read_file(run_dir / "history" / f"member-{member}.jsonl")[1]


def livelock_verdicts(run_dir: Path, *, zombie: str = "m2", new_owner: str = "m3") -> dict[str, Verdict]:
    """The three invariants the livelock fails, witnessed as the checkers witness them: the new owner's `assigned`
    and the zombie's end (exclusive_ownership), both owners' `assigned` (coverage_liveness: two owners at the end),
    the heal (convergence_balance: the disturbance it never settled after); commit_progress holds."""
    z, b = events(run_dir, zombie), events(run_dir, new_owner)
    z_assigned = next(e for e in z if e["type"] == "assigned")
    z_end = [e for e in z if e["type"] in ("lost", "revoked", "assigned")][-1]
    b_assigned = next(e for e in b if e["type"] == "assigned")
    heal = {"type": "fault_end", "mono": 9.0, "wall": 9.0, "fault_id": "f1", "source": "harness"}
    return {
        "exclusive_ownership": Verdict("exclusive_ownership", "invalid", f"zombie {zombie} held a partition", (
            witness(b_assigned, f"{new_owner} assigned the partition: the zombie window starts"),
            witness(z_end, f"zombie {zombie} gave up the partition later"))),
        "coverage_liveness": Verdict("coverage_liveness", "invalid", "two live owners at the end", (
            witness(z_assigned, f"{zombie} holds the partition at the end"),
            witness(b_assigned, f"{new_owner} holds the partition at the end"))),
        "convergence_balance": Verdict("convergence_balance", "invalid", "assignment still double-owned at the end",
                                       (witness(heal, "the last disturbance"),)),
        "commit_progress": Verdict("commit_progress", "valid", "every processed record committed"),
    }
