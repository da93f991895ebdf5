"""One client connection through the proxy: its two byte pumps and the order of its answers.

Kafka answers the requests of a connection in the order they were sent, and clients rely on it (the Java
client takes an answer out of order for a broken connection). So the connection keeps a queue of the
requests it sent on, in order: an answer the proxy made itself (`error_response`) waits there until every
broker answer before it was delivered; a broker answer whose request was marked (`drop_response`,
`disconnect`) is dropped there, after every answer before it was delivered. A request with no answer at all (Produce with acks=0) is passed over when a later answer
arrives.
"""
from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field

from harness.kproxy.wire import frame


@dataclass
class Pending:
    """A request sent on (to the broker, or answered by the proxy), awaiting its place in the answers."""

    correlation_id: int
    answer: bytes | None = None      # the proxy's own answer, when it made one
    drop: object = None              # a drop_response's or disconnect's fault: the broker's answer is not delivered
    then: str = "stall"              # after it: "stall", "pass" (drop_response) or "close" (disconnect)


@dataclass(eq=False)
class Conn:
    """The state of one client connection: which broker it fronts, what it awaits, whether it went quiet."""

    conn_id: int
    broker: int
    client_writer: asyncio.StreamWriter
    upstream_writer: asyncio.StreamWriter
    peer: str = ""
    pending: deque = field(default_factory=deque)
    muted: bool = False      # after a drop_request with `stall` or a disconnect: no more requests go on to the broker
    deaf: bool = False       # after a drop_response with `stall`: no more answers reach the client
    open_faults: dict = field(default_factory=dict)  # fault id -> fault ended when the connection closes
    lost: list | None = None  # after a disconnect: the requests sent behind it, [API, correlation id] each
    closed: bool = False

    def send_on(self, payload: bytes, correlation_id: int, *, drop=None, then: str = "stall") -> None:
        """Forward a request to the broker (its answer expected in turn)."""
        self.pending.append(Pending(correlation_id, drop=drop, then=then))
        self.upstream_writer.write(frame(payload))

    def answer(self, correlation_id: int, payload: bytes) -> None:
        """Answer a request in the broker's stead, in its turn."""
        self.pending.append(Pending(correlation_id, answer=payload))
        self._flush()

    def broker_answered(self, correlation_id: int, payload: bytes):
        """A broker answer arrived: deliver it in order. Returns the Pending it answered (None if unknown)."""
        answered = None
        while self.pending:
            head = self.pending.popleft()
            if head.answer is not None:
                self._deliver(head.answer)
            elif head.correlation_id == correlation_id:
                answered = head
                break
            # else: a request before it that has no answer (Produce with acks=0): passed over
        if answered is None or answered.drop is None:
            self._deliver(payload)
        elif answered.then == "stall":
            self.deaf = True
        # "pass" and "close" (a disconnect: the proxy closes the connection next) drop this answer only
        self._flush()
        return answered

    def _flush(self) -> None:
        while self.pending and self.pending[0].answer is not None:
            self._deliver(self.pending.popleft().answer)

    def _deliver(self, payload: bytes) -> None:
        if not self.deaf and not self.closed:
            self.client_writer.write(frame(payload))

    def close(self) -> None:
        self.closed = True
        for w in (self.client_writer, self.upstream_writer):
            try:
                w.close()
            except Exception:  # a transport already gone
                pass
