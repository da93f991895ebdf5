"""The harness's words, each defined once: the kinds of group and their group protocols, what each consumer-group
protocol runs with (`group.protocol` and the assignor, in librdkafka's and the Java client's spelling), the built-in
member programs, the ways a member changes its subscription when told to, the commit modes, the request faults'
actions, the self-tests (`--misbehave`) with their help text, and the share members' own settings.

It sits in `base` because everything that speaks these words imports it: the plan (what a run may ask for), the
invariants (which import only `record` and `base`), the Python members (run as scripts under any confluent-kafka
install: standard library only, no harness import here) and the Java members, whose `Vocabulary` class
harness/kafka/jvm_build.py generates from this module at build time.
"""
from __future__ import annotations

from dataclasses import dataclass

#: the kinds of group a scenario's members form
GROUP_KINDS = ("consumer", "streams", "connect", "share")
#: the built-in programs a consumer group's members run (`--member`): on confluent-kafka, on the Java client
MEMBER_KINDS = ("python", "java")

# -- group protocols

#: the consumer group's protocols: the classic one with an eager or a cooperative assignor, and KIP-848's
CONSUMER_PROTOCOLS = ("classic-eager", "classic-cooperative", "consumer")
#: Kafka Streams: the classic group protocol, and KIP-1071's broker-side `streams` (each its `group.protocol`)
STREAMS_PROTOCOLS = ("classic", "streams")
#: Kafka Connect workers: connect.protocol (KIP-415 compatible, KIP-507 sessioned, the default since Kafka 2.4)
CONNECT_PROTOCOLS = ("sessioned", "compatible", "eager")
#: share groups (KIP-932)
SHARE_PROTOCOLS = ("share",)
PROTOCOLS_OF = {"consumer": CONSUMER_PROTOCOLS, "streams": STREAMS_PROTOCOLS, "connect": CONNECT_PROTOCOLS,
                "share": SHARE_PROTOCOLS}
#: every protocol of every kind
ALL_PROTOCOLS = CONSUMER_PROTOCOLS + STREAMS_PROTOCOLS + CONNECT_PROTOCOLS + SHARE_PROTOCOLS
#: the protocol a run takes when nothing says and its scenario runs with it; else the first its scenario lists
#: (of a kind whose scenario lists none: the first of the kind's protocols above)
DEFAULT_PROTOCOL = "classic-cooperative"

#: the clients' `group.protocol` under which the client's own assignor assigns
CLASSIC = "classic"
#: the brokers' default assignor under the consumer protocol (KIP-848's `group.remote.assignor`)
SERVER_DEFAULT_ASSIGNOR = "uniform"
#: librdkafka's default `partition.assignment.strategy` (CONFIGURATION.md)
LIBRDKAFKA_DEFAULT_STRATEGY = "range,roundrobin"
#: the sticky assignors: librdkafka's names, and the Java client's assignor classes (the last part of the name)
STICKY_ASSIGNORS = ("cooperative-sticky", "sticky", "CooperativeStickyAssignor", "StickyAssignor")
#: the assignors by the name the group protocols know them (librdkafka's `partition.assignment.strategy`, the
#: brokers' `group.remote.assignor` and `group.consumer.assignors`), from the Java client's and the brokers' assignor
#: classes (the last part of the class name: the client's and the group coordinator's RangeAssignor are both `range`)
ASSIGNOR_CLASSES = {"RangeAssignor": "range", "RoundRobinAssignor": "roundrobin", "StickyAssignor": "sticky",
                    "CooperativeStickyAssignor": "cooperative-sticky", "UniformAssignor": "uniform"}
#: the assignors that keep each surviving member's partitions up to its new quota (docs/invariants.md, "Assignment
#: shapes"): the client's sticky ones (KIP-54, KIP-429) and the brokers' uniform one (KIP-848)
STRICTLY_STICKY_ASSIGNORS = ("sticky", "cooperative-sticky", "uniform")


@dataclass(frozen=True)
class Assignment:
    """How a consumer-group protocol assigns partitions: the clients' `group.protocol`, and its assignor: under
    classic the client's `partition.assignment.strategy` (librdkafka's name, the Java client's class), under the
    consumer protocol the brokers' (`SERVER_DEFAULT_ASSIGNOR`)."""

    group_protocol: str
    assignor: str
    java_class: str | None  # the Java client's partition.assignment.strategy; None: the brokers assign
    eager: bool  # a rebalance revokes every partition before it assigns (else incrementally, KIP-429/KIP-848)

    @property
    def client_side(self) -> bool:
        return self.group_protocol == CLASSIC

    def client_settings(self) -> dict:
        """The client settings that pick this protocol (librdkafka's spelling)."""
        return {"group.protocol": self.group_protocol,
                **({"partition.assignment.strategy": self.assignor} if self.client_side else {})}


