"""A Kafka-protocol-aware proxy for request faults (docs/design.md, "The request proxy").

`KafkaProxy` listens in front of each broker and forwards frames; rules (`delay_request`, `hold_request`,
`drop_request`, `drop_response`, `error_response`, `disconnect`) act on the requests of one API from one member or
all, to one broker or all, and every fault applied is recorded as `fault_start` / `fault_end`. An `error_response`
with a `partition` puts its error in that partition's entry of the broker's own answer instead
(`partition_errors`).
The order of the members' group and fetch requests is recorded (`order`), and a controller may change it: the
explorer's perturbations and an exact replay's recorded order (`perturb`).

May import: `base`, `kafka` (kio's frames). Started by the backends' client path (`harness.cluster`),
its rules installed by the nemesis; the plan reads its rules and answers as data to check a schedule.
"""
from harness.kproxy.answers import Unanswerable
from harness.kproxy.identity import member_of
from harness.kproxy.proxy import KafkaProxy
from harness.kproxy.rules import (Rule, Seen, delay_request, disconnect, drop_request, drop_response,
                                  error_response, hold_request)
from harness.kproxy.wire import API_KEYS, API_NAMES

__all__ = ["API_KEYS", "API_NAMES", "KafkaProxy", "Rule", "Seen", "Unanswerable", "delay_request", "disconnect",
           "drop_request", "drop_response", "error_response", "hold_request", "member_of"]
