"""Release versions: the one parser and comparer, and every version gate as a named constant.

A version is `x.y.z` (a release), `x.y.z.postN` (a post release, as confluent-kafka has them) or a prefix `x` or
`x.y` (a name the Kafka resolver takes); one regular expression reads all of them, and `is_release`, `is_prefix`,
`version_key` and `major_minor` are its only readers. A gate is the first release that has something, as the
(major, minor[, patch]) tuple `version_key` compares with; each says where its number comes from.

Standard library only, no harness import: the Python member (run as a script under any confluent-kafka install)
imports it for its gate, converted to librdkafka's number by `librdkafka_number`.
"""
from __future__ import annotations

import re

VERSION_RE = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:\.post(\d+))?$")
#: Kafka version names the resolver takes besides versions (harness/kafka/dist.py): the major they stand for
ALIASES = {"latest": "4", "latest-4": "4", "latest-3": "3"}


def _numbers(v: str) -> tuple[str | None, ...] | None:
    m = VERSION_RE.match(v)
    return m.groups() if m else None


def is_release(v: str, *, post: bool = False) -> bool:
    """Whether `v` is a release `x.y.z` (with `post`, also a post release `x.y.z.postN`)."""
    g = _numbers(v)
    return g is not None and g[2] is not None and (post or g[3] is None)


def is_prefix(v: str) -> bool:
    """Whether `v` is `x` or `x.y`: a prefix the newest release under it is resolved for."""
    g = _numbers(v)
    return g is not None and g[2] is None and g[3] is None


def version_key(v: str) -> tuple[int, ...]:
    """A version as a tuple of integers, for ordering and comparing: `x.y.z` -> (x, y, z), a prefix `x.y` ->
    (x, y); a post release's number is left out. ValueError for what is not a version."""
    g = _numbers(v)
    if g is None or (g[3] is not None and g[2] is None):
        raise ValueError(f"not a version: {v!r}")
    return tuple(int(x) for x in g[:3] if x is not None)


def major_minor(v: str) -> tuple[int, int]:
    """The (major, minor) of a release `x.y.z`."""
    return tuple(version_key(v)[:2])  # type: ignore[return-value]


def newest_major_minor(name: str) -> tuple[int, int] | None:
    """The newest (major, minor) a Kafka version name can stand for: a release's or `x.y`'s own, any minor of a
    major (`4`, `latest`: any 4.x; `latest-3`: any 3.x, as (major, 99)); None for a name that is none of these."""
    name = ALIASES.get(name, name)
    if _numbers(name) is None:
        return None
    key = version_key(name)
    return (key[0], 99) if len(key) == 1 else key[:2]  # type: ignore[return-value]


def dotted(gate: tuple[int, ...]) -> str:
    """A gate as people write it: (4, 2) -> "4.2"."""
    return ".".join(map(str, gate))


def librdkafka_number(gate: tuple[int, ...]) -> int:
    """A gate as librdkafka numbers its releases (`confluent_kafka.libversion()[1]`: a byte each for the major,
    minor and patch, then one for the pre-release, 0xff for a final release, which a gate's number is below)."""
    major, minor, patch = (tuple(gate) + (0, 0))[:3]
    return (major << 24) | (minor << 16) | (patch << 8)


# -- the brokers'

#: group configs (GROUP config resources, KIP-848's dynamic group settings) exist on brokers from 4.0
GROUP_CONFIGS_SINCE = (4, 0)
#: share groups (KIP-932): a preview in 4.1 (share.version off by default), production-ready from 4.2
SHARE_BROKERS_SINCE = (4, 2)
#: what the brokers must run for a group protocol: (major, minor). Kafka 3.7 and 3.8 shipped KIP-848 as early
#: access (3.9 as a preview), off unless `group.coordinator.rebalance.protocols=classic,consumer` was set, with
#: no upgrade path and protocol versions that changed before 4.0; GA clients need 4.0 (docs/settings.md). The
#: streams protocol (KIP-1071) is early access in 4.1, off on its brokers by default (an instance on it fails
#: with "The cluster does not support the STREAMS group protocol"), and on by default from 4.2; share groups:
#: SHARE_BROKERS_SINCE
PROTOCOL_SINCE = {"consumer": (4, 0), "streams": (4, 2), "share": SHARE_BROKERS_SINCE}
#: why a release before PROTOCOL_SINCE cannot run a protocol, where there is more to say than its absence
PROTOCOL_BEFORE = {"share": "share groups are early access in 4.0 and a preview in 4.1 (share.version off unless "
                            "switched on), production-ready from 4.2, where the harness runs them"}
