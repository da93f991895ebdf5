"""Kafka Streams settings of a run: the harness's defaults, the scenario's, the run's own; checked.

Every check here is a `BadInput` raised before anything starts (docs/streams.md lists the settings).
"""
from __future__ import annotations

from functools import partial

from harness.base.errors import BadInput
from harness.plan.kinds.settings import merge, whole

_int = partial(whole, "Streams")  # settings[key] as a whole number of at least lo, or BadInput

#: Streams settings of every run unless the scenario or --streams-set says otherwise; tuned for quick tests
STREAMS_DEFAULTS: dict = {
    "num.standby.replicas": 0,
    "max.warmup.replicas": 2,
    "acceptable.recovery.lag": 1000,
    "probing.rebalance.interval.ms": 60000,  # Kafka's minimum
    "processing.guarantee": "at_least_once",
    "num.stream.threads": 1,
    "commit.interval.ms": 1000,
    "harness.records.per.task": 10000,  # synthetic state per task, written to the changelog before the run
    "harness.restore.records.per.second": 1000,  # restore cost: 10 s per task with the defaults
    "harness.rack.aware": False,  # client.tag.rack and rack.aware.assignment.tags=rack
}
GUARANTEES = ("at_least_once", "exactly_once_v2")
#: huge enough that every instance counts as caught up: warmups never happen (the defeat-warmup self-test)
DEFEATING_LAG = 1 << 62


def streams_settings(cfg, sc) -> dict:
    """The Streams settings of a run (defaults, the scenario's, the run's own), checked: BadInput if wrong."""
    settings = merge("Streams", STREAMS_DEFAULTS, sc.streams, cfg.streams_settings)
    most = sc.max_members or sc.members
    standbys = _int(settings, "num.standby.replicas", 0)
    if standbys > most - 1:
        raise BadInput(f"num.standby.replicas={standbys} cannot be placed: scenario {sc.name} runs at most {most} "
                       f"instances, so a task can have at most {most - 1} standby(s)")
    _int(settings, "max.warmup.replicas", 1)
    _int(settings, "acceptable.recovery.lag", 0)
    if _int(settings, "probing.rebalance.interval.ms", 0) < 60000:
        raise BadInput("probing.rebalance.interval.ms must be at least 60000 (Kafka Streams' minimum)")
    _int(settings, "num.stream.threads", 1)
    _int(settings, "commit.interval.ms", 0)
    _int(settings, "harness.records.per.task", 0)
    if settings["processing.guarantee"] not in GUARANTEES:
        raise BadInput(f"processing.guarantee={settings['processing.guarantee']!r}; known: {', '.join(GUARANTEES)}")
    if float(settings["harness.restore.records.per.second"]) < 0:
        raise BadInput("harness.restore.records.per.second must not be negative (0: no restore cost)")
    if cfg.protocol == "streams":
        if sc.static:
            raise BadInput("the streams protocol does not support static membership (group.instance.id)")
    return settings
