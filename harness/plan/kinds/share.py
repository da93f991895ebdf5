"""Share-group settings of a run (KIP-932): the group configs the harness sets, tuned down for tests, and checks.

Pure (the plan imports it). The group configs are set on the run's group through the Admin API before the
first member joins (harness/kinds/share.py), after the run's own `--group-set` (a scenario file's
`[group] settings`), which may change any of them. A release that knows one of them as a broker config only
(SHARE_GROUP_CONFIG_SINCE: `share.delivery.count.limit` before 4.3) takes it as that (`group.<name>`) in every
broker's own config at start (`at_brokers`, the plan's `broker_settings`). The brokers must allow the tuned-down
values: the harness's broker settings lower `group.share.min.*` (harness/cluster/base.py). The members' acknowledgement
mode is a client setting, `share.acknowledgement.mode` (`--client-set`, `[members] client_settings`).
"""
from __future__ import annotations

from harness.base.errors import BadInput
from harness.base.steps import Step
from harness.base.versions import DLQ_SINCE, SHARE_GROUP_CONFIG_SINCE, dotted, major_minor
from harness.base.vocabulary import SHARE_CRASH_RECORDS, SHARE_POISON
from harness.plan.kinds.settings import merge, whole

ACK_MODES = ("explicit", "implicit")
#: the reset policies the harness runs a share group with: share_completion judges what each skips
#: (harness/invariants/share/skipped.py); Kafka's `by_duration:<ISO-8601>` skips by record time, which it cannot
RESET_POLICIES = ("earliest", "latest")
#: group configs of every share run unless the run says otherwise (Kafka's defaults in comments)
SHARE_GROUP_DEFAULTS = {
    "share.auto.offset.reset": "earliest",  # latest: records produced before a member joined would be skipped
    "share.record.lock.duration.ms": 5000,  # 30000
    "share.delivery.count.limit": 4,  # 5 (the brokers allow 2 to 10)
    "share.partition.max.record.locks": 100,  # 2000 (the brokers' least, group.share.min.partition.max.record.locks)
}


def share_group_configs(cfg) -> dict:
    """The share group's configs: the defaults, the run's session and heartbeat timings, then `--group-set`."""
    out = merge("share group", {**SHARE_GROUP_DEFAULTS, "share.session.timeout.ms": int(cfg.session_timeout_s * 1000),
                                "share.heartbeat.interval.ms": int(cfg.heartbeat_interval_s * 1000)},
                {}, cfg.group_settings, known_only=False)
    for key, lo in (("share.record.lock.duration.ms", 1000), ("share.delivery.count.limit", 2),
                    ("share.partition.max.record.locks", 1)):
        whole("share group", out, key, lo)
    reset = str(out["share.auto.offset.reset"]).strip().lower()
    if reset not in RESET_POLICIES:
        raise BadInput(f"share group setting share.auto.offset.reset={out['share.auto.offset.reset']!r}: the harness "
                       f"runs {' or '.join(RESET_POLICIES)} (share_completion judges what each skips; "
                       f"by_duration skips by record time, which it cannot judge)")
    return {k: str(v) for k, v in out.items()}


def at_brokers(settings: dict, broker_version: str) -> dict:
    """The share group's settings Kafka `broker_version` knows as broker configs only (SHARE_GROUP_CONFIG_SINCE), as
    those: `group.<name>` -> value, set in every broker's own config at start (the group's default there)."""
    return {f"group.{k}": str(v) for k, v in settings.items()
            if k in SHARE_GROUP_CONFIG_SINCE and major_minor(broker_version) < SHARE_GROUP_CONFIG_SINCE[k]}


def as_group_configs(settings: dict, broker_version: str) -> dict:
    """The share group's settings Kafka `broker_version` takes as group configs (the others: `at_brokers`)."""
    brokers = at_brokers(settings, broker_version)
    return {k: v for k, v in settings.items() if f"group.{k}" not in brokers}


#: the share group's dead-letter topic (KIP-1191, a group config; brokers from DLQ_SINCE)
DLQ_TOPIC = "errors.deadletterqueue.topic.name"
#: the brokers' config of the prefix a dead-letter topic's name must have, and its default
DLQ_PREFIX, DLQ_PREFIX_DEFAULT = "errors.deadletterqueue.topic.name.prefix", "dlq."


