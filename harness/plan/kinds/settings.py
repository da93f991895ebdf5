"""The one settings merge of the Kafka Streams and Kafka Connect kinds: the harness's defaults, then the
scenario's, then the run's own (`--streams-set` / `--connect-set`), each checked as a `BadInput` before
anything starts. What the settings are and what each must hold stay with the kind (streams_settings.py,
connect_settings.py); how they are merged and how a whole number is read is said once, here.
"""
from __future__ import annotations

from harness.kafka.config_keys import closest
from harness.base.errors import BadInput


def merge(what: str, defaults: dict, scenario: dict, given) -> dict:
    """`defaults`, then `scenario`'s settings, then the run's `given` (key, value) pairs; BadInput naming the
    close known key when a given key is not one of `defaults` (`what`: "Streams", "Connect")."""
    settings = {**defaults, **scenario}
    for k, v in given:
        if k not in defaults:
            near = closest(k, defaults)
            raise BadInput(f"unknown {what} setting {k!r}" + (f"; did you mean {near}?" if near else
                                                             f"; known: {', '.join(defaults)}"))
        settings[k] = v
    return settings


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
