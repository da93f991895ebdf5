"""Where a `partitions-900` run's rebalance time goes, from its own lines: one timeline from the action's start.

Reads a run directory (bench/rebalance_time.py's, or any run with one `add_partitions` step) and prints, in seconds
after the action's start (wall clocks: the harness's and members' events, the brokers' log lines, librdkafka's
timestamps):

- the action (CreatePartitions) and its end (history/harness.jsonl);
- the coordinator's lines about the group (history/brokers.jsonl): `Bumped group epoch`, `Computed a new target
  assignment`, `Computed new metadata hash`, ...;
- with `--cluster-dir`, when each broker's metadata loader created the new partitions' local logs (its broker.log:
  the first and last `Created log for partition` line); the group coordinator hears of a topic change from the same
  thread after that;
- per member (its client's `debug=cgrp,metadata` lines in logs/member-*.log, told apart by `client.id`, which the
  harness sets to the member's id; and its history/member-*.jsonl): when its client first had the topic's metadata
  with the new partition count (`METADATA` lines), when its heartbeat first received a target assignment after the
  action, when reconciliation of it started, and when the member recorded the new partitions `assigned`.

    PYTHONPATH=. .venv/bin/python bench/rebalance_timeline.py RUN_DIR
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

#: a librdkafka log line as confluent-kafka writes it to stderr: %LEVEL|SECONDS|FAC|CLIENT#TYPE-N| [thrd:...]: text
LINE = re.compile(r"^%(?P<level>\d)\|(?P<ts>\d+\.\d+)\|(?P<fac>[A-Z_]+)\|(?P<client>[^#|]+)#[^|]*\|\s*\[thrd:[^\]]*\]:"
                  r"\s*(?P<text>.*)$")
#: what a member's client lines say, in the order of the timeline: name -> pattern on the text (topic's count: {n})
CLIENT_STEPS = (
    ("metadata_has_new", r"Topic {topic} with {n} partitions"),
    ("heartbeat_target", r"ConsumerGroupHeartbeat received target assignment"),
    ("reconcile_start", r"Reconciliation starts with new target assignment"),
)


#: a broker.log line of the local backend: ISO time, thread, level, logger, text
BROKER_LINE = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\+0000 \[(?P<thread>[^\]]+)\] \w+ \S+ - "
                         r"(?P<text>.*)$")


def local_logs_created(text: str, topic: str, old_partitions: int, after: float) -> tuple[float, float, int] | None:
    """(first, last, count) of a broker.log's `Created log for partition TOPIC-N` lines for the new partitions
    (N >= old_partitions) at or after `after` (wall s): when the broker's metadata loader created their local replicas;
    None when it logged none."""
    from datetime import datetime, timezone
    rx = re.compile(rf"^Created log for partition {re.escape(topic)}-(\d+) ")
    times = []
    for raw in text.splitlines():
        m = BROKER_LINE.match(raw)
        if m and (c := rx.match(m["text"])) and int(c[1]) >= old_partitions:
            ts = datetime.strptime(m["ts"], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()
            if ts >= after:
                times.append(ts)
    return (min(times), max(times), len(times)) if times else None


def client_lines(text: str) -> list[dict]:
    """The librdkafka lines of a member log: {ts, fac, client, text}; other lines skipped."""
    out = []
    for raw in text.splitlines():
        m = LINE.match(raw.strip())
        if m:
            out.append({"ts": float(m["ts"]), "fac": m["fac"], "client": m["client"], "text": m["text"]})
    return out


def first_steps(lines: list[dict], client: str, topic: str, partitions: int, after: float) -> dict:
    """Per CLIENT_STEPS, the first time (wall s) `client`'s lines said it at or after `after`; None if never."""
    out = {}
    for name, pat in CLIENT_STEPS:
        rx = re.compile(pat.format(topic=re.escape(topic), n=partitions))
        out[name] = next((ln["ts"] for ln in lines if ln["client"] == client and ln["ts"] >= after
                          and rx.search(ln["text"])), None)
    return out


def first_new_assigned(events: list[dict], old_partitions: int, after: float) -> float | None:
    """When a member's history first recorded `assigned` of a partition numbered from `old_partitions` on."""
    return next((e["wall"] for e in events if e.get("type") == "assigned" and e["wall"] >= after
                 and any(p >= old_partitions for _, p in e.get("partitions") or ())), None)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()] if path.exists() else []


