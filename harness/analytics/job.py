"""The PySpark aggregation job: many run directories in, Parquet tables and a trend summary out.

    aggregate(["reports/runs", "/tmp/probe/nightly-coop"], "out/analytics")

writes ``out/analytics/{runs,rebalances,rebalance_times,violations,partition_downtime}/`` (Parquet),
``summary.json``, ``summary.html`` and ``skipped.json``. See docs/analytics.md.
"""
from __future__ import annotations

import json
import os
import sys
import time
from urllib.parse import unquote, urlparse

from harness.analytics import derive as _derive
from harness.analytics import meta as _meta
from harness.analytics.chart import plural
from harness.analytics.share import SHARE_COLUMNS, SHARE_TYPES, share_records
from harness.record.format import header_problem
from harness.record.rundir import RUN_JSON, STATUS, VERDICTS_JSON

TABLES = ("runs", "rebalances", "rebalance_times", "violations", "partition_downtime", "share_records")
OWNERSHIP = ("assigned", "revoked", "lost", "member_exit", "task_active", "task_active_end")  # derive.py's input
KEEP_TYPES = (*OWNERSHIP, "run_start", "run_end", "header", *SHARE_TYPES)
GROUP = ("kind", "scenario", "kafka_version", "client_version", "protocol")
FLAKY_KEY = ("scenario", "protocol", "kafka_version", "client_version", "seed", "schedule_hash")


def session(master: str | None = None, app: str = "harness-aggregate", driver_memory: str = "2g",
            partitions: int = 6):
    """A Spark session sized for a small machine (2 cores): few shuffle partitions (`partitions`: 6 suits a thousand
    runs; a dozen small ones aggregate about a third faster with 2), no UI."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    loopback = _on_loopback(master or "local[*]")
    if loopback:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no lookups of the host's outside address
    from pyspark.sql import SparkSession
    b = (SparkSession.builder.master(master or "local[*]").appName(app)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", str(partitions))
         .config("spark.default.parallelism", str(partitions))
         .config("spark.driver.memory", driver_memory)
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.files.openCostInBytes", str(256 * 1024))
         .config("spark.sql.adaptive.enabled", "true")
         .config("spark.python.worker.reuse", "true"))
    if loopback:
        b = b.config("spark.driver.host", "127.0.0.1")  # what executors are told to connect to (not "localhost")
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _on_loopback(master: str) -> bool:
    """A local master, or a cluster master on this machine's loopback (`spark://127.0.0.1:7077`): the driver then
    binds to 127.0.0.1 too, so the executors reach it there."""
    if master.startswith("local"):
        return True
    host = urlparse(master).hostname or ""
    return host == "localhost" or host.startswith("127.") or host == "::1"


def _local_path(uri: str) -> str:
    u = urlparse(uri)
    return os.path.abspath(unquote(u.path)) if u.scheme in ("", "file") else uri


def _header_of(row) -> dict:
    """A header line as the scan read it, for `header_problem`: its `version` column is a string (other events'
    `version` fields are), the header's a whole number."""
    version = row["version"]
    return {"type": "header", "schema": row["schema"], "version": int(version) if str(version).isdigit() else version}


def _derive_run(item):
    run_id, evs = item
    evs = list(evs)
    start = min((e[0] for e in evs if e[2] == "run_start" and e[0] is not None), default=None)
    end = max((e[0] for e in evs if e[2] == "run_end" and e[0] is not None), default=None)
    rebs, down = _derive.derive(evs, end)
    if start is None:
        start = min((e[0] for e in evs if e[0] is not None), default=0.0)
    out = []
    for r in rebs:
        out.append(("R", (run_id, r["index"], r["start_mono"], round(r["start_mono"] - start, 6), r["end_mono"],
                          r["duration_s"], r["events"], r["members"], r["moves"], r["assigned"], r["revoked"],
                          r["lost"], r["longest_unowned_s"], r["longest_unowned_topic"],
                          r["longest_unowned_partition"])))
    for d in down:
        out.append(("D", (run_id, d["topic"], d["partition"], d["first_assigned_mono"], d["unowned_s"],
                          d["unowned_stretches"], d["longest_unowned_s"])))
    return out


def say(line: str) -> None:
    """A progress line on standard output, flushed at once: piped (`harness aggregate ... | cat`) each phase's line
    shows as the phase ends, not in one block with the last (a pipe's output is otherwise buffered)."""
    print(line, flush=True)


