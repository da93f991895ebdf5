"""Request-fault rules: what the proxy does to which requests (pure data and matching, no I/O).

A rule names one action, one API by the protocol's name (`JoinGroup`, `SyncGroup`, `Heartbeat`,
`LeaveGroup`, `OffsetCommit`, `OffsetFetch`, `ConsumerGroupHeartbeat`, `StreamsGroupHeartbeat`,
`ShareGroupHeartbeat`, `Fetch`, `FindCoordinator`, `Metadata`, or any other kio knows), one member or all
(None), one broker or all (None). It applies to the requests it matches from the moment it is installed,
at most `count` of them when given, and for `duration_s` when given; then it lifts itself (or when removed).
One request meets at most one rule: the first installed that matches and is still live.

Actions:

- `delay_request`: the request reaches the broker `delay_s` later (a fixed number, or `(lo, hi)`: drawn
  uniformly per request from the rule's `seed`).
- `hold_request`: the request waits until one of `until` holds (a `Seen` request, a `threading.Event` set by
  the runner) or `timeout_s` passes, then goes on to the broker.
- `drop_request`: the request never reaches the broker.
- `drop_response`: the request reaches the broker, its answer never reaches the client.
- `error_response`: the request never reaches the broker; the proxy answers it with `error` (a name as the
  protocol has it, NOT_COORDINATOR, or a number), a real response of its API and version. With a `partition`
  (and a `topic`, else every topic of the answer) the request does reach the broker, and the proxy puts `error` in
  that partition's entry of the broker's real answer only (`harness.kproxy.partition_errors`); such a rule counts
  a request as applied only when its answer had that entry.
- `disconnect`: the request reaches the broker; when its answer comes back the proxy discards it and closes the
  client's connection (both sides, after delivering the answers before it): the client sees its connection
  closed with the request in flight, not a timeout, and knows not whether the broker applied it. The requests
  the client sent behind it on that connection are lost with it, as a real disconnect loses them: they never
  reach the broker and are never answered (the record lists them). A request the broker never answers (a
  JoinGroup it parks until the rebalance ends, at most its rebalance timeout) keeps the connection open until
  the answer comes or the client closes it.

The drops take `then`: Kafka answers the requests of a connection in order, so a client meets a lost
answer only by a timeout. `stall` (the default) makes the rest of the connection go quiet as a lost packet
would: after a dropped request no later request of the connection reaches the broker, after a dropped
answer no later answer reaches the client, until the client closes the connection. `pass` drops that one
only and lets the rest through: librdkafka matches answers by correlation id and lives with that, the Java
client takes an answer out of order for a broken connection. A `disconnect` is the lost answer a client
learns of at once: its connection closes, and it sends the request again (or gives it up) on a new one.

The delays, holds and stalls keep the connection's order: the requests behind a held one wait for it.
"""
from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field

from harness.base.steps import REQUEST_STEPS
from harness.kproxy import partition_errors
from harness.kproxy.answers import error_code_of
from harness.kproxy.wire import api_key_of
from harness.base.steps import Step

ACTIONS = REQUEST_STEPS
THEN = ("stall", "pass")
#: the actions that take `then`
DROPS = (Step.DROP_REQUEST, Step.DROP_RESPONSE)


@dataclass(frozen=True)
class Seen:
    """A hold's condition: a request of `api` reached the proxy after the held one, from `member`
    (None: from any member other than the held request's)."""

    api: str
    member: str | None = None

    def __post_init__(self) -> None:
        api_key_of(self.api)

    def met_by(self, api_key: int, member: str | None, held_member: str | None) -> bool:
        if api_key != api_key_of(self.api) or member is None:
            return False
        return member == self.member if self.member is not None else member != held_member


