"""Controllers of the order at the request proxy (harness/kproxy/order.py): the explorer's perturbations and an exact
replay's imposed order, each a request fault in the history (`hold_request` / `delay_request`, docs/history.md).

- `Explorer` applies a list of `Perturbation`s: the n-th request (or the broker's answer to it) of one API of one
  member is held until each of some other members has sent a group-protocol step on (`STEPS`: a JoinGroup, SyncGroup,
  LeaveGroup, OffsetCommit or a consumer-protocol heartbeat), or delayed; a hold lasts at most its bound.
- `Imposer` re-imposes a recorded order (`Imposed`): each member's requests of the imposed APIs are matched by API and
  position in that member's stream, and each is held until the requests of the other members recorded before it
  went on; when one waits past the bound, or a member sends more of an API than was recorded, the order diverged:
  it says where (`order_diverged`) and holds nothing more. A JoinGroup's position counts joins, not JoinGroup
  requests: a member's first JoinGroup is answered MEMBER_ID_REQUIRED (KIP-394) and sent again at once with the
  member id the answer gave, and a join answered with another error is sent again too, so how many JoinGroups a join
  takes follows the timing. A JoinGroup that follows the member's JoinGroup with no SyncGroup or LeaveGroup of it
  between (`JOIN_ENDS`: a JoinGroup answered without error is followed by the member's SyncGroup) is a resend of the
  same join, in the record and live alike: it is no step of the order, is not held, and is not counted. The proxy
  reads no answer's body, so it tells a resend by its place, not by its answer's error.
- `Chain` asks several in turn (an explored run replayed exactly: its perturbations again, then the order).
"""
from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Callable

from harness.base.steps import Step

#: how often a hold looks at what it waits for
TICK_S = 0.01
#: the requests a hold `until` members waits for: the group protocols' steps (not the classic protocol's heartbeats
#: nor the fetch path, which come every fraction of a second whatever the group does)
STEPS = frozenset({"JoinGroup", "SyncGroup", "LeaveGroup", "OffsetCommit", "ConsumerGroupHeartbeat",
                   "StreamsGroupHeartbeat", "ShareGroupHeartbeat"})
#: the requests that end a member's join (its JoinGroups until then are one join: the module's docstring)
JOIN_ENDS = frozenset({"SyncGroup", "LeaveGroup"})


@dataclass(frozen=True)
class Perturbation:
    """One perturbation: member `member`'s `nth` request of `api` (from 1), or the answer to it (`side`), held until
    each of `until` sent a request on (`hold`), or delayed `delay_s` (`delay`); a hold lasts at most `bound_s`."""

    pid: str
    member: str
    api: str
    nth: int
    side: str = "request"
    action: str = "hold"
    until: tuple[str, ...] = ()
    delay_s: float = 0.0
    bound_s: float = 10.0

    def to_dict(self) -> dict:
        return {**asdict(self), "until": list(self.until)}

    @classmethod
    def of(cls, d: dict) -> "Perturbation":
        """From `to_dict()`'s form (a run directory's explore.json)."""
        return cls(**{**d, "until": tuple(d.get("until") or ())})


def _fault(emit, fid: str, kind: str, conn, head, member: str, rule: str, side: str, **extra) -> None:
    emit("fault_start", fault_id=fid, kind=kind, targets=[member], members_affected=[member],
         brokers_affected=[conn.broker], member=member, api=head.api, api_version=head.api_version,
         correlation_id=head.correlation_id, client_id=head.client_id, broker=conn.broker, rule=rule, side=side,
         **extra)


class _Counting:
    """Counts the group-protocol steps (`STEPS`) each member sent on: what a hold `until` members waits for."""

    def __init__(self) -> None:
        self.sent: Counter = Counter()

    def passed(self, conn, head, member: str) -> None:
        if head.api in STEPS:
            self.sent[member] += 1


class Explorer(_Counting):
    """Applies perturbations (the module's docstring); `applied` lists each as it ended, with its request."""

    def __init__(self, perturbations, *, emit: Callable[..., None], clock=time.monotonic) -> None:
        super().__init__()
        self.by_key = {(p.member, p.api, p.side, p.nth): p for p in perturbations}
        self.emit, self.clock = emit, clock
        self.seen: Counter = Counter()
        self.applied: list[dict] = []
        self._ids = itertools.count(1)

    async def request(self, conn, head, member: str) -> None:
        await self._maybe(conn, head, member, "request")

    async def answer(self, conn, head, member: str) -> None:
        await self._maybe(conn, head, member, "answer")

    async def _maybe(self, conn, head, member: str, side: str) -> None:
        self.seen[(member, head.api, side)] += 1
        p = self.by_key.get((member, head.api, side, self.seen[(member, head.api, side)]))
        if p is None:
            return
        fid, t0 = f"kx{next(self._ids)}", self.clock()
        kind = Step.HOLD_REQUEST if p.action == "hold" else Step.DELAY_REQUEST
        _fault(self.emit, fid, kind, conn, head, member, p.pid, side,
               **({"delay_s": p.delay_s} if p.action == "delay" else {}))
        if p.action == "delay":
            await asyncio.sleep(p.delay_s)
            outcome = "forwarded"
        else:
            outcome = await self._hold(p, t0)
        if getattr(conn, "closed", False):
            outcome = "closed"  # the connection closed meanwhile: what was held never went on (docs/history.md)
        self.emit("fault_end", fault_id=fid, outcome=outcome)
        self.applied.append({**p.to_dict(), "fault_id": fid, "correlation_id": head.correlation_id,
                             "broker": conn.broker, "start": round(t0, 4), "held_s": round(self.clock() - t0, 4),
                             "outcome": outcome})

    async def _hold(self, p: Perturbation, t0: float) -> str:
        before = {m: self.sent[m] for m in p.until}
        while self.clock() - t0 < p.bound_s:
            if all(self.sent[m] > n for m, n in before.items()):
                return "seen"
            await asyncio.sleep(TICK_S)
        return "timeout"