class Progress:
    """The job's phase lines (discovered, session, loaded, judged, histories scanned, tables written, summary
    written), each given to `log` as its phase ends with the seconds since the job began; the same cumulative
    seconds are kept for summary.json's `phases_cumulative_s`."""

    def __init__(self, log=say) -> None:
        self.log, self.t0, self.phases = log, time.monotonic(), {}

    def elapsed(self) -> float:
        """Seconds since the job began."""
        return round(time.monotonic() - self.t0, 3)

    def done(self, key: str, line: str) -> None:
        """Phase `key` (e.g. `loaded_s`) ended: its line, with the seconds so far."""
        self.phases[key] = self.elapsed()
        self.log(f"aggregate: {line} ({self.phases[key]:.1f} s)")

    def note(self, line: str) -> None:
        """A line within a phase (a skipped directory, a run judged otherwise than recorded)."""
        self.log(f"aggregate:   {line}")


#: at most this many run directories get 2 shuffle partitions instead of 6 (a dozen small runs: a third faster)
FEW_RUNS = 100


def aggregate(run_dirs, out: str, master: str | None = None, spark=None, log=say) -> dict:
    """Run the job; return the summary (also written to OUT/summary.json). ``spark``: reuse a session. Each
    phase's line goes to `log` as the phase ends (docs/analytics.md, "Progress")."""
    progress = Progress(log)
    out = os.path.abspath(out)
    dirs, skipped = _meta.discover(run_dirs)
    progress.done("discovered_s", f"discovered {plural(len(dirs), 'run directory', 'run directories')} under "
                                  f"{plural(len(run_dirs), 'path')}")
    own_session = spark is None
    if own_session:
        spark = session(master, partitions=2 if len(dirs) <= FEW_RUNS else 6)
        progress.done("session_s", f"Spark session {master or 'local[*]'} started")
    try:
        os.makedirs(out, exist_ok=True)
        metas, ok = _small_files(spark, dirs, skipped, progress)
        # ---- the histories: one JSON scan with an explicit schema -----------------------------------------
        files = [f for fs, _ in ok.values() for f in fs if f[1] > 0]
        file_run, bad_runs = {}, {}
        keep = None
        if files:
            keep, stats = _scan_histories(spark, files)
            bad_runs = _bad_histories(ok, files, stats)
            file_run = {r["file"]: _local_path(r["file"]) for r in stats}
        for run_dir, why in sorted(bad_runs.items()):
            skipped.append({"run_dir": run_dir, "name": os.path.basename(run_dir), "reason": why})
            ok.pop(run_dir)
        progress.done("histories_scanned_s", f"scanned {plural(len(files), 'history file')} of "
                                             f"{plural(len(ok) + len(bad_runs), 'run')}"
                                             f"{f', {len(bad_runs)} unusable, skipped' if bad_runs else ''}")
        for run_dir, why in sorted(bad_runs.items()):
            progress.note(f"skipped {os.path.basename(run_dir)}: {why}")
        # ---- the tables ---------------------------------------------------------------------------------------
        for name, df in _tables(spark, metas, keep, ok, file_run).items():
            df.coalesce(2).write.mode("overwrite").parquet(os.path.join(out, name))
        progress.done("tables_written_s", f"wrote {plural(len(TABLES), 'table')} (Parquet) of "
                                          f"{plural(len(ok), 'run')}")
        if keep is not None:
            keep.unpersist()
        # ---- the summary, from the written tables -------------------------------------------------------------
        return _write_summary(spark, out, run_dirs, skipped, len(files), progress)
    finally:
        if own_session:
            spark.stop()


