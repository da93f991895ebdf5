"""A share-group member (KIP-932) on confluent-kafka's ShareConsumer that writes its history (the member contract).

Run as `python -m harness.members.share_member` (or as a script) with the HARNESS_* environment of
docs/member-contract.md; HARNESS_PROTOCOL is `share`. Imports only the standard library, confluent_kafka,
harness.record.history and the vocabulary, so it runs under an isolated install of any confluent-kafka version that
has a ShareConsumer.

Per record it writes `share_acquired` when poll returns it, `share_processed` when its (simulated) work took
effect and `share_acked` when the broker answered its acknowledgement (from the acknowledgement commit callback,
with when the acknowledgement was asked for). `share.acknowledgement.mode` comes from HARNESS_CLIENT_CONFIG
(default `explicit`):
  - `explicit`: it accepts each record after its work and commits the acknowledgements after each poll
    (commit_sync); a record whose lock would run out before its work is done (its acquisition + the lock
    duration HARNESS_SHARE_LOCK_MS, less HARNESS_SHARE_MARGIN_MS, 1 s by default, for the time the broker took
    the lock before poll returned) is released unprocessed, so that another delivery does the work;
  - `implicit`: the client accepts a poll's records at the next poll (or commit); its work per poll must fit in
    the lock (no release is possible).
HARNESS_PROCESSING_MS (default 0) is the work per record (a sleep before `share_processed`).

Poison records (explicit mode), for the dead-letter topic (KIP-1191): the client settings
`harness.share.reject.keys` and `harness.share.release.keys` (comma-separated record keys, taken out before the
client is made) name keys whose records the member never processes: it rejects each one, or releases it on
every delivery until the delivery count limit archives it.

A poison record that kills the member: the client setting `harness.share.crash.records` (`<partition>:<offset>`
of the first topic, comma-separated). Delivered it, the member works the poll's other records, commits their
acknowledgements, writes a fatal `error` naming the record (`poison`: topic, partition, offset, delivery count) and
exits with code 3 without acknowledging it and without leaving the group; the harness starts it again
(`restart_crashed`), and the record comes back to some member with its delivery count one higher.

Controls (docs/member-contract.md): on SIGUSR1 it reads HARNESS_CONTROL and, when it holds a `subscription` (the
run's real topic names), subscribes to those topics from then on (`subscribe_by` `unsubscribe-subscribe`:
`unsubscribe()` first, leaving the group), the acknowledgements it owes committed first; then it writes a `control`
event with the file's seq and the new subscription, which `share_subscribed_only` judges its later records by.

`HARNESS_MISBEHAVE` breaks the rules on purpose, to prove the checkers catch it (the first two once, on the third
poll that returns records):
  - `ack-unheld`: waits past the batch's locks, then accepts the records it no longer holds;
  - `process-expired`: waits past the batch's locks, then processes the records (writes `share_processed`)
    without acquiring them again, and releases them;
  - `keep-dropped-share-topic`: told to change its subscription, it records the new one (its `control` event) but its
    client keeps the one it had, so the group goes on handing it records of the topics it dropped.
`share-rejoin-storm` (not once): from its first records, every STORM_EVERY_S for STORM_FOR_S, it commits its
acknowledgements, closes its client and makes a new one (a fresh member id): a leave and a join that no event of its
history shows, which `share_rebalance_cause` must find without a cause.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time

if __package__ in (None, ""):  # run as a plain script under an isolated client install
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import confluent_kafka  # noqa: E402
from confluent_kafka import KafkaException  # noqa: E402

from harness.base.vocabulary import (DEFAULT_SUBSCRIBE_BY, SHARE_CRASH_EXIT, SHARE_CRASH_RECORDS,  # noqa: E402
                                     SHARE_MISBEHAVE_ON_POLL, SHARE_POISON, SUBSCRIBE_BY, misbehaviours)
from harness.record.history import HistoryWriter  # noqa: E402
from harness.members.python_settings import client_version, librdkafka_version  # noqa: E402

ACK_NAMES = {"accept": "ACCEPT", "release": "RELEASE", "reject": "REJECT"}
#: the self-tests that break the acknowledgement rules on the SHARE_MISBEHAVE_ON_POLL'th poll (the other: a control's)
LOCK_MISBEHAVIOURS = ("ack-unheld", "process-expired")
KEEP_DROPPED = "keep-dropped-share-topic"
#: share-rejoin-storm: how long it lasts from the member's first records, and how often its client is made anew
STORM_FOR_S, STORM_EVERY_S = 20.0, 1.0


def poison(env: dict) -> dict:
    """record key -> the acknowledgement the member always gives its records (SHARE_POISON)."""
    given = json.loads(env.get("HARNESS_CLIENT_CONFIG") or "{}")
    return {k.strip(): ack for key, ack in SHARE_POISON.items() for k in str(given.get(key, "")).split(",") if k.strip()}


def crash_records(env: dict) -> set:
    """(topic, partition, offset) of the records whose delivery kills the member (SHARE_CRASH_RECORDS)."""
    given = json.loads(env.get("HARNESS_CLIENT_CONFIG") or "{}")
    topic = (env.get("HARNESS_TOPICS") or env["HARNESS_TOPIC"]).split(",")[0]
    pairs = (x.strip().partition(":") for x in str(given.get(SHARE_CRASH_RECORDS, "")).split(",") if x.strip())
    return {(topic, int(p), int(o)) for p, _, o in pairs}


def share_config(env: dict) -> dict:
    """The share consumer's settings: the contract's, then HARNESS_CLIENT_CONFIG as given (the member's own
    `harness.` settings taken out)."""
    given = json.loads(env.get("HARNESS_CLIENT_CONFIG") or "{}")
    conf = {"share.acknowledgement.mode": "explicit", **{k: v for k, v in given.items() if not k.startswith("harness.")}}
    conf.update({"bootstrap.servers": env.get("HARNESS_BOOTSTRAP", ""), "group.id": env["HARNESS_GROUP_ID"],
                 "client.id": env.get("HARNESS_MEMBER_ID", "share-member")})
    if env.get("HARNESS_RACK"):
        conf["client.rack"] = env["HARNESS_RACK"]
    return conf


def check_config(env: dict) -> int:
    """HARNESS_CHECK_CONFIG=1: make the share consumer the member would make, without a broker, and close it."""
    if not hasattr(confluent_kafka, "ShareConsumer"):
        raise SystemExit(f"member: confluent-kafka {client_version()} has no ShareConsumer (2.15.0 or newer has)")
    try:
        confluent_kafka.ShareConsumer(share_config({**env, "HARNESS_GROUP_ID": "harness-config-check"})).close()
    except (KafkaException, ValueError, TypeError) as e:
        raise SystemExit(f"member: the client refused its settings: {e}") from None
    return 0


def answer_of(exc) -> str:
    """`given` when the broker answered an acknowledgement (ok, or its refusal: a broker error code, 0 or more);
    `lost` when librdkafka gave up without the broker's answer, so that the broker may have taken it (history.md,
    `share_acked`): its own local errors (negative codes: `_TRANSPORT`, `_TIMED_OUT`, ...) and REQUEST_TIMED_OUT,
    which librdkafka 2.16 reports for a ShareAcknowledge whose answer never came within its socket timeout (no
    broker answers ShareAcknowledge so: a drop_response of one run saw 41 such, 22 of them taken, 19 back)."""
    if exc is None:
        return "given"
    err = exc.args[0] if getattr(exc, "args", None) else exc
    code = err.code() if callable(getattr(err, "code", None)) else None
    if isinstance(code, int):
        return "lost" if code < 0 or code == confluent_kafka.KafkaError.REQUEST_TIMED_OUT else "given"
    return "lost" if "code=_" in str(err) or "code=REQUEST_TIMED_OUT" in str(err) else "given"


class ShareMember:
    """One share-group member: poll, record, work, acknowledge; graceful on SIGTERM."""

    def __init__(self, env: dict) -> None:
        self.member_id = env["HARNESS_MEMBER_ID"]
        self.topics = (env.get("HARNESS_TOPICS") or env["HARNESS_TOPIC"]).split(",")
        self.given = json.loads(env.get("HARNESS_CLIENT_CONFIG") or "{}")
        self.conf = share_config(env)
        self.mode = self.conf["share.acknowledgement.mode"]
        self.processing_s = float(env.get("HARNESS_PROCESSING_MS") or 0) / 1000
        self.lock_s = float(env.get("HARNESS_SHARE_LOCK_MS") or 0) / 1000 or None
        self.margin_s = float(env.get("HARNESS_SHARE_MARGIN_MS") or 1000) / 1000
        self.misbehave = env.get("HARNESS_MISBEHAVE") or None
        self.poison = poison(env)
        self.crash = crash_records(env)
        self.fatal: tuple | None = None  # the poison record (and its delivery count) this poll delivered: it dies
        if (self.poison or self.crash) and self.mode != "explicit":
            raise SystemExit("member: poison records (harness.share.*.keys) need share.acknowledgement.mode=explicit")
        if self.misbehave and self.misbehave not in misbehaviours("share"):
            raise SystemExit(f"member: unknown misbehaviour {self.misbehave!r}; known: {', '.join(misbehaviours('share'))}")
        self.hist = HistoryWriter(env["HARNESS_HISTORY"], source="member", member=self.member_id)
        self.asked: dict[tuple, tuple[str, float]] = {}  # (topic, partition, offset) -> (ack, requested_mono)
        self.implicit: list[tuple] = []  # the last poll's records, accepted by the next poll or commit (implicit)
        self.polls_with_records = 0
        self.last_poll_at: float | None = None  # when the previous poll began: the client may fetch from then on
        self.running = True
        self.control_path = env.get("HARNESS_CONTROL") or None
        self.control_seq, self.control_pending = 0, False
        self.storm: tuple[float, float] | None = None  # share-rejoin-storm: (its start, the next rejoin)
        self.sc = self._client()

    def _client(self):
        sc = confluent_kafka.ShareConsumer(self.conf)
        sc.set_acknowledgement_commit_callback(self.on_acks)
        return sc

    def _storm(self) -> None:
        """Misbehaviour (share-rejoin-storm, module docstring): its client closed and made anew when one is due."""
        now = time.monotonic()
        began, due = self.storm or (now, now)
        self.storm = (began, due)
        if now < due or now - began > STORM_FOR_S:
            return
        self.storm = (began, now + STORM_EVERY_S)
        self._implicit_asked()
        self._commit()
        self.sc.close()
        self.sc = self._client()
        self.sc.subscribe(self.topics)

    def on_acks(self, offsets, exc) -> None:
        """The broker answered acknowledgements: one `share_acked` per record."""
        err = None if exc is None else str(exc.args[0] if exc.args else exc)
        answer = answer_of(exc)
        for tp, offs in offsets.items():
            for o in sorted(offs):
                r = (tp.topic, tp.partition, o)
                ack, at = self.asked.pop(r, ("accept", time.monotonic()))
                self.hist.event("share_acked", member=self.member_id, topic=tp.topic, partition=tp.partition,
                                offset=o, ack=ack, ok=exc is None, error=err, answer=answer, requested_mono=at)

    def _commit(self) -> None:
        """Commit the asked acknowledgements; a client error (a timeout while a partition's leader is down), raised
        or returned for a partition, is recorded and the member goes on: the callback reports each answer when it
        comes, and `_unanswered` the ones that never did."""
        try:
            results = self.sc.commit_sync(10.0) or {}
        except KafkaException as e:
            return self._commit_failed("", e)
        for tp, e in sorted(results.items(), key=lambda kv: (kv[0].topic, kv[0].partition)):
            if e is not None:  # a partition's acknowledgements failed: the client returns it, it does not raise
                self._commit_failed(f"{tp.topic}-{tp.partition}: ", e)

    def _commit_failed(self, where: str, e: KafkaException) -> None:
        self.hist.event("error", member=self.member_id, fatal=False,
                        error=f"commit_sync: {where}{e.args[0] if e.args else e}")

    def _unanswered(self) -> None:
        """At the stop, after the last commit and close: an acknowledgement asked for whose answer never came is
        a lost answer (the broker may have taken it), written as such."""
        for (topic, p, o), (ack, at) in sorted(self.asked.items()):
            self.hist.event("share_acked", member=self.member_id, topic=topic, partition=p, offset=o, ack=ack,
                            ok=False, error="no answer before the member stopped", answer="lost", requested_mono=at)
        self.asked.clear()

    def _ask(self, r: tuple, ack: str, msg=None) -> None:
        self.asked[r] = (ack, time.monotonic())
        if self.mode == "explicit":
            kind = getattr(confluent_kafka.AcknowledgeType, ACK_NAMES[ack])
            self.sc.acknowledge_offset(r[0], r[1], r[2], kind)

    def _implicit_asked(self) -> None:
        """The next poll or commit carries the last poll's implicit accepts: they are asked for now."""
        now = time.monotonic()
        for r in self.implicit:
            self.asked[r] = ("accept", now)
        self.implicit = []

    def _in_time(self, t: float, more_s: float) -> bool:
        """Whether a record acquired at `t` is still surely held `more_s` from now (no lock known: assumed)."""
        return self.lock_s is None or time.monotonic() + more_s <= t + self.lock_s - self.margin_s

    def _work(self, batch: list) -> None:
        """Process a poll's records (acquired at `t`), acknowledging each as the mode and the locks allow."""
        self.polls_with_records += 1
        bad = self.misbehave if (self.polls_with_records == SHARE_MISBEHAVE_ON_POLL and self.lock_s
                                 and self.misbehave in LOCK_MISBEHAVIOURS) else None
        if bad:
            time.sleep(self.lock_s + self.margin_s + 0.5)
        for r, t, key, count in batch:
            if r in self.crash:
                self.fatal = self.fatal or (r, count)  # never processed nor acknowledged: the member dies on it
                continue
            if key in self.poison and not bad:
                self._ask(r, self.poison[key])  # never processed: rejected, or released until archived
                continue
            if self.mode == "explicit" and not bad and not self._in_time(t, self.processing_s):
                self._ask(r, "release")  # it would not finish under the lock: another delivery does the work
                continue
            time.sleep(self.processing_s)
            if self.mode == "explicit" and not bad and not self._in_time(t, 0.0):
                self._ask(r, "release")  # the work outlasted the lock (the member was paused): its effect is dropped
                continue
            self.hist.event("share_processed", member=self.member_id, topic=r[0], partition=r[1], offset=r[2])
            if self.mode == "explicit":
                self._ask(r, "release" if bad == "process-expired" else "accept")
            else:
                self.implicit.append(r)

    def _die(self) -> None:
        """A poison record was delivered: say so, and exit at once (no acknowledgement of it, no close, no leave)."""
        (topic, p, o), count = self.fatal
        self.hist.event("error", member=self.member_id, fatal=True, poison=[topic, p, o, count],
                        error=f"poison record {topic}-{p}@{o} (delivery count {count}): the member dies")
        self.hist.close()
        os._exit(SHARE_CRASH_EXIT)

    def run(self) -> int:
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "running", False))
        signal.signal(signal.SIGINT, lambda *_: setattr(self, "running", False))
        signal.signal(signal.SIGUSR1, lambda *_: setattr(self, "control_pending", True))
        self.sc.subscribe(self.topics)
        effective = {"share.acknowledgement.mode": self.mode, "processing_ms": self.processing_s * 1000,
                     **({"poison": self.poison} if self.poison else {}),
                     **({"crash_records": sorted(map(list, self.crash))} if self.crash else {}),
                     "client": f"confluent-kafka {client_version()} librdkafka {librdkafka_version()[0]}"}
        self.hist.event("started", member=self.member_id, pid=os.getpid(), protocol="share",
                        group_id=self.conf["group.id"], topic=self.topics[0], subscription=self.topics,
                        instance_id=None, rack=self.conf.get("client.rack"), client=effective["client"],
                        client_config=self.given, effective=effective,
                        controls=["subscription"] if self.control_path else [])
        try:
            while self.running:
                if self.control_pending:
                    self._control()
                if self.misbehave == "share-rejoin-storm" and self.polls_with_records:
                    self._storm()  # between polls: no record of the old client is left to acknowledge
                self._implicit_asked()
                began = time.monotonic()
                msgs = self.sc.poll(0.2)
                t = time.monotonic()
                since = self.last_poll_at if self.last_poll_at is not None else began
                self.last_poll_at = began
                batch = []
                for m in msgs:
                    if m.error():
                        self.hist.event("error", member=self.member_id, fatal=False, error=str(m.error()))
                        continue
                    r, count = (m.topic(), m.partition(), m.offset()), m.delivery_count()
                    if count is None:  # never guessed: the checkers judge by it
                        raise SystemExit(f"member: the client gave no delivery count for {r}")
                    self.hist.event("share_acquired", member=self.member_id, topic=r[0], partition=r[1], offset=r[2],
                                    delivery_count=count, since_mono=since)
                    key = m.key().decode(errors="replace") if m.key() is not None else None
                    batch.append((r, since, key, count))  # its lock: from the earliest the client may have taken it
                if batch:
                    self._work(batch)
                    if self.mode == "explicit":
                        self._commit()
                    if self.fatal:
                        self._die()
            self._implicit_asked()
            self._commit()
            self.sc.close()
            self._unanswered()
            self.hist.event("stopped", member=self.member_id, reason="sigterm")
        except Exception as e:  # the member's own failure: said as such, never as a graceful stop (exit 1)
            self.hist.event("error", member=self.member_id, fatal=True, error=f"{type(e).__name__}: {e}")
            raise
        finally:
            self.hist.close()
        return 0

    def _control(self) -> None:
        """Apply the harness's control file (docs/member-contract.md, "Controls"): a new subscription, after the
        acknowledgements it owes are committed; then say so in a `control` event with the file's seq."""
        self.control_pending = False
        try:
            with open(self.control_path) as f:
                c = json.load(f)
        except (OSError, ValueError) as e:
            self.hist.event("error", member=self.member_id, fatal=False, error=f"control file: {e}")
            return
        if c.get("seq", 0) <= self.control_seq:
            return
        self.control_seq = c["seq"]
        by = c.get("subscribe_by", DEFAULT_SUBSCRIBE_BY)
        if "subscription" not in c or by not in SUBSCRIBE_BY:
            self.hist.event("error", member=self.member_id, fatal=False,
                            error=f"control file: a share member takes a subscription, by one of "
                                  f"{', '.join(SUBSCRIBE_BY)} (got {sorted(c)}, subscribe_by {by!r})")
            return
        new = list(c["subscription"])
        if self.misbehave != KEEP_DROPPED:  # that one records the change; its client keeps the old subscription
            self._implicit_asked()
            self._commit()
            if by != DEFAULT_SUBSCRIBE_BY:  # leave the group first, then join afresh
                self.sc.unsubscribe()
            self.sc.subscribe(new)
        self.topics = new
        self.hist.event("control", member=self.member_id, seq=self.control_seq, subscription=new, subscribe_by=by)


def main() -> int:
    if os.environ.get("HARNESS_CHECK_CONFIG"):
        return check_config(dict(os.environ))
    return ShareMember(dict(os.environ)).run()


if __name__ == "__main__":
    sys.exit(main())
