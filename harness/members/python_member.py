"""A consumer-group member on confluent-kafka that writes its history (the member contract).

Run as `python -m harness.members.python_member` (or as a script) with the HARNESS_* environment of docs/member-contract.md.
Imports only the standard library, confluent_kafka and harness modules that need nothing else: any client install.

`HARNESS_COMMIT_MODE` says how it commits (default `sync`; docs/member-contract.md has the table): `sync` after each
poll's records (a refused commit again after the next poll; what is left on a revocation and on SIGTERM); `async`
likewise, each outcome recorded from `on_commit`; `auto` by the client (enable.auto.commit, auto.commit.interval.ms
as given, else 5 s), outcomes from `on_commit`; `never` not at all (a self-test: commit_progress must fail).

Its own setting `harness.offset.store` (in HARNESS_CLIENT_CONFIG; docs/member-contract.md) says what a commit carries:
`explicit` (the default) the offsets it names; `automatic`, `message`, `offsets` what librdkafka's offset store holds
(stored as each record is handed over, or by `store_offsets` after processing, by message or by offsets), committed
by `commit()` without offsets where it would commit (sync, async) or by the auto-commit timer (auto).

`HARNESS_PROCESSING_MS` (default 0) is simulated work: it sleeps that long per record before it records and
commits a poll's records, and then polls fewer records at a time (about half a second of work per poll).

`HARNESS_REVOKE_DELAY_MS` (default 0) is a revoke handler that takes time, as an application's often does (flushing
a batch, closing a transaction): on a revocation it waits that long, then commits the revoked partitions' positions
(every one it processed, committed before or not), each such `committed` event with `revoke_began`, the moment the
handler began.

`HARNESS_MISBEHAVE` makes it break the rules on purpose, to prove the checkers catch it:
  - `process-after-revoke`: keeps reading and recording partitions after they were revoked from it
  - `claim-extra`: claims (records as assigned) and reads a partition the group never gave it, once its assignment
    has been quiet for CLAIM_QUIET_S after its second one, or CLAIM_FIRST_QUIET_S after its first when no second
    comes (the group's first can settle; a claim made in a partition's hand-over could end before anyone else held it;
    a consumer-protocol member on a quiet machine often gets all it will get in one assignment), until its next rebalance
    but for at least CLAIM_HOLD_S, when it records it revoked and stops
  - `rejoin-storm`: from STORM_AFTER_S after its first assignment, for STORM_FOR_S, it rejoins as a new member
    every STORM_EVERY_S while it stays up: a rebalance storm, which convergence_balance must fail
  - `keep-after-leave`: stopped, it leaves (close) but records no revocation and reads its partitions on for KEEP_S
  - `keep-dropped-topic`: told to change its subscription (a control), it records the new one (its `control` event)
    but its client keeps the one it had, so the group goes on giving it the topics it dropped
  - `phantom-commit`: as it stops, after its last commit, it records a commit of one partition it committed (one it
    holds, if any) at PHANTOM_AHEAD past its last committed offset as acknowledged, without sending it: the
    coordinator's answer after the run shows the lower offset it really has (commit_durability must fail)
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
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition  # noqa: E402

from harness.base.versions import CLIENT_PROTOCOL_SINCE, dotted, librdkafka_number  # noqa: E402
from harness.base.vocabulary import ASSIGNMENT, DEFAULT_SUBSCRIBE_BY, SUBSCRIBE_BY  # noqa: E402
from harness.record.history import HistoryWriter  # noqa: E402
from harness.base.vocabulary import DEFAULT_OFFSET_STORE, LOST_ON_REFUSED_COMMIT  # noqa: E402
from harness.members.python_settings import (client_version, librdkafka_version, commit_mode, effective_settings,  # noqa: E402
                                             offset_store, refused_commit_is_lost, revoke_delay_ms, split_settings,
                                             store_config)

#: rejoin-storm: when the storm starts (after its first assignment), how long it lasts, how often it rejoins;
#: keep-after-leave: how long it reads on after it left
STORM_AFTER_S, STORM_FOR_S, STORM_EVERY_S, KEEP_S = 3.0, 20.0, 1.0, 22.0
#: claim-extra: how long its assignment must have been quiet before it claims (the group's other members have theirs)
CLAIM_QUIET_S = 1.0
#: claim-extra: how long a first assignment must have been quiet when no second one came (the group settled on it)
CLAIM_FIRST_QUIET_S = 4.0
#: claim-extra: how long a claim is kept at least, through a rebalance that comes sooner: several of the coordinator
#: watch's samples (0.5 s apart), so that the claim is held against its answers (a 55 ms claim ended by a late join's
#: rebalance fell between two and could not be judged)
CLAIM_HOLD_S = 2.0
#: phantom-commit: how far past its last committed offset the commit it never sent is
PHANTOM_AHEAD = 1000


def protocol_config(protocol: str) -> dict:
    """The client settings of a protocol that this client library knows. `group.protocol=classic` is the
    default, so it is left out where the library does not know the property; `consumer` cannot be had there."""
    if protocol not in ASSIGNMENT:
        raise SystemExit(f"member: unknown protocol {protocol!r}")
    conf = ASSIGNMENT[protocol].client_settings()
    since = CLIENT_PROTOCOL_SINCE["consumer"]  # librdkafka knows `group.protocol` (KIP-848) from it; older refuse it
    if librdkafka_version()[1] < librdkafka_number(since):
        if protocol == "consumer":
            raise SystemExit(f"member: confluent-kafka {client_version()} (librdkafka {librdkafka_version()[0]}) "
                             f"cannot speak the consumer group protocol (KIP-848): it needs {dotted(since)} or newer")
        del conf["group.protocol"]
    return conf


def consumer_config(env: dict) -> dict:
    """The consumer's settings: the contract's, the protocol's, then HARNESS_CLIENT_CONFIG as given (the member's own
    `harness.` settings taken out)."""
    client, own = split_settings(json.loads(env.get("HARNESS_CLIENT_CONFIG") or "{}"))
    conf = {"enable.auto.commit": commit_mode(env) == "auto", "auto.offset.reset": "earliest",
            **store_config(offset_store(commit_mode(env), client, own)), **protocol_config(env["HARNESS_PROTOCOL"]),
            **client}
    for key, var in (("bootstrap.servers", "HARNESS_BOOTSTRAP"), ("group.id", "HARNESS_GROUP_ID"),
                     ("client.id", "HARNESS_MEMBER_ID"), ("group.instance.id", "HARNESS_INSTANCE_ID"),
                     ("client.rack", "HARNESS_RACK")):
        if env.get(var):
            conf[key] = env[var]
    return conf


def make_consumer(conf: dict):
    """Consumer(conf), or exit with librdkafka's reason on one line (an unknown property, a bad value)."""
    try:
        return Consumer(conf)
    except (KafkaException, ValueError, TypeError) as e:
        err = e.args[0] if e.args else e
        raise SystemExit(f"member: the client refused its settings: {getattr(err, 'str', lambda: str(err))()}") \
            from None