def _small_files(spark, dirs: list[str], skipped: list[dict], progress: Progress):
    """Each run directory's small files, read on the executors (`meta.read`), then each usable run judged now
    (`meta.judge`, kept for the tables); a line as each ends. Returns the judged records and the usable runs: run
    dir -> (history files, run id); the unusable go into `skipped`."""
    from pyspark import StorageLevel
    sc = spark.sparkContext
    n_slices = max(1, min(len(dirs), sc.defaultParallelism * 4))
    read = sc.parallelize(dirs or [], n_slices).map(_meta.read).persist(StorageLevel.MEMORY_AND_DISK)
    light = read.map(lambda m: (m["run_dir"], m["name"], m["reason"])).collect()
    unusable = [{"run_dir": run_dir, "name": name, "reason": reason} for run_dir, name, reason in light if reason]
    skipped.extend(unusable)
    progress.done("loaded_s", f"loaded {STATUS}, {RUN_JSON} and {VERDICTS_JSON} of "
                              f"{plural(len(light) - len(unusable), 'run')}"
                              f"{f', {len(unusable)} unusable, skipped' if unusable else ''}")
    for s in skipped:
        progress.note(f"skipped {s['name']}: {s['reason']}")
    metas = read.map(_meta.judge).persist(StorageLevel.MEMORY_AND_DISK)
    judged = metas.filter(lambda m: m["run"] is not None).map(
        lambda m: (m["run_dir"], m["files"], m["run"][0], m["run"][-1])).collect()  # the last: why it differs
    read.unpersist()
    differ = [j for j in judged if j[3]]
    progress.done("judged_s", f"judged {plural(len(judged), 'run')} again by the run-level checks: "
                              f"{len(differ)} judged otherwise than recorded")
    for _run_dir, _files, rid, note in differ:
        progress.note(f"{rid}: {note}")
    return metas, {run_dir: (files, rid) for run_dir, files, rid, _note in judged}


