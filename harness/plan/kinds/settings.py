"""The one settings merge of every kind of group: the harness's defaults, then the scenario's, then the run's own,
each checked as a `BadInput` before anything starts; what the settings are and what each must hold stay with the
kind (streams.py, connect.py, share.py); how they are merged and how a whole number is read is said once, here.

- Kafka Streams and Kafka Connect settings (`--streams-set`, `--connect-set`): the harness knows every key they
  take, so a given key that is none of the defaults is refused, naming the close one.
- A share group's group configs (`--group-set`) and a consumer group's client settings (`--client-set`): the
  brokers and the client know their keys (a release's config names are read from its jars by harness/run/resolve.py;
  the Python member's client is made with the settings before the run starts, harness/kinds/consumer.py), so every
  key merges here. A consumer group's are merged once, by `client_settings`, for the three uses that must agree:
  the settings the client is checked with, the ones run.json records, and the ones each member starts with
  (harness/members/pool.py). The scenario file's settings are already under the command line's in `RunConfig`.
"""
from __future__ import annotations

from harness.kafka.config_keys import closest
from harness.base.errors import BadInput
from harness.base.versions import LIBRDKAFKA_SESSION_TIMEOUT_MS, POLL_CHECK_CLASSIC_ONLY_SINCE, is_release, version_key

#: client settings of the classic protocol only: under the consumer protocol these timings are the group's
CLASSIC_ONLY_TIMINGS = frozenset({"session.timeout.ms", "heartbeat.interval.ms"})


def merge(what: str, defaults: dict, scenario: dict, given, *, known_only: bool = True) -> dict:
    """`defaults`, then `scenario`'s settings, then the run's `given` (key, value) pairs. With `known_only`, BadInput
    naming the close known key when a given key is not one of `defaults` (`what`: "Streams", "Connect")."""
    settings = {**defaults, **scenario}
    for k, v in given:
        if known_only and k not in defaults:
            near = closest(k, defaults)
            raise BadInput(f"unknown {what} setting {k!r}" + (f"; did you mean {near}?" if near else
                                                             f"; known: {', '.join(defaults)}"))
        settings[k] = v
    return settings


def timings_for(protocol: str, timings: dict) -> dict:
    """The harness's client timings a member of `protocol` takes (the classic-only ones dropped under `consumer`)."""
    return {k: v for k, v in timings.items() if protocol != "consumer" or k not in CLASSIC_ONLY_TIMINGS}


def client_settings(protocol: str, timings: dict, given: dict, client_version: str | None = None) -> dict:
    """A member's client settings: the harness's `timings` for its protocol (a consumer group's; other kinds have
    none), then the `given` ones. The harness's own max.poll.interval.ms is raised to a given session.timeout.ms
    that exceeds it (clients refuse a poll interval shorter than the session timeout), and under the consumer
    protocol on a confluent-kafka `client_version` before 2.10.0 to librdkafka's default one when none is given
    (those releases compare the two under every protocol: `POLL_CHECK_CLASSIC_ONLY_SINCE`); a given
    max.poll.interval.ms stays as given."""
    conf = merge("client", timings_for(protocol, timings), {}, given.items(), known_only=False)
    if "max.poll.interval.ms" in timings and "max.poll.interval.ms" not in given:
        floor = conf.get("session.timeout.ms", 0)
        if protocol == "consumer" and client_version and is_release(client_version, post=True) \
                and version_key(client_version) < POLL_CHECK_CLASSIC_ONLY_SINCE:
            floor = conf.get("session.timeout.ms", LIBRDKAFKA_SESSION_TIMEOUT_MS)
        try:
            conf["max.poll.interval.ms"] = max(int(conf["max.poll.interval.ms"]), int(floor))
        except (TypeError, ValueError):
            pass  # the client refuses the bad value, with its own words
    return conf


def whole(what: str, settings: dict, key: str, lo: int) -> int:
    """settings[key] as a whole number of at least `lo`; BadInput saying which `what` setting is wrong."""
    v = settings[key]
    try:
        n = int(v)
    except (TypeError, ValueError):
        raise BadInput(f"{what} setting {key}={v!r} is not a whole number") from None
    if n < lo or float(v) != n:
        raise BadInput(f"{what} setting {key}={v!r} must be a whole number of at least {lo}")
    return n