def check_config(env: dict) -> int:
    """HARNESS_CHECK_CONFIG=1: make the consumer the member would make, without a broker, and close it."""
    conf = consumer_config({**env, "HARNESS_GROUP_ID": "harness-config-check", "HARNESS_BOOTSTRAP": ""})
    make_consumer(conf).close()
    return 0


def _tps(parts) -> list:
    return [[tp.topic, tp.partition] for tp in parts]


class Member:
    """One group member: consume, record, commit; graceful on SIGTERM."""

    def __init__(self, env: dict) -> None:
        self.member_id = env["HARNESS_MEMBER_ID"]
        self.hosted = bool(env.get("HARNESS_HOSTED"))  # one of several consumers of one process (hosted.py)
        self.topic = env["HARNESS_TOPIC"]
        self.subscription = (env.get("HARNESS_TOPICS") or self.topic).split(",")
        self.client_subscription = self.subscription  # what its client subscribes to (keep-dropped-topic: the first)
        self.control_path = env.get("HARNESS_CONTROL") or None
        self.given = json.loads(env.get("HARNESS_CLIENT_CONFIG") or "{}")  # the harness's settings, as given
        self.lost_on_refused = split_settings(self.given)[1].get(LOST_ON_REFUSED_COMMIT) == "true"
        self.given_up: set[tuple[str, int]] = set()  # partitions _give_up took for lost, until they are assigned again
        self.resubscribe = False  # _give_up's: subscribe again
        self.control_seq, self.control_pending, self.stalled = 0, False, False
        self.group_id = env["HARNESS_GROUP_ID"]
        self.processing_s = float(env.get("HARNESS_PROCESSING_MS") or 0) / 1000
        self.revoke_delay_s = revoke_delay_ms(env) / 1000
        self.protocol = env["HARNESS_PROTOCOL"]
        conf = consumer_config(env)
        self.instance_id = env.get("HARNESS_INSTANCE_ID") or None
        self.rack = env.get("HARNESS_RACK") or None
        self.misbehave = env.get("HARNESS_MISBEHAVE") or None
        self.bootstrap = env["HARNESS_BOOTSTRAP"]
        self._commit_setup(env, conf)
        self.effective, self.effective_defaults = effective_settings(conf, commit_mode(env), revoke_delay_ms(env),
                                                                      self.processing_s * 1000,
                                                                      store=self.offset_store)
        self.conf = conf
        self.consumer = make_consumer(conf)
        self.storm_at: float | None = None  # rejoin-storm: when the next rejoin is due (None: not started)
        self.storm_end = 0.0
        self.hist = HistoryWriter(env["HARNESS_HISTORY"], source="member", member=self.member_id)
        self.running = True
        self.held: set[tuple[str, int]] = set()
        self.side = None  # the misbehaving member's own reader, outside the group
        self.side_parts: set[tuple[str, int]] = set()
        self.assignments = 0  # on_assign calls so far
        self.changed = time.monotonic()  # when its assignment last changed (a rebalance callback)
        self.claimed = False  # claim-extra: the one claim made (it lasts until the next rebalance)
        self.claim_at = 0.0  # claim-extra: when it was made
        self.claim_end_pending = False  # claim-extra: a rebalance came before CLAIM_HOLD_S: ended from the loop
        self.next_offset: dict[tuple[str, int], int] = {}

    # -- rebalance callbacks: record first, then let the client act
    def on_assign(self, consumer, parts) -> None:
        self._end_claim()
        if self.misbehave == "rejoin-storm" and self.storm_at is None:
            self.storm_at = time.monotonic() + STORM_AFTER_S
            self.storm_end = self.storm_at + STORM_FOR_S
        self.hist.event("assigned", member=self.member_id, partitions=_tps(parts))
        self.held |= {(tp.topic, tp.partition) for tp in parts}
        self.given_up -= self.held
        self.assignments += 1
        self.changed = time.monotonic()
        if self.misbehave == "forget-offsets" and self.assignments >= 2:
            self._forget_offsets(parts)

    def _forget_offsets(self, parts) -> None:
        """Misbehaviour: a partition given after the first assignment is read from its start, not from the
        group's committed offset (a member that forgot its offsets; coordinator_survival must flag it)."""
        for tp in parts:
            tp.offset = OFFSET_BEGINNING
        (self.consumer.assign if ASSIGNMENT[self.protocol].eager else self.consumer.incremental_assign)(parts)

    def on_revoke(self, consumer, parts) -> None:
        parts = [tp for tp in parts if (tp.topic, tp.partition) not in self.given_up]  # recorded lost already
        if self.misbehave == "keep-after-leave" and not self.running:  # leaving: it acts as if it still owned them
            return self._read_aside({(tp.topic, tp.partition) for tp in parts})
        self._end_claim()
        began = time.monotonic()
        if self.revoke_delay_s:  # a handler that takes time before its commit (HARNESS_REVOKE_DELAY_MS)
            time.sleep(self.revoke_delay_s)
        # still the owner: its last chance (after a delay, every position of these partitions, to show the commit)
        self._final_commit({(tp.topic, tp.partition) for tp in parts},
                           revoke_began=began if self.revoke_delay_s else None)
        self.hist.event("revoked", member=self.member_id, partitions=_tps(parts))
        gone = {(tp.topic, tp.partition) for tp in parts}
        self.held -= gone
        self.changed = time.monotonic()
        if self.misbehave == "process-after-revoke":
            self._read_aside(gone)

    def on_lost(self, consumer, parts) -> None:
        parts = [tp for tp in parts if (tp.topic, tp.partition) not in self.given_up]
        self._end_claim()
        self.hist.event("lost", member=self.member_id, partitions=_tps(parts))
        self.held -= {(tp.topic, tp.partition) for tp in parts}
        self.changed = time.monotonic()

    # -- misbehaviour
    def _read_aside(self, parts: set) -> None:
        new = parts - self.side_parts
        if not new:
            return
        if self.side is None:
            self.side = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group_id + "-aside",
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        self.side_parts |= new
        self.side.assign([TopicPartition(t, p, self.next_offset.get((t, p), 0)) for t, p in sorted(self.side_parts)])

    def _claim_extra(self) -> None:
        """Claim the first partition it does not hold, from its main loop (not a rebalance callback) once its assignment
        has been quiet for CLAIM_QUIET_S after its second one (CLAIM_FIRST_QUIET_S after its first); a metadata call
        that fails is tried again next loop."""
        quiet = CLAIM_QUIET_S if self.assignments >= 2 else CLAIM_FIRST_QUIET_S
        if self.claimed or self.assignments < 1 or not self.held or time.monotonic() - self.changed < quiet:
            return
        try:
            md = self.consumer.list_topics(self.topic, timeout=10)
        except KafkaException as e:
            self.hist.event("error", member=self.member_id, fatal=False, error=f"claim-extra: list_topics: {e}")
            return
        all_parts = sorted(md.topics[self.topic].partitions)
        free = [p for p in all_parts if (self.topic, p) not in self.held]
        if free:
            self.claimed, self.claim_at = True, time.monotonic()
            self.hist.event("assigned", member=self.member_id, partitions=[[self.topic, free[0]]])
            self._read_aside({(self.topic, free[0])})

    def _rejoin(self) -> None:
        """Misbehaviour (rejoin-storm): close the consumer, subscribe with a new one (a fresh member id). Unsubscribe
        and subscribe on one may both be served before it leaves: no storm at all (docs/findings.md)."""
        self._final_commit()
        self.consumer.close()
        self.consumer = make_consumer(self.conf)
        self._subscribe()
        self.storm_at = time.monotonic() + STORM_EVERY_S

    def _end_claim(self, force: bool = False) -> None:
        """claim-extra: the claim ends at its next rebalance, but not before CLAIM_HOLD_S (then from the main loop),
        unless `force` (the member stops)."""
        if self.misbehave != "claim-extra" or not self.side_parts:
            return
        if not force and time.monotonic() - self.claim_at < CLAIM_HOLD_S:
            self.claim_end_pending = True
            return
        self.claim_end_pending = False
        self.hist.event("revoked", member=self.member_id, partitions=[[t, p] for t, p in sorted(self.side_parts)])
        self.side.unassign()
        self.side_parts = set()

    # -- main loop
    def _record_batch(self, msgs) -> dict:
        by_part: dict[tuple[str, int], list[int]] = {}
        for m in msgs:
            if m.error():
                # librdkafka's fatal errors (a refused ConsumerGroupHeartbeat, say) come as _FATAL, fatal() False
                if m.error().fatal() or m.error().code() == KafkaError._FATAL:
                    self.hist.event("error", member=self.member_id, fatal=True, error=str(m.error()))
                    raise SystemExit(f"member {self.member_id}: fatal client error: {m.error()}")
                continue
            by_part.setdefault((m.topic(), m.partition()), []).append(m.offset())
        for (t, p), offs in by_part.items():
            offs.sort()
            start = prev = offs[0]
            for o in offs[1:] + [None]:
                if o is not None and o == prev + 1:
                    prev = o
                    continue
                self.hist.event("processed", member=self.member_id, topic=t, partition=p,
                                first_offset=start, last_offset=prev, count=prev - start + 1)
                if o is not None:
                    start = prev = o
            self.next_offset[(t, p)] = offs[-1] + 1
        return by_part

    # -- commits, as HARNESS_COMMIT_MODE says
    def _commit_setup(self, env: dict, conf: dict) -> None:
        self.commit_mode = commit_mode(env)
        self.committed: dict[tuple[str, int], int] = {}  # the last offset committed successfully, per partition
        self.refused: set[tuple[str, int]] = set()  # partitions whose last commit failed: retried after the next poll
        self.commit_asked: dict[tuple, list[float]] = {}  # async: offsets asked for -> when (oldest first)
        self.offset_store = offset_store(self.commit_mode, *split_settings(self.given))  # harness.offset.store
        self.store_asked: list[float] = []  # async commits of the stored offsets: when each was asked for (oldest first)
        if self.commit_mode in ("async", "auto"):
            conf["on_commit"] = self.on_commit

    def _commit(self, by_part: dict) -> None:
        """After a poll: commit its partitions' next offsets, and again those of held partitions whose last commit
        was refused (a rebalance was in progress), as the Java member does (sync, async); auto and never do nothing
        here."""
        if self.commit_mode not in ("sync", "async"):
            return
        self.refused &= self.held  # a partition given up is no longer ours to commit
        if self.offset_store != DEFAULT_OFFSET_STORE:  # what librdkafka stored (a refused commit's too: still stored)
            if by_part or self.refused:
                self._commit_stored(asynchronous=self.commit_mode == "async")
            return
        parts = sorted(tp for tp in {*by_part, *self.refused} if tp in self.held and tp in self.next_offset)
        offsets = [TopicPartition(t, p, self.next_offset[(t, p)]) for (t, p) in parts]
        if offsets:
            self._commit_offsets(offsets, asynchronous=self.commit_mode == "async")

    def _final_commit(self, parts: set | None = None, *, revoke_began: float | None = None) -> None:
        """What was processed of these held partitions (all by default) and not committed yet (a commit refused
        mid-rebalance), synchronously (sync, async): on a graceful stop before closing, and on revoke, as the Java
        member does. Under auto the client commits on close and on revoke; under never nothing is. A revoke handler
        with a delay (`revoke_began`: when it began) commits every position of the partitions, committed or not."""
        if self.commit_mode not in ("sync", "async"):
            return
        if self.offset_store != DEFAULT_OFFSET_STORE:  # every assigned partition's stored offset not committed yet
            return self._commit_stored(asynchronous=False, revoke_began=revoke_began)
        offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(self.next_offset.items())
                   if (t, p) in self.held and (parts is None or (t, p) in parts)
                   and (revoke_began is not None or self.committed.get((t, p)) != o)]
        if offsets:
            self._commit_offsets(offsets, asynchronous=False, revoke_began=revoke_began)

    def _commit_offsets(self, offsets: list, *, asynchronous: bool, revoke_began: float | None = None) -> None:
        requested = time.monotonic()
        tpo = [[tp.topic, tp.partition, tp.offset] for tp in offsets]
        if asynchronous:
            self.commit_asked.setdefault(_commit_key(tpo), []).append(requested)
        try:
            self.consumer.commit(offsets=offsets, asynchronous=asynchronous)
            if asynchronous:
                return  # on_commit records the outcome
            ok, err = True, None
        except KafkaException as e:
            ok, err = False, str(e.args[0] if e.args else e)
            if asynchronous:  # refused at once: no callback will come
                key = _commit_key(tpo)
                self.commit_asked[key].pop()
                if not self.commit_asked[key]:
                    del self.commit_asked[key]
        self._record_commit(ok, err, tpo, requested, revoke_began)

    def _commit_stored(self, *, asynchronous: bool, revoke_began: float | None = None) -> None:
        """`commit()` without offsets (harness.offset.store other than explicit): librdkafka commits what it stored of
        each assigned partition and has not committed yet; `committed` with the offsets the client reports (async:
        from `on_commit`). Nothing stored (_NO_OFFSET) is no commit; a refusal names what the member stored."""
        requested = time.monotonic()
        if asynchronous:
            self.store_asked.append(requested)
        try:
            parts = self.consumer.commit(asynchronous=asynchronous)
        except KafkaException as e:
            err = e.args[0] if e.args else e
            if asynchronous:  # refused at once: no callback will come
                self.store_asked.pop()
            if isinstance(err, KafkaError) and err.code() == KafkaError._NO_OFFSET:
                return
            tpo = [[t, p, o] for (t, p), o in sorted(self.next_offset.items())
                   if (t, p) in self.held and self.committed.get((t, p)) != o]
            return self._record_commit(False, str(err), tpo, requested, revoke_began)
        if not asynchronous:
            self._record_outcomes(None, parts or [], requested, revoke_began)

    def on_commit(self, err, parts) -> None:
        """A commit's outcome (async: one the member asked for; auto: one the client made), as `committed`."""
        stored = self.store_asked.pop(0) if self.store_asked else None  # a commit() of the stored offsets asked for
        if err is not None and err.code() == KafkaError._NO_OFFSET:
            return  # nothing new to commit (an auto-commit's tick, a commit() of the stored offsets): no commit made
        key = _commit_key([[tp.topic, tp.partition, tp.offset] for tp in parts])
        asked = self.commit_asked.get(key)
        requested = asked.pop(0) if asked else stored  # async: when the member asked for these offsets
        if asked == []:
            del self.commit_asked[key]
        self._record_outcomes(err, parts, requested)

    def _record_outcomes(self, err, parts, requested: float | None, revoke_began: float | None = None) -> None:
        """A `committed` event per outcome of a commit the client reports (`err`: the request's error, else each
        partition's own); partitions with no offset (a commit of the stored offsets skips those committed) left out."""
        if err is not None:
            outcomes = [(False, str(err), parts)]
        else:  # partitions may fail one by one
            failed = [tp for tp in parts if tp.error is not None]
            outcomes = [(True, None, [tp for tp in parts if tp.error is None])]
            if failed:
                outcomes.append((False, str(failed[0].error), failed))
        for ok, error, tps in outcomes:
            tpo = [[tp.topic, tp.partition, tp.offset] for tp in tps if tp.offset >= 0]
            if tpo:
                self._record_commit(ok, error, tpo, requested, revoke_began)

    def _store(self, msgs: list, by_part: dict) -> None:
        """After a poll's records are processed, store their offsets in librdkafka's offset store as harness.offset.store
        says: `message`, each record's (`store_offsets(message=...)`, its offset + 1); `offsets`, each partition's
        next offset (`store_offsets(offsets=[...])`, one partition a call: the binding raises only when none of a list
        could be stored). A store librdkafka refuses (a partition no longer assigned: _STATE) is an `error` event with
        its reason and the offsets refused (`store`: per partition the highest, `count`: the calls refused)."""
        if self.offset_store == "message":
            calls = [({"message": m}, (m.topic(), m.partition(), m.offset() + 1)) for m in msgs if not m.error()]
        elif self.offset_store == "offsets":
            calls = [({"offsets": [TopicPartition(t, p, self.next_offset[(t, p)])]}, (t, p, self.next_offset[(t, p)]))
                     for t, p in sorted(by_part)]
        else:
            return
        refused: dict[str, dict[tuple[str, int], int]] = {}
        counts: dict[str, int] = {}
        for how, (t, p, o) in calls:
            try:
                self.consumer.store_offsets(**how)
            except KafkaException as e:
                err = str(e.args[0] if e.args else e)
                refused.setdefault(err, {})[(t, p)] = max(o, refused.get(err, {}).get((t, p), o))
                counts[err] = counts.get(err, 0) + 1
        for err, parts in refused.items():
            self.hist.event("error", member=self.member_id, fatal=False, error=f"store_offsets: {err}",
                            store=[[t, p, o] for (t, p), o in sorted(parts.items())], count=counts[err])

    def _record_commit(self, ok: bool, err, tpo: list, requested: float | None,
                       revoke_began: float | None = None) -> None:
        if ok:
            self.committed.update({(t, p): o for t, p, o in tpo})
        (self.refused.difference_update if ok else self.refused.update)((t, p) for t, p, _ in tpo)
        extra = {"requested_mono": requested} if requested is not None else {}
        if revoke_began is not None:
            extra["revoke_began"] = revoke_began
        self.hist.event("committed", member=self.member_id, ok=ok, error=err, **extra, offsets=tpo)
        if not ok and self.lost_on_refused and self.held and refused_commit_is_lost(self.protocol, err):
            self._give_up(err)

    def _phantom_commit(self) -> None:
        """phantom-commit: a `committed` event (ok) the broker never saw (module docstring)."""
        mine = sorted((tp, o) for tp, o in self.committed.items() if tp in self.held) or sorted(self.committed.items())
        if mine:
            (t, p), o = mine[0]
            self.hist.event("committed", member=self.member_id, ok=True, error=None, requested_mono=time.monotonic(),
                            offsets=[[t, p, o + PHANTOM_AHEAD]])

    def _give_up(self, err) -> None:
        """harness.lost.on.refused.commit: the group no longer knows this member, so its assignment is lost. Record it
        so, commit none of it again, drop what the client still hands over of it, and subscribe again (from the loop,
        not in a callback), rather than wait for the client to hear it (docs/findings.md: it may never)."""
        self.hist.event("lost", member=self.member_id, partitions=[list(tp) for tp in sorted(self.held)],
                        reason=f"commit refused ({LOST_ON_REFUSED_COMMIT}): {err}")
        self.given_up |= self.held
        self.held, self.refused, self.resubscribe = set(), set(), True

    def run(self) -> int:
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "running", False))
        signal.signal(signal.SIGINT, lambda *_: setattr(self, "running", False))
        signal.signal(signal.SIGUSR1, lambda *_: setattr(self, "control_pending", True))
        return self.loop()

    def loop(self) -> int:
        """Subscribe, write `started`, consume until stopped, commit what is left, close (signals: `run`)."""
        self._subscribe()
        self.hist.event("started", member=self.member_id, pid=os.getpid(), protocol=self.protocol,
                        group_id=self.group_id, topic=self.topic, subscription=self.subscription,
                        instance_id=self.instance_id, rack=self.rack, client=f"confluent-kafka {client_version()} "
                                            f"librdkafka {librdkafka_version()[0]}",
                        controls=(["stall", "subscription"] + (["stop"] if self.hosted else [])) if self.control_path
                        else [], client_config=self.given,
                        effective=self.effective, effective_defaults=self.effective_defaults)
        while self.running:
            if self.control_pending:
                self._control()
            if self.resubscribe:
                self.resubscribe = False
                self.consumer.unsubscribe()
                self._subscribe()
            if self.stalled:  # no poll: the client's background thread goes on heartbeating
                time.sleep(0.02)
                continue
            if self.storm_at is not None and self.storm_at <= time.monotonic() < self.storm_end:
                self._rejoin()
            if self.misbehave == "claim-extra":
                self._claim_extra()
                if self.claim_end_pending:
                    self._end_claim()
            msgs = self.consumer.consume(num_messages=max(1, min(500, int(0.5 / self.processing_s)))
                                         if self.processing_s else 500, timeout=0.2)
            if msgs and self.given_up:  # what the client still hands over of partitions _give_up took for lost
                msgs = [m for m in msgs if m.error() or (m.topic(), m.partition()) not in self.given_up]
            if msgs:
                time.sleep(self.processing_s * len(msgs))  # the simulated work, before the records count as processed
                by_part = self._record_batch(msgs)
                self._store(msgs, by_part)
                self._commit(by_part)
            elif self.refused:  # no record, but a refused commit to retry
                self._commit({})
            if self.side is not None:
                self._record_batch(self.side.consume(num_messages=500, timeout=0.05))
        try:
            self._end_claim(force=True)
            self._final_commit()
            if self.misbehave == "phantom-commit":
                self._phantom_commit()
            self.consumer.close()
            until = time.monotonic() + (KEEP_S if self.misbehave == "keep-after-leave" and self.side else 0)
            while time.monotonic() < until:  # keep-after-leave
                self._record_batch(self.side.consume(num_messages=500, timeout=0.1))
        finally:
            if self.side is not None:
                self.side.close()
            self.hist.event("stopped", member=self.member_id, reason="sigterm")
            self.hist.close()
        return 0

    def _subscribe(self) -> None:
        self.consumer.subscribe(self.client_subscription, on_assign=self.on_assign, on_revoke=self.on_revoke,
                                on_lost=self.on_lost)

    def _control(self) -> None:
        """Apply the harness's control file (docs/member-contract.md, "Controls"): stall or resume polling,
        change the subscription; then say so in a `control` event with the file's seq."""
        self.control_pending = False
        try:
            with open(self.control_path) as f:
                c = json.load(f)
        except (OSError, ValueError) as e:
            if self.hosted and isinstance(e, FileNotFoundError):
                return  # SIGUSR1 reaches every consumer of the process; a control was written for another one
            self.hist.event("error", member=self.member_id, fatal=False, error=f"control file: {e}")
            return
        if c.get("seq", 0) <= self.control_seq:
            return
        self.control_seq = c["seq"]
        by = c.get("subscribe_by", DEFAULT_SUBSCRIBE_BY)
        if "subscription" in c and by not in SUBSCRIBE_BY:
            self.hist.event("error", member=self.member_id, fatal=False, error=f"control file: subscribe_by {by!r} "
                            f"is none of {', '.join(SUBSCRIBE_BY)}")
            return
        if "stall" in c:
            self.stalled = bool(c["stall"])
        if "subscription" in c:
            self.subscription = list(c["subscription"])
            c = {**c, "subscribe_by": by}
            if self.misbehave != "keep-dropped-topic":  # that one records the change, its client keeps the old
                self.client_subscription = self.subscription
                if by != DEFAULT_SUBSCRIBE_BY:  # leave the group (every partition revoked), then join afresh
                    self.consumer.unsubscribe()
                self._subscribe()
        if c.get("stop"):  # a hosted consumer's graceful stop (harness/members/hosted.py): leave as on SIGTERM
            self.running = False
        self.hist.event("control", member=self.member_id, seq=self.control_seq,
                        **{k: c[k] for k in ("stall", "subscription", "subscribe_by", "stop") if k in c})


def _commit_key(tpo: list) -> tuple:
    return tuple(sorted(map(tuple, tpo)))


def main() -> int:
    if os.environ.get("HARNESS_CHECK_CONFIG"):
        return check_config(dict(os.environ))
    if os.environ.get("HARNESS_HOSTED"):  # several consumers in this process, each its own member
        from harness.members.hosted import run_hosted
        return run_hosted(dict(os.environ), Member)
    return Member(dict(os.environ)).run()


if __name__ == "__main__":
    sys.exit(main())
