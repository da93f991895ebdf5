"""Verify: the checkers of the assignment at each stable point (docs/invariants.md section 10) fail real runs whose
members misbehave on purpose, and pass the same scenarios run correctly.

Setup: `harness run FILE` in a subprocess, each run on its own 3-broker local cluster of the newest Kafka release
(`latest`), classic-cooperative:
- a member left with a topic it dropped (docs/examples/drop-a-topic.toml): three Python members (the newest
  confluent-kafka installed) read orders (3 partitions) and payments (6), slot 2 orders alone, so that slot 0 surely
  holds payments; slot 0 drops payments. With `--misbehave
  keep-dropped-topic` its `control` event records the new subscription while its client keeps the old one, so the
  coordinator goes on giving it payments;
- a broken assignor (docs/examples/grow-and-shrink.toml): three Java members (on the brokers' own kafka-clients); a
  fourth joins, then leaves. With `--misbehave shuffle-assignor` every member's assignor goes by the name
  cooperative-sticky (which the members record) but deals the partitions unevenly and anew whenever the group's size
  changes (harness/members/java/Member.java `ShuffleAssignor`; it revokes before it moves a partition, so the
  cooperative protocol proceeds).
Then:
- without the misbehaviour each run passes, and the checker it is for judged it (`valid`, stable points counted);
- with it the run fails, and the checker says so: `subscribed_only` invalid naming m1, a payments partition and m1's
  subscription, its witness the `assigned` event that gave m1 that partition; `assignor_shape` invalid at a stable
  point under cooperative-sticky (as the members recorded it), its witnesses the members' `assigned` events; and
  `strict_stickiness` invalid between two stable points, across the member's start or stop, naming the member that
  gave partitions up while it took others, its witnesses that member's `assigned` and `revoked` events.
A self-test's run is never excused by a known finding (docs/findings.md); a clean run that fails only as a registered
finding whose marks cover every failing witness is settled as the suites settle one.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.findings.registry import known
from harness.record.history import History
from harness.suite.known import line, settle

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

EXAMPLES = ROOT / "docs" / "examples"
#: three Python members on orders and payments, slot 0 dropping payments; three Java members, a fourth joining, leaving
DROP_A_TOPIC, GROW_AND_SHRINK = EXAMPLES / "drop-a-topic.toml", EXAMPLES / "grow-and-shrink.toml"


def run(tmp_path, pytestconfig, name: str, example: Path, *args):
    """`harness run` of the example file; (exit code, output, run dir, history, verdicts)."""
    root = tmp_path / name
    r = subprocess.run([sys.executable, "-m", "harness", "run", str(example), "--seed", "1", "--kafka-version",
                        "latest", "--runs-root", str(root), *args], cwd=ROOT, capture_output=True, text=True,
                       timeout=900)
    out = r.stdout + r.stderr
    (d,) = [p for p in root.iterdir() if p.is_dir()]
    v = json.loads((d / "verdicts.json").read_text())
    excuse = known(d, v) if r.returncode == 1 else None
    if excuse is not None:  # never a self-test's (findings.registry); a clean run's finding is settled as suites do
        said = "".join(f"\n  {n}: invalid: {x['message']}" for n, x in v.items() if x["status"] == "invalid")
        settle(pytestconfig, f"run {d}: fail{said}\n{line(excuse)}", excuse)
    return r.returncode, out, d, History.load(d / "history"), v


def _real(h: History, topic: str) -> str:
    return next(t for t, _ in h.run_start()["settings"]["topics"] if t.endswith(f"-{topic}"))


@pytest.mark.nightly  # two runs, over two minutes; subscribed_only's must-fail histories are unit tests
def test_a_member_left_with_a_topic_it_dropped_fails_subscribed_only(tmp_path, pytestconfig):
    rc, out, d, h, v = run(tmp_path, pytestconfig, "clean-drop", DROP_A_TOPIC)
    assert rc == 0, out[-4000:]
    ok = v["subscribed_only"]
    assert ok["status"] == "valid" and ok["measurements"]["points"] >= 2, ok

    rc, out, d, h, v = run(tmp_path, pytestconfig, "keep-dropped", DROP_A_TOPIC, "--misbehave", "keep-dropped-topic")
    assert rc == 1, out[-4000:]
    assert [e.get("misbehave") for e in h.of_type("member_start")] == ["keep-dropped-topic", None, None]
    orders, payments = _real(h, "orders"), _real(h, "payments")
    (control,) = [e for e in h.of_type("control") if e.get("member") == "m1"]
    assert control["subscription"] == [orders]  # the history says m1 dropped payments
    bad = v["subscribed_only"]
    assert bad["status"] == "invalid", bad
    # m1's payments partition counts both ways: held by a member that dropped it, and by no member subscribing to it
    assert bad["measurements"]["misplaced"] >= 1 and bad["measurements"]["unowned"] == bad["measurements"][
        "misplaced"], bad
    assert f"m1 held {payments}-" in bad["message"] and f"of topic {payments}" in bad["message"], bad["message"]
    assert "which its subscription" in bad["message"] and orders in bad["message"], bad["message"]
    w = bad["witnesses"][0]
    assert (w["type"], w["member"]) == ("assigned", "m1") and any(t == payments for t, _ in w["partitions"]), w
    assert "harness replay" in out


@pytest.mark.nightly  # two runs, 77 s and 176 s here (the unbalanced group outlasts the runner's two 60 s waits)
def test_an_assignor_that_shuffles_under_cooperative_stickys_name_fails_shape_and_stickiness(tmp_path, pytestconfig):
    rc, out, d, h, v = run(tmp_path, pytestconfig, "clean-grow", GROW_AND_SHRINK)
    assert rc == 0, out[-4000:]
    assert v["assignor_shape"]["status"] == "valid", v["assignor_shape"]
    assert v["assignor_shape"]["measurements"]["judged"] == {"cooperative-sticky": v["assignor_shape"][
        "measurements"]["points"]}, v["assignor_shape"]
    sticky = v["strict_stickiness"]
    assert sticky["status"] == "valid" and sticky["measurements"]["judged"] == 2, sticky  # the start, the stop

    rc, out, d, h, v = run(tmp_path, pytestconfig, "shuffle", GROW_AND_SHRINK, "--misbehave", "shuffle-assignor")
    assert rc == 1, out[-4000:]
    assert {e.get("misbehave") for e in h.of_type("member_start")} == {"shuffle-assignor"}  # every member, m4 too
    started = [e for e in h.of_type("started")]
    assert {e["effective"]["partition.assignment.strategy"].rsplit(".", 1)[-1] for e in started} == \
        {"CooperativeStickyAssignor"}  # what the members record: the lie the checkers must see through
    shape = v["assignor_shape"]
    assert shape["status"] == "invalid", shape
    assert "under cooperative-sticky" in shape["message"] and "partition.assignment.strategy" in shape["message"]
    assert {w["type"] for w in shape["witnesses"]} == {"assigned"}, shape["witnesses"]
    assert {w["member"] for w in shape["witnesses"]} <= {"m1", "m2", "m3", "m4"}
    sticky = v["strict_stickiness"]
    assert sticky["status"] == "invalid", sticky
    assert "between the stable points at" in sticky["message"] and "gave up" in sticky["message"], sticky
    said = re.search(r"between the stable points at ([\d.]+)s and ([\d.]+)s (m\d+) gave up", sticky["message"])
    assert said and float(said[1]) < float(said[2]), sticky["message"]
    who = said[3]
    assert who in ("m1", "m2", "m3"), sticky["message"]  # a member that stayed through the start or the stop
    # each member that swapped: the assigned events that gave it what it held and took, the revoked ones between
    assert {w["type"] for w in sticky["witnesses"]} == {"assigned", "revoked"}, sticky["witnesses"]
    swapped = {w["member"] for w in sticky["witnesses"]}
    assert who in swapped and swapped <= {"m1", "m2", "m3"}, sticky["witnesses"]
    m4 = next(e["mono"] for e in h.of_type("member_start") if e["member"] == "m4")
    gave = [w["mono"] for w in sticky["witnesses"] if (w["member"], w["type"]) == (who, "revoked")]
    assert gave and all(g > m4 for g in gave), sticky["witnesses"]  # it gave up after the fourth member's start
    assert "harness replay" in out
