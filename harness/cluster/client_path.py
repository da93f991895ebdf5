"""The client path: Toxiproxy in front of every broker and, when a run asks for request faults, the request proxy
(harness.kproxy) in front of Toxiproxy; the local backend's, and the docker backend's (Toxiproxy in a container,
its ports published on the host's loopback, the request proxy in the harness's process in front of them).

    client -> request proxy (node.proxy_port) -> Toxiproxy (node.toxi_port) -> broker (node.client_port)

The brokers advertise the first hop's port (`node.proxy_port`), so no client bypasses either proxy. The
request proxy goes first so that what it records is what the client sent and got, and Toxiproxy's faults
(latency, blackhole, a disabled proxy) act between it and the broker exactly as they do without it. Without
request faults Toxiproxy listens on `node.proxy_port` itself and nothing else is in the path.
"""
from __future__ import annotations

from harness.kproxy import KafkaProxy


class ClientPath:
    """Mixed into LocalCluster (which gives `nodes`, `toxiproxy`, `on_event`, `request_faults`)."""

    kproxy: KafkaProxy | None = None

    def request_proxy(self) -> KafkaProxy | None:
        """The request proxy (RequestFaults), or None when the cluster started without request faults."""
        return self.kproxy

    def _toxi_port(self, node) -> int:
        """Where Toxiproxy listens for a node: behind the request proxy when there is one."""
        return node.toxi_port if self.request_faults else node.proxy_port

    def _front_brokers(self) -> None:
        """Toxiproxy in front of every node, and the request proxy in front of it when asked for."""
        for node in self.nodes.values():
            self.toxiproxy.create(name=node.proxy_name, listen=f"127.0.0.1:{self._toxi_port(node)}",
                                  upstream=f"127.0.0.1:{node.client_port}")
        self._start_request_proxy()

    def _start_request_proxy(self) -> None:
        """With request faults: the request proxy on each node's advertised port, in front of Toxiproxy's port on
        the host's loopback (the local backend's Toxiproxy process, the docker backend's published container
        ports alike)."""
        if self.request_faults:
            self.kproxy = KafkaProxy(upstreams={i: ("127.0.0.1", n.toxi_port) for i, n in self.nodes.items()},
                                     ports={i: n.proxy_port for i, n in self.nodes.items()},
                                     record=lambda type_, **fields: self.on_event(type_, **fields))
            self.kproxy.start()

    def _stop_request_proxy(self) -> None:
        if self.kproxy is not None:
            self.kproxy.stop()
            self.kproxy = None

    # -- network faults (Partitionable), through Toxiproxy
    def _proxies(self, broker_ids):
        return [self.toxiproxy.proxy(self.nodes[i].proxy_name) for i in (broker_ids or self.broker_ids())]

    def add_latency(self, *, latency_ms: int, jitter_ms: int = 0, broker_ids: list[int] | None = None) -> None:
        with self.toxiproxy.using():
            for p in self._proxies(broker_ids):
                name = f"latency-{p.name}"
                p.add_toxic(name=name, type="latency", stream="downstream",
                            attributes={"latency": latency_ms, "jitter": jitter_ms})
                self._toxics.append((p.name, name))

    def blackhole(self, *, broker_ids: list[int] | None = None) -> None:
        with self.toxiproxy.using():
            for p in self._proxies(broker_ids):
                for stream in ("upstream", "downstream"):
                    name = f"blackhole-{stream}-{p.name}"
                    p.add_toxic(name=name, type="timeout", stream=stream, attributes={"timeout": 0})
                    self._toxics.append((p.name, name))

    def heal(self) -> None:
        with self.toxiproxy.using():
            for proxy_name, toxic in self._toxics:
                self.toxiproxy.proxy(proxy_name).destroy_toxic(toxic)
        self._toxics.clear()

    def proxy_ports(self) -> set[int]:
        """The ports the brokers advertise: the client path's first hop."""
        return {n.proxy_port for n in self.nodes.values()}

    def client_ports(self) -> set[int]:
        return {n.client_port for n in self.nodes.values()}
