"""The Python member's settings: what its client runs with, for its `started` event (`effective`,
`effective_defaults`), and the member's own (`split_settings`: its `harness.` client settings).

Imports only the standard library, confluent_kafka and the vocabulary, as `python_member` does (which runs under an
isolated install of any confluent-kafka version).
"""
from __future__ import annotations

import re

import confluent_kafka

from harness.base.vocabulary import (CLASSIC, COMMIT_MODES, DEFAULT_COMMIT_MODE, DEFAULT_OFFSET_STORE,
                                     LIBRDKAFKA_DEFAULT_STRATEGY, MANUAL_OFFSET_STORES, MEMBER_SETTING_PREFIX,
                                     OFFSET_STORE, PYTHON_MEMBER_SETTINGS)


def commit_mode(env: dict) -> str:
    """HARNESS_COMMIT_MODE (empty or unset: sync); exits with one line when it is none of COMMIT_MODES."""
    mode = env.get("HARNESS_COMMIT_MODE") or DEFAULT_COMMIT_MODE
    if mode not in COMMIT_MODES:
        raise SystemExit(f"member: unknown commit mode {mode!r} (HARNESS_COMMIT_MODE); known: {', '.join(COMMIT_MODES)}")
    return mode


def revoke_delay_ms(env: dict) -> float:
    """HARNESS_REVOKE_DELAY_MS (empty or unset: 0): how long the revoke handler waits before its commit; exits with
    one line when it is not a number from 0 to 60000."""
    text = env.get("HARNESS_REVOKE_DELAY_MS") or "0"
    try:
        ms = float(text)
    except ValueError:
        ms = -1.0
    if not 0 <= ms <= 60000:
        raise SystemExit(f"member: HARNESS_REVOKE_DELAY_MS={text!r}: milliseconds from 0 to 60000")
    return ms


def client_version() -> str:
    """The confluent-kafka version string (version() is a tuple in older releases, a string in newer)."""
    v = confluent_kafka.version()
    return v[0] if isinstance(v, tuple) else str(v)


def librdkafka_version() -> tuple[str, int]:
    """librdkafka's version as (text, number): `libversion()` is that tuple in most releases, but confluent-kafka
    2.12.0 returns the text alone, whose number is then read from it (a byte each for the major, minor and patch,
    0xff for a final release: librdkafka's own numbering, harness.base.versions.librdkafka_number)."""
    v = confluent_kafka.libversion()
    if isinstance(v, tuple):
        return str(v[0]), int(v[1])
    return str(v), librdkafka_text_number(str(v))


def librdkafka_text_number(text: str) -> int:
    """librdkafka's number of a version text ("2.12.0" -> 0x020c00ff; a pre-release "2.12.0-RC1" -> 0x020c0000)."""
    m = re.match(r"(\d+)\.(\d+)\.(\d+)(.*)", text.strip())
    if m is None:
        raise SystemExit(f"member: librdkafka's version {text!r} is not major.minor.patch")
    major, minor, patch, rest = int(m[1]), int(m[2]), int(m[3]), m[4]
    return (major << 24) | (minor << 16) | (patch << 8) | (0 if rest else 0xff)


#: librdkafka's documented defaults of the settings the checkers judge with (CONFIGURATION.md; the same in every
#: release the harness runs, 2.0.2 on: session.timeout.ms went from 10 s to 45 s in 1.7.0, KIP-735)
LIBRDKAFKA_DEFAULTS = {"session.timeout.ms": 45000, "heartbeat.interval.ms": 3000, "max.poll.interval.ms": 300000,
                       "auto.commit.interval.ms": 5000}


