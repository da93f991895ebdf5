"""The order the request proxy records: one row per request of a member of the group and fetch APIs, in `order`
events batched per connection, valid history; the requests of no member and of other APIs are left out."""
import time

from harness.kproxy import drop_request
from harness.kproxy import order as order_mod
from harness.kproxy.wire import request_bytes
from harness.record import schema as hs
from tests.unit.test_kproxy_proxy import FETCH, HEARTBEAT, JOIN, SYNC, _answers, _ask, setup  # noqa: F401

HEADER = {"type": "header", "schema": "rebalance-history", "version": 1, "source": "harness", "member": None}
PRODUCE = 0


def _orders(events):
    return [e for e in events if e["type"] == "order"]


def test_rows_per_connection_in_order_with_their_times(setup):
    proxy, broker, events, client = setup
    a, b = client(), client()
    for corr, api in enumerate((JOIN, SYNC, HEARTBEAT, FETCH), 1):
        _ask(a, api, corr)
    _ask(b, JOIN, 7, member="m2")
    b.sendall(request_bytes(JOIN, 1, 8, "producer-1", b"body"))  # names no member: not recorded
    b.sendall(request_bytes(PRODUCE, 1, 9, "m2", b"body"))  # not a group or fetch API: not recorded
    assert _answers(a, 4) == [1, 2, 3, 4] and _answers(b, 3) == [7, 8, 9]
    assert _orders(events) == []  # a batch waits for BATCH_ROWS rows, a second, or the connection's close
    a.close(), b.close()
    deadline = time.monotonic() + 3
    while len(_orders(events)) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    by = {e["member"]: e for e in _orders(events)}
    assert [r[:2] for r in by["m1"]["rows"]] == [[1, JOIN], [2, SYNC], [3, HEARTBEAT], [4, FETCH]]
    assert [r[:2] for r in by["m2"]["rows"]] == [[7, JOIN]]
    assert by["m1"]["conn"] != by["m2"]["conn"] and by["m1"]["broker"] == 1 and by["m1"]["client_id"] == "m1"
    for _, _, received, forwarded, answered in by["m1"]["rows"]:
        assert received <= forwarded <= answered
    for e in _orders(events):
        assert hs.validate_line(HEADER, {**e, "wall": time.time()}) == [], e
    assert hs.validate_line(HEADER, {**by["m1"], "wall": 1.0, "rows": [[1, 11, 1.0, None]]})  # a short row refused


def _closed_and_written(events, c, n=1):
    c.close()
    deadline = time.monotonic() + 3
    while len(_orders(events)) < n and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_dropped_request_has_no_forwarded_time(setup):
    proxy, broker, events, client = setup
    proxy.install(drop_request("Heartbeat", count=1, then="pass"))
    c = client()
    _ask(c, HEARTBEAT, 1)
    _ask(c, JOIN, 2)
    assert _answers(c, 1, timeout_s=1) == [2]
    _closed_and_written(events, c)
    rows = {r[0]: r for e in _orders(events) for r in e["rows"]}
    assert rows[1][3] is None and rows[1][4] is None  # dropped
    assert rows[2][3] is not None and rows[2][4] is not None


def test_a_full_batch_is_written_without_waiting(setup, monkeypatch):
    monkeypatch.setattr(order_mod, "BATCH_ROWS", 3)
    proxy, broker, events, client = setup
    c = client()
    for corr in range(1, 5):
        _ask(c, HEARTBEAT, corr)
    assert _answers(c, 4) == [1, 2, 3, 4]
    deadline = time.monotonic() + 3
    while not _orders(events) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [r[0] for r in _orders(events)[0]["rows"]] == [1, 2, 3]


def test_recording_off_records_nothing(setup):
    proxy, broker, events, client = setup
    proxy.order.enabled = False
    c = client()
    _ask(c, JOIN, 1)
    assert _answers(c, 1) == [1]
    c.close()
    time.sleep(0.3)
    assert _orders(events) == []
