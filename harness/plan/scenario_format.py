"""The scenario file's format (docs/scenarios.md): its tables and fields as pydantic models, and what a kind of
group allows in them.

`ScenarioFile` validates a file's TOML: the fields every scenario has, `[members]` (whose `kind` is the kind of
group: consumer, streams or connect), `[cluster]`, `[group]`, `[workload]`, `[[topics]]`, the Kafka Streams and
Kafka Connect settings (`[streams]`, `[connect]`), `[expect]`, `[draws]` and `[[steps]]`. The steps' values are
read by harness/plan/scenario_file.py against the action registry (harness/plan/actions.py). `kind_refusal` says, as a
field and a message, what a file asks of a kind of group that it cannot do.
"""
from __future__ import annotations

import re
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.base.near import hint
from harness.kafka.config_keys import closest
from harness.plan.kinds.connect import CONNECT_DEFAULTS
from harness.plan.kinds.streams import STREAMS_DEFAULTS
from harness.base.vocabulary import COMMIT_MODES, GROUP_KINDS, MEMBER_KINDS, PROTOCOLS_OF

Scalar = Union[bool, int, float, str]
#: how each kind of group calls its members, as the refusals say it
MEMBERS_OF = {"consumer": "consumer-group members", "streams": "Kafka Streams instances",
              "connect": "Kafka Connect workers", "share": "share-group members"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Members(_Strict):
    kind: str = "consumer"  # the kind of group: consumer | streams | connect | share
    count: int = Field(3, ge=1)
    max_count: int | None = Field(None, ge=1)  # the most members the schedule ever runs (default: count)
    static: bool = False
    racks: bool = False
    member: Literal[MEMBER_KINDS] | None = None  # the built-in consumer-group member (as --member)
    commit_mode: Literal[COMMIT_MODES] | None = None
    processing_ms: float | None = Field(None, ge=0, le=60000)  # simulated work per record (as --processing-ms)
    revoke_delay_ms: float | None = Field(None, ge=0, le=60000)  # the revoke handler's wait before its commit
    members_per_process: int | None = Field(None, ge=1)  # consumers per Python member process (as --members-per-process)
    command: str | None = None
    slot_commands: dict[str, str] = {}
    client_settings: dict[str, Scalar] = {}
    initial_client: str | None = None  # the client library members start on (connect-runtime for workers)
    subscription: list[str] = []  # every member's: topic names and ^regexes (none: every topic)
    slot_subscriptions: dict[str, list[str]] = {}  # slot N's own

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        if v in MEMBER_KINDS:
            raise ValueError(f"is the kind of group ({', '.join(GROUP_KINDS)}); the built-in member is "
                             f"`member = \"{v}\"`")
        if v not in GROUP_KINDS:
            raise ValueError(f"{v!r} is not a kind of group; {hint(v, GROUP_KINDS)}")
        return v


class Topic(_Strict):
    name: str
    partitions: int = Field(6, ge=1)
    created: Literal["start", "later"] = "start"  # "later": by a create_topic step (harness/plan/topics.py)


class Cluster(_Strict):
    brokers: int | None = Field(None, ge=1)
    kafka_version: str | None = None
    backend: Literal["local", "docker"] | None = None  # where the brokers run (`--backend` wins)
    initial_kafka: str | None = None  # the run's own cluster starts on this; `version = "target"` is --kafka-version
    broker_settings: dict[str, Scalar] = {}


class Group(_Strict):
    settings: dict[str, Scalar] = {}
    session_timeout_s: float | None = Field(None, gt=0)


class Workload(_Strict):
    rate_per_s: float | None = Field(None, gt=0)
    partitions: int | None = Field(None, ge=1)
    replication: int | None = Field(None, ge=1)  # the run's topics' replicas (default: min(3, brokers))


def _known_keys(what: str, settings: dict, known: dict) -> dict:
    for k in settings:
        if k not in known:
            near = closest(k, known)
            raise ValueError(f"unknown {what} setting {k!r}" + (f"; did you mean {near}?" if near else
                                                                f"; known: {', '.join(known)}"))
    return settings


class StreamsTable(_Strict):
    """`[streams] settings`: Kafka Streams settings of the scenario (docs/streams.md), over the harness's."""

    settings: dict[str, Scalar] = {}

    @field_validator("settings")
    @classmethod
    def _keys(cls, v: dict) -> dict:
        return _known_keys("Streams", v, STREAMS_DEFAULTS)


class ConnectTable(_Strict):
    """`[connect] settings`: Kafka Connect settings of the scenario (docs/connect.md), over the harness's."""

    settings: dict[str, Scalar] = {}

    @field_validator("settings")
    @classmethod
    def _keys(cls, v: dict) -> dict:
        return _known_keys("Connect", v, CONNECT_DEFAULTS)


class Expect(_Strict):
    """What the run is expected to end with, other than every invariant holding."""

    broker_refusal: str | None = None  # a regex: a broker refuses with a line matching it (check `expected_refusal`)

    @field_validator("broker_refusal")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as e:
                raise ValueError(f"not a regular expression: {e}") from None
        return v


class Step(BaseModel):
    """One step; every field but these is a parameter of the action (checked against the registry). Values are
    read and checked by harness/plan/scenario_file.py (harness/plan/scenario_values.py)."""

    model_config = ConfigDict(extra="allow")
    action: str
    after: Any = None  # a sleep before the step
    settle: Any = None  # a sleep after the step, before its wait_stable
    repeat: Any = 1
    wait_stable: bool | None = None  # default: true, except after sleep and wait_stable themselves


class ScenarioFile(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=100)
    doc: str = ""
    smoke: bool = False  # one of the short smoke set (suites/test_chaos.py)
    protocols: list[str] | None = Field(None, min_length=1)  # default: every protocol of the members' kind
    members: Members = Members()
    cluster: Cluster = Cluster()
    group: Group = Group()
    workload: Workload = Workload()
    topics: list[Topic] = []
    streams: StreamsTable = StreamsTable()
    connect: ConnectTable = ConnectTable()
    expect: Expect = Expect()
    draws: dict[str, Any] = {}  # name -> a value drawn once per run, used as { draw = "name" }
    steps: list[Step] = Field(min_length=1)

    @property
    def kind_protocols(self) -> tuple[str, ...]:
        """The protocols it runs with: the ones it lists, or every protocol of its kind."""
        return tuple(self.protocols or PROTOCOLS_OF[self.members.kind])


#: per kind, the fields of a file it cannot take, and what to say instead
_NOT_FOR = {
    "streams": {"topics": "a Kafka Streams application reads the run's one input topic",
                "members.subscription": "", "members.slot_subscriptions": "", "members.slot_commands": "",
                "members.member": "", "members.commit_mode": "Kafka Streams commits by its own commit.interval.ms",
                "members.client_settings": "use [streams] settings", "connect": "", "members.members_per_process": "",
                "members.revoke_delay_ms": ""},
    "connect": {"topics": "", "members.subscription": "", "members.slot_subscriptions": "",
                "members.slot_commands": "", "members.command": "", "members.member": "", "members.commit_mode": "",
                "members.client_settings": "use [connect] settings", "members.processing_ms": "", "streams": "",
                "members.members_per_process": "", "members.revoke_delay_ms": ""},
    "share": {"members.commit_mode":
              "share members acknowledge records (share.acknowledgement.mode in members.client_settings)",
              "streams": "", "connect": "", "members.members_per_process": "",
              "members.revoke_delay_ms": "a share member has no revoke handler"},
    "consumer": {"streams": "set members.kind = \"streams\"", "connect": "set members.kind = \"connect\""},
}


def kind_refusal(model: ScenarioFile) -> tuple[str, str] | None:
    """(field, message) for the first field the file sets that its kind of group cannot take, or None."""
    kind = model.members.kind
    known = PROTOCOLS_OF[kind]
    for i, p in enumerate(model.protocols or ()):
        if p not in known:
            return f"protocols.{i}", (f"{p!r} is not a group protocol of {MEMBERS_OF[kind]} (members.kind = {kind!r}); "
                                 f"known: {', '.join(known)}")
    for field, instead in _NOT_FOR[kind].items():
        table, _, key = field.partition(".")
        value = getattr(getattr(model, table), key) if key else getattr(model, table)
        if isinstance(value, (StreamsTable, ConnectTable)):
            value = value.settings
        if value:
            return field, (f"does not apply to {MEMBERS_OF[kind]} (members.kind = {kind!r})"
                           + (f": {instead}" if instead else ""))
    return None
