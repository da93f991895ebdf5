"""An accept the broker took, reported by the Java client as refused: the run's history and its twins.

`harness run share-subscription-change --member java --seed 1` (Kafka 4.4.0, kafka-clients 4.4.0, local backend)
failed `share_completion` with payments-1 offsets 277-284 "surely lost". m2 was handed them (fetched before its
`subscribe()` to orders alone returned), processed and accepted them; `commitSync` and the acknowledgement commit
callback said `InvalidRecordStateException: Acknowledgement not successful due to invalid response from broker`
0.3 s later, and the member recorded it as the broker's refusal (`answer` = `given`). No broker said so: it is the
client's own error for a partition it read no answer for (its log: "Topic name not found in metadata for topicId
XAn0ifd7S3icU2OfLMJ6dw and partitionIndex 1", the topic its new subscription dropped), and `__share_group_state`
has the broker's write of 277-284 acknowledged (delivery count 1) before the client's error (docs/findings.md).
The fixture is that run trimmed: every harness event, the members' own events, the coordinator's lines about
payments-1 and the producer's and members' record events of payments-1 offsets 270-290 (so the group is not
settled in it: `group_settled` is not judged here).
"""
from __future__ import annotations

import json
from pathlib import Path

from histbuild import acked, drained, ev, group_settings, history, member_start, run_end, run_start

from harness.invariants import judge
from harness.invariants.share import ShareCheckSettings, check_share
from harness.invariants.share.records import no_broker_answer
from harness.record.history import History

FIXTURE = (Path(__file__).resolve().parents[2] / "fixtures" / "histories"
           / "share-subscription-change-java-client-made-refusal.jsonl")
PAY = "t-20261207T215245-share-subscription-change-share-1-payments"
CLIENT_MADE = "InvalidRecordStateException: Acknowledgement not successful due to invalid response from broker"
BROKER_REFUSED = ("InvalidRecordStateException: The record state is invalid. The acknowledgement of delivery could "
                  "not be completed.")
JUDGED = ["share_completion", "share_redelivery", "share_held_when_acting", "share_exclusive", "share_subscribed_only"]


def events() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]


def refused(evs):
    return [e for e in evs if e["type"] == "share_acked" and not e["ok"]]


def completion(evs) -> object:
    return judge(History.from_events(evs))["share_completion"]


def with_start(evs, offset: int):
    """The history with payments-1's start offset after the run replaced by `offset`."""
    out = []
    for e in evs:
        if e["type"] == "share_start_offsets":
            e = {**e, "start_offsets": [[t, p, offset if (t, p) == (PAY, 1) else o] for t, p, o in e["start_offsets"]]}
        out.append(e)
    return out


def test_the_run_recorded_the_client_s_error_as_the_broker_s_answer():
    bad = refused(events())
    assert [e["offset"] for e in bad] == list(range(277, 285))
    assert all(e["answer"] == "given" and e["error"] == CLIENT_MADE and e["ack"] == "accept" for e in bad)


def test_the_accepts_the_client_said_were_refused_are_done_below_the_start_offset():
    vs = judge(History.from_events(events()))
    v = vs["share_completion"]
    assert v.status == "valid", v.message
    assert v.measurements["done_by_start_offset"] == 8 and v.measurements["lost"] == 0
    assert "8 whose answer never came (the holder left, or the answer was lost), below the start offsets" in v.message
    for name in JUDGED:
        assert vs[name].status == "valid", (name, vs[name].message)


def test_the_same_accepts_truly_refused_by_the_broker_are_surely_lost():
    evs = [{**e, "error": BROKER_REFUSED} if e in refused(events()) else e for e in events()]
    v = completion(evs)
    assert v.status == "invalid" and v.measurements["lost_surely"] == 8, v.message
    assert "surely lost: " + PAY + "-1 offsets 277-284 (8)" in v.message
    assert "got no answer" not in v.witnesses[0]["why"]


def test_a_start_offset_at_the_first_of_them_says_the_brokers_hold_it_not_done():
    v = completion(with_start(events(), 277))  # the run did not drain: not a pass, not a sure loss
    assert v.status == "unknown" and v.measurements["lost"] == 1, v.message
    assert v.witnesses[0]["offset"] == 277
    assert "got no answer of the broker's: " + CLIENT_MADE in v.witnesses[0]["why"]
    drained_ok = [{**e, "ok": True, "missing": 0} if e["type"] == "drained" else e for e in with_start(events(), 277)]
    v = completion(drained_ok)
    assert v.status == "invalid" and v.measurements["lost"] == 1, v.message


# -- hand-made: one record, one accept
GROUP = {"share.record.lock.duration.ms": "5000", "share.delivery.count.limit": "3",
         "share.partition.max.record.locks": "4", "share.session.timeout.ms": "6000",
         "share.heartbeat.interval.ms": "500"}


def frame(*extra, ok_drain=True):
    return history(run_start(0.0, kind="share", share_settings={"topics": ["t"]}), group_settings(0.5, group=GROUP),
                   member_start("m1", 1.0),
                   ev("started", 1.05, "member", member="m1", protocol="share", subscription=["t"],
                      effective={"share.acknowledgement.mode": "explicit", "processing_ms": 0.0, "client": "test"}),
                   acked(2.0, 0, 0), ev("share_acquired", 2.2, "member", member="m1", topic="t", partition=0, offset=0,
                                        delivery_count=1),
                   ev("share_processed", 2.3, "member", member="m1", topic="t", partition=0, offset=0),
                   *extra, drained(55.0, ok=ok_drain), run_end(60.0))


def accept(error: str, answer: str):
    return ev("share_acked", 2.7, "member", member="m1", topic="t", partition=0, offset=0, ack="accept", ok=False,
              error=error, answer=answer, requested_mono=2.4)


def start(offset: int):
    return ev("share_start_offsets", 58.0, "harness", group_id="g", start_offsets=[["t", 0, offset]], error=None)


def hand(*extra):
    return check_share(frame(*extra), ShareCheckSettings(), names=["share_completion"])["share_completion"]


def test_a_client_made_refusal_below_the_start_offset_is_done_whatever_answer_the_member_wrote():
    for answer in ("given", "lost"):
        v = hand(accept(CLIENT_MADE, answer), start(1))
        assert v.status == "valid" and v.measurements["done_by_start_offset"] == 1, (answer, v.message)


def test_a_client_made_refusal_at_the_start_offset_is_lost():
    v = hand(accept(CLIENT_MADE, "given"), start(0))
    assert v.status == "invalid" and v.measurements["lost"] == 1 and v.measurements["done_by_start_offset"] == 0
    assert "got no answer of the broker's" in v.witnesses[0]["why"]


def test_a_broker_s_refusal_below_the_start_offset_is_surely_lost():
    v = hand(accept(BROKER_REFUSED, "given"), start(1))
    assert v.status == "invalid" and v.measurements["lost_surely"] == 1, v.message


def test_which_errors_carry_no_answer_of_the_broker_s():
    assert no_broker_answer({"ok": False, "error": CLIENT_MADE, "answer": "given"})
    assert no_broker_answer({"ok": False, "error": "x", "answer": "lost"})
    assert not no_broker_answer({"ok": False, "error": BROKER_REFUSED, "answer": "given"})
    assert not no_broker_answer({"ok": True, "error": None, "answer": "given"})
    assert not no_broker_answer(None)
