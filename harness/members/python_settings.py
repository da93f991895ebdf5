"""The Python member's settings: its client's (`consumer_config`; what it runs with, for its `started` event's
`effective` and `effective_defaults`) and the member's own (`split_settings`: `harness.` client settings).

Imports only the standard library and confluent_kafka, as `python_member` does (which runs under an isolated
install of any confluent-kafka version).
"""
from __future__ import annotations

import json

import confluent_kafka

PROTOCOL_CONFIG = {
    "classic-eager": {"group.protocol": "classic", "partition.assignment.strategy": "range"},
    "classic-cooperative": {"group.protocol": "classic", "partition.assignment.strategy": "cooperative-sticky"},
    "consumer": {"group.protocol": "consumer"},
}
#: librdkafka knows `group.protocol` (KIP-848, early access) from 2.4.0; before it the property is refused
GROUP_PROTOCOL_SINCE = 0x02040000
#: HARNESS_COMMIT_MODE's values (python_member's docstring says what each does)
COMMIT_MODES = ("sync", "async", "auto", "never")


def commit_mode(env: dict) -> str:
    """HARNESS_COMMIT_MODE (empty or unset: sync); exits with one line when it is none of COMMIT_MODES."""
    mode = env.get("HARNESS_COMMIT_MODE") or "sync"
    if mode not in COMMIT_MODES:
        raise SystemExit(f"member: unknown commit mode {mode!r} (HARNESS_COMMIT_MODE); known: {', '.join(COMMIT_MODES)}")
    return mode


def client_version() -> str:
    """The confluent-kafka version string (version() is a tuple in older releases, a string in newer)."""
    v = confluent_kafka.version()
    return v[0] if isinstance(v, tuple) else str(v)


#: librdkafka's documented defaults of the settings the checkers judge with (CONFIGURATION.md; the same in every
#: release the harness runs, 2.0.2 on: session.timeout.ms went from 10 s to 45 s in 1.7.0, KIP-735)
LIBRDKAFKA_DEFAULTS = {"session.timeout.ms": 45000, "heartbeat.interval.ms": 3000, "max.poll.interval.ms": 300000,
                       "auto.commit.interval.ms": 5000}


def effective_settings(conf: dict, mode: str) -> tuple[dict, list[str]]:
    """(what the client runs with of the settings the checkers judge with, the keys taken from librdkafka's
    documented defaults rather than given): the `started` event's `effective` and `effective_defaults`."""
    out: dict = {"group.protocol": conf.get("group.protocol", "classic"),
                 "partition.assignment.strategy": conf.get("partition.assignment.strategy")
                 if conf.get("group.protocol", "classic") == "classic" else None,
                 "group.instance.id": conf.get("group.instance.id"),
                 "enable.auto.commit": str(conf.get("enable.auto.commit", "true")).lower() == "true",
                 "commit_mode": mode, "client": f"confluent-kafka {client_version()} librdkafka {confluent_kafka.libversion()[0]}"}
    if out["group.protocol"] == "classic" and out["partition.assignment.strategy"] is None:
        out["partition.assignment.strategy"] = "range,roundrobin"  # librdkafka's default
    defaults = []
    for key, default in LIBRDKAFKA_DEFAULTS.items():
        try:
            out[key] = int(conf[key])
        except (KeyError, ValueError):
            out[key] = default
            defaults.append(key)
    return out, defaults


#: the Python member's own settings: given as client settings (`--client-set`, `[members] client_settings`), taken
#: out before its client is made (docs/member-contract.md, "The Python member's own settings"). `true`: under the
#: consumer protocol a commit refused with one of FENCED_COMMIT_ERRORS makes it take its assignment for lost
#: (`Member._give_up`), the workaround of docs/findings.md's librdkafka livelock
LOST_ON_REFUSED_COMMIT = "harness.lost.on.refused.commit"
MEMBER_SETTINGS = {LOST_ON_REFUSED_COMMIT: ("true", "false")}
#: what a commit refused under the consumer protocol says when the group no longer knows the member: it was fenced
#: (its session expired or it was removed). STALE_MEMBER_EPOCH is not one: a member whose epoch moved on during a
#: rebalance is refused so and still owns what it held
FENCED_COMMIT_ERRORS = ("UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH")


def split_settings(given: dict) -> tuple[dict, dict]:
    """(the client's settings, the member's own `harness.` ones) of HARNESS_CLIENT_CONFIG's; exits with one line for
    a `harness.` setting the member does not know or a value it does not take."""
    own = {k: str(v).lower() for k, v in given.items() if k.startswith("harness.")}
    for key, value in own.items():
        if key not in MEMBER_SETTINGS:
            raise SystemExit(f"member: unknown member setting {key!r}; known: {', '.join(MEMBER_SETTINGS)}")
        if value not in MEMBER_SETTINGS[key]:
            raise SystemExit(f"member: {key} is {' or '.join(MEMBER_SETTINGS[key])}, not {given[key]!r}")
    return {k: v for k, v in given.items() if k not in own}, own


def refused_commit_is_lost(protocol: str, error: str | None) -> bool:
    """Whether a commit refused with `error` (its text, as the `committed` event records it) says the group no longer
    knows the member, so that its assignment is lost: under the consumer protocol, one of FENCED_COMMIT_ERRORS (the
    classic protocols' librdkafka rejoins by itself on those)."""
    return protocol == "consumer" and error is not None and any(code in error for code in FENCED_COMMIT_ERRORS)


def protocol_config(protocol: str) -> dict:
    """The client settings of a protocol that this client library knows. `group.protocol=classic` is the
    default, so it is left out where the library does not know the property; `consumer` cannot be had there."""
    if protocol not in PROTOCOL_CONFIG:
        raise SystemExit(f"member: unknown protocol {protocol!r}")
    conf = dict(PROTOCOL_CONFIG[protocol])
    if confluent_kafka.libversion()[1] < GROUP_PROTOCOL_SINCE:
        if protocol == "consumer":
            raise SystemExit(f"member: confluent-kafka {client_version()} (librdkafka {confluent_kafka.libversion()[0]}) "
                             "cannot speak the consumer group protocol (KIP-848): it needs 2.4.0 or newer")
        del conf["group.protocol"]
    return conf


def consumer_config(env: dict) -> dict:
    """The consumer's settings: the contract's, the protocol's, then HARNESS_CLIENT_CONFIG as given (the member's own
    `harness.` settings taken out)."""
    conf = {"enable.auto.commit": commit_mode(env) == "auto", "auto.offset.reset": "earliest",
            **protocol_config(env["HARNESS_PROTOCOL"]),
            **split_settings(json.loads(env.get("HARNESS_CLIENT_CONFIG") or "{}"))[0]}
    for key, var in (("bootstrap.servers", "HARNESS_BOOTSTRAP"), ("group.id", "HARNESS_GROUP_ID"),
                     ("client.id", "HARNESS_MEMBER_ID"), ("group.instance.id", "HARNESS_INSTANCE_ID"),
                     ("client.rack", "HARNESS_RACK")):
        if env.get(var):
            conf[key] = env[var]
    return conf
