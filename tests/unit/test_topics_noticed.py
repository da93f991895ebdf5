"""Verify: a topic created or deleted that a member's subscription matches is a cause of that member's classic rejoin
within its metadata refresh (`rebalance_cause`), and a transition the members may have noticed it across is promised
no stickiness and no fewest moves (`strict_stickiness`, `bounded_migrations`: `topic_changed`); issue 44's matrix.

Setup: the kept runs fixtures/histories/topic-created-late-classic-cooperative and
topic-regex-dropped-classic-cooperative (`harness matrix`, Kafka 4.4.0, confluent-kafka 2.16.1, cooperative-sticky,
topic.metadata.refresh.interval.ms 5000; a quiet machine): the late topic is created mid-run, m3 rejoins ("Updating
metadata") while the step runs, and the first rebalance after it moved two partitions of `orders` (m3 gave up
orders-2 and orders-5 while it took late-0..2), the others joining with the old subscription. They failed
`rebalance_cause`, `strict_stickiness` and `bounded_migrations` before. Must-fail twins: the same run with the members
subscribed to `orders` alone (the late topic matches no subscription: the rejoin has no cause), and the same run
judged with the topic change unseen (the moves the same, the cause absent).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.invariants import judge, topics_noticed
from harness.record.history import History

KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories"
LATE = KEPT / "topic-created-late-classic-cooperative"
REGEX = KEPT / "topic-regex-dropped-classic-cooperative"


def verdicts_of(run: Path) -> dict:
    return judge(History.load(run / "history"))


@pytest.mark.parametrize("run", [LATE, REGEX], ids=lambda p: p.name)
def test_the_kept_topic_runs_pass(run):
    vs = verdicts_of(run)
    assert all(v.status in ("valid", "skipped") for v in vs.values()), \
        {n: v.message for n, v in vs.items() if v.status not in ("valid", "skipped")}
    assert vs["rebalance_cause"].status == "valid"
    assert vs["rebalance_cause"].measurements["causes"].get("rejoin", 0) >= 1
    assert vs["bounded_migrations"].measurements["topic_changed"] >= 1
    assert "across a topic change (created " in vs["bounded_migrations"].message


def test_the_late_topic_run_names_the_topic_change_in_strict_stickiness():
    v = verdicts_of(LATE)["strict_stickiness"]
    assert v.status == "skipped" and v.measurements["topic_changed"] == 1
    assert "matched by m1, m2, m3, noticed within their metadata refresh (5s)" in v.message


def test_the_topic_change_is_noticed_within_the_members_recorded_refresh():
    from harness.invariants import run_settings, timeline
    h = History.load(LATE / "history")
    tl = timeline.build(h, run_settings(h)[1])
    (n,) = topics_noticed.noticed(tl)
    assert n.refresh_s == 5.0 and n.members == {"m1", "m2", "m3"}
    assert n.until == pytest.approx(n.cause.end + 5.0 + topics_noticed.CLOCK_SLACK_S)
    assert n.cause.detail.startswith("created ") and n.cause.detail.endswith("-late")


def test_a_rejoin_after_a_topic_no_member_subscribes_to_has_no_cause(tmp_path):
    run = tmp_path / LATE.name
    shutil.copytree(LATE, run)
    for f in (run / "history").glob("member-*.jsonl"):
        lines = f.read_text().splitlines()
        out = []
        for line in lines:
            e = json.loads(line)
            if e.get("type") == "started":
                e["subscription"] = [t for t in e["subscription"] if not t.endswith("-late")]
            out.append(json.dumps(e, separators=(",", ":")))
        f.write_text("\n".join(out) + "\n")
    v = verdicts_of(run)["rebalance_cause"]
    assert v.status == "invalid"
    assert "m3 rejoined a stable group (rejoin" in v.message or "m3 rejoined a stable group" in v.message
    assert "nor topic it subscribes to created or deleted" in v.message


def test_the_same_moves_with_the_topic_change_unseen_fail(monkeypatch):
    monkeypatch.setattr(topics_noticed, "noticed", lambda tl: [])
    vs = verdicts_of(LATE)
    assert vs["rebalance_cause"].status == "invalid"
    assert "m3 rejoined a stable group" in vs["rebalance_cause"].message
    assert vs["bounded_migrations"].status == "invalid"
    assert "2 partitions moved where 0 would reach balance" in vs["bounded_migrations"].message
    assert vs["strict_stickiness"].status == "invalid"
    assert "m3 gave up" in vs["strict_stickiness"].message