def _scan_histories(spark, files: list):
    """The history lines the tables need (persisted; `corrupt` marks an unparsable one) and, per file, its counts
    of corrupt lines and its header lines (their schema and version)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from harness.analytics import schemas
    raw = (spark.read.schema(schemas.HISTORY).option("mode", "PERMISSIVE")
           .option("columnNameOfCorruptRecord", schemas.CORRUPT)
           .json([f[0] for f in files]).withColumn("file", F.input_file_name()))
    keep = (raw.where(F.col("type").isin(*KEEP_TYPES) | F.col(schemas.CORRUPT).isNotNull())
            .select("file", "type", "mono", "member", "partitions", "schema", "version", *SHARE_COLUMNS,
                    F.col(schemas.CORRUPT).isNotNull().alias("corrupt"))
            .withColumn("seq", F.monotonically_increasing_id())
            .persist(StorageLevel.MEMORY_AND_DISK))
    stats = (keep.groupBy("file").agg(
        F.sum(F.col("corrupt").cast("int")).alias("corrupt"),
        F.collect_list(F.when(F.col("type") == "header", F.struct("schema", "version"))).alias("headers"))
             ).collect()
    return keep, stats


def _bad_histories(ok: dict, files: list, stats: list) -> dict:
    """Run dir -> why one of its history files makes it unusable (no header, a header of another schema or
    version, unparsable lines beyond a torn last one)."""
    bad_runs = {}
    by_path = {_local_path(r["file"]): r for r in stats}
    torn = {f[0]: f[2] for f in files}
    for run_dir, (fs, rid) in ok.items():
        for path, size, is_torn in fs:
            if size == 0:
                continue
            st = by_path.get(os.path.abspath(path))
            name = os.path.basename(path)
            if st is None or not st["headers"]:
                bad_runs.setdefault(run_dir, f"history/{name}: no header line")
            elif any(header_problem(_header_of(h)) for h in st["headers"]):
                bad_runs.setdefault(run_dir, f"history/{name}: header of another schema or version")
            elif (st["corrupt"] or 0) > (1 if torn.get(path) else 0):
                bad_runs.setdefault(run_dir, f"history/{name}: {st['corrupt']} unparsable line(s)")
    return bad_runs


def _tables(spark, metas, keep, ok: dict, file_run: dict) -> dict:
    """The tables (name -> DataFrame, in TABLES' order) of the usable runs."""
    from harness.analytics import schemas
    good_b = spark.sparkContext.broadcast(set(ok))
    runs = spark.createDataFrame(metas.filter(lambda m: m["run"] is not None and m["run_dir"] in good_b.value)
                                 .map(lambda m: m["run"]), schemas.RUNS)
    violations = spark.createDataFrame(metas.filter(lambda m: m["run"] is not None and m["run_dir"] in good_b.value)
                                       .flatMap(lambda m: m["violations"]), schemas.VIOLATIONS)
    rtimes = spark.createDataFrame(metas.filter(lambda m: m["run"] is not None and m["run_dir"] in good_b.value)
                                   .flatMap(lambda m: m["rebalance_times"]), schemas.REBALANCE_TIMES)
    if keep is not None and ok:
        rebalances, downtime, shares = _derived_tables(spark, keep, ok, file_run)
    else:
        rebalances = spark.createDataFrame([], schemas.REBALANCES)
        downtime = spark.createDataFrame([], schemas.PARTITION_DOWNTIME)
        shares = spark.createDataFrame([], schemas.SHARE_RECORDS)
    return {"runs": runs, "rebalances": rebalances, "rebalance_times": rtimes, "violations": violations,
            "partition_downtime": downtime, "share_records": shares}


def _derived_tables(spark, keep, ok: dict, file_run: dict):
    """The rebalances, partition downtime and share records tables, derived from the history lines."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from harness.analytics import schemas
    rows = [(uri, ok[os.path.dirname(os.path.dirname(p))][1]) for uri, p in file_run.items()
            if os.path.dirname(os.path.dirname(p)) in ok]
    fmap = spark.createDataFrame(rows, "file string, run_id string")
    evs = (keep.where(F.col("type").isin(*OWNERSHIP, "run_start", "run_end")
                      & ~F.col("corrupt"))
           .join(F.broadcast(fmap), "file").select("run_id", "mono", "seq", "type", "member", "partitions"))
    derived = (evs.rdd.map(lambda r: (r[0], (r[1], r[2], r[3], r[4], r[5])))
               .groupByKey(max(1, int(spark.conf.get("spark.sql.shuffle.partitions"))))
               .flatMap(_derive_run).persist(StorageLevel.MEMORY_AND_DISK))
    rebalances = spark.createDataFrame(derived.filter(lambda x: x[0] == "R").map(lambda x: x[1]), schemas.REBALANCES)
    downtime = spark.createDataFrame(derived.filter(lambda x: x[0] == "D").map(lambda x: x[1]),
                                     schemas.PARTITION_DOWNTIME)
    shares = share_records(keep.where(F.col("type").isin(*SHARE_TYPES) & ~F.col("corrupt")), fmap)
    return rebalances, downtime, shares


def _write_summary(spark, out: str, run_dirs, skipped: list, n_files: int, progress: Progress) -> dict:
    """The summary from the written tables, written with skipped.json and summary.html; returned. Its headline (the
    page's words) is the last line."""
    summary = summarize(spark, out)
    summary["skipped"] = skipped
    summary["inputs"] = [os.path.abspath(p) for p in run_dirs]
    summary["history_files"] = n_files
    summary["elapsed_s"] = progress.elapsed()
    summary["phases_cumulative_s"] = {**progress.phases, "summary_s": summary["elapsed_s"]}
    with open(os.path.join(out, "skipped.json"), "w") as f:
        json.dump(skipped, f, indent=2)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2, default=str)
    from harness.analytics.html import headline, render
    with open(os.path.join(out, "summary.html"), "w") as f:
        f.write(render(summary))
    progress.done("summary_s", f"wrote summary.json, summary.html and skipped.json to {out}")
    progress.log("aggregate: " + "; ".join(text for text, _cls in headline(summary)))
    return summary


def _rows(df) -> list[dict]:
    return [r.asDict(recursive=True) for r in df.collect()]


def summarize(spark, out: str) -> dict:
    """Violation and unknown rates, rebalance time (trigger to stable) and burst percentiles, trends and flaky
    scenarios from the tables in OUT, every run counted by its status as judged now (`judged_now` lists those whose
    STATUS said otherwise). A shrink attempt (runs.shrink_of set) is not a run of its cell: it is counted
    apart (`shrink_attempts`) and none of its figures are in the cell's, the trend's or the totals'; flakiness
    looks at every run."""
    from pyspark.sql import functions as F

    every = spark.read.parquet(os.path.join(out, "runs")).cache()  # a dozen queries read it: from memory
    counted = F.col("shrink_of").isNull()
    runs = every.where(counted)
    reb = spark.read.parquet(os.path.join(out, "rebalances")).join(runs.select("run_id"), "run_id", "left_semi").cache()
    g = list(GROUP)
    per_run = runs.select("run_id", *g, "status", "invalid", "unknown",
                          F.to_date("started").cast("string").alias("day"))

    def n(cond):
        return F.sum((counted & cond).cast("int"))
    run_stats = every.groupBy(*g).agg(
        n(F.lit(True)).alias("runs"), n(F.col("status") == "pass").alias("pass"),
        n(F.col("status") == "fail").alias("fail"), n(F.col("status") == "unknown").alias("unknown"),
        n(F.col("status") == "error").alias("error"), n(F.col("invalid") > 0).alias("violating_runs"),
        n(F.col("judged_note").isNotNull()).alias("judged_differently"),
        F.sum((~counted).cast("int")).alias("shrink_attempts"))
    pct = "percentile(duration_s, array(0.5, 0.95, 0.99))"
    reb_stats = (reb.join(per_run, "run_id").groupBy(*g).agg(
        F.count("*").alias("bursts"), F.expr(pct).alias("d"),
        F.avg("moves").alias("moves_avg"), F.max("longest_unowned_s").alias("longest_unowned_max_s")))
    groups = []
    for r in _rows(run_stats.join(reb_stats, g, "left").orderBy(*g)):
        d = r.pop("d") or [None, None, None]
        r["violation_rate"], r["unknown_rate"] = _rate(r["violating_runs"], r["runs"]), _rate(r["unknown"], r["runs"])
        r["bursts"] = r["bursts"] or 0
        r["duration_p50_s"], r["duration_p95_s"], r["duration_p99_s"] = (None if x is None else round(x, 6) for x in d)
        r["moves_avg"] = None if r["moves_avg"] is None else round(r["moves_avg"], 3)
        groups.append(r)
    trend_runs = per_run.groupBy("day", "scenario").agg(
        F.count("*").alias("runs"), F.sum((F.col("invalid") > 0).cast("int")).alias("violating_runs"),
        F.sum((F.col("status") == "unknown").cast("int")).alias("unknown"))
    trend_reb = reb.join(per_run.select("run_id", "day", "scenario"), "run_id").groupBy("day", "scenario").agg(
        F.count("*").alias("bursts"), F.expr("percentile(duration_s, 0.95)").alias("duration_p95_s"))
    trend = []
    for r in _rows(trend_runs.join(trend_reb, ["day", "scenario"], "left").orderBy("day", "scenario")):
        r["violation_rate"], r["unknown_rate"] = _rate(r["violating_runs"], r["runs"]), _rate(r["unknown"], r["runs"])
        r["bursts"] = r["bursts"] or 0
        r["duration_p95_s"] = None if r["duration_p95_s"] is None else round(r["duration_p95_s"], 6)
        trend.append(r)
    flaky = _flaky(every)
    tot = _rows(every.agg(n(F.lit(True)).alias("runs"), n(F.col("invalid") > 0).alias("violating_runs"),
                          n(F.col("status") == "unknown").alias("unknown"), n(F.col("status") == "error").alias("error"),
                          n(F.col("status") == "pass").alias("pass"),
                          F.sum((~counted).cast("int")).alias("shrink_attempts")))[0]
    rtot = _rows(reb.agg(F.count("*").alias("bursts"), F.expr(pct).alias("d")))[0]
    d = rtot["d"] or [None, None, None]
    runs_n = tot["runs"] or 0
    totals = {"runs": runs_n, "shrink_attempts": tot["shrink_attempts"] or 0,
              "violating_runs": tot["violating_runs"] or 0, "unknown_runs": tot["unknown"] or 0,
              "error_runs": tot["error"] or 0, "passed_runs": tot["pass"] or 0, "violation_rate": _rate(tot["violating_runs"] or 0, runs_n),
              "unknown_rate": _rate(tot["unknown"] or 0, runs_n), "bursts": rtot["bursts"],
              "violations": spark.read.parquet(os.path.join(out, "violations"))
              .join(runs.select("run_id"), "run_id", "left_semi").count(),
              "duration_p50_s": d[0], "duration_p95_s": d[1], "duration_p99_s": d[2]}
    rt = spark.read.parquet(os.path.join(out, "rebalance_times")).join(runs.select("run_id"), "run_id", "left_semi")
    rtt = _rows(rt.agg(F.expr("percentile(settled_s, array(0.5, 0.95))").alias("s"),
                       F.sum((~F.col("settled")).cast("int")).alias("unsettled"), F.count("*").alias("n")))[0]
    s = rtt["s"] or [None, None]
    totals.update({"rebalance_time_p50_s": _r(s[0]), "rebalance_time_p95_s": _r(s[1]),
                   "disturbances": rtt["n"], "unsettled": rtt["unsettled"] or 0})
    totals["judged_differently"] = len(judged := judged_differently(every))
    by = rebalance_time_by(spark, runs, rt)
    every.unpersist()
    reb.unpersist()
    return {"totals": totals, "groups": groups, "trend": trend, "flaky": flaky, "judged_now": judged,
            "rebalance_time": by,
            "tables": {t: os.path.join(out, t) for t in TABLES}}


def _flaky(every) -> list[dict]:
    """Groups of runs with the same scenario, seed and schedule (and protocol and versions) whose statuses or verdict
    signatures differ: the invariants that differed and each run's outcome, judged now and as recorded."""
    from pyspark.sql import functions as F
    k = list(FLAKY_KEY)
    flaky = []
    fl = (every.groupBy(*k).agg(F.count("*").alias("runs"), F.countDistinct("status").alias("statuses"),
                                F.countDistinct("verdict_signature").alias("signatures"),
                                F.sort_array(F.collect_list(F.struct("run_id", "status", "verdict_signature",
                                                                     "recorded_status"))).alias("members"))
          .where((F.col("statuses") > 1) | (F.col("signatures") > 1)).orderBy(*k))
    for r in _rows(fl):
        sigs = [dict(x.split("=", 1) for x in m["verdict_signature"].split(",") if "=" in x) for m in r["members"]]
        inv = sorted({i for s in sigs for i in s if len({t.get(i) for t in sigs}) > 1})
        flaky.append({**{x: r[x] for x in k}, "runs": r["runs"], "differing_invariants": inv,
                      "outcomes": [{"run_id": m["run_id"], "status": m["status"], "recorded": m["recorded_status"]}
                                   for m in r["members"]]})
    return flaky


def judged_differently(every) -> list[dict]:
    """The runs whose status as judged now is not the one their STATUS recorded (each counted as judged now):
    run id, directory, both statuses and the note ("recorded: pass, judged now: unknown (schedule_performed)")."""
    from pyspark.sql import functions as F
    rows = every.where(F.col("judged_note").isNotNull()).select(
        "run_id", "run_dir", F.col("recorded_status").alias("recorded"), F.col("status").alias("judged_now"),
        F.col("judged_note").alias("note")).orderBy("run_id")
    return _rows(rows)


def _r(x):
    return None if x is None else round(x, 6)


def _rate(part, whole):
    return round(part / whole, 4) if whole else None


def rebalance_time_by(spark, runs, rt) -> list[dict]:
    """Per protocol x Kafka version: the runs, their failure rate (an invalid verdict) and unknown rate (status
    unknown), and the trigger-to-stable time of their disturbances (p50, p95, max of the settled ones; how many
    never settled) with the unowned time (p95 of the sum per disturbance, the longest stretch)."""
    from pyspark.sql import functions as F
    key = ["protocol", "kafka_version"]
    r = runs.groupBy(*key).agg(F.count("*").alias("runs"), F.sum((F.col("invalid") > 0).cast("int")).alias("failed"),
                               F.sum((F.col("status") == "unknown").cast("int")).alias("unknown"))
    t = (rt.drop("protocol").join(runs.select("run_id", *key), "run_id").groupBy(*key).agg(
        F.count("*").alias("disturbances"), F.sum((~F.col("settled")).cast("int")).alias("unsettled"),
        F.expr("percentile(settled_s, array(0.5, 0.95))").alias("s"), F.max("settled_s").alias("max_s"),
        F.expr("percentile(unowned_sum_s, 0.95)").alias("unowned_sum_p95_s"),
        F.max("unowned_max_s").alias("unowned_max_s"),
        F.array_join(F.array_sort(F.array_distinct(F.flatten(F.collect_list(F.split("assignors", ","))))), ",")
        .alias("assignors")))
    out = []
    for row in _rows(r.join(t, key, "left").orderBy(*key)):
        s = row.pop("s") or [None, None]
        row["failure_rate"], row["unknown_rate"] = _rate(row["failed"], row["runs"]), _rate(row["unknown"], row["runs"])
        row["p50_s"], row["p95_s"] = _r(s[0]), _r(s[1])
        for k in ("max_s", "unowned_sum_p95_s", "unowned_max_s"):
            row[k] = _r(row[k])
        row["disturbances"], row["unsettled"] = row["disturbances"] or 0, row["unsettled"] or 0
        out.append(row)
    return out
