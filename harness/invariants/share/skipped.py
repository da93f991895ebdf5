"""Records a share group never completed, judged by its reset policy and the brokers' start offsets
(`share_completion`'s second half; the terms are those of `view`).

A share-partition's start offset is set when the group first initialises it: for a partition of a topic the
group sees for the first time, by `share.auto.offset.reset` (the group's config as the run's `group_settings`
event read it; Kafka's default `latest`: the log end at that moment, so records written before are skipped;
`earliest`: the log start); for a partition added to a topic the group already consumes, at its first record
(Kafka's fix of KAFKA-20742; before it, 4.2 and 4.3 applied the policy there too and skipped records produced
before the coordinator got to it). Per record that ended neither accepted, rejected nor archived:

- **skipped by the group's policy** (valid, counted): the recorded policy is `latest`, its partition is one the
  group consumed from its start (no `add_partitions` added it), it was never delivered, it lies below the first
  offset the group ever delivered there, and the producer had it acknowledged no later than that first delivery
  (+ the clock slack S: the producer's acknowledgement may come a moment after a member's fetch of the record).
  With the policy unread, such a record is `unknown` (the history cannot tell a skip from a loss).
- **surely lost** (invalid whether or not the run drained): a record of a partition added while the group ran
  that was never delivered and lies below the first offset delivered there or below the start offset after the
  run; or any record the start offset after the run passed that was never delivered, or whose last delivery
  ended released or expired below the delivery count limit (the broker owed it another delivery). Its witness
  names the topic, partition, offset, the start offset and the first offset delivered there.
- **lost** otherwise, as before: invalid when the run drained, else `unknown`.
"""
from __future__ import annotations

from typing import NamedTuple

from harness.record.history import History
from harness.invariants.settings import unread_of
from harness.invariants.clock import run_s

#: the group config of the reset policy (KIP-932; no broker-wide default of it)
RESET_KEY = "share.auto.offset.reset"


class Policy(NamedTuple):
    value: str | None  # "latest", "earliest", "by_duration:..." as the brokers gave it; None: unread
    source: str

    def says(self) -> str:
        return f"{RESET_KEY}={self.value} ({self.source})" if self.value else f"{RESET_KEY} unknown ({self.source})"


def reset_policy(history: History) -> Policy:
    """The group's `share.auto.offset.reset` as the run's last `group_settings` event read it; (None, why) if not."""
    ev = next((e for _, e in reversed(history.control()) if e.get("type") == "group_settings"), None)
    if ev is None:
        return Policy(None, "no group_settings event")
    value = (ev.get("group") or {}).get(RESET_KEY)
    if value not in (None, ""):
        return Policy(str(value).strip().lower(), f"the group's config read at {run_s(history, ev['mono'])}")
    why = unread_of(ev).get("group")
    return Policy(None, f"the group's config could not be read at {run_s(history, ev['mono'])} ({why})" if why else
                  f"not in the group_settings event at {run_s(history, ev['mono'])}")


def first_deliveries(v) -> dict:
    """(topic, partition) -> (the lowest offset ever delivered there, the time of the first delivery there)."""
    out: dict = {}
    for (topic, p, o), ds in v.deliveries.items():
        lo, at = out.get((topic, p), (o, ds[0].acq))
        out[(topic, p)] = (min(lo, o), min(at, min(d.acq for d in ds)))
    return out


class Skips:
    """Classifies each record that ended neither accepted, rejected nor archived (the module docstring)."""

    def __init__(self, history: History, v, *, added: dict, starts: dict | None, limit, slack_s: float) -> None:
        self.policy, self.added, self.starts, self.limit, self.slack_s = (reset_policy(history), added, starts,
                                                                          limit, slack_s)
        self.first = first_deliveries(v)

    def classify(self, topic: str, p: int, o: int, produced: float, ds) -> tuple[str, str]:
        """("policy" | "policy_unknown" | "sure" | "lost", what the witness says beyond the delivery)."""
        first = self.first.get((topic, p))
        start = None if self.starts is None else self.starts.get((topic, p))
        below_first = first is not None and o < first[0]
        at_start = "" if self.starts is None else f"; the partition's start offset after the run: {start}"
        at_first = f"; the first offset delivered there: {first[0]}" if first else "; nothing delivered there"
        added = ((topic, p) in self.added and
                 f" (partition {p} added at {self.added[(topic, p)]:.1f}s by add_partitions)") or ""
        if not ds and below_first and not added and produced <= first[1] + self.slack_s:
            if self.policy.value == "latest":
                return "policy", at_first + at_start
            if self.policy.value is None:
                return "policy_unknown", f"{at_first}{at_start}; {self.policy.says()}: a skip by it cannot be told"
        passed = start is not None and o < start
        if added and not ds and (below_first or passed):
            return "sure", f"{at_first}{at_start}{added}: every record of it is due to the group"
        last = ds[-1] if ds else None
        owed = last is None or (last.ended_by in ("release", "expiry") and (self.limit.value is None
                                                                            or last.count < self.limit.value))
        if passed and owed:
            return "sure", f"{at_start}, past it{'' if ds else ' though it was never delivered'}{added}"
        return "lost", at_start + added


def skipped_summary(records: list) -> str:
    """'t-0 offsets 0-4 (5), t-1 offsets 0-2 (3)' of (topic, partition, offset) records."""
    by: dict = {}
    for topic, p, o in records:
        by.setdefault((topic, p), []).append(o)
    return ", ".join(f"{t}-{p} offsets {min(os)}-{max(os)} ({len(os)})" for (t, p), os in sorted(by.items()))