#: share-group settings that a release takes as group configs only from the release given; before it each is a broker
#: config, its name with `group.` in front (`group.share.delivery.count.limit`), set in every broker's own config at
#: start. Read from the releases' GroupConfig and broker ConfigDef (harness/kafka/config_names.py): Kafka 4.1.2 and
#: 4.2.2 define neither as a group config (both as broker configs), 4.3.1 both
SHARE_GROUP_CONFIG_SINCE = {"share.delivery.count.limit": (4, 3), "share.partition.max.record.locks": (4, 3)}
#: a share group's dead-letter topic (KIP-1191, a group config)
DLQ_SINCE = (4, 4)
#: brokers that start partitions added to a topic a share group already consumes at offset 0 whatever the group's
#: share.auto.offset.reset (KAFKA-20742; before, under latest, their first records were skipped: docs/findings.md)
ADDED_PARTITIONS_FROM_ZERO_SINCE = (4, 4)
#: brokers from KIP896_SINCE dropped the request versions of clients before OLDEST_CLIENT_FOR_4 (KIP-896)
KIP896_SINCE, OLDEST_CLIENT_FOR_4 = (4, 0), (2, 1)
#: kafka-features' `upgrade --release-version` (the brokers' metadata version after a roll); `--metadata` before
#: it, deprecated in 4.x
RELEASE_VERSION_FLAG_SINCE = (4, 0)

# -- the clients'

#: the first confluent-kafka (librdkafka) release that knows `group.protocol`, i.e. can speak KIP-848 (early
#: access until 2.12.0, GA from it); older ones are refused the setting and run the classic protocols
CLIENT_PROTOCOL_SINCE = {"consumer": (2, 4, 0)}
#: the first confluent-kafka (librdkafka) release that compares max.poll.interval.ms with session.timeout.ms under the
#: classic protocols only (librdkafka#5028): before it a consumer-protocol member is refused a poll interval under
#: its session.timeout.ms too (its own default, LIBRDKAFKA_SESSION_TIMEOUT_MS, when none is given), though the
#: consumer protocol's session timeout is the group's
POLL_CHECK_CLASSIC_ONLY_SINCE = (2, 10, 0)
#: librdkafka's default session.timeout.ms (CONFIGURATION.md; 45 s since 1.7.0, KIP-735)
LIBRDKAFKA_SESSION_TIMEOUT_MS = 45000
#: the first confluent-kafka release with a ShareConsumer (a preview)
SHARE_CLIENT_SINCE = (2, 15, 0)
#: the oldest kafka-clients the Java member (harness/members/java/Member.java) compiles against and runs on:
#: it implements ConsumerRebalanceListener.onPartitionsLost and names the CooperativeStickyAssignor, both from
#: kafka-clients 2.4 (KIP-429); every kafka-clients from it on joins brokers of 4.x (KIP896_SINCE serves clients
#: from OLDEST_CLIENT_FOR_4)
JAVA_MEMBER_CLIENT_SINCE = (2, 4)
#: the first kafka-clients release that knows `group.protocol`, i.e. can speak KIP-848: 3.7 (early access; GA from
#: 4.0). An older client warns "supplied but isn't a known config" and runs the classic protocol, so the Java
#: member on it is refused the consumer protocol up front rather than run on another protocol than asked
JAVA_CLIENT_PROTOCOL_SINCE = {"consumer": (3, 7)}
#: the oldest kafka-clients the Java share member (ShareMember.java, KafkaShareConsumer) runs on: 4.0's early-access
#: share consumer sent ShareGroupHeartbeat v0, which brokers from 4.1 no longer take ("Version 0 was used for early
#: access of KIP-932 in Apache Kafka 4.0 but removed in Apache Kafka 4.1", ShareGroupHeartbeatRequest.json)
JAVA_SHARE_CLIENT_SINCE = (4, 1)
#: the first connect-runtime release that knows each connect.protocol (KIP-415: compatible; KIP-507: sessioned)
CONNECT_PROTOCOL_SINCE = {"eager": (0, 10), "compatible": (2, 3), "sessioned": (2, 4)}
