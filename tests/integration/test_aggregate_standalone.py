"""Verify: `harness aggregate --master spark://...` on a real Spark standalone cluster gives the same tables as
`local[2]` on the same run directories, and the cluster leaves no process behind.

Setup: a master and two workers (1 core, 1 GB each) started from the installed pyspark's own launcher
(`bin/spark-class ...deploy.master.Master` / `...deploy.worker.Worker`, tests/integration/spark_standalone.py), bound
to 127.0.0.1 on free ports, their logs and work dirs under the test's tmp dir. The run directories: synthetic ones
with known answers (harness.analytics.synth: passing and failing runs, a torn last line, the six corrupt kinds)
and the share-group history of fixtures/histories judged into a run directory (so `share_records` has rows).
Then: the CLI on the cluster (its driver in a subprocess, given no Spark address: `harness aggregate` binds it to
127.0.0.1 for a loopback master; the master's own status shows the application FINISHED, and both workers ran an
executor that connected to the driver on 127.0.0.1) and the job on `local[2]` write the same rows in every table,
the same skipped directories and the same summary (but for its timings and output paths); stopping the cluster
ends every process of its groups (the JVMs, the executors, their Python workers) and frees its ports. The
cluster's fixture stops it however the test ends (a failure, Ctrl-C).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from harness.analytics import synth  # noqa: E402
from harness.analytics.job import TABLES  # noqa: E402
from tests.integration.leftovers import assert_gone, listening_ports  # noqa: E402
from tests.integration.spark_standalone import StandaloneCluster  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.nightly]  # about 11 min on a loaded 2-core machine: nightly
SHARE_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "share-count-kept-after-reconnect"
NOT_ANSWERS = ("elapsed_s", "phases_cumulative_s", "tables")  # the summary's timings and output paths


@pytest.fixture
def cluster(tmp_path):
    c = StandaloneCluster(tmp_path / "spark", workers=2, cores=1, memory="1g")
    try:
        c.start()
        yield c
    finally:
        c.stop()


def _run_dirs(root: Path) -> Path:
    runs = root / "runs"
    synth.generate(str(runs / "synth"), 6, 800, seed=3)
    from harness.invariants import judge
    from harness.record.rundir import RunDir
    share = runs / "share" / SHARE_FIXTURE.name
    shutil.copytree(SHARE_FIXTURE, share)
    rd = RunDir.open(share)
    rd.set_status(rd.write_verdicts(judge(rd.history())))
    return runs


def _canonical(rows) -> list[str]:
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in rows)


def _answers(spark, out: Path) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    return {"tables": {t: _canonical(spark.read.parquet(str(out / t)).collect()) for t in TABLES},
            "skipped": json.loads((out / "skipped.json").read_text()),
            "summary": {k: v for k, v in summary.items() if k not in NOT_ANSWERS}}


def test_standalone_cluster_gives_the_local_answers_and_leaves_nothing(tmp_path, cluster):
    runs = _run_dirs(tmp_path)
    out_cluster, out_local = tmp_path / "out-cluster", tmp_path / "out-local"
    cmd = [sys.executable, "-m", "harness", "aggregate", str(runs), "--out", str(out_cluster), "--master", cluster.url]
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_LOCAL_IP", "SPARK_LOCAL_HOSTNAME")}
    driver = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    try:
        output, _ = driver.communicate(timeout=900)
    finally:  # a timeout or Ctrl-C: the driver's group (its Python and its JVM) goes too
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    assert driver.returncode == 0, output
    apps = cluster.status()["completedapps"]
    assert [a["name"] for a in apps] == ["harness-aggregate"] and apps[0]["state"] == "FINISHED", apps
    executors = sorted((tmp_path / "spark").glob("work-*/app-*/*/stderr"))
    assert [p.parts[-4] for p in executors] == ["work-0", "work-1"], executors  # an executor on each worker
    for log in executors:
        assert "Connecting to driver: spark://CoarseGrainedScheduler@127.0.0.1:" in log.read_text(), log

    from harness.analytics.job import aggregate, session
    spark = session("local[2]")
    try:
        aggregate([str(runs)], str(out_local), spark=spark, log=lambda *_: None)
        got, want = _answers(spark, out_cluster), _answers(spark, out_local)
    finally:
        spark.stop()
    for t in TABLES:
        assert got["tables"][t] == want["tables"][t], f"table {t} differs between the cluster and local[2]"
        assert want["tables"][t], f"table {t} is empty: the comparison would prove nothing"
    assert got["skipped"] == want["skipped"] and len(want["skipped"]) == len(synth.CORRUPT_KINDS)
    assert got["summary"] == want["summary"]
    assert want["summary"]["totals"]["violating_runs"] > 0 and want["summary"]["totals"]["runs"] == 7

    pids, ports = cluster.pids, listening_ports(cluster.pids)
    assert cluster.port in ports and cluster.ui_port in ports, ports
    cluster.stop()
    assert not cluster.group_members(), "processes of the cluster's groups left behind"
    assert_gone(pids, ports)