#: each consumer-group protocol -> how it assigns
ASSIGNMENT = {
    "classic-eager": Assignment(CLASSIC, "range", "org.apache.kafka.clients.consumer.RangeAssignor", eager=True),
    "classic-cooperative": Assignment(CLASSIC, "cooperative-sticky",
                                      "org.apache.kafka.clients.consumer.CooperativeStickyAssignor", eager=False),
    "consumer": Assignment("consumer", SERVER_DEFAULT_ASSIGNOR, None, eager=False),
}

# -- member controls

#: how a member changes its subscription when told to (the `change_subscription` step's `subscribe_by`, the control
#: file's and the `control` event's; docs/member-contract.md, "Controls"): one `subscribe()` call with the new list
#: (the client moves from one subscription to the other in the group), or `unsubscribe()` then `subscribe()` (the
#: member leaves the group, giving up every partition, and joins afresh, as an application that tears its
#: subscription down does)
SUBSCRIBE_BY = ("subscribe", "unsubscribe-subscribe")
DEFAULT_SUBSCRIBE_BY = SUBSCRIBE_BY[0]

# -- commits

#: how a consumer-group member commits (HARNESS_COMMIT_MODE, docs/member-contract.md): after each poll's records
#: synchronously (the default) or asynchronously, by the client's auto-commit, or never; the Python and the Java
#: member take each
COMMIT_MODES = ("sync", "async", "auto", "never")
DEFAULT_COMMIT_MODE = "sync"
#: the commit modes that are self-tests: commit_progress must fail the run
SELF_TEST_COMMIT_MODES = ("never",)
#: a member's own settings are client settings under this prefix: it takes them out before making its client
MEMBER_SETTING_PREFIX = "harness."
#: the Python consumer member's own setting (docs/member-contract.md, "The Python member's own settings"): `true`
#: makes a commit refused because the group no longer knows the member (consumer protocol) a lost assignment, the
#: workaround of docs/findings.md's librdkafka livelock
LOST_ON_REFUSED_COMMIT = MEMBER_SETTING_PREFIX + "lost.on.refused.commit"
#: the Python consumer member's own setting of the path its commits' offsets take (docs/member-contract.md): `explicit`
#: (the default) commits the offsets it names, `commit(offsets=...)`; the others leave the offsets to librdkafka's
#: offset store and commit what is stored (the auto-commit timer, or `commit()` without offsets): `automatic`
#: (enable.auto.offset.store=true: stored as each message is handed over), `message` (`store_offsets(message=...)`
#: after each record is processed) and `offsets` (`store_offsets(offsets=[...])` after each poll's records), both
#: with enable.auto.offset.store=false
OFFSET_STORE = MEMBER_SETTING_PREFIX + "offset.store"
OFFSET_STORES = ("explicit", "automatic", "message", "offsets")
DEFAULT_OFFSET_STORE = "explicit"
#: the store paths on which the member stores by itself (enable.auto.offset.store=false)
MANUAL_OFFSET_STORES = ("message", "offsets")
#: the Python consumer member's own settings and the values each takes
PYTHON_MEMBER_SETTINGS = {LOST_ON_REFUSED_COMMIT: ("true", "false"), OFFSET_STORE: OFFSET_STORES}

# -- self-tests

