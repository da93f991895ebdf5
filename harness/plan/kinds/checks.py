"""What the plan checks of each kind of group before anything starts, and the kind's own settings.

The plan (harness/plan/config.py) asks `checks_of(kind)` once per run: `check_config(cfg, sc)` refuses options that do
not apply to the kind, `settings(cfg, sc)` gives the kind's own settings (Streams, Connect) checked, and
`check_versions(cfg, sc, broker_version, schedule)` refuses versions that cannot work together. Pure: the parts
of a kind that start members and read their results are the kind classes (harness/kinds/consumer.py,
streams.py, connect.py), which this module never imports.
"""
from __future__ import annotations

from harness.base.errors import BadInput
from harness.plan.kinds import java_clients
from harness.plan.kinds.connect import check_worker_version, connect_settings
from harness.plan.kinds.share import (ack_mode, at_brokers, check_dlq, check_subscriptions, crash_records,
                                      poison_keys, share_group_configs)
from harness.plan.kinds.streams import streams_settings
from harness.base.vocabulary import (ASSIGNMENT, ASSIGNOR_MISBEHAVIOURS, COMMIT_MODES, DEFAULT_COMMIT_MODE,
                                     MEMBER_SETTING_PREFIX, misbehaving_member)
from harness.base.versions import SHARE_BROKERS_SINCE, SHARE_CLIENT_SINCE, dotted, is_release, newest_major_minor, version_key
from harness.base.steps import Step

#: a Connect bounce's `client_version` naming the brokers' own version (the Connect rolling upgrade's target)
BROKERS = "brokers"


def refuse_share_settings(cfg, sc, runs: str) -> None:
    """A share group's config (`share.*`, KIP-932) given to a run of another kind: BadInput in one line (the brokers
    would take it as the group's config and nothing would read it)."""
    given = next((f"{k}={v}" for k, v in cfg.group_settings if str(k).startswith("share.")), None)
    if given:
        raise BadInput(f"group setting {given} is a share group's (KIP-932); scenario {sc.name} runs {runs}")


class KindChecks:
    @staticmethod
    def broker_settings(settings: dict, broker_version: str) -> dict:
        """The kind's settings Kafka `broker_version` takes in the brokers' own config: none but a share group's."""
        return {}


class ConsumerChecks(KindChecks):
    @staticmethod
    def check_config(cfg, sc) -> None:
        if cfg.streams_settings:
            raise BadInput(f"scenario {sc.name} has no Kafka Streams members: Streams settings do not apply")
        if cfg.connect_settings:
            raise BadInput(f"scenario {sc.name} has no Kafka Connect workers: Connect settings do not apply")
        if cfg.member == "java" and cfg.member_command is None:
            own = sorted(k for k, _ in cfg.client_settings if k.startswith(MEMBER_SETTING_PREFIX))
            if own:  # docs/member-contract.md, "The Python member's own settings"
                raise BadInput(f"{own[0]} is a setting of the harness's Python member; the Java member takes the "
                               "Kafka client's settings only")
            for who, sub in [("every member", cfg.subscription), *((f"slot {n}", e) for n, e in cfg.slot_subscriptions
                                                                   if cfg.slot_command(n) is None)]:
                if len(sub) > 1 and any(e.startswith("^") for e in sub):
                    raise BadInput(f"the Java member subscribes to topic names or to one regex, not both "
                                   f"({who}: {', '.join(sub)})")
        check_misbehaviour(cfg)
        refuse_share_settings(cfg, sc, "a consumer group")

    @staticmethod
    def settings(cfg, sc) -> dict:
        return {}

    @staticmethod
    def check_versions(cfg, sc, broker_version: str, schedule) -> None:
        """The Java member's kafka-clients versions (`java_clients.check`); the Python member's confluent-kafka is
        checked against the protocols where it is installed (harness/run/resolve.py)."""
        java_clients.check(cfg, sc, schedule)


