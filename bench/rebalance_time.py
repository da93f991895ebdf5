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
`topic.metadata.refresh.interval.ms=5000` unless `--metadata-refresh default` leaves librdkafka's default (300000):
under the classic protocols the group's leader learns of new partitions only at its next metadata refresh, so with
the default the classic figures of `partitions-900` can add up to five minutes of waiting for the refresh.

Options that shape the members (every row says its processing time and refresh):

- `--processing-ms N`: each member works N ms per record (the scenario's `[members] processing_ms`, given to each
  member as HARNESS_PROCESSING_MS), so a poll loop takes as long as an application's might between polls.
- `--metadata-refresh default|S`: the clients' `topic.metadata.refresh.interval.ms`, librdkafka's default or S s.
- `--members N`: `partitions-900` with N members instead of ten (ten per process, as every case).
- `--client-set KEY=VALUE` (repeatable): a client setting for every member, e.g. `debug=cgrp` for the client's
  group-coordination lines in the members' logs.
- `--per-process N`: members hosted per member process (10 unless told), `--broker-set KEY=VALUE` (repeatable): a
  broker setting of the bench's cluster (e.g. `group.consumer.heartbeat.interval.ms=500`, the harness's own; a
  cluster that runs `scale-300` takes Kafka's 5 s and 45 s for the consumer protocol's heartbeat interval and session
  timeout unless told otherwise, for every case it runs; each row says the broker settings it ran with).
