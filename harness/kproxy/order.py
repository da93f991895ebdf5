"""The order of a run's requests at the request proxy: recorded per connection, and changed there by a controller.

Recorded: every request of a member (a client id that names one, harness.kproxy.identity) of an API of the group
protocols or of the fetch path (`ORDER_APIS`): its correlation id, its API key, when the proxy read it, when it sent
it on to the broker (null: never: dropped or answered by the proxy, or the connection closed first) and when the
broker's answer went on to the client (null: none). The rows go to the history in `order` events, one per connection
and batch, each row `[correlation_id, api_key, received, forwarded, answered]` (docs/history.md, "The order at the
request proxy"): a batch is written when it holds `BATCH_ROWS` rows, when a row finishes and the batch's oldest is
`BATCH_S` old, and when its connection closes or the proxy stops, so that a run's order costs a line per connection
every second or so, not a line per request.

A controller (`control`: the explorer's perturbations or an exact replay's imposed order, harness/kproxy/perturb.py)
is asked before each recorded request goes on (`await request(...)`) and before each recorded answer does
(`await answer(...)`), and told when a request went on (`passed`); it may hold either. A held request holds the
requests behind it on its connection, as a held answer does the answers behind it: a connection is in order.
"""
from __future__ import annotations

import time
from typing import Callable

from harness.base.steps import Step
from harness.kproxy.wire import API_KEYS

#: the group protocols' APIs and the fetch path's: the requests whose order is recorded
GROUP_APIS = ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch", "FindCoordinator",
              "ConsumerGroupHeartbeat", "StreamsGroupHeartbeat", "ShareGroupHeartbeat")
FETCH_APIS = ("Fetch", "ListOffsets", "OffsetForLeaderEpoch", "ShareFetch", "ShareAcknowledge")
ORDER_APIS = frozenset(API_KEYS[n] for n in GROUP_APIS + FETCH_APIS if n in API_KEYS)
#: a batch is written when it holds so many rows, or when a row finishes and its oldest is so old (seconds)
BATCH_ROWS = 200
BATCH_S = 1.0
#: rule actions after which the request was not sent on to the broker
NOT_FORWARDED = frozenset({Step.DROP_REQUEST, Step.ERROR_RESPONSE})


def _t(mono: float) -> float:
    return round(mono, 4)


class _ConnRows:
    """One connection's rows: those awaiting their answer (by correlation id) and those finished, not yet written."""

    __slots__ = ("member", "client_id", "broker", "open", "done", "since")

    def __init__(self, member: str, client_id: str | None, broker: int) -> None:
        self.member, self.client_id, self.broker = member, client_id, broker
        self.open: dict[int, tuple[list, object]] = {}  # correlation id -> (row, request head)
        self.done: list[list] = []
        self.since: float | None = None  # when the oldest finished row finished


class OrderRecorder:
    """The proxy's order record and its controller's hooks (the module's docstring)."""

    def __init__(self, emit: Callable[..., None], *, clock: Callable[[], float] = time.monotonic,
                 enabled: bool = True) -> None:
        self.emit, self.clock, self.enabled = emit, clock, enabled
        self.control = None  # a controller (harness/kproxy/perturb.py), or None: nothing is held
        self._conns: dict[int, _ConnRows] = {}

    def _rows(self, conn, head, member) -> _ConnRows | None:
        if member is None or head.api_key not in ORDER_APIS:
            return None
        rows = self._conns.get(conn.conn_id)
        if rows is None:
            rows = self._conns[conn.conn_id] = _ConnRows(member, head.client_id, conn.broker)
        return rows

    async def request(self, conn, head, member: str | None) -> None:
        """A request was read: note it, and let the controller hold it."""
        rows = self._rows(conn, head, member)
        if rows is None:
            return
        if self.enabled:
            rows.open[head.correlation_id] = ([head.correlation_id, head.api_key, _t(self.clock()), None, None], head)
        if self.control is not None:
            await self.control.request(conn, head, member)

    def passed(self, conn, head, member: str | None, *, action: str | None = None) -> None:
        """The request went on (`action`: the rule that acted on it, None when none did)."""
        rows = self._rows(conn, head, member)
        if rows is None:
            return
        forwarded = action not in NOT_FORWARDED
        entry = rows.open.get(head.correlation_id)
        if entry is not None and forwarded:
            entry[0][3] = _t(self.clock())
        elif entry is not None:
            self._finish(conn.conn_id, rows, rows.open.pop(head.correlation_id)[0])
        if forwarded and self.control is not None:
            self.control.passed(conn, head, member)

    async def answer(self, conn, correlation_id: int) -> None:
        """The broker's answer to a request came: let the controller hold it (the answers behind it wait too)."""
        rows = self._conns.get(conn.conn_id)
        entry = rows.open.get(correlation_id) if rows is not None else None
        if entry is not None and self.control is not None:
            await self.control.answer(conn, entry[1], rows.member)

    def answered(self, conn, correlation_id: int) -> None:
        """The broker's answer went on to the client."""
        rows = self._conns.get(conn.conn_id)
        if rows is not None and correlation_id in rows.open:
            row = rows.open.pop(correlation_id)[0]
            row[4] = _t(self.clock())
            self._finish(conn.conn_id, rows, row)

    def closed(self, conn) -> None:
        """The connection closed: its rows are written, those still open unanswered."""
        rows = self._conns.pop(conn.conn_id, None)
        if rows is not None:
            rows.done += [r for r, _ in rows.open.values()]
            self._write(conn.conn_id, rows)

    def flush(self) -> None:
        """Write every row so far (the proxy stops; a test reads them)."""
        for conn_id, rows in list(self._conns.items()):
            self._write(conn_id, rows)

    def _finish(self, conn_id: int, rows: _ConnRows, row: list) -> None:
        if not self.enabled:
            return
        rows.done.append(row)
        now = self.clock()
        rows.since = now if rows.since is None else rows.since
        if len(rows.done) >= BATCH_ROWS or now - rows.since >= BATCH_S:
            self._write(conn_id, rows)

    def _write(self, conn_id: int, rows: _ConnRows) -> None:
        if not rows.done:
            return
        done, rows.done, rows.since = sorted(rows.done, key=lambda r: r[2]), [], None
        self.emit("order", conn=conn_id, broker=rows.broker, member=rows.member, client_id=rows.client_id, rows=done)
