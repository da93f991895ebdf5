"""Known findings (harness/findings.py, docs/findings.md): which failing runs they excuse on a night's summary, and
nightly() marking such a run with its expected rate instead of shrinking it."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from harness.findings import FINDINGS, known
from harness.nightly import nightly
from harness.rundir import RunResult
from tests.unit.livelock_history import write_run


def test_the_librdkafka_batch_finding_matches_old_clients_on_the_cooperative_protocol_only():
    args = dict(scenario="member-kill", protocol="classic-cooperative", member=None, failed={"record_integrity"})
    assert known(client_version="2.0.2", **args).id == "librdkafka-2.0-batch-skip"
    assert known(client_version="2.0.2.post1", **args) is not None
    for cv in ("2.1.0", "2.16.1", None, "default"):  # fixed, or the harness's own client
        assert known(client_version=cv, **args) is None
    assert known(client_version="2.0.2", **{**args, "protocol": "classic-eager"}) is None
    assert known(client_version="2.0.2", **{**args, "member": "java"}) is None  # not confluent-kafka
    # another invariant failing as well is not excused, nor a pass
    assert known(client_version="2.0.2", **{**args, "failed": {"record_integrity", "exclusive_ownership"}}) is None
    assert known(client_version="2.0.2", **{**args, "failed": set()}) is None


def test_the_commit_starves_heartbeat_finding_matches_the_consumer_protocol_on_broker_partition(tmp_path):
    failed = {"exclusive_ownership", "coverage_liveness", "convergence_balance"}
    args = dict(scenario="broker-partition", protocol="consumer", member=None, client_version=None,
                run_dir=write_run(tmp_path / "livelock", refused_s=8.0))
    assert known(failed=failed, **args).id == "librdkafka-848-commit-starves-heartbeat"
    assert known(failed={"exclusive_ownership"}, **args) is not None
    # its history must show it: refusals for longer than the session timeout, unheard
    assert known(failed=failed, **{**args, "run_dir": write_run(tmp_path / "brief", refused_s=2.0)}) is None
    assert known(failed=failed, **{**args, "run_dir": None}) is None
    assert known(failed=failed | {"record_integrity"}, **args) is None
    assert known(failed=failed, **{**args, "protocol": "classic-cooperative"}) is None
    assert known(failed=failed, **{**args, "scenario": "member-kill"}) is None
    assert known(failed=failed, **{**args, "member": "java"}) is None  # not librdkafka


def test_every_finding_says_how_often_and_where_it_is_written_up():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "findings.md").read_text()
    for f in FINDINGS:
        assert f.expected_rate and f.invariants and f.protocols
        anchor = f.doc.partition("#")[2]
        assert anchor and any(_anchor(line) == anchor for line in doc.splitlines() if line.startswith("#"))


def _anchor(heading: str) -> str:
    """GitHub's anchor of a markdown heading."""
    text = heading.lstrip("#").strip().lower()
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


def test_nightly_marks_a_known_finding_and_does_not_shrink_it(tmp_path, monkeypatch):
    monkeypatch.setattr("harness.nightly.report", lambda *a, **k: None)
    shrunk = []
    monkeypatch.setattr("harness.nightly.shrink_failure", lambda *a, **k: shrunk.append(a) or {})

    class NoCluster:
        def __init__(self, backend, **kw):
            self.settings = kw["settings"]

        def start(self):
            pass

        def stop(self):
            pass

    def run(cfg, *, cluster, progress):
        d = Path(cfg.runs_root) / f"r{cfg.seed}"
        d.mkdir()
        return RunResult(d, "fail", {"record_integrity": SimpleNamespace(status="invalid")})

    res = nightly(budget_s=10_000, seed=5, kafka_versions=["4.4.0"], client_versions=["2.0.2"],
                  protocols=["classic-cooperative"], runs_root=str(tmp_path), runs=12,
                  make_cluster=lambda backend, **kw: NoCluster(backend, **kw), run=run, progress=lambda *_: None)
    summary = json.loads((res.out_dir / "nightly.json").read_text())
    marked = [r for r in summary["runs"] if r["known"]]
    assert marked and all(r["known"]["id"] == "librdkafka-2.0-batch-skip" and r["known"]["expected_rate"]
                          for r in marked)
    # every consumer-group scenario of the cooperative protocol on 2.0.2 that failed only record_integrity
    assert len(marked) == len(summary["runs"]) - len(shrunk)


SHARE_RECONNECT = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "share-count-kept-after-reconnect"


def test_the_share_count_kept_after_a_reconnect_matches_only_with_the_reconnect_in_the_history(tmp_path):
    # share-ack-answer-lost (Kafka 4.4.0, confluent-kafka 2.16.1), trimmed: m1's stalled connection closed at
    # 2951.546; offset 22 of partition 0 handed to m1 with delivery count 3 at 2951.558 and again at 2951.571
    from harness.history import History
    from harness.invariants import judge
    v = judge(History.load(SHARE_RECONNECT / "history"))["share_redelivery"]
    assert v.status == "invalid" and "delivery count 3, expected 4" in v.witnesses[0]["why"]
    args = dict(scenario="share-ack-answer-lost", protocol="share", member=None, client_version=None,
                failed={"share_redelivery"})
    f = known(run_dir=SHARE_RECONNECT, **args)
    assert f is not None and f.id == "share-count-kept-after-reconnect"
    assert "0.013s after its connection was closed at 2951.546" in f.evidence(SHARE_RECONNECT)
    assert known(run_dir=SHARE_RECONNECT, **{**args, "failed": {"share_redelivery", "share_completion"}}) is None
    assert known(run_dir=SHARE_RECONNECT, **{**args, "scenario": "share-member-kill"}) is None
    # the same deliveries without the connection's close in the history: not this finding
    hist = tmp_path / "run" / "history"
    hist.mkdir(parents=True)
    for p in (SHARE_RECONNECT / "history").iterdir():
        lines = p.read_text().splitlines(keepends=True)
        hist.joinpath(p.name).write_text("".join(l for l in lines if '"outcome":"closed"' not in l))
    assert known(run_dir=tmp_path / "run", **args) is None