class StreamsChecks(KindChecks):
    @staticmethod
    def check_config(cfg, sc) -> None:
        if cfg.connect_settings:
            raise BadInput(f"scenario {sc.name} runs Kafka Streams instances: --connect-set does not apply")
        if cfg.client_settings:
            raise BadInput(f"scenario {sc.name} runs Kafka Streams instances: --client-set does not apply "
                           "(use --streams-set)")
        if cfg.slot_commands or cfg.member != "python":
            raise BadInput(f"scenario {sc.name} runs Kafka Streams instances: --member and slot member commands "
                           "do not apply (a --member-command for every slot does)")
        refuse_share_settings(cfg, sc, "Kafka Streams instances")
        streams_settings(cfg, sc)

    @staticmethod
    def settings(cfg, sc) -> dict:
        return streams_settings(cfg, sc)

    @staticmethod
    def check_versions(cfg, sc, broker_version: str, schedule) -> None:
        """Nothing of its own: the kafka-streams version is the brokers' unless given."""


class ConnectChecks(KindChecks):
    @staticmethod
    def check_config(cfg, sc) -> None:
        if cfg.client_settings or cfg.streams_settings:
            raise BadInput(f"scenario {sc.name} runs Kafka Connect workers: --client-set and --streams-set do not "
                           "apply (use --connect-set)")
        if cfg.slot_commands or cfg.member_command or cfg.member != "python":
            raise BadInput(f"scenario {sc.name} runs Kafka Connect workers: --member and member commands do not apply")
        refuse_share_settings(cfg, sc, "Kafka Connect workers")
        connect_settings(cfg, sc)

    @staticmethod
    def settings(cfg, sc) -> dict:
        return connect_settings(cfg, sc)

    @staticmethod
    def check_versions(cfg, sc, broker_version: str, schedule) -> None:
        """The workers' versions (--client-version, or the brokers', and any a bounce rolls to) can join the
        brokers and speak the run's protocol."""
        versions = {cfg.client_version or sc.initial_client or broker_version}
        versions |= {broker_version if a.params["client_version"] == BROKERS else a.params["client_version"]
                     for a in schedule if a.params.get("client_version")}
        for v in sorted(versions):
            if not is_release(v):
                raise BadInput(f"Connect worker version {v!r}: give a release, x.y.z")
            check_worker_version(v, broker_version, cfg.protocol)


class ShareChecks:
    broker_settings = staticmethod(at_brokers)

    @staticmethod
    def check_config(cfg, sc) -> None:
        if cfg.streams_settings or cfg.connect_settings:
            raise BadInput(f"scenario {sc.name} runs a share group: --streams-set and --connect-set do not apply")
        ack_mode(cfg)
        share_group_configs(cfg)
        poison_keys(cfg)
        crash_records(cfg)

    @staticmethod
    def settings(cfg, sc) -> dict:
        return share_group_configs(cfg)

    @staticmethod
    def check_versions(cfg, sc, broker_version: str, schedule) -> None:
        """The Python member's confluent-kafka has a ShareConsumer, the Java one's kafka-clients a share consumer
        brokers from 4.1 take (the brokers' release: PROTOCOL_SINCE); a dead-letter topic only on brokers that have
        it."""
        check_dlq(sc.name, share_group_configs(cfg), broker_version, dict(cfg.broker_settings))
        check_subscriptions(cfg, schedule)
        java_clients.check(cfg, sc, schedule)  # the Java share member's kafka-clients
        v = None if java_clients.runs_java(cfg, sc) else cfg.client_version or sc.initial_client
        if v and is_release(v) and version_key(v) < SHARE_CLIENT_SINCE:
            raise BadInput(f"confluent-kafka {v} has no share consumer (KIP-932); it needs "
                           f"{dotted(SHARE_CLIENT_SINCE)} or newer")
        for i, a in enumerate(schedule):  # a roll onto a release without share groups (its start: the plan's check)
            to = str(a.params.get("version") or "") if a.kind == Step.BROKER_UPGRADE else ""
            mm = newest_major_minor(to) if to else None
            if mm is not None and mm < SHARE_BROKERS_SINCE:
                raise BadInput(f"step {i} (broker_upgrade) rolls the brokers of scenario {sc.name} onto Kafka {to}, which "
                               f"has no share groups (KIP-932 needs {dotted(SHARE_BROKERS_SINCE)} or newer)")