@dataclass(frozen=True)
class Rule:
    """One request fault as data (see the module's docstring); build it with the functions below."""

    action: str
    api: str
    member: str | None = None
    broker: int | None = None
    count: int | None = None
    duration_s: float | None = None
    delay_s: float | tuple[float, float] = 0.0
    until: tuple = ()
    timeout_s: float | None = None
    error: str | int | None = None
    then: str = "stall"
    seed: int = 0
    partition: int | None = None     # error_response: the error goes in this partition's entry of the real answer
    topic: str | None = None         # ... of this topic (None: of every topic the answer has)
    topic_id: object = None          # ... the topic's id (a uuid.UUID), for answers that key topics by id
    api_key: int = field(init=False)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown request fault {self.action!r}; known: {', '.join(ACTIONS)}")
        object.__setattr__(self, "api_key", api_key_of(self.api))
        if self.count is not None and self.count < 1:
            raise ValueError(f"{self.action}: count must be at least 1, not {self.count}")
        if self.duration_s is not None and self.duration_s <= 0:
            raise ValueError(f"{self.action}: duration_s must be positive, not {self.duration_s}")
        if self.action == Step.DELAY_REQUEST:
            lo, hi = self.delay_range
            if not 0 <= lo <= hi:
                raise ValueError(f"delay_request: delay_s must be >= 0 or a (lo, hi) range, not {self.delay_s}")
        if self.action == Step.HOLD_REQUEST:
            if self.timeout_s is None or self.timeout_s <= 0:
                raise ValueError("hold_request needs a positive timeout_s (a hold never lifted would hang the run)")
            for cond in self.until:
                if not isinstance(cond, (Seen, threading.Event)):
                    raise ValueError(f"hold_request: {cond!r} is neither a Seen request nor a threading.Event")
        if self.action == Step.ERROR_RESPONSE:
            if self.error is None:
                raise ValueError("error_response needs an error (a name such as NOT_COORDINATOR, or a number)")
            error_code_of(self.error)
        if self.partition is not None or self.topic is not None:
            if self.action != Step.ERROR_RESPONSE or self.partition is None:
                raise ValueError(f"{self.action}: partition (and topic) are for error_response only, topic with a "
                                 "partition")
            partition_errors.check_rule(self.api, self.error, self.partition, self.topic)
        if self.then not in THEN:
            raise ValueError(f"{self.action}: then must be one of {', '.join(THEN)}, not {self.then!r}")
        if self.then != "stall" and self.action not in DROPS:
            raise ValueError(f"{self.action}: then is for {' and '.join(DROPS)} only")

    @property
    def delay_range(self) -> tuple[float, float]:
        d = self.delay_s
        return (float(d[0]), float(d[1])) if isinstance(d, (tuple, list)) else (float(d), float(d))

    def describe(self) -> dict:
        """The rule's parameters as plain data, for the history."""
        out = {"action": self.action, "api": self.api, "member": self.member, "broker": self.broker}
        for k in ("count", "duration_s", "timeout_s", "error", "partition", "topic"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        if self.action == Step.DELAY_REQUEST:
            out["delay_s"] = list(self.delay_range) if isinstance(self.delay_s, (tuple, list)) else self.delay_s
        if self.action in DROPS:
            out["then"] = self.then
        if self.until:
            out["until"] = [f"seen {c.api} from {c.member or 'another member'}" if isinstance(c, Seen) else "event"
                            for c in self.until]
        return out


def delay_request(api: str, *, delay_s: float | tuple[float, float], member: str | None = None,
                  broker: int | None = None, count: int | None = None, duration_s: float | None = None,
                  seed: int = 0) -> Rule:
    """Delay matching requests by `delay_s` (or a draw from (lo, hi))."""
    return Rule(Step.DELAY_REQUEST, api, member, broker, count, duration_s, delay_s=delay_s, seed=seed)


def hold_request(api: str, *, until=(), timeout_s: float, member: str | None = None, broker: int | None = None,
                 count: int | None = 1, duration_s: float | None = None) -> Rule:
    """Hold matching requests until a condition of `until` holds or `timeout_s` passed."""
    return Rule(Step.HOLD_REQUEST, api, member, broker, count, duration_s, until=tuple(until), timeout_s=timeout_s)


def drop_request(api: str, *, member: str | None = None, broker: int | None = None, count: int | None = 1,
                 duration_s: float | None = None, then: str = "stall") -> Rule:
    """Never forward matching requests to the broker."""
    return Rule(Step.DROP_REQUEST, api, member, broker, count, duration_s, then=then)


def drop_response(api: str, *, member: str | None = None, broker: int | None = None, count: int | None = 1,
                  duration_s: float | None = None, then: str = "stall") -> Rule:
    """Forward matching requests, never deliver their answers."""
    return Rule(Step.DROP_RESPONSE, api, member, broker, count, duration_s, then=then)


def disconnect(api: str, *, member: str | None = None, broker: int | None = None, count: int | None = 1,
               duration_s: float | None = None) -> Rule:
    """Forward matching requests, discard their answers and close the client's connection."""
    return Rule(Step.DISCONNECT, api, member, broker, count, duration_s)


def error_response(api: str, *, error: str | int, member: str | None = None, broker: int | None = None,
                   count: int | None = 1, duration_s: float | None = None, partition: int | None = None,
                   topic: str | None = None, topic_id=None) -> Rule:
    """Answer matching requests in the broker's stead with `error`; with a `partition`, put `error` in that
    partition's entry (of `topic`, else of every topic) of the broker's own answer instead."""
    return Rule(Step.ERROR_RESPONSE, api, member, broker, count, duration_s, error=error, partition=partition,
                topic=topic, topic_id=topic_id)


class LiveRule:
    """A rule installed in a proxy: its id, when it was installed, how many requests it took."""

    def __init__(self, rule: Rule, *, rule_id: str, now: float) -> None:
        self.rule = rule
        self.rule_id = rule_id
        self.installed = now
        self.applied = 0
        self.inflight = 0  # a per-partition rule's requests sent on whose answers have not come yet
        self.lifted = False
        self._rng = random.Random(rule.seed)

    def live(self, now: float) -> bool:
        r = self.rule
        return not self.lifted and (r.count is None or self.applied + self.inflight < r.count) and \
            (r.duration_s is None or now < self.installed + r.duration_s)

    def matches(self, api_key: int, member: str | None, broker: int, now: float) -> bool:
        r = self.rule
        return self.live(now) and api_key == r.api_key and (r.member is None or r.member == member) and \
            (r.broker is None or r.broker == broker)

    def take(self) -> None:
        """Count one request this rule applies to (a per-partition rule's: in flight until its answer came)."""
        if self.rule.partition is not None:
            self.inflight += 1
        else:
            self.applied += 1

    def settle(self, *, hit: bool) -> None:
        """A per-partition rule's answer came (`hit`: it had the partition's entry, now rewritten) or never will."""
        self.inflight -= 1
        if hit:
            self.applied += 1

    def draw_delay(self) -> float:
        lo, hi = self.rule.delay_range
        return lo if lo == hi else self._rng.uniform(lo, hi)