- `--measure` (always on for `scale-300`): what the run cost the machine, per phase (the members' joining, from the
  first member's start to the step; the step and after): the CPU of each kind of process (brokers, member
  processes, the harness's group watch, Toxiproxy, the runner) and the brokers' own request latencies and idle
  figures from their JMX metrics (bench/resources.py).

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
REFRESH_KEY = "topic.metadata.refresh.interval.ms"
DEFAULT_REFRESH_S = 5.0  # the bench's refresh unless --metadata-refresh says otherwise
LIBRDKAFKA_REFRESH_S = 300.0  # librdkafka's own default of REFRESH_KEY (CONFIGURATION.md), for the table
PER_PROCESS = 10  # members per member process in every case
#: Kafka's own consumer-protocol heartbeat interval and session timeout (the harness's clusters use 0.5 s and 6 s, quick
#: for small groups): `scale-300` runs with these unless --broker-set says otherwise, since at 300 members on a 2-core
#: machine the coordinator's heartbeat answers outlast librdkafka's heartbeat timeout of one 0.5 s interval
#: (docs/benchmarks.md, "300 members converged and judged")
KAFKA_GROUP_DEFAULTS = {"group.consumer.heartbeat.interval.ms": "5000", "group.consumer.session.timeout.ms": "45000"}
#: name -> (members, partitions, steps, members per process)
CASES = {
    "partitions-900": (10, 100, [{"action": "add_partitions", "after": 2.0, "count": 1000}], PER_PROCESS),
    "scale-out-10-100": (10, 200, [{"action": "scale_out", "after": 2.0, "count": 90}], PER_PROCESS),
    "scale-300": (300, 1000, [{"action": "scale_in", "after": 5.0, "count": 100}], PER_PROCESS),
}
DEFAULT_CASES = ("partitions-900", "scale-out-10-100")
#: Kafka's published figures (seconds), case -> protocol family -> seconds
PUBLISHED = {"partitions-900": {"classic": 103.0, "consumer": 5.0}}
SOURCE = ("https://karafka.io/docs/Kafka-New-Rebalance-Protocol/ (after librdkafka's INTRODUCTION.md, KIP-848: "
          "\"a group with 10 consumers adding 900 partitions completes rebalancing in 5 seconds instead of 103 "
          "seconds\")")


def scenario_text(case: str, members: int, partitions: int, steps: list[dict], per: int,
                  processing_ms: float = 0.0, client: dict | None = None) -> str:
    """A scenario file (docs/scenarios.md) for one case: `client` is every member's client settings (the refresh
    among them unless librdkafka's default is wanted), `processing_ms` each member's work per record."""
    client = client or {}
    lines = [f'name = "bench-{case}"', f'doc = "bench/rebalance_time.py: {case}"',
             f"protocols = {json.dumps(list(PROTOCOLS))}", "", "[members]", f"count = {members}",
             f"members_per_process = {per}",
             "client_settings = {" + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in client.items()) + "}"]
    if processing_ms:
        lines.append(f"processing_ms = {processing_ms:g}")
    lines += ["", "[workload]", f"partitions = {partitions}", ""]
    for s in steps:
        lines.append("[[steps]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in s.items()]
        lines.append("")
    return "\n".join(lines)


def refresh_seconds(text: str) -> float | None:
    """`--metadata-refresh`: "default" (None: librdkafka's own) or S seconds, more than 0."""
    if text.strip().lower() == "default":
        return None
    try:
        s = float(text)
    except ValueError:
        s = -1.0
    if not 0 < s <= 3600:
        raise ValueError(f"--metadata-refresh wants `default` or seconds from 0 to 3600 (not 0), got {text!r}")
    return s


def client_settings(refresh_s: float | None, given: tuple[tuple[str, str], ...] = ()) -> dict:
    """Every member's client settings: the refresh (none for librdkafka's default) under the --client-set ones."""
    out: dict = {} if refresh_s is None else {REFRESH_KEY: int(round(refresh_s * 1000))}
    out.update(dict(given))
    return out


def case_shape(case: str, members: int | None = None, per_process: int | None = None) -> tuple[int, int, list[dict], int]:
    """(members, partitions, steps, members per process) of a case; `members` resizes `partitions-900` only,
    `per_process` sets the members per process of any case."""
    n, partitions, steps, per = CASES[case]
    if per_process is not None:
        if per_process < 1:
            raise ValueError(f"--per-process wants at least 1, got {per_process}")
        per = per_process
    if members is None or members == n:
        return n, partitions, steps, min(per, n)
    if case != "partitions-900":
        raise ValueError(f"--members resizes partitions-900 only, not {case}")
    if members < 1:
        raise ValueError(f"--members wants at least 1, got {members}")
    return members, partitions, steps, min(per, members)


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
            **members_ran_with(started_events(result.run_dir), (meta.get("config") or {}).get("processing_ms")),
            "kafka_version": meta.get("kafka_version"), "client_version": meta.get("client_version"),
            "assignors": rt.get("assignors"), "action": d.get("kind"), "settled_s": d.get("settled_s"),
            "why": d.get("why"), "action_s": action_s, "unowned_sum_s": d.get("unowned_sum_s"),
            "unowned_max_s": d.get("unowned_max_s"), "partitions_unowned": d.get("partitions_unowned"),
            "initial_settled_s": (rt.get("disturbances") or [{}])[0].get("settled_s"), "status": result.status,
            "invalid": sorted(n for n, x in result.verdicts.items() if x.status == "invalid"),
            "run_dir": str(result.run_dir), "ran": ran}


def started_events(run_dir) -> list[dict]:
    """Every member's `started` events (what each ran with: its client settings, its processing time)."""
    from harness.record.history import read_file
    from harness.record.rundir import RunDir, member_histories
    out = []
    for path in member_histories(RunDir(run_dir).history_dir):
        out += [e for e in read_file(path)[1] if e.get("type") == "started"]
    return out


def members_ran_with(started: list[dict], given_processing_ms: float | None = None) -> dict:
    """The processing time (ms per record) and metadata refresh (s; None: librdkafka's default) the members ran with,
    from their `started` events (a member that does not record its processing time: the one the runner gave it,
    `given_processing_ms`, run.json's); a value that differs between members is "mixed", none started is None."""
    proc = {float(x if (x := (e.get("effective") or {}).get("processing_ms")) is not None
                  else given_processing_ms or 0) for e in started}
    refresh = {(e.get("client_config") or {}).get(REFRESH_KEY) for e in started}
    refresh_s = {None if r is None else float(r) / 1000 for r in refresh}
    one = lambda xs: next(iter(xs)) if len(xs) == 1 else ("mixed" if xs else None)  # noqa: E731
    return {"processing_ms": one(proc), "metadata_refresh_s": one(refresh_s), "members_started": len(started)}


