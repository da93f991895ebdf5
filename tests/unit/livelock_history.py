"""A small run directory for the known finding librdkafka-848 (harness/findings_evidence.py): m2's commits are
refused with UNKNOWN_MEMBER_ID every 0.2 s, for `refused_s` seconds, before it hears it lost its partitions."""
import json
from pathlib import Path

from harness.history_format import HistoryWriter
from harness.rundir import RUN_JSON


def write_run(run_dir: Path, *, refused_s: float, session_ms: int = 6000, protocol: str = "consumer",
              scenario: str = "broker-partition") -> Path:
    hist = run_dir / "history"
    hist.mkdir(parents=True)
    (run_dir / RUN_JSON).write_text(json.dumps({"config": {"scenario": scenario, "protocol": protocol,
                                                            "client_version": None, "member": "python"},
                                                 "client_version": "2.16.1"}))
    with HistoryWriter(hist / "harness.jsonl", source="harness") as hw:
        hw.record({"type": "group_settings", "mono": 1.0, "wall": 1.0, "group_id": "g", "via": "DescribeConfigs",
                   "broker": {"group.consumer.session.timeout.ms": str(session_ms)}, "group": {}})
    with HistoryWriter(hist / "member-m2.jsonl", source="member", member="m2") as mw:
        mw.record({"type": "assigned", "mono": 2.0, "wall": 2.0, "member": "m2", "partitions": [["t", 0]]})
        t = 10.0
        while t <= 10.0 + refused_s + 1e-9:
            mw.record({"type": "committed", "mono": t, "wall": t, "member": "m2", "ok": False,
                       "error": 'KafkaError{code=UNKNOWN_MEMBER_ID,val=25,str="Commit failed: Broker: Unknown member"}',
                       "requested_mono": t - 0.01, "offsets": [["t", 0, 5]]})
            t = round(t + 0.2, 6)
        mw.record({"type": "lost", "mono": t, "wall": t, "member": "m2", "partitions": [["t", 0]]})
    return run_dir
