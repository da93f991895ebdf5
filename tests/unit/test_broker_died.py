"""LocalCluster.notice_exits: a broker's process that ended on its own is recorded once as `broker_event` `died`
with its exit code and the last ERROR line of its log (Kafka's own reason); one the harness stopped (kill,
terminate, the cluster's stop) never is. Real processes stand in for the brokers' JVMs (no Kafka here)."""
from __future__ import annotations

import sys

from harness.base.procs import Proc
from harness.cluster.local import LocalCluster, Node, last_error


def cluster_of(tmp_path, scripts: dict[int, str]) -> tuple[LocalCluster, list]:
    heard = []
    c = LocalCluster(work_dir=tmp_path, on_event=lambda t, **f: heard.append((t, f)))
    for nid, script in scripts.items():
        log = tmp_path / f"broker-{nid}.log"
        c.nodes[nid] = Node(nid, "r1", 0, 0, 0, 0, tmp_path, tmp_path / "cfg", log, "4.4.0")
        c.nodes[nid].proc = Proc.spawn([sys.executable, "-c", script], log_path=log, name=f"broker-{nid}")
    return c, heard


FATAL = ("print('[2026-12-07 19:00:00,000] INFO starting'); "
         "print('[2026-12-07 19:00:01,000] ERROR Exiting Kafka due to fatal exception during startup'); "
         "print('[2026-12-07 19:00:01,001] INFO shut down'); raise SystemExit(1)")
SLEEPS = "import time; time.sleep(60)"


def test_a_broker_that_exits_on_its_own_is_recorded_once_with_its_reason(tmp_path):
    c, heard = cluster_of(tmp_path, {1: FATAL, 2: SLEEPS})
    try:
        c.nodes[1].proc.wait(timeout_s=20)
        assert c.notice_exits() == [1]
        assert c.notice_exits() == []  # once
        (t, f), = heard
        assert t == "broker_event" and f["what"] == "died" and f["broker"] == 1 and f["code"] == 1
        assert f["reason"].endswith("ERROR Exiting Kafka due to fatal exception during startup"), f
    finally:
        c.stop()


def test_a_broker_the_harness_stopped_is_never_noticed_as_died(tmp_path):
    c, heard = cluster_of(tmp_path, {1: SLEEPS, 2: SLEEPS})
    try:
        c.kill_broker(1)
        c.terminate_broker(2, timeout_s=10)
        assert c.notice_exits() == []
        assert [f["what"] for _, f in heard] == ["kill", "terminate"]
    finally:
        c.stop()


def test_last_error_is_the_last_error_line_or_nothing(tmp_path):
    log = tmp_path / "broker.log"
    assert last_error(log) == ""  # no log
    log.write_text("INFO a\nERROR first\nWARN b\nFATAL second one\nINFO c\n")
    assert last_error(log) == "FATAL second one"
    log.write_text("INFO only\n")
    assert last_error(log) == ""
