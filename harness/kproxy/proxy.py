"""The request proxy: an asyncio TCP proxy in a background thread, one listener per broker.

It forwards bytes frame by frame (harness.kproxy.wire) and applies the installed rules
(harness.kproxy.rules) to the requests they match. It runs in the harness's own process, on an event loop
in a daemon thread, so that the runner installs and lifts rules with plain calls, a hold can wait on
another member's request or on a `threading.Event` the runner sets, and every fault it applies is recorded
through the `record` callback the owner gives (the run's event sink: `fault_start` / `fault_end` with the
API, member, broker and correlation id; a disconnect's end also lists the requests lost with the connection;
docs/history.md).
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from typing import Callable

from harness.kproxy import answers
from harness.kproxy.conn import Conn
from harness.kproxy.partition_errors import PartitionFaults
from harness.kproxy.identity import member_of as _member_of
from harness.kproxy.order import OrderRecorder
from harness.kproxy.rules import LiveRule, Rule, Seen
from harness.kproxy.wire import FrameError, parse_request_head, read_frame, response_correlation
from harness.base.steps import Step

_log = logging.getLogger(__name__)

#: how often a hold looks at its conditions (a threading.Event cannot wake an event loop by itself)
HOLD_TICK_S = 0.01


def _noop(*_a, **_k) -> None:
    """A record callback that records nothing."""


class KafkaProxy:
    """Listeners on `ports` (broker id -> port), each forwarding to `upstreams[broker id]` (host, port).
    Use as a context manager, or start() and stop()."""

    def __init__(self, *, upstreams: dict[int, tuple[str, int]], ports: dict[int, int], host: str = "127.0.0.1",
                 record: Callable[..., None] = _noop, group_id: str | None = None,
                 member_of: Callable[[str | None], str | None] | None = None) -> None:
        self.upstreams = dict(upstreams)
        self.ports = dict(ports)
        self.host = host
        self.record = record
        self.group_id = group_id  # the run's group (Streams' application.id): members' client ids start with it
        self.member_of = member_of or (lambda client_id: _member_of(client_id, group_id=self.group_id))
        self._rules: dict[str, LiveRule] = {}   # every rule installed, by id (lifted ones too)
        self._active: list[LiveRule] = []       # the ones that may still match, in installation order
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._servers: list[asyncio.base_events.Server] = []
        self._conns: set[Conn] = set()
        self._tasks: set[asyncio.Task] = set()  # one per client connection
        self._watchers: list[list] = []  # [conditions, held member, met outcome or None]
        self._rule_ids = itertools.count(1)
        self._conn_ids = itertools.count(1)
        self._faults = itertools.count(1)
        self._lock = threading.Lock()
        self.order = OrderRecorder(self._emit)  # the order of members' requests (harness/kproxy/order.py)
        self.partition_faults = PartitionFaults(self)  # error_response rules with a partition (partition_errors.py)

    # -- lifecycle
    def __enter__(self) -> "KafkaProxy":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, *, timeout_s: float = 10.0) -> None:
        """Start the event loop thread and bind every listener."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kproxy", daemon=True)
        self._thread.start()
        try:
            self._call(self._listen(), timeout_s)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Close every listener and connection (open faults end as `closed`) and end the thread."""
        if self._loop is None:
            return
        try:
            self._call(self._shutdown(), 10.0)
        except Exception as e:  # the loop is ended below whatever happened
            _log.warning("kproxy: shutdown: %s", e)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        self._loop = self._thread = None

    def _call(self, coro, timeout_s: float):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s)

    async def _listen(self) -> None:
        for broker, port in self.ports.items():
            self._servers.append(await asyncio.start_server(
                lambda r, w, b=broker: self._serve(b, r, w), self.host, port, reuse_address=True))

    async def _shutdown(self) -> None:
        for s in self._servers:
            s.close()
        for conn in list(self._conns):
            self._close(conn)
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for s in self._servers:
            await s.wait_closed()
        self._servers.clear()

    def address(self, broker: int) -> str:
        """host:port of the listener in front of a broker."""
        return f"{self.host}:{self.ports[broker]}"

    # -- rules (called from any thread)
    def install(self, rule: Rule) -> str:
        """Apply `rule` from now on; its id. An error_response kio cannot encode for the versions the brokers
        offer is refused here (answers.Unanswerable), before any request meets it."""
        if rule.action == Step.ERROR_RESPONSE:
            answers.check_answerable(rule.api_key, self._offered(rule.api_key, rule.broker))
        live = LiveRule(rule, rule_id=f"r{next(self._rule_ids)}", now=time.monotonic())
        with self._lock:
            self._rules[live.rule_id] = live
            self._active = self._active + [live]
        return live.rule_id

    def remove(self, rule_id: str) -> None:
        """Lift a rule: it matches no more requests and the requests it holds go on now."""
        with self._lock:
            if rule_id in self._rules:
                self._rules[rule_id].lifted = True
            self._active = [r for r in self._active if not r.lifted]

    def clear(self) -> None:
        """Lift every rule."""
        for rule_id in list(self._rules):
            self.remove(rule_id)

    def applied(self, rule_id: str) -> int:
        """How many requests a rule was applied to so far."""
        live = self._rules.get(rule_id)
        return live.applied if live else 0

    def wait_for_applied(self, rule_id: str, *, count: int = 1, timeout_s: float = 30.0) -> bool:
        """Wait until a rule was applied to `count` requests; False when `timeout_s` passed first."""
        deadline = time.monotonic() + timeout_s
        while self.applied(rule_id) < count:
            if time.monotonic() >= deadline:
                return False
            time.sleep(HOLD_TICK_S)
        return True

    def _offered(self, api_key: int, broker: int | None) -> range | None:
        """The widest range of versions of an API the targeted brokers offer now (None: none answered)."""
        ids = [broker] if broker is not None else list(self.upstreams)
        ranges = [r for r in self._call(self._ask_all_versions(ids), 15.0) if r]
        spans = [v[api_key] for v in ranges if api_key in v]
        if not spans:
            return None
        return range(min(s.start for s in spans), max(s.stop for s in spans))

    async def _ask_all_versions(self, ids: list[int]) -> list:
        return await asyncio.gather(*(self._ask_versions(b) for b in ids))

    async def _ask_versions(self, broker: int) -> dict[int, range] | None:
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection(*self.upstreams[broker]), 5.0)
        except (OSError, asyncio.TimeoutError):
            return None
        try:
            w.write(answers.api_versions_request(1))
            payload = await asyncio.wait_for(read_frame(r), 5.0)
            return answers.offered_versions(payload) if payload else None
        except (OSError, asyncio.TimeoutError, FrameError, ValueError) as e:
            _log.info("kproxy: broker %s did not say its API versions: %s", broker, e)
            return None
        finally:
            w.close()

    # -- connections (on the event loop)
    async def _serve(self, broker: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        try:
            await self._proxy(broker, reader, writer)
        except asyncio.CancelledError:  # the proxy's own stop: the task ends, not cancelled (Python 3.11's
            pass                        # start_server callback logs a cancelled one as an error with a traceback)
        finally:
            self._tasks.discard(task)

    async def _proxy(self, broker: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstreams[broker])
        except OSError as e:
            _log.debug("kproxy: broker %s unreachable: %s", broker, e)
            writer.close()
            return
        peer = writer.get_extra_info("peername")
        conn = Conn(next(self._conn_ids), broker, writer, up_writer, peer=f"{peer[0]}:{peer[1]}" if peer else "")
        self._conns.add(conn)
        pumps = [asyncio.ensure_future(self._requests(conn, reader)),
                 asyncio.ensure_future(self._responses(conn, up_reader))]
        try:
            done, _ = await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            for p in done:
                if p.exception() is not None:
                    _log.warning("kproxy: connection %s to broker %s failed: %r", conn.peer, broker, p.exception())
        finally:
            for p in pumps:
                p.cancel()
            self._close(conn)

    def _close(self, conn: Conn) -> None:
        if conn.closed:
            return
        conn.close()
        self._conns.discard(conn)
        self.order.closed(conn)
        self.partition_faults.forget(conn)
        for fid in list(conn.open_faults):
            self._end(fid, "closed")
        conn.open_faults.clear()

    async def _requests(self, conn: Conn, reader: asyncio.StreamReader) -> None:
        try:
            while (payload := await read_frame(reader)) is not None:
                head = parse_request_head(payload)
                member = self.member_of(head.client_id)
                self._observe(head.api_key, member)
                if conn.muted:
                    if conn.lost is not None:  # behind a disconnect: lost with the connection
                        conn.lost.append({"api": head.api, "correlation_id": head.correlation_id})
                    continue
                await self.order.request(conn, head, member)  # recorded; a controller may hold it
                live = self._match(head.api_key, member, conn.broker)
                if live is None:
                    conn.send_on(payload, head.correlation_id)
                else:
                    await self._apply(live, conn, head, member, payload)
                self.order.passed(conn, head, member, action=live and live.rule.action)
                await conn.upstream_writer.drain()
        except (FrameError, ConnectionError) as e:
            _log.debug("kproxy: client connection %s to broker %s: %s", conn.peer, conn.broker, e)

    async def _responses(self, conn: Conn, reader: asyncio.StreamReader) -> None:
        try:
            while (payload := await read_frame(reader)) is not None:
                payload = self.partition_faults.answer(conn, payload)
                corr = response_correlation(payload)
                await self.order.answer(conn, corr)  # a controller may hold it
                answered = conn.broker_answered(corr, payload)
                self.order.answered(conn, corr)
                if answered is not None and answered.drop is not None and answered.then == "pass":
                    conn.open_faults.pop(answered.drop, None)
                    self._end(answered.drop, "dropped")
                elif answered is not None and answered.drop is not None and answered.then == "close":
                    self._disconnect(conn, answered.drop)
                    return
                await conn.client_writer.drain()
        except (FrameError, ConnectionError) as e:
            _log.debug("kproxy: broker %s connection for %s: %s", conn.broker, conn.peer, e)

    def _match(self, api_key: int, member: str | None, broker: int) -> LiveRule | None:
        now = time.monotonic()
        for live in self._active:
            if live.matches(api_key, member, broker, now):
                live.take()
                return live
        return None

    def _observe(self, api_key: int, member: str | None) -> None:
        """Mark the holds whose Seen condition this request meets."""
        for w in self._watchers:
            if w[2] is None and any(isinstance(c, Seen) and c.met_by(api_key, member, w[1]) for c in w[0]):
                w[2] = "seen"

    # -- the actions
    async def _apply(self, live: LiveRule, conn: Conn, head, member: str | None, payload: bytes) -> None:
        rule = live.rule
        if rule.partition is not None:  # the request goes on; its answer gets the error in one partition's entry
            self.partition_faults.forward(live, conn, head, member, payload)
            return
        if rule.action == Step.ERROR_RESPONSE:
            self._answer_error(live, conn, head, member, payload)
            return
        extra = {"delay_s": round(live.draw_delay(), 6)} if rule.action == Step.DELAY_REQUEST else {}
        fid = self._start(live, conn, head, member, **extra)
        if rule.action == Step.DELAY_REQUEST:
            conn.open_faults[fid] = True
            await asyncio.sleep(extra["delay_s"])
            conn.send_on(payload, head.correlation_id)
            self._finish(conn, fid, "forwarded")
        elif rule.action == Step.HOLD_REQUEST:
            conn.open_faults[fid] = True
            outcome = await self._hold(live, member)
            conn.send_on(payload, head.correlation_id)
            self._finish(conn, fid, outcome)
        elif rule.action == Step.DISCONNECT:  # ends when the broker's answer came and the connection was closed
            conn.open_faults[fid] = True
            conn.send_on(payload, head.correlation_id, drop=fid, then="close")
            conn.muted, conn.lost = True, []
        elif rule.action == Step.DROP_REQUEST:
            if rule.then == "stall":
                conn.muted = True
                conn.open_faults[fid] = True  # ends when the client closes the connection
            else:
                self._end(fid, "dropped")
        else:  # drop_response: ends when the answer is dropped (pass) or the connection closes (stall)
            conn.open_faults[fid] = True
            conn.send_on(payload, head.correlation_id, drop=fid, then=rule.then)

    def _disconnect(self, conn: Conn, fid: str) -> None:
        """A disconnect's answer came (and was discarded): close the client's connection and the broker's, the
        requests sent behind it lost."""
        conn.open_faults.pop(fid, None)
        self._end(fid, "disconnected", lost=conn.lost or [])
        self._close(conn)

    def _finish(self, conn: Conn, fid: str, outcome: str) -> None:
        if conn.open_faults.pop(fid, None) is not None:
            self._end(fid, outcome)

    async def _hold(self, live: LiveRule, member: str | None) -> str:
        rule = live.rule
        watcher = [rule.until, member, None]
        self._watchers.append(watcher)
        deadline = time.monotonic() + rule.timeout_s
        try:
            while True:
                if watcher[2] is not None:
                    return watcher[2]
                if any(isinstance(c, threading.Event) and c.is_set() for c in rule.until):
                    return "event"
                if live.lifted:
                    return "lifted"
                if time.monotonic() >= deadline:
                    return "timeout"
                await asyncio.sleep(min(HOLD_TICK_S, max(0.0, deadline - time.monotonic())))
        finally:
            self._watchers.remove(watcher)

    def _answer_error(self, live: LiveRule, conn: Conn, head, member: str | None, payload: bytes) -> None:
        code = answers.error_code_of(live.rule.error)
        try:
            _, request = answers.split_request(head.api_key, head.api_version, payload)
            answer = answers.error_response(head.api_key, head.api_version, request, head.correlation_id, code)
        except Exception as e:  # a version below kio's oldest: forwarded as it is, said so
            _log.warning("kproxy: rule %s cannot answer %s v%s (%s); forwarded unchanged",
                         live.rule_id, head.api, head.api_version, e)
            conn.send_on(payload, head.correlation_id)
            return
        fid = self._start(live, conn, head, member, error=code.name.upper(), error_code=int(code))
        conn.answer(head.correlation_id, answer)
        self._end(fid, "answered")

    # -- the record
    def _start(self, live: LiveRule, conn: Conn, head, member: str | None, **extra) -> str:
        fid = f"kp{next(self._faults)}"
        self._emit("fault_start", fault_id=fid, kind=live.rule.action, targets=[member] if member else [],
                   members_affected=[member] if member else [], brokers_affected=[conn.broker], member=member,
                   api=head.api, api_version=head.api_version, correlation_id=head.correlation_id,
                   client_id=head.client_id, broker=conn.broker, rule=live.rule_id, **extra)
        return fid

    def _end(self, fid: str, outcome: str, **extra) -> None:
        self._emit("fault_end", fault_id=fid, outcome=outcome, **extra)

    def _emit(self, type_: str, **fields) -> None:
        try:
            self.record(type_, **fields)
        except Exception as e:  # a broken sink must not stop the traffic
            _log.warning("kproxy: recording %s failed: %s", type_, e)
