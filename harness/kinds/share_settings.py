"""Share-group settings of a run (KIP-932): the group configs the harness sets, tuned down for tests, and checks.

Pure (the plan imports it). The group configs are set on the run's group through the Admin API before the
first member joins (harness/kinds/share.py), after the run's own `--group-set` (a scenario file's
`[group] settings`), which may change any of them. The brokers must allow the tuned-down values: the
harness's broker settings lower `group.share.min.*` (harness/cluster/base.py). The members' acknowledgement
mode is a client setting, `share.acknowledgement.mode` (`--client-set`, `[members] client_settings`).
"""
from __future__ import annotations

from harness.errors import BadInput
from harness.kinds.kind_settings import whole

#: share members' self-tests (harness/members/share_member.py)
SHARE_MISBEHAVIOURS = ("ack-unheld", "process-expired")
ACK_MODES = ("explicit", "implicit")
#: the first confluent-kafka release with a ShareConsumer (a preview)
SHARE_CLIENT_SINCE = (2, 15, 0)
#: group configs of every share run unless the run says otherwise (Kafka's defaults in comments)
SHARE_GROUP_DEFAULTS = {
    "share.auto.offset.reset": "earliest",  # latest: records produced before a member joined would be skipped
    "share.record.lock.duration.ms": 5000,  # 30000
    "share.delivery.count.limit": 4,  # 5 (the brokers allow 2 to 10)
    "share.partition.max.record.locks": 100,  # 2000 (the brokers' least, group.share.min.partition.max.record.locks)
}


def share_group_configs(cfg) -> dict:
    """The share group's configs: the defaults, the run's session and heartbeat timings, then `--group-set`."""
    out = {**SHARE_GROUP_DEFAULTS, "share.session.timeout.ms": int(cfg.session_timeout_s * 1000),
           "share.heartbeat.interval.ms": int(cfg.heartbeat_interval_s * 1000), **dict(cfg.group_settings)}
    for key, lo in (("share.record.lock.duration.ms", 1000), ("share.delivery.count.limit", 2),
                    ("share.partition.max.record.locks", 1)):
        whole("share group", out, key, lo)
    return {k: str(v) for k, v in out.items()}


def ack_mode(cfg) -> str:
    """The members' share.acknowledgement.mode (default explicit); BadInput when it is neither mode."""
    mode = dict(cfg.client_settings).get("share.acknowledgement.mode", "explicit")
    if mode not in ACK_MODES:
        raise BadInput(f"share.acknowledgement.mode={mode!r}: one of {', '.join(ACK_MODES)}")
    return mode