def effective_settings(conf: dict, mode: str, revoke_delay: float = 0.0,
                       processing_ms: float = 0.0, store: str = DEFAULT_OFFSET_STORE) -> tuple[dict, list[str]]:
    """(what the client runs with of the settings the checkers judge with, the keys taken from librdkafka's
    documented defaults rather than given): the `started` event's `effective` and `effective_defaults`; with the
    member's own commit mode, revoke handler delay and work per record (ms), and offset store path (`offset_store`)."""
    out: dict = {"group.protocol": conf.get("group.protocol", CLASSIC),
                 "partition.assignment.strategy": conf.get("partition.assignment.strategy")
                 if conf.get("group.protocol", CLASSIC) == CLASSIC else None,
                 "group.remote.assignor": conf.get("group.remote.assignor")
                 if conf.get("group.protocol", CLASSIC) != CLASSIC else None,
                 "group.instance.id": conf.get("group.instance.id"),
                 "enable.auto.commit": _true(conf.get("enable.auto.commit", True)),
                 "enable.auto.offset.store": _true(conf.get("enable.auto.offset.store", True)),
                 "commit_mode": mode, "offset_store": store, "revoke_delay_ms": revoke_delay,
                 "processing_ms": processing_ms,
                 "client": f"confluent-kafka {client_version()} librdkafka {librdkafka_version()[0]}"}
    if out["group.protocol"] == CLASSIC and out["partition.assignment.strategy"] is None:
        out["partition.assignment.strategy"] = LIBRDKAFKA_DEFAULT_STRATEGY
    defaults = []
    for key, default in LIBRDKAFKA_DEFAULTS.items():
        try:
            out[key] = int(conf[key])
        except (KeyError, ValueError):
            out[key] = default
            defaults.append(key)
    return out, defaults


#: what a commit refused under the consumer protocol says when the group no longer knows the member: it was fenced
#: (its session expired or it was removed). STALE_MEMBER_EPOCH is not one: a member whose epoch moved on during a
#: rebalance is refused so and still owns what it held
FENCED_COMMIT_ERRORS = ("UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH")


def split_settings(given: dict) -> tuple[dict, dict]:
    """(the client's settings, the member's own `harness.` ones) of HARNESS_CLIENT_CONFIG's; exits with one line for
    a `harness.` setting the member does not know or a value it does not take."""
    own = {k: str(v).lower() for k, v in given.items() if k.startswith(MEMBER_SETTING_PREFIX)}
    for key, value in own.items():
        if key not in PYTHON_MEMBER_SETTINGS:
            raise SystemExit(f"member: unknown member setting {key!r}; known: {', '.join(PYTHON_MEMBER_SETTINGS)}")
        if value not in PYTHON_MEMBER_SETTINGS[key]:
            known = PYTHON_MEMBER_SETTINGS[key]
            said = " or ".join(known) if len(known) == 2 else "one of " + ", ".join(known)
            raise SystemExit(f"member: {key} is {said}, not {given[key]!r}")
    return {k: v for k, v in given.items() if k not in own}, own


def refused_commit_is_lost(protocol: str, error: str | None) -> bool:
    """Whether a commit refused with `error` (its text, as the `committed` event records it) says the group no longer
    knows the member, so that its assignment is lost: under the consumer protocol, one of FENCED_COMMIT_ERRORS (the
    classic protocols' librdkafka rejoins by itself on those)."""
    return protocol == "consumer" and error is not None and any(code in error for code in FENCED_COMMIT_ERRORS)


def _true(v) -> bool:
    return str(v).strip().lower() == "true"


def offset_store(mode: str, client: dict, own: dict) -> str:
    """The path the member's commits' offsets take (`harness.offset.store` of its own settings `own`, default
    `explicit`): under commit mode `auto` `explicit` is the `automatic` store (the client's timer commits what it
    stored as it handed messages over). Exits with one line when the client settings `client` give
    enable.auto.offset.store against it: the manual stores need it false, the automatic store true."""
    store = own.get(OFFSET_STORE, DEFAULT_OFFSET_STORE)
    if store == DEFAULT_OFFSET_STORE and mode == "auto":
        store = "automatic"
    given = client.get("enable.auto.offset.store")
    if given is None or store == DEFAULT_OFFSET_STORE or _true(given) == (store == "automatic"):
        return store
    why = f"{OFFSET_STORE}={store}" if OFFSET_STORE in own else f"commit mode auto (its {OFFSET_STORE} is automatic)"
    need = "false: it stores the offsets itself" if store in MANUAL_OFFSET_STORES else \
        "true: librdkafka stores each message's offset as it hands it over"
    raise SystemExit(f"member: {why} needs enable.auto.offset.store={need}; it was given {given!r}")


def store_config(store: str) -> dict:
    """The client settings of an offset store path: enable.auto.offset.store as the path needs it (`explicit`: the
    library's default, left unset)."""
    if store == DEFAULT_OFFSET_STORE:
        return {}
    return {"enable.auto.offset.store": store not in MANUAL_OFFSET_STORES}
