"""Rebalance time per group protocol on real Kafka: Kafka's published case and a scale-out, with the harness's figures
beside the published ones.

Cases (each a scenario file written here, run by `harness.run.runner.run_scenario` on one shared 3-broker local cluster,
judged as every run is; the figures are `convergence_balance`'s `rebalance_time` measurement, docs/invariants.md):

- `partitions-900`: ten members read a topic of 100 partitions; one `add_partitions` raises it to 1,000 (900 added
  to their subscription). Published (librdkafka's KIP-848 introduction, quoted by Karafka's docs): about 5 s with
  the consumer protocol against about 103 s with the classic one, ten consumers, 900 partitions added.
- `scale-out-10-100`: ten members on 200 partitions; one `scale_out` starts 90 more at once.
- `scale-300`: `--case scale-300` only (not in the default set): 300 members (30 processes of 10) join a topic of
  1,000 partitions, 100 of them leave; with this process's CPU time per minute of the run and the time to judge it.

The trigger is the action's start (it includes the CreatePartitions call, or the start of the new members' processes:
the `action_s` column says how long the action itself took). The members run with
`topic.metadata.refresh.interval.ms=5000` (librdkafka's default is 300000): under the classic protocols the group's
leader learns of new partitions only at its next metadata refresh, so with the default the classic figures of
`partitions-900` would add up to five minutes of waiting for the refresh.

    flock /tmp/realrun.lock env PYTHONPATH=. /work/main/.venv/bin/python bench/rebalance_time.py \\
        --out /tmp/rebalance-time.json --markdown /tmp/rebalance-time.md --svg docs/img/rebalance_time.svg
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

PROTOCOLS = ("classic-eager", "classic-cooperative", "consumer")
REFRESH = {"topic.metadata.refresh.interval.ms": 5000}
#: name -> (members, partitions, steps, members per process)
CASES = {
    "partitions-900": (10, 100, [{"action": "add_partitions", "after": 2.0, "count": 1000}], 10),
    "scale-out-10-100": (10, 200, [{"action": "scale_out", "after": 2.0, "count": 90}], 10),
    "scale-300": (300, 1000, [{"action": "scale_in", "after": 5.0, "count": 100}], 10),
}
DEFAULT_CASES = ("partitions-900", "scale-out-10-100")
#: Kafka's published figures (seconds), case -> protocol family -> seconds
PUBLISHED = {"partitions-900": {"classic": 103.0, "consumer": 5.0}}
SOURCE = ("https://karafka.io/docs/Kafka-New-Rebalance-Protocol/ (after librdkafka's INTRODUCTION.md, KIP-848: "
          "\"a group with 10 consumers adding 900 partitions completes rebalancing in 5 seconds instead of 103 "
          "seconds\")")


def scenario_text(case: str, members: int, partitions: int, steps: list[dict], per: int) -> str:
    """A scenario file (docs/scenarios.md) for one case."""
    lines = [f'name = "bench-{case}"', f'doc = "bench/rebalance_time.py: {case}"',
             f"protocols = {json.dumps(list(PROTOCOLS))}", "", "[members]", f"count = {members}",
             f"members_per_process = {per}",
             "client_settings = {" + ", ".join(f'"{k}" = {v}' for k, v in REFRESH.items()) + "}", "",
             "[workload]", f"partitions = {partitions}", ""]
    for s in steps:
        lines.append("[[steps]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in s.items()]
        lines.append("")
    return "\n".join(lines)


def row_of(case: str, protocol: str, result, members: int, partitions: int) -> dict:
    """The bench's row of one run: its measured disturbance (the scheduled action) and the run's outcome."""
    from harness.record.rundir import RunDir
    v = result.verdicts.get("convergence_balance")
    rt = (v.measurements if v is not None else {}).get("rebalance_time") or {}
    acts = [d for d in rt.get("disturbances") or () if d.get("kind") not in ("initial",)]
    d = acts[-1] if acts else {}
    meta = RunDir(result.run_dir).meta()
    ran = [a for a in meta.get("schedule_ran") or () if a.get("kind") not in ("sleep", "wait_stable")]
    action_s = _action_seconds(result.run_dir, d.get("action_id"))
    return {"case": case, "protocol": protocol, "members": members, "partitions": partitions,
            "kafka_version": meta.get("kafka_version"), "client_version": meta.get("client_version"),
            "assignors": rt.get("assignors"), "action": d.get("kind"), "settled_s": d.get("settled_s"),
            "why": d.get("why"), "action_s": action_s, "unowned_sum_s": d.get("unowned_sum_s"),
            "unowned_max_s": d.get("unowned_max_s"), "partitions_unowned": d.get("partitions_unowned"),
            "initial_settled_s": (rt.get("disturbances") or [{}])[0].get("settled_s"), "status": result.status,
            "invalid": sorted(n for n, x in result.verdicts.items() if x.status == "invalid"),
            "run_dir": str(result.run_dir), "ran": ran}


def _action_seconds(run_dir, action_id) -> float | None:
    from harness.record.history import read_file
    from harness.record.rundir import HARNESS_HISTORY, RunDir
    _, evs = read_file(RunDir(run_dir).history_file(HARNESS_HISTORY))
    t = {e["type"]: e["mono"] for e in evs if e.get("action_id") == action_id and e["type"] in ("action_start",
                                                                                                  "action_end")}
    return round(t["action_end"] - t["action_start"], 3) if len(t) == 2 else None


def judge_time(run_dir) -> dict:
    """Load and judge a run directory's history again, timed (wall and this process's CPU)."""
    from harness.invariants import judge
    from harness.record.rundir import RunDir
    w0, c0 = time.monotonic(), time.process_time()
    h = RunDir(run_dir).history()
    w1 = time.monotonic()
    judge(h)
    return {"load_s": round(w1 - w0, 3), "judge_s": round(time.monotonic() - w1, 3),
            "cpu_s": round(time.process_time() - c0, 3), "events": len(h)}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def markdown(rows: list[dict]) -> str:
    """The table of docs/benchmarks.md: one row per case and protocol, the published figure beside."""
    out = ["| case | protocol | members | partitions | trigger to stable s | action s | unowned sum s | "
           "longest unowned s | partitions unowned | published s | harness / published | verdicts |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        pub = PUBLISHED.get(r["case"], {}).get("consumer" if r["protocol"] == "consumer" else "classic")
        s = r["settled_s"]
        ratio = f"{s / pub:.2f}" if s is not None and pub else ""
        st = f"{s:.2f}" if s is not None else f"not settled ({r['why']})"
        verdicts = r["status"] + (f" ({', '.join(r['invalid'])})" if r["invalid"] else "")
        out.append(f"| {r['case']} | {r['protocol']} | {r['members']} | {r['partitions']} | {st} | "
                   f"{_f(r['action_s'])} | {_f(r['unowned_sum_s'])} | {_f(r['unowned_max_s'])} | "
                   f"{r['partitions_unowned'] if r['partitions_unowned'] is not None else ''} | "
                   f"{_f(pub)} | {ratio} | {verdicts} |")
    return "\n".join(out) + "\n"


def _f(x) -> str:
    return "" if x is None else f"{x:.2f}"


def svg(rows: list[dict], width: int = 640) -> str:
    """A bar chart: trigger-to-stable seconds per case and protocol (blue), the published figure (grey)."""
    bars = []
    for r in rows:
        bars.append((f"{r['case']} {r['protocol']}", r["settled_s"], "#4a78c2"))
        pub = PUBLISHED.get(r["case"], {}).get("consumer" if r["protocol"] == "consumer" else "classic")
        if pub:
            bars.append((f"  published ({'consumer' if r['protocol'] == 'consumer' else 'classic'})", pub, "#aaaaaa"))
    top = max((b[1] or 0 for b in bars), default=1) or 1
    lh, left = 20, 260
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{lh * len(bars) + 30}" '
           f'font-family="sans-serif" font-size="11"><text x="{left}" y="12">rebalance time, trigger to complete and '
           f'balanced (s; max {top:.1f})</text>']
    for i, (label, v, color) in enumerate(bars):
        y = 20 + i * lh
        out.append(f'<text x="0" y="{y + 11}">{label}</text>')
        if v is None:
            out.append(f'<text x="{left}" y="{y + 11}" fill="#b00020">never settled</text>')
            continue
        w = max(1, int((width - left - 60) * v / top))
        out.append(f'<rect x="{left}" y="{y}" width="{w}" height="14" fill="{color}"/>'
                   f'<text x="{left + w + 4}" y="{y + 11}">{v:.2f}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES), help=f"comma-separated, of {', '.join(CASES)}")
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kafka-version", default="latest")
    ap.add_argument("--stable-timeout", type=float, default=240.0, help="each wait for a stable group, s")
    ap.add_argument("--runs-root", default=None, help="where the run directories go (default: a temporary one, kept)")
    ap.add_argument("--out", default=None, help="the rows as JSON")
    ap.add_argument("--markdown", default=None, help="the table as Markdown")
    ap.add_argument("--svg", default=None, help="the chart as SVG")
    a = ap.parse_args(argv)
    cases, protocols = [c for c in a.cases.split(",") if c], [p for p in a.protocols.split(",") if p]
    if bad := [c for c in cases if c not in CASES] + [p for p in protocols if p not in PROTOCOLS]:
        print(f"rebalance_time: unknown case or protocol {', '.join(bad)}", file=sys.stderr)
        return 2
    from harness.cluster.backends import new_backend
    from harness.cluster.base import BrokerSettings
    from harness.run.runner import RunConfig, run_scenario
    root = Path(a.runs_root or tempfile.mkdtemp(prefix="rebalance-time-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"rebalance_time: harness from {sys.modules['harness'].__file__}; runs under {root}", flush=True)
    rows = []
    cluster = new_backend("local", work_dir=root / "cluster", version=a.kafka_version,
                          settings=BrokerSettings.for_brokers(3, {}), progress=lambda *x: print(*x, flush=True))
    cluster.start()
    try:
        for case in cases:
            members, partitions, steps, per = CASES[case]
            path = root / f"bench-{case}.toml"
            path.write_text(scenario_text(case, members, partitions, steps, per))
            for p in protocols:
                cfg = RunConfig.for_scenario(str(path), seed=a.seed, protocol=p, kafka_version=a.kafka_version,
                                             runs_root=str(root), stable_timeout_s=a.stable_timeout,
                                             drain_timeout_s=120.0)
                w0, c0 = time.monotonic(), _cpu()
                res = run_scenario(cfg, cluster=cluster, progress=lambda x: print(f"  {x}", flush=True))
                row = row_of(case, p, res, members, partitions)
                row["wall_s"], row["runner_cpu_s"] = round(time.monotonic() - w0, 1), round(_cpu() - c0, 1)
                row["runner_cpu_s_per_min"] = round(row["runner_cpu_s"] / max(row["wall_s"] / 60, 1e-9), 2)
                if case == "scale-300":
                    row["judging"] = judge_time(res.run_dir)
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "ran"}), flush=True)
                if a.out:
                    Path(a.out).write_text(json.dumps(rows, indent=1))
    finally:
        cluster.stop()
    print(markdown(rows))
    if a.markdown:
        Path(a.markdown).write_text(markdown(rows))
    if a.svg:
        Path(a.svg).parent.mkdir(parents=True, exist_ok=True)
        Path(a.svg).write_text(svg(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
