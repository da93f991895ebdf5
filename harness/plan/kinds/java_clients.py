"""The kafka-clients versions the Java member of a consumer-group run is asked to run on, and what the plan refuses
of them (pure; the plan imports it, `harness.run.resolve` asks Maven Central whether each one exists).

The Java member runs the brokers' own kafka-clients unless `--client-version` (or a scenario's `[members]
initial_client`) names another, and a `bounce` step's `client_version` brings the member of its slot back on
another one (`"target"`, i.e. `default`: the brokers' own), so a run can mix kafka-clients versions per slot as it
mixes confluent-kafka versions for the Python member. The Java share member (ShareMember.java) likewise.
"""
from __future__ import annotations

from harness.base.errors import BadInput
from harness.base.versions import (JAVA_CLIENT_PROTOCOL_SINCE, JAVA_MEMBER_CLIENT_SINCE, JAVA_SHARE_CLIENT_SINCE, dotted,
                                   is_release, version_key)
from harness.base.steps import Step

#: the version a `bounce` names with `client_version = "target"`: the member's own default (the brokers' release)
DEFAULT = "default"
ARTIFACT = "kafka-clients"


def runs_java(cfg, sc) -> bool:
    """Whether the run's built-in member is the Java one (some slot runs it: not every slot has a command): the Java
    member of a consumer group or the Java share member."""
    return sc.kind in ("consumer", "share") and cfg.member == "java" and cfg.member_command is None


def asked(cfg, sc, schedule) -> set[tuple[str | None, str]]:
    """(kafka-clients version, group protocol) pairs the Java member is asked to run: the first members' (None: the
    brokers' own) and each bounce's that names a client version or a protocol."""
    first = cfg.client_version or sc.initial_client
    out = {(first, cfg.protocol)}
    for a in schedule:
        if a.kind == Step.BOUNCE and (a.params.get("client_version") or a.params.get("protocol")):
            v = a.params.get("client_version") or first
            out.add((None if v == DEFAULT else v, a.params.get("protocol") or cfg.protocol))
    return out


def check(cfg, sc, schedule) -> None:
    """BadInput for a kafka-clients version the Java member cannot run as asked: not a release `x.y.z`, older than
    the member's source takes (JAVA_MEMBER_CLIENT_SINCE; the share member: JAVA_SHARE_CLIENT_SINCE), or without the
    group protocol asked of it."""
    if not runs_java(cfg, sc):
        return
    who, oldest, why = (("the Java share member", JAVA_SHARE_CLIENT_SINCE, "KafkaShareConsumer on the share-group "
                         "requests brokers from 4.1 take, KIP-932") if sc.kind == "share" else
                        ("the Java member", JAVA_MEMBER_CLIENT_SINCE, "onPartitionsLost and the cooperative-sticky "
                         "assignor, KIP-429"))
    for v, proto in sorted(asked(cfg, sc, schedule), key=lambda x: (x[0] or "", x[1])):
        if v is None:
            continue
        if not is_release(v):
            raise BadInput(f"{who}'s kafka-clients version {v!r}: give a release, x.y.z")
        if version_key(v) < oldest:
            raise BadInput(f"{who} needs kafka-clients {dotted(oldest)} or newer ({why}); asked for {v}")
        since = JAVA_CLIENT_PROTOCOL_SINCE.get(proto)
        if since and version_key(v) < since:
            raise BadInput(f"kafka-clients {v} cannot speak the {proto} group protocol (KIP-848): group.protocol "
                           f"needs kafka-clients {dotted(since)} or newer (4.0 for GA)")


def versions(cfg, sc, schedule) -> list[str]:
    """The kafka-clients releases the Java member runs besides the brokers' own, sorted (for the lookup)."""
    if not runs_java(cfg, sc):
        return []
    return sorted({v for v, _ in asked(cfg, sc, schedule) if v}, key=version_key)