#: the self-tests (`--misbehave`) of each kind of group: a member breaks the rules on purpose and the checkers
#: must fail the run; each with what it does
MISBEHAVIOURS: dict[str, dict[str, str]] = {
    "consumer": {
        "process-after-revoke": "slot 0 goes on reading partitions after they were revoked",
        "claim-extra": "slot 0 claims a partition the group never gave it",
        "forget-offsets": "it reads every partition given after its first assignment from the start",
        "rejoin-storm": "it leaves and rejoins as a new member every second for 20 s, a storm convergence must catch",
        "keep-after-leave": "slot 0, when stopped, leaves the group and goes on reading its partitions for 22 s as if "
                            "it still owned them (a member that took its unanswered LeaveGroup for one that did not "
                            "count)",
        "keep-dropped-topic": "slot 0 (the Python member), told to change its subscription, records the new one but "
                              "its client keeps the old: the group goes on giving it the topics it dropped "
                              "(subscribed_only must fail the run)",
        "phantom-commit": "slot 0 (the Python member), as it stops, records a commit 1000 past its last committed "
                          "offset of one partition as acknowledged without sending it (commit_durability must fail "
                          "the run)",
        "shuffle-assignor": "(--member java, a classic protocol) every member's assignor goes by the name of the "
                            "protocol's own (cooperative-sticky, range), which the members record, but deals the "
                            "partitions unevenly and anew whenever the group's size changes, keeping none it could "
                            "keep (assignor_shape and strict_stickiness must fail the run)"},
    "streams": {
        "defeat-warmup": "(streams-*) every instance runs with a recovery lag that switches warmups off",
        "fake-eos": "(streams-eos-kill) the instances run at_least_once while they record exactly_once_v2",
        "forget-state": "(streams-*) the first instance starts each task on an emptied store",
        "thread-churn": "(streams-*) the first instance adds a stream thread and removes it again every second: each "
                        "a consumer joining or leaving, the group never settles (group_settled must fail the run)",
        "streams-phantom-commit": "(streams-*, at-least-once) each instance, as its consumer closes, records a commit "
                                  "1000 past its last committed offset of one partition as acknowledged without "
                                  "sending it (commit_durability must fail the run)"},
    "connect": {
        "zombie-task": "(connect-*) a source task goes on producing after it was stopped",
        "wrong-delay": "(connect-*) judged with another scheduled.rebalance.max.delay.ms than the workers ran",
        "connect-rejoin-storm": "(connect-*) slot 0's worker, from 20 s after it started, leaves the group every 2 s "
                                "for 40 s and rejoins it at its herder's next poll: rounds of the group no event of "
                                "the history gives a cause (connect_rebalance_cause must fail the run)"},
    "share": {
        "ack-unheld": "(share-*) slot 0 waits past its records' locks once, then accepts records it no longer holds",
        "process-expired": "(share-*) slot 0 waits past its records' locks once, then processes them without "
                           "acquiring them again",
        "keep-dropped-share-topic": "(share-subscription-change) slot 0, told to change its subscription, records "
                                    "the new one but its client keeps the old: the group goes on handing it records "
                                    "of the topic it dropped (share_subscribed_only must fail the run)",
        "share-rejoin-storm": "(share-*, the Python member) slot 0, from its first records, makes its client anew (a "
                              "new member id) every second for 20 s: a leave and a join its history does not show "
                              "(share_rebalance_cause must fail the run)"},
}
#: --misbehave: every self-test and what it does
MISBEHAVE_HELP = {name: text for kind in MISBEHAVIOURS.values() for name, text in kind.items()}
#: the consumer-group self-tests the Java member carries out; the others are the Python member's. A self-test asked
#: of a built-in member that does not carry it out is refused: the member would run correctly and could not fail
JAVA_MISBEHAVIOURS = ("shuffle-assignor",)
#: the self-tests of the clients' assignor: every member of the group carries them out, not slot 0 alone (the group
#: leader's assignor decides the assignment and any member may lead), under a classic protocol (under the consumer
#: protocol the brokers assign)
ASSIGNOR_MISBEHAVIOURS = ("shuffle-assignor",)


def misbehaviours(kind: str) -> tuple[str, ...]:
    """The self-tests a kind of group's members know."""
    return tuple(MISBEHAVIOURS.get(kind, ()))


def misbehaving_member(name: str) -> str:
    """The built-in consumer-group member (`MEMBER_KINDS`) that carries out the consumer self-test `name`."""
    python, java = MEMBER_KINDS
    return java if name in JAVA_MISBEHAVIOURS else python


# -- share members

#: a share member's own settings (client settings it takes out before making its client): the workload's record
#: keys whose records it always rejects, or always releases (until the delivery count limit archives them)
SHARE_POISON = {"harness.share.reject.keys": "reject", "harness.share.release.keys": "release"}
#: a share member's own setting: records of the run's first topic, `<partition>:<offset>` comma-separated, whose
#: delivery kills the member (a poison record): it works the poll's other records and commits their acknowledgements,
#: writes a fatal `error` naming the record, and exits with SHARE_CRASH_EXIT, the record unacknowledged, no leave
SHARE_CRASH_RECORDS = "harness.share.crash.records"
SHARE_CRASH_EXIT = 3
#: the poll (counting those that return records) on which a misbehaving share member breaks the rules
SHARE_MISBEHAVE_ON_POLL = 3