def dlq_topic(settings: dict) -> str | None:
    """The share group's dead-letter topic, from its group configs (None: it has none)."""
    return str(settings.get(DLQ_TOPIC) or "").strip() or None


def poison_keys(cfg) -> dict:
    """ack -> the record keys a member gives that acknowledgement always (SHARE_POISON); BadInput for a key that is not
    one of the workload's (`k<n>`), or in implicit mode (which can neither reject nor release)."""
    given = dict(cfg.client_settings)
    out = {}
    for key, ack in SHARE_POISON.items():
        keys = [k.strip() for k in str(given.get(key, "")).split(",") if k.strip()]
        bad = next((k for k in keys if not (k[:1] == "k" and k[1:].isdigit())), None)
        if bad:
            raise BadInput(f"{key}: {bad!r} is not a record key of the workload (k0, k1, ...)")
        if keys:
            out[ack] = keys
    if out and ack_mode(cfg) != "explicit":
        raise BadInput(f"{', '.join(k for k in SHARE_POISON if k in given)} needs share.acknowledgement.mode=explicit (an "
                       "implicit member can neither reject nor release)")
    return out


def crash_records(cfg) -> list[tuple[int, int]]:
    """The records (partition, offset of the run's first topic) whose delivery kills a member (SHARE_CRASH_RECORDS);
    BadInput for one that is not `<partition>:<offset>`, or in implicit mode (the member commits the poll's other
    acknowledgements before it dies)."""
    given = str(dict(cfg.client_settings).get(SHARE_CRASH_RECORDS, ""))
    out = []
    for item in (x.strip() for x in given.split(",") if x.strip()):
        p, _, o = item.partition(":")
        if not (p.isdigit() and o.isdigit()):
            raise BadInput(f"{SHARE_CRASH_RECORDS}: {item!r} is not <partition>:<offset> (0:60)")
        out.append((int(p), int(o)))
    if out and ack_mode(cfg) != "explicit":
        raise BadInput(f"{SHARE_CRASH_RECORDS} needs share.acknowledgement.mode=explicit (the member acknowledges the "
                       "poll's other records before it dies)")
    return out


def check_dlq(scenario: str, settings: dict, broker_version: str, broker_settings: dict) -> None:
    """A dead-letter topic needs Kafka 4.4 (KIP-1191) and a name the brokers allow; BadInput in one line if not."""
    name = dlq_topic(settings)
    if name is None:
        return
    if major_minor(broker_version) < DLQ_SINCE:
        raise BadInput(f"scenario {scenario} gives its share group a dead-letter topic ({DLQ_TOPIC}={name}), which "
                       f"needs Kafka {dotted(DLQ_SINCE)} or newer (KIP-1191); the cluster runs "
                       f"{broker_version}")
    prefix = broker_settings.get(DLQ_PREFIX, DLQ_PREFIX_DEFAULT)
    if name.startswith("__") or not name.startswith(prefix):
        raise BadInput(f"{DLQ_TOPIC}={name}: the brokers take a dead-letter topic whose name starts with "
                       f"{prefix!r} ({DLQ_PREFIX}) and not with '__'")


def ack_mode(cfg) -> str:
    """The members' share.acknowledgement.mode (default explicit); BadInput when it is neither mode."""
    mode = dict(cfg.client_settings).get("share.acknowledgement.mode", "explicit")
    if mode not in ACK_MODES:
        raise BadInput(f"share.acknowledgement.mode={mode!r}: one of {', '.join(ACK_MODES)}")
    return mode


def check_subscriptions(cfg, schedule) -> None:
    """A share member subscribes to topics by name (KIP-932's share consumers take no regex): BadInput in one line for
    a `^regex` entry of `[members] subscription`, `slot_subscriptions` or a `change_subscription` step."""
    given = {"members.subscription": tuple(cfg.subscription or ()),
             **{f"members.slot_subscriptions.{slot}": tuple(e) for slot, e in cfg.slot_subscriptions}}
    given.update({f"step {i} (change_subscription)": tuple(a.params.get("subscription") or ())
                  for i, a in enumerate(schedule) if a.kind == Step.CHANGE_SUBSCRIPTION})
    for who, entries in given.items():
        regex = next((e for e in entries if e.startswith("^")), None)
        if regex:
            raise BadInput(f"{who}: {regex!r} is a regex; a share-group member subscribes to topics by name "
                           f"(KIP-932: the share consumer's subscribe takes a list of topic names)")