class _Joins:
    """Which members are inside a join: from a JoinGroup to their next SyncGroup or LeaveGroup (`JOIN_ENDS`)."""

    def __init__(self) -> None:
        self.joining: set = set()

    def resend(self, member: str, api: str) -> bool:
        """Whether this request of `member` is a resend of the join it is in (a JoinGroup inside a join); notes it."""
        if api in JOIN_ENDS:
            self.joining.discard(member)
        elif api == "JoinGroup":
            if member in self.joining:
                return True
            self.joining.add(member)
        return False


@dataclass
class Imposed:
    """A recorded order of (member, api) requests, matched to a live one by API and position in each member's
    stream (a JoinGroup's position counts joins: a resend of a join is no step, the module's docstring): `arrive`
    names a live request's key (member, api, position), or None for a resend, `waiting_for` the recorded requests of
    other members before it not yet sent on, `sent` marks one sent on."""

    recorded: list[tuple[str, str]]
    keys: list[tuple[str, str, int]] = field(init=False)
    need: dict = field(init=False)

    def __post_init__(self) -> None:
        count: Counter = Counter()
        self.keys, self.need = [], {}
        joins = _Joins()
        for member, api in self.recorded:
            if joins.resend(member, api):
                continue
            count[(member, api)] += 1
            key = (member, api, count[(member, api)])
            self.keys.append(key)
            self.need[key] = {s: n for s, n in count.items() if s[0] != member}  # other streams' counts so far
        self.total = dict(count)
        self.arrived: Counter = Counter()
        self.done: Counter = Counter()
        self._live = _Joins()

    def arrive(self, member: str, api: str) -> tuple[str, str, int] | None:
        """The key of a member's next live request of `api` (its position counts from 1), None when it is a resend
        of the join the member is in; a request of an API not imposed is passed too (a SyncGroup ends a join)."""
        if self._live.resend(member, api):
            return None
        self.arrived[(member, api)] += 1
        return member, api, self.arrived[(member, api)]

    def recorded_has(self, key) -> bool:
        return key in self.need

    def waiting_for(self, key) -> list[tuple[str, str, int]]:
        """The recorded requests before `key` of other members not sent on yet (the last of each stream)."""
        return [(m, a, n) for (m, a), n in self.need.get(key, {}).items() if self.done[(m, a)] < n]

    def sent(self, member: str, api: str) -> None:
        self.done[(member, api)] += 1


class Imposer:
    """Holds each request until the order recorded before it went on, within `bound_s` (the module's docstring);
    `divergence` is where it diverged (None while it holds)."""

    def __init__(self, imposed: Imposed, *, apis, bound_s: float, emit: Callable[..., None],
                 clock=time.monotonic) -> None:
        self.imposed, self.apis, self.bound_s = imposed, frozenset(apis), bound_s
        self.emit, self.clock = emit, clock
        self.divergence: dict | None = None
        self.held = 0
        self._ids = itertools.count(1)
        self._resends: set = set()  # (connection, correlation id) of the resends of a join: not counted as sent

    async def request(self, conn, head, member: str) -> None:
        key = self.imposed.arrive(member, head.api)
        if head.api not in self.apis:
            return
        if key is None:
            self._resends.add((conn.conn_id, head.correlation_id))
            return
        if self.divergence is not None:
            return
        if not self.imposed.recorded_has(key):
            self._diverged(key, 0.0, [], f"{member} sent {head.api} #{key[2]}; the recorded order has "
                                         f"{self.imposed.total.get((member, head.api), 0)}")
            return
        if not self.imposed.waiting_for(key):
            return
        fid, t0 = f"ko{next(self._ids)}", self.clock()
        _fault(self.emit, fid, Step.HOLD_REQUEST, conn, head, member, "order", "request")
        self.held += 1
        while (waiting := self.imposed.waiting_for(key)) and self.divergence is None:
            if self.clock() - t0 >= self.bound_s:
                self._diverged(key, self.clock() - t0, waiting,
                               f"{member}'s {head.api} #{key[2]} waited {self.bound_s:g} s for "
                               + ", ".join(f"{m}'s {a} #{n}" for m, a, n in waiting) + ", recorded before it")
                break
            await asyncio.sleep(TICK_S)
        self.emit("fault_end", fault_id=fid, outcome="closed" if getattr(conn, "closed", False) else
                  "seen" if not waiting else "timeout")

    async def answer(self, conn, head, member: str) -> None:
        return None

    def passed(self, conn, head, member: str) -> None:
        if (conn.conn_id, head.correlation_id) in self._resends:
            self._resends.discard((conn.conn_id, head.correlation_id))
        elif head.api in self.apis:
            self.imposed.sent(member, head.api)

    def _diverged(self, key, waited: float, waiting, why: str) -> None:
        self.divergence = {"member": key[0], "api": key[1], "position": key[2], "waited_s": round(waited, 3),
                           "waiting_for": [list(w) for w in waiting], "why": why}
        self.emit("order_diverged", **self.divergence)


class Chain:
    """Several controllers asked in turn."""

    def __init__(self, *controllers) -> None:
        self.controllers = [c for c in controllers if c is not None]

    async def request(self, conn, head, member: str) -> None:
        for c in self.controllers:
            await c.request(conn, head, member)

    async def answer(self, conn, head, member: str) -> None:
        for c in self.controllers:
            await c.answer(conn, head, member)

    def passed(self, conn, head, member: str) -> None:
        for c in self.controllers:
            c.passed(conn, head, member)
