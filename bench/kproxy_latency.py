"""What the request proxy adds to each request, beside what Toxiproxy adds, on the same run.

One local broker started with request faults (client -> request proxy -> Toxiproxy -> broker). One client
connection per path sends the same small request (Metadata v12 for no topics, or ApiVersions v3) and waits
for its answer, N times in turn, interleaving the paths so that load on the machine falls on all alike:

    broker      straight to the broker's own listener
    toxiproxy   through Toxiproxy alone (what every run has)
    kproxy      through the request proxy, then Toxiproxy (a run with request faults)

Prints the median and p99 round trip of each path and what each hop adds (toxiproxy - broker,
kproxy - toxiproxy), in microseconds. The client is a process of its own, as members are. No rule is installed: this is the cost of forwarding.

Run: cd /tmp && PYTHONPATH=/path/to/checkout /work/main/.venv/bin/python /path/to/checkout/bench/kproxy_latency.py \
     [--requests 5000] [--api metadata|api_versions] [--kafka-version V]
"""
import argparse
import multiprocessing
import socket
import statistics
import struct
import tempfile
import time
from pathlib import Path

from harness.cluster.local import LocalCluster
from harness.kproxy.answers import api_versions_request
from harness.kproxy.wire import request_bytes

# Metadata v12 (flexible): topics null (compact array length 0), allow_auto_topic_creation false,
# include_topic_authorized_operations false, no tagged fields
METADATA_BODY = b"\x00\x00\x00\x00"


def _request(api: str, corr: int) -> bytes:
    if api == "api_versions":
        return api_versions_request(corr)
    return request_bytes(3, 12, corr, "bench", METADATA_BODY, flexible=True)


def _recv(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def _round_trip(sock: socket.socket, payload: bytes) -> float:
    t0 = time.perf_counter()
    sock.sendall(payload)
    size = struct.unpack(">i", _recv(sock, 4))[0]
    _recv(sock, size)
    return time.perf_counter() - t0


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _p(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def measure(paths: dict[str, int], api: str, warmup: int, requests: int) -> dict[str, list[float]]:
    """Round trips per path, interleaved. Run in a child process: the proxy's thread lives in the harness's
    process, and a client sharing its interpreter would take turns with it and count that as latency."""
    socks = {name: _connect(port) for name, port in paths.items()}
    times = {name: [] for name in paths}
    for i in range(warmup + requests):
        for name, sock in socks.items():
            took = _round_trip(sock, _request(api, i))
            if i >= warmup:
                times[name].append(took)
    for s in socks.values():
        s.close()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kafka-version", default="latest")
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--api", default="metadata", choices=["metadata", "api_versions"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d, LocalCluster(work_dir=Path(d), version=args.kafka_version, brokers=1,
                                                          request_faults=True, progress=lambda *_: None) as c:
        node = c.nodes[1]
        paths = {"broker": node.client_port, "toxiproxy": node.toxi_port, "kproxy": node.proxy_port}
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            times = pool.apply(measure, (paths, args.api, args.warmup, args.requests))
        print(f"Kafka {c.version}, {args.api}, {args.requests} requests per path (after {args.warmup} warm-up), "
              f"one connection each, interleaved, from a client process of its own")
    us = {name: (statistics.median(v) * 1e6, _p(v, 0.99) * 1e6) for name, v in times.items()}
    for name, (med, p99) in us.items():
        print(f"  {name:10s} median {med:8.1f} us   p99 {p99:8.1f} us")
    for hop, (a, b) in {"Toxiproxy adds": ("toxiproxy", "broker"), "kproxy adds": ("kproxy", "toxiproxy")}.items():
        print(f"  {hop:15s} median {us[a][0] - us[b][0]:8.1f} us   p99 {us[a][1] - us[b][1]:8.1f} us")


if __name__ == "__main__":
    main()
