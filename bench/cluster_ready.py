"""How long until a 3-broker cluster is usable: brokers registered, a topic created, a group joined.

Run: .venv/bin/python bench/cluster_ready.py [--backend local|docker] [--kafka-version V] [--repeat N]
Needs warm caches (run ./dev setup first); prints one line per repeat and the median.
"""
import argparse
import statistics
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer

from harness.cluster.backends import new_backend, preflight


def once(version: str, backend: str = "local") -> dict:
    with tempfile.TemporaryDirectory() as d:
        t0 = time.monotonic()
        with new_backend(backend, work_dir=Path(d), version=version, progress=lambda *_: None) as c:
            t_brokers = time.monotonic() - t0
            c.create_topic("bench", partitions=6, replication=3)
            t_topic = time.monotonic() - t0
            consumer = Consumer({"bootstrap.servers": c.bootstrap(), "group.id": "bench", "group.protocol": "consumer",
                                 "log_level": 0})
            joined = []
            consumer.subscribe(["bench"], on_assign=lambda cons, parts: joined.append(len(parts)))
            while not joined and time.monotonic() - t0 < 120:
                consumer.poll(0.05)
            t_group = time.monotonic() - t0
            consumer.close()
        return {"brokers_registered_s": t_brokers, "topic_created_s": t_topic, "group_joined_s": t_group}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kafka-version", default="latest")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backend", default="local", choices=["local", "docker"])
    args = ap.parse_args()
    preflight(args.backend)  # an engine started and images built before the clock starts
    results = []
    for i in range(args.repeat):
        r = once(args.kafka_version, args.backend)
        results.append(r)
        print(f"run {i + 1}: " + ", ".join(f"{k}={v:.1f}" for k, v in r.items()), flush=True)
    print(f"{args.backend}: median group_joined_s={statistics.median(r['group_joined_s'] for r in results):.1f} "
          f"over {args.repeat} runs")


if __name__ == "__main__":
    main()