def timeline(run_dir: Path, cluster_dir: Path | None = None) -> dict:
    """The run's timeline (module docstring): action, coordinator lines, and per member its steps' wall times."""
    hist = run_dir / "history"
    harness = _jsonl(hist / "harness.jsonl")
    start = next(e for e in harness if e.get("type") == "action_start" and e.get("kind") == "add_partitions")
    end = next(e for e in harness if e.get("type") == "action_end" and e.get("action_id") == start["action_id"])
    run = next(e for e in harness if e.get("type") == "run_start")
    topic, old = run["settings"]["topic"], int(run["settings"]["partitions"])
    new = int(start["params"]["count"])
    t0 = start["wall"]
    coord = [{"t": round(e["wall"] - t0, 3), "broker": e.get("broker"), "text": e["message"]}
             for e in _jsonl(hist / "brokers.jsonl") if e.get("type") == "broker" and e["wall"] >= t0 - 0.5]
    lines = [ln for p in sorted((run_dir / "logs").glob("member-*.log")) for ln in client_lines(p.read_text())]
    members = {}
    for path in sorted(hist.glob("member-*.jsonl")):
        evs = _jsonl(path)
        member = next((e["member"] for e in evs if e.get("member")), path.stem.removeprefix("member-"))
        steps = first_steps(lines, member, topic, new, t0)
        steps["assigned_new"] = first_new_assigned(evs, old, t0)
        members[member] = {k: None if v is None else round(v - t0, 3) for k, v in steps.items()}
    logs = {}
    for path in sorted(cluster_dir.glob("broker-*/broker.log")) if cluster_dir else ():
        if got := local_logs_created(path.read_text(errors="replace"), topic, old, t0):
            logs[path.parent.name] = {"first": round(got[0] - t0, 3), "last": round(got[1] - t0, 3), "count": got[2]}
    return {"run_dir": str(run_dir), "topic": topic, "partitions_before": old, "partitions_after": new,
            "action_end": round(end["wall"] - t0, 3), "coordinator": coord, "members": members,
            "client_lines": len(lines), "local_logs": logs}


def report(t: dict, coordinator_lines: int = 12) -> str:
    """The timeline as text: the action, the coordinator's first lines, a row per member."""
    out = [f"{t['run_dir']}: {t['topic']} {t['partitions_before']} -> {t['partitions_after']} partitions; "
           f"seconds after the action's start", f"  {t['action_end']:8.3f}  CreatePartitions returned (action_end)"]
    out += [f"  {v['first']:8.3f}  {b}: created its first local log of a new partition; its last ({v['count']} in "
            f"all) at {v['last']:.3f}" for b, v in sorted(t.get("local_logs", {}).items())]
    out += [f"  {c['t']:8.3f}  broker {c['broker']}: {c['text'][:160]}" for c in t["coordinator"][:coordinator_lines]]
    names = [n for n, _ in CLIENT_STEPS] + ["assigned_new"]
    out.append("  member  " + "  ".join(f"{n:>17}" for n in names))
    for m, steps in sorted(t["members"].items(), key=lambda kv: int(re.sub(r"\D", "", kv[0]) or 0)):
        out.append(f"  {m:6}  " + "  ".join(f"{'' if steps[n] is None else format(steps[n], '.3f'):>17}"
                                            for n in names))
    if not t["client_lines"]:
        out.append("  (no librdkafka lines in the members' logs: run with --client-set debug=cgrp,metadata)")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("--coordinator-lines", type=int, default=12, help="how many of the brokers' lines to print")
    ap.add_argument("--json", action="store_true", help="the whole timeline as JSON")
    ap.add_argument("--cluster-dir", default=None,
                    help="the local cluster's directory (broker-N/broker.log): when each broker created the new "
                         "partitions' local logs (bench/rebalance_time.py: RUNS_ROOT/cluster)")
    a = ap.parse_args(argv)
    d = Path(a.run_dir)
    if not (d / "history" / "harness.jsonl").exists():
        print(f"rebalance_timeline: {d} is not a run directory (no history/harness.jsonl)", file=sys.stderr)
        return 2
    try:
        t = timeline(d, Path(a.cluster_dir) if a.cluster_dir else None)
    except StopIteration:
        print(f"rebalance_timeline: {d} has no add_partitions action with its end", file=sys.stderr)
        return 2
    print(json.dumps(t, indent=1) if a.json else report(t, a.coordinator_lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