CHECKS = {"consumer": ConsumerChecks, "streams": StreamsChecks, "connect": ConnectChecks, "share": ShareChecks}


def check_commit_mode(cfg, sc) -> None:
    """The commit mode is one the members know, and one the kind and the member program can take."""
    if cfg.commit_mode not in COMMIT_MODES:
        raise BadInput(f"unknown commit mode {cfg.commit_mode!r}; known: {', '.join(COMMIT_MODES)}")
    if cfg.commit_mode != DEFAULT_COMMIT_MODE and sc.kind != "consumer":
        raise BadInput(f"commit mode {cfg.commit_mode} applies to consumer groups; scenario {sc.name} runs "
                       + {"share": "a share group, whose members acknowledge records (share.acknowledgement.mode)",
                          "connect": "Kafka Connect workers, which commit their own way"}.get(
                           sc.kind, "Kafka Streams, which commits by its own commit.interval.ms"))


def check_misbehaviour(cfg) -> None:
    """A consumer-group self-test is asked of the built-in member that carries it out (`misbehaving_member`), so that
    it cannot run as a correct member and pass: slot 0's, unless slot 0 runs a program of the team's own (which may
    carry it out: HARNESS_MISBEHAVE); an assignor's (`ASSIGNOR_MISBEHAVIOURS`) of every slot, under a classic protocol
    (the consumer protocol's brokers assign) and with no assignor of the run's own."""
    bad = cfg.misbehave
    if not bad:
        return
    who = misbehaving_member(bad)
    if bad not in ASSIGNOR_MISBEHAVIOURS:
        if cfg.slot_command(0) is None and cfg.member != who:
            raise BadInput(f"--misbehave {bad} is the {who} member's self-test: use --member {who}")
        return
    if cfg.member != who or cfg.member_command or cfg.slot_commands:
        raise BadInput(f"--misbehave {bad} is the {who} member's, carried out by every member (the group leader's "
                       f"assignor decides): use --member {who} and no member command")
    if not ASSIGNMENT[cfg.protocol].client_side:
        raise BadInput(f"--misbehave {bad} replaces the clients' assignor: under the {cfg.protocol} protocol the "
                       f"brokers assign (use a classic protocol)")
    if any(k == "partition.assignment.strategy" for k, _ in cfg.client_settings):
        raise BadInput(f"--misbehave {bad} sets the members' partition.assignment.strategy itself: give none")


def check_revoke_delay(cfg, sc) -> None:
    """A revoke handler's wait before its commit: 0 to 60000 ms, for consumer groups, whose members commit in their
    revoke handler (sync or async)."""
    ms = cfg.revoke_delay_ms
    if not 0 <= ms <= 60000:
        raise BadInput(f"revoke delay {ms!r} ms: from 0 to 60000")
    if ms and sc.kind != "consumer":
        raise BadInput(f"a revoke delay is for consumer-group members' revoke handlers; scenario {sc.name} runs "
                       f"{ {'share': 'a share group', 'streams': 'Kafka Streams', 'connect': 'Kafka Connect'}[sc.kind] }")
    if ms and cfg.commit_mode not in ("sync", "async"):
        raise BadInput(f"a revoke delay is the wait before the revoke handler's commit; under commit mode "
                       f"{cfg.commit_mode} the members make none there (use sync or async)")


def check_hosting(cfg, sc) -> None:
    """Several members per process (harness/members/hosted.py) only for the built-in Python consumer member."""
    if cfg.members_per_process != 1 and (cfg.members_per_process < 1 or (sc.kind, cfg.member) != (
            "consumer", "python") or cfg.member_command or cfg.slot_commands or cfg.misbehave):
        raise BadInput(f"members per process {cfg.members_per_process}: 1 or more; above 1 only for consumer "
                       "groups of the built-in Python member, without member commands or --misbehave")


def checks_of(kind: str):
    """The plan-time checks of a kind of group."""
    return CHECKS[kind]