def refresh_label(refresh_s) -> str:
    """The table's refresh cell: seconds, or librdkafka's default named as such."""
    if refresh_s is None:
        return f"default ({LIBRDKAFKA_REFRESH_S:g})"
    return refresh_s if isinstance(refresh_s, str) else f"{refresh_s:g}"


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
    out = ["| case | protocol | members | partitions | processing ms per record | metadata refresh s | "
           "consumer heartbeat / session s (brokers) | trigger to stable s | action s | unowned sum s | "
           "longest unowned s | partitions unowned | published s | harness / published | verdicts |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        pub = PUBLISHED.get(r["case"], {}).get("consumer" if r["protocol"] == "consumer" else "classic")
        s = r["settled_s"]
        ratio = f"{s / pub:.2f}" if s is not None and pub else ""
        st = f"{s:.2f}" if s is not None else f"not settled ({r['why']})"
        verdicts = r["status"] + (f" ({', '.join(r['invalid'])})" if r["invalid"] else "")
        proc = r.get("processing_ms")
        out.append(f"| {r['case']} | {r['protocol']} | {r['members']} | {r['partitions']} | "
                   f"{'' if proc is None else proc if isinstance(proc, str) else f'{proc:g}'} | "
                   f"{refresh_label(r.get('metadata_refresh_s'))} | {group_timing_label(r.get('broker_settings'))} | {st} | "
                   f"{_f(r['action_s'])} | {_f(r['unowned_sum_s'])} | {_f(r['unowned_max_s'])} | "
                   f"{r['partitions_unowned'] if r['partitions_unowned'] is not None else ''} | "
                   f"{_f(pub)} | {ratio} | {verdicts} |")
    return "\n".join(out) + "\n"


def group_timing_label(brokers: dict | None) -> str:
    """The consumer protocol's heartbeat interval and session timeout (s) the bench's brokers ran with: the harness's
    cluster's own (0.5 and 6 s) unless the row's broker settings say otherwise."""
    from harness.cluster.base import BrokerSettings
    d = BrokerSettings.for_brokers(3, brokers or {}).properties()
    return (f"{int(d['group.consumer.heartbeat.interval.ms']) / 1000:g} / "
            f"{int(d['group.consumer.session.timeout.ms']) / 1000:g}")


def _f(x) -> str:
    return "" if x is None else f"{x:.2f}"


def bar_label(r: dict) -> str:
    """A chart bar's label: case, protocol, and what differs from the bench's first setting (ten members, no work
    per record, a 5 s refresh)."""
    label = f"{r['case']} {r['protocol']}"
    if r["case"] == "partitions-900" and r["members"] != CASES["partitions-900"][0]:
        label += f" {r['members']}m"
    if r.get("processing_ms"):
        label += f" {r['processing_ms'] if isinstance(r['processing_ms'], str) else format(r['processing_ms'], 'g')}ms"
    if r.get("metadata_refresh_s", DEFAULT_REFRESH_S) != DEFAULT_REFRESH_S:
        label += f" refresh {refresh_label(r.get('metadata_refresh_s'))}"
    return label


def svg(rows: list[dict], width: int = 760) -> str:
    """A bar chart: trigger-to-stable seconds per case and protocol (blue), the published figure (grey)."""
    bars = []
    for r in rows:
        bars.append((bar_label(r), r["settled_s"], "#4a78c2"))
        pub = PUBLISHED.get(r["case"], {}).get("consumer" if r["protocol"] == "consumer" else "classic")
        if pub:
            bars.append((f"  published ({'consumer' if r['protocol'] == 'consumer' else 'classic'})", pub, "#aaaaaa"))
    top = max((b[1] or 0 for b in bars), default=1) or 1
    lh, left = 20, 360
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


def parse_args(argv=None):
    """The command line, checked: bad input is one line and exit code 2 (SystemExit) before any cluster starts."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES), help=f"comma-separated, of {', '.join(CASES)}")
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kafka-version", default="latest")
    ap.add_argument("--stable-timeout", type=float, default=240.0, help="each wait for a stable group, s")
    ap.add_argument("--processing-ms", type=float, default=0.0, help="each member's work per record, ms (0 to 60000)")
    ap.add_argument("--metadata-refresh", default=f"{DEFAULT_REFRESH_S:g}",
                    help=f"the clients' {REFRESH_KEY}: `default` (librdkafka's, {LIBRDKAFKA_REFRESH_S:g} s) or seconds")
    ap.add_argument("--members", type=int, default=None, help="partitions-900's group size (default 10)")
    ap.add_argument("--client-set", action="append", default=[], metavar="KEY=VALUE",
                    help="a client setting for every member; repeatable")
    ap.add_argument("--per-process", type=int, default=None, help=f"members per member process (default {PER_PROCESS})")
    ap.add_argument("--broker-set", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker setting of the bench's cluster; repeatable")
    ap.add_argument("--measure", action="store_true",
                    help="each kind of process's CPU and the brokers' request latencies per phase (on for scale-300)")
    ap.add_argument("--runs-root", default=None, help="where the run directories go (default: a temporary one, kept)")
    ap.add_argument("--out", default=None, help="the rows as JSON")
    ap.add_argument("--append", action="store_true", help="add the rows to those already in --out (table, chart: all)")
    ap.add_argument("--render-only", action="store_true", help="no runs: the table and chart of the rows in --out")
    ap.add_argument("--markdown", default=None, help="the table as Markdown")
    ap.add_argument("--svg", default=None, help="the chart as SVG")
    a = ap.parse_args(argv)
    a.cases, a.protocols = [c for c in a.cases.split(",") if c], [p for p in a.protocols.split(",") if p]
    from harness.base.errors import BadInput
    from harness.plan.options import settings
    try:
        if bad := [c for c in a.cases if c not in CASES] + [p for p in a.protocols if p not in PROTOCOLS]:
            raise ValueError(f"unknown case or protocol {', '.join(bad)}")
        if not 0 <= a.processing_ms <= 60000:
            raise ValueError(f"--processing-ms wants 0 to 60000 ms, got {a.processing_ms:g}")
        if (a.append or a.render_only) and not a.out:
            raise ValueError("--append and --render-only read --out: give --out")
        a.client = client_settings(refresh_seconds(a.metadata_refresh), settings(a.client_set, "--client-set"))
        a.shapes = {c: case_shape(c, a.members, a.per_process) for c in a.cases}
        a.brokers = dict(settings(a.broker_set, "--broker-set"))
        if "scale-300" in a.cases:
            a.brokers = {**KAFKA_GROUP_DEFAULTS, **a.brokers}
    except (ValueError, BadInput) as e:
        print(f"rebalance_time: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.render_only:
        return _write_outputs(a, json.loads(Path(a.out).read_text()))
    from harness.cluster.backends import new_backend
    from harness.cluster.base import BrokerSettings
    root = Path(a.runs_root or tempfile.mkdtemp(prefix="rebalance-time-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"rebalance_time: harness from {sys.modules['harness'].__file__}; runs under {root}", flush=True)
    rows = json.loads(Path(a.out).read_text()) if a.append and Path(a.out).exists() else []
    paths = {}
    for case in a.cases:  # each run's configuration checked as a run checks it, before the cluster starts
        members, partitions, steps, per = a.shapes[case]
        paths[case] = root / f"bench-{case}.toml"
        paths[case].write_text(scenario_text(case, members, partitions, steps, per, a.processing_ms, a.client))
        _check_configs(a, root, paths[case])
    cluster = new_backend("local", work_dir=root / "cluster", version=a.kafka_version,
                          settings=BrokerSettings.for_brokers(3, a.brokers), progress=lambda *x: print(*x, flush=True))
    cluster.start()
    try:
        warm_coordinator(cluster.bootstrap())
        for case in a.cases:
            members, partitions, _, _ = a.shapes[case]
            for p in a.protocols:
                rows.append(_run_one(a, cluster, root, paths[case], case, p, members, partitions))
                if a.out:
                    Path(a.out).write_text(json.dumps(rows, indent=1))
    finally:
        cluster.stop()
    return _write_outputs(a, rows)


def measured_markdown(rows: list[dict]) -> str:
    """The measured rows' costs: per phase, each kind of process's share of the cores, and the coordinator-heavy
    requests' mean and worst-interval mean total time (ms) on the busiest broker."""
    out = ["| case | protocol | members | per process | phase | wall s | brokers | members | group watch | runner | "
           "toxiproxy | all | heartbeat ms (mean / worst interval, busiest broker) | OffsetFetch ms | "
           "request handlers idle (lowest) |", "|" + "---|" * 15]
    for r in rows:
        m = r.get("measured")
        if not m:
            continue
        for phase, c in m["cpu"].items():
            sh = c["share_of_cores"]
            hb = _busiest(m["brokers"], phase, ("ConsumerGroupHeartbeat", "Heartbeat"))
            of = _busiest(m["brokers"], phase, ("OffsetFetch",))
            idle = min((b["idle"].get("RequestHandlerAvgIdlePercent", {}).get("min", 1.0)
                        for b in m["brokers"].values()), default=None)
            out.append(f"| {r['case']} | {r['protocol']} | {r['members']} | {r.get('per_process', '')} | {phase} | "
                       f"{c['wall_s']} | " + " | ".join(f"{sh.get(k, 0):.0%}" for k in
                                                        ("broker", "member", "group_watch", "runner", "toxiproxy"))
                       + f" | {c['all_share_of_cores']:.0%} | {hb} | {of} | {_f(idle)} |")
    return "\n".join(out)


def _busiest(brokers: dict, phase: str, requests: tuple[str, ...]) -> str:
    """`mean / worst` ms of the first of `requests` any broker handled in `phase`, on the broker that handled most."""
    for req in requests:
        got = [b[phase][req] for b in brokers.values() if req in b.get(phase, {})]
        if got:
            x = max(got, key=lambda v: v["requests"])
            return f"{x['mean_ms']:g} / {x['worst_interval_mean_ms']:g} ({req}, {x['requests']})"
    return ""


def _write_outputs(a, rows: list[dict]) -> int:
    print(markdown(rows))
    if any(r.get("measured") for r in rows):
        print(measured_markdown(rows))
    if a.markdown:
        Path(a.markdown).write_text(markdown(rows) + ("\n\n" + measured_markdown(rows)
                                                      if any(r.get("measured") for r in rows) else ""))
    if a.svg:
        Path(a.svg).parent.mkdir(parents=True, exist_ok=True)
        Path(a.svg).write_text(svg(rows))
    return 0


def warm_coordinator(bootstrap: str, timeout_s: float = 120.0) -> None:
    """Have the fresh cluster's group coordinator answer once (it creates __consumer_offsets on the first ask) before
    the first run: while it could not answer, the runner's group watch (DescribeConsumerGroups, 2 s per request)
    aborted this process twice in librdkafka 2.16.1 (`rd_kafka_enq_once_del_source_return: Assertion
    eonce->refcnt > 0`, librdkafka issue 4605). A consumer's OffsetFetch waits for the coordinator without the Admin
    API's path."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-warm-coordinator", "log_level": 2})
    try:
        c.committed([TopicPartition("bench-warm-coordinator", 0)], timeout=timeout_s)
    finally:
        c.close()


def _config(a, root: Path, path: Path, protocol: str):
    from harness.run.runner import RunConfig
    return RunConfig.for_scenario(str(path), seed=a.seed, protocol=protocol, kafka_version=a.kafka_version,
                                  runs_root=str(root), stable_timeout_s=a.stable_timeout, drain_timeout_s=120.0)


def _check_configs(a, root: Path, path: Path) -> None:
    """Each protocol's run of the case at `path` checked as the run will check it (the scenario, the settings, the
    client's own refusal: harness/run/resolve.py); one line and exit 2 on a refusal, before any broker starts."""
    from harness.base.errors import HarnessError
    from harness.run.resolve import resolve
    for p in a.protocols:
        try:
            resolve(_config(a, root, path, p), progress=lambda *_: None)
        except HarnessError as e:
            print(f"rebalance_time: {path.stem.removeprefix('bench-')} under {p}: {e}", file=sys.stderr)
            raise SystemExit(2) from None


def _run_one(a, cluster, root: Path, path: Path, case: str, protocol: str, members: int, partitions: int) -> dict:
    from harness.run.runner import run_scenario
    cfg = _config(a, root, path, protocol)
    measure = a.measure or case == "scale-300"
    meters = start_meters(cluster, a.kafka_version, root / "measure") if measure else None
    w0, c0 = time.monotonic(), _cpu()
    try:
        res = run_scenario(cfg, cluster=cluster, progress=lambda x: print(f"  {x}", flush=True))
    finally:
        taken = stop_meters(meters) if meters else None
    row = row_of(case, protocol, res, members, partitions)
    row["per_process"], row["broker_settings"] = a.shapes[case][3], a.brokers
    if taken:
        row["measured"] = measured(res.run_dir, *taken)
    row["wall_s"], row["runner_cpu_s"] = round(time.monotonic() - w0, 1), round(_cpu() - c0, 1)
    row["runner_cpu_s_per_min"] = round(row["runner_cpu_s"] / max(row["wall_s"] / 60, 1e-9), 2)
    if case == "scale-300":
        row["judging"] = judge_time(res.run_dir)
    print(json.dumps({k: v for k, v in row.items() if k != "ran"}), flush=True)
    return row


def start_meters(cluster, version: str, out_dir: Path):
    """The process CPU sampler and one JmxTool per broker of the bench's local cluster."""
    from harness.kafka import dist as kafka_dist
    from resources import BrokerMetrics, ProcessCpu
    pids = {b: n.proc.pid for b, n in cluster.nodes.items() if n.proc is not None}
    jmx = BrokerMetrics(pids, kafka_dist.resolve(version).classpath, out_dir / time.strftime("%H%M%S")).start()
    return ProcessCpu().start(), jmx


def stop_meters(meters) -> tuple[list[dict], dict]:
    cpu, jmx = meters
    return cpu.stop(), jmx.stop()


def measured(run_dir, samples: list[dict], jmx_rows: dict) -> dict:
    """Per phase: each kind of process's CPU and share of the cores, and per broker the request latencies and the
    lowest idle shares; the phases from the run's own history (the first member's start, the step's start)."""
    import os
    from harness.record.history import read_file
    from harness.record.rundir import HARNESS_HISTORY, RunDir
    from resources import cpu_summary, idle_summary, request_summary
    _, evs = read_file(RunDir(run_dir).history_file(HARNESS_HISTORY))
    first = min((e["mono"] for e in evs if e["type"] == "member_start"), default=samples[0]["mono"])
    step = min((e["mono"] for e in evs if e["type"] == "action_start"
                and e.get("kind") not in ("sleep", "wait_stable")), default=samples[-1]["mono"])
    bounds = {"joining": (first, step), "step_and_after": (step, samples[-1]["mono"])}
    wall = {k: (time.time() - time.monotonic() + a) * 1000 for k, (a, _) in bounds.items()}  # JmxTool's clock
    brokers = {b: {"joining": request_summary(rows, wall["joining"], wall["step_and_after"]),
                   "step_and_after": request_summary(rows, wall["step_and_after"]), "idle": idle_summary(rows)}
               for b, rows in jmx_rows.items()}
    return {"cores": os.cpu_count(), "cpu": cpu_summary(samples, os.cpu_count() or 1, bounds), "brokers": brokers}


if __name__ == "__main__":
    sys.exit(main())
