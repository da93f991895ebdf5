"""toxiproxy-python keeps the API's address on a class: two servers used from two threads must not cross.

Verify: while one thread uses server A (`using()`), another thread's use of server B waits, so every call of A's
block goes to A; and a refusal by the server (toxiproxy-python's KeyError) is a SetupError naming the proxy.
"""
from __future__ import annotations

import threading
import time

import pytest
from toxiproxy.api import APIConsumer

from harness.base.errors import SetupError
from harness.cluster.toxiproxy import ToxiproxyServer


def server(port: int, client=None) -> ToxiproxyServer:
    s = object.__new__(ToxiproxyServer)  # no process: only the API's pointing is under test
    s.port, s.client, s.log_path = port, client, "toxiproxy.log"
    return s


def test_a_server_in_use_keeps_the_api_pointed_at_it_while_another_thread_uses_another():
    a, b = server(1111), server(2222)
    seen, entered = [], threading.Event()

    def use_b():
        entered.wait()
        with b.using():
            seen.append(("b", APIConsumer.port))

    t = threading.Thread(target=use_b, daemon=True)
    t.start()
    with a.using():
        entered.set()
        for _ in range(5):  # B's thread is trying meanwhile
            time.sleep(0.02)
            seen.append(("a", APIConsumer.port))
    t.join(5)
    assert seen == [("a", 1111)] * 5 + [("b", 2222)]


def test_a_proxy_the_server_refuses_is_a_setup_error_naming_it():
    class Refusing:
        def create(self, **kw):
            raise KeyError("name")  # what toxiproxy-python raises when the server answers with an error
    with pytest.raises(SetupError, match="refused the proxy broker-1 listening on 0.0.0.0:36045"):
        server(1111, Refusing()).create(name="broker-1", listen="0.0.0.0:36045", upstream="client-1:9092")
