"""Resolving a run's configuration into its plan: the steps that look at the machine, around the plan's own checks.

    precheck (harness.plan.config)  what the configuration alone tells
    the backend's preflight         an engine that answers, or one started (docker)
    the Kafka version               a name (`latest`, `4.2`) resolved from Maven Central into the cache
    plan (harness.plan.config)      every check that needs no lookup; the schedule drawn
    the client's version            the confluent-kafka a Python member would run, against the protocol it speaks;
                                    the kafka-clients releases a Java member would run, on Maven Central's list
    the client's settings           the Python member's client made with the members' settings (installed first
                                    when the run names another release): librdkafka's own refusal
    the setting names               every broker and group setting key read from the releases' jars

Every refusal is a BadInput before a run directory exists (one line, exit 2); the plan itself touches nothing.
"""
from __future__ import annotations

from harness.base.errors import BadInput
from harness.base.versions import CLIENT_PROTOCOL_SINCE, dotted, is_release, version_key
from harness.cluster import backends
from harness.kinds import consumer
from harness.plan.config import RunConfig, RunPlan, plan, precheck
from harness.plan.kinds import java_clients
from harness.base.steps import Step


def resolve(cfg: RunConfig, *, shared=None, progress=print) -> RunPlan:
    """Check cfg and resolve it into a plan. `shared` is the cluster the run would share (None: its own).
    Raises BadInput before anything starts when the run cannot work."""
    from harness.kafka import dist as kafka_dist  # resolving versions runs Maven: imported by the step that does it
    own = precheck(cfg, shared=shared)
    if own:  # an engine that answers (or one started) before any version is looked up
        backends.preflight(cfg.backend, progress=progress)
        sc = cfg.scenario_spec
        version = kafka_dist.resolve(sc.initial_kafka or cfg.kafka_version, progress=progress).version
    else:
        version = shared.version
    p = plan(cfg, version=version, shared=shared)
    _check_client_versions(p)
    _check_java_clients(p, fake=getattr(shared, "backend", None) == "fake")
    consumer.check_client_settings(p, progress)
    _check_names(p, fake=getattr(shared, "backend", None) == "fake", progress=progress)
    return p


def _check_client_versions(p: RunPlan) -> None:
    """A protocol the Python member's confluent-kafka (the installed one, or the version a step names) cannot speak
    is refused."""
    cfg, sc = p.cfg, p.scenario
    if sc.kind != "consumer" or cfg.member != "python" or cfg.member_command:
        return  # no Python member runs, unless a slot command says otherwise: nothing of confluent-kafka to check
    from harness.members.clients import bundled_version
    first = cfg.client_version or sc.initial_client
    versions = {(first or "default", cfg.protocol)}
    for a in p.schedule:  # a bounce may bring a member back on another version or protocol
        if a.kind == Step.BOUNCE:
            versions.add((a.params.get("client_version") or first or "default", a.params.get("protocol") or cfg.protocol))
    for v, proto in sorted(versions):
        v = bundled_version() if v in ("default", None) else v
        since = CLIENT_PROTOCOL_SINCE.get(proto)
        if since and is_release(v, post=True) and version_key(v) < since:
            raise BadInput(f"confluent-kafka {v} cannot speak the {proto} group protocol (KIP-848); it needs "
                           f"confluent-kafka {dotted(since)} or newer (2.12.0 for GA)")


def _check_java_clients(p: RunPlan, *, fake: bool) -> None:
    """Every kafka-clients release the Java member is asked to run (`--client-version`, a bounce's) is one Maven
    Central lists (the plan checked the rest: a release, new enough for the member and the protocol); a fake
    cluster runs no Java member."""
    asked = java_clients.versions(p.cfg, p.scenario, p.schedule)
    if fake or not asked:
        return
    from harness.kafka import dist as kafka_dist  # Maven Central's list: imported by the step that reads it
    listed = kafka_dist.published_versions(java_clients.ARTIFACT)
    if not set(asked) <= set(listed):  # a release newer than the list kept in ~/.m2: read it again
        listed = kafka_dist.published_versions(java_clients.ARTIFACT, refresh=True)
    for v in asked:
        if v not in listed:
            raise BadInput(f"kafka-clients {v} does not exist on Maven Central (the Java member's client version)")


def _check_names(p: RunPlan, *, fake: bool, progress) -> None:
    """Every broker and group setting key (the run's, its group_config steps') defined by a release the cluster
    runs, read from that release's jars (harness/kafka/config_names.py); a shared cluster's broker settings were
    checked when it started, a fake cluster has no release to ask."""
    cfg = p.cfg
    broker_keys = [k for k, _ in cfg.broker_settings] if p.own_cluster else []
    group_keys = [k for k, _ in cfg.group_settings if f"group.{k}" not in p.broker_settings]  # the others: brokers'
    group_keys += [k for a in p.schedule if a.kind == Step.GROUP_CONFIG for k in a.params.get("settings") or {}]
    if fake or not (broker_keys or group_keys):
        return
    from harness.kafka import config_names  # the release's jars and Java: imported by the step that reads them
    from harness.kafka import dist as kafka_dist
    versions = [p.kafka_version] + [kafka_dist.resolve(a.params["version"], progress=progress).version
                                    for a in p.schedule if a.kind == Step.BROKER_UPGRADE and a.params.get("version")]
    config_names.check(broker_keys, group_keys, versions, progress=progress)
