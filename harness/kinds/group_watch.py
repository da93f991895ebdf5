"""A consumer group's assignment as its coordinator reports it, recorded while the run goes on (every protocol).

confluent-kafka's Admin `describe_consumer_groups` asks the group coordinator (librdkafka finds it) with
ConsumerGroupDescribe for a group of the consumer protocol and DescribeGroups for a classic one, and returns each
member's member id, client id (the harness sets `client.id` to the member's own id), group instance id and assigned
partitions, with the group's type and state. `GroupAssignmentWatch` asks every `interval_s` from a thread of the
runner (the loop is assignment_watch.py's, as the share watch's) and writes a `group_assignment` event whenever the
answer changes:

- `members`: `{member, consumer_id, instance_id, partitions, target}` per member, partitions as [topic, partition]
  pairs, sorted; `target` the consumer protocol's target assignment (null for a classic group); null with an `error` (the coordinator could not be asked or refused: the history is blind until the next
  event) and on the last event (`stopped`);
- `group_type` (`classic` or `consumer`, `unknown` when the client could not tell) and `state` (lower case:
  `stable`, `preparing_rebalancing`, `completing_rebalancing`, `empty`, `dead`; `unknown` for the consumer
  protocol's own states, which librdkafka does not name). A classic group's coordinator lists, while it
  rebalances, the previous generation's assignments (or none, after a rebalance began while members awaited their
  SyncGroup): `coordinator_claims` reads such an answer with the stable answers around it;
- `asked_mono`, `interval_s`, `longest_gap_s`: when it asked, how often, and how far apart unchanged answers were.

Started for consumer-group runs on real brokers with the first members, stopped after their final stop. Its admin
client is its own, in a process of its own (`asker`: librdkafka can abort the process that calls it), bootstrapped
from the brokers' advertised addresses (the Toxiproxy listeners, as the members'), each request bounded by TIMEOUT_S
so that a broker down delays the next answer, never the run.
"""
from __future__ import annotations

import json
import select
import signal
import sys

from harness.kinds.assignment_watch import INTERVAL_S, AssignmentWatch

TIMEOUT_S = 2.0
#: how much longer than its own request and result timeouts the watch waits for its admin process's answer
ANSWER_SLACK_S = 3.0


def _name(x) -> str:
    return str(getattr(x, "name", x) or "unknown").lower()


def describe(admin, group_id: str, *, timeout_s: float = TIMEOUT_S) -> dict:
    """The `group_assignment` fields of the coordinator's answer (the client's exception on an error)."""
    g = admin.describe_consumer_groups([group_id], request_timeout=timeout_s)[group_id].result(timeout=timeout_s * 2)
    members = [{"member": m.client_id, "consumer_id": m.member_id, "instance_id": m.group_instance_id or None,
                "partitions": _pairs(m.assignment), "target": _target(m)} for m in g.members or ()]
    return {"members": sorted(members, key=lambda m: (m["member"], m["consumer_id"])),
            "group_type": _name(getattr(g, "type", None)), "state": _name(getattr(g, "state", None)),
            "coordinator": getattr(getattr(g, "coordinator", None), "id", None)}


def _pairs(assignment) -> list:
    return sorted([tp.topic, int(tp.partition)]
                  for tp in ((assignment.topic_partitions if assignment else None) or ()))


def _target(member) -> list | None:
    """The member's target assignment (the consumer protocol's: what the coordinator decided to give it, which it
    gets once the previous owners revoked), None where the answer has none (a classic group)."""
    target = getattr(member, "target_assignment", None)
    return None if target is None else _pairs(target)


def asker(bootstrap: str, group_id: str, *, request: str = "ask",
          api: str = "DescribeConsumerGroups") -> "_ProcessAsker":
    """`ask()` for the watch, on an admin client in a process of its own (made at the first request, and again
    after that process ended): librdkafka's DescribeConsumerGroups can abort the process that calls it (an
    assertion, `rd_kafka_enq_once_del_source_return: eonce->refcnt > 0`, when a request times out: confluentinc/
    librdkafka#4605, open), and an abort must cost the watch an answer, not the run (it ended a CI run's harness,
    exit -6, right after a first answer timed out)."""
    return _ProcessAsker(bootstrap, group_id, request=request, api=api)


class _ProcessAsker:
    """Asks harness/kinds/group_watch_proc.py one line at a time (`request`: `ask`, the group's description; `offsets`,
    its committed offsets, harness/kinds/offsets_read.py); `close()` ends that process."""

    def __init__(self, bootstrap: str, group_id: str, *, request: str = "ask",
                 api: str = "DescribeConsumerGroups") -> None:
        self.cmd = [sys.executable, "-m", "harness.kinds.group_watch_proc", bootstrap, group_id, str(TIMEOUT_S)]
        self.proc, self.request, self.api = None, request, api

    def __call__(self) -> dict:
        from harness.base.procs import Proc
        if self.proc is None or not self.proc.alive():
            self.proc = Proc.spawn_piped(self.cmd, name="group-watch")
        proc = self.proc
        p = proc.popen
        try:
            p.stdin.write(self.request + "\n")
            p.stdin.flush()
            ready, _, _ = select.select([p.stdout], [], [], TIMEOUT_S * 2 + ANSWER_SLACK_S)
            line = p.stdout.readline() if ready else ""
        except (OSError, ValueError):
            line = ""
        if not line:
            raise RuntimeError(f"{self.api}: {self._ended(proc)}") from None
        got = json.loads(line)
        if "error" in got:
            raise RuntimeError(f"{self.api}: {got['error']}")
        return got["answer"]

    def _ended(self, proc) -> str:
        """Why no answer came (the process is ended, and made again at the next ask)."""
        rc = proc.wait(timeout_s=0.2)
        if rc is None:
            proc.kill()
            why = f"no answer within {TIMEOUT_S * 2 + ANSWER_SLACK_S:g} s from the watch's admin process (ended)"
        else:
            why = f"the watch's admin process ended (exit {rc})"
            if rc == -signal.SIGABRT:
                why += f": librdkafka aborted (confluentinc/librdkafka#4605 ends {self.api} so)"
        if self.proc is proc:
            self.proc = None
        return why + "; made again at the next ask"

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.terminate_and_wait(timeout_s=5.0)


class GroupAssignmentWatch(AssignmentWatch):
    """Asks the coordinator every `interval_s` and writes `group_assignment` on each change (module docstring)."""

    def __init__(self, bootstrap: str, group_id: str, event, *, interval_s: float = INTERVAL_S, ask=None) -> None:
        super().__init__("group_assignment", ask or asker(bootstrap, group_id), event,
                         name=f"group-watch-{group_id}", defaults={"group_type": None, "state": None},
                         interval_s=interval_s)

    def stop(self) -> None:
        """As the loop's stop, then the admin process ends."""
        super().stop()
        close = getattr(self.ask, "close", None)
        if close is not None:
            close()
