"""The group watch's admin client, in a process of its own (harness/kinds/group_watch.py, `asker`): for each line
read on stdin it asks the group's coordinator once and writes one JSON line, `{"answer": ...}` (describe's fields;
for a line `offsets`, the group's committed offsets: harness/kinds/offsets_read.py) or
`{"error": "<the client's words>"}`. Ends at the end of stdin. librdkafka may abort this process
(confluentinc/librdkafka#4605); the watch then records the error and starts another.

Usage: python -m harness.kinds.group_watch_proc BOOTSTRAP GROUP_ID TIMEOUT_S
"""
from __future__ import annotations

import json
import signal
import sys


def main(argv: list[str]) -> int:
    bootstrap, group_id, timeout_s = argv[0], argv[1], float(argv[2])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    from confluent_kafka.admin import AdminClient
    from harness.kinds.group_watch import describe
    from harness.kinds.offsets_read import committed_offsets
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": int(timeout_s * 1000),
                         "reconnect.backoff.max.ms": 500, "log_level": 2, "client.id": "harness-group-watch"})
    for line in sys.stdin:
        ask = committed_offsets if line.strip() == "offsets" else describe
        try:
            out = {"answer": ask(admin, group_id, timeout_s=timeout_s)}
        except Exception as e:  # noqa: BLE001 - the client's own words (KafkaException's KafkaError), or a timeout
            err = e.args[0] if e.args else None
            out = {"error": err.str() if hasattr(err, "str") else f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
