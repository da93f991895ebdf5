"""What the runner watches while a run goes on, read incrementally from the history files.

An `Observer` keeps, per history file, the byte offset it has read up to, and on each `poll()` parses
only the complete lines written since (a line without its newline yet is left for the next poll). It
folds them into the few views the waits need: who owns which partition now, how many acknowledged
records no member has processed, and each Streams instance's latest tasks. So the runner's cost per
poll follows what was written since the last poll, not the length of the run.
"""
from __future__ import annotations

import time
from pathlib import Path

from harness.record.history import GLOB
from harness.record.tail import HistoryTail
from harness.invariants.share.view import answer_lost
from harness.base.steps import Step


#: Connect events that start or end a connector's or a task's run on a worker
CONNECT_RUNS = ("connect_task_started", "connect_task_stopped", "connect_connector_started", "connect_connector_stopped")


class Observer:
    """Live views of a run's history directory; call `poll()` to take in what was written since."""

    def __init__(self, history_dir: Path, topics: str | list[str]) -> None:
        self.dir = Path(history_dir)
        self.topics = frozenset([topics] if isinstance(topics, str) else topics)
        self._tails: dict[Path, HistoryTail] = {}
        self.owned: dict[str, set[tuple[str, int]]] = {}
        self.subscriptions: dict[str, tuple[str, ...]] = {}
        self._acked: dict[tuple[str, int], set[int]] = {}
        self._processed: dict[tuple[str, int], set[int]] = {}
        self.streams: dict[str, dict] = {}
        self.connect: dict[str, dict] = {}  # Connect workers: the connectors and tasks each runs, by their events
        self.share_deliveries: dict[str, int] = {}  # share members: records delivered since their start
        self.share_limit: int | None = None  # the share group's delivery count limit (set by the share kind)
        self._share_last: dict[tuple, int] = {}  # a share record's latest delivery count
        self.share_lock_s: float | None = None  # the share group's record lock (set by the share kind)
        self._share_unsure: dict[tuple, float] = {}  # accepted or rejected, the answer lost: record -> asked at
        self.share_reset: str | None = None  # the share group's share.auto.offset.reset (set by the share kind)
        self._share_first: dict[tuple[str, int], int] = {}  # (topic, partition) -> the lowest offset delivered there
        self._added: set[tuple[str, int]] = set()  # partitions an add_partitions step added
        self.events_read = 0

    def poll(self) -> int:
        """Read what every file gained since the last poll; returns how many events that was."""
        n = 0
        for path in sorted(self.dir.glob(GLOB)):
            tail = self._tails.get(path)
            if tail is None:
                tail = self._tails[path] = HistoryTail(path)
            for ev in tail.new_events():
                self._fold(ev)
                n += 1
        self.events_read += n
        return n

    def _fold(self, e: dict) -> None:
        t = e.get("type")
        if t in ("assigned", "revoked", "lost"):
            ps = {(tp, p) for tp, p in e.get("partitions") or () if tp in self.topics}
            cur = self.owned.setdefault(e.get("member"), set())
            if t == "assigned":
                cur |= ps
            else:
                cur -= ps
        elif t == "acked":
            if e.get("topic") in self.topics:
                self._acked.setdefault((e["topic"], e["partition"]), set()).add(e["offset"])
        elif t == "processed":
            if e.get("topic") in self.topics:
                seen = self._processed.setdefault((e["topic"], e["partition"]), set())
                seen.update(range(e["first_offset"], e["last_offset"] + 1))
        elif t in ("started", "control") and isinstance(e.get("subscription"), list):  # a change comes as a control
            self.subscriptions[e.get("member")] = tuple(e["subscription"])
        elif t == "member_start":
            self.owned[e["member"]] = set()
            self.streams.pop(e["member"], None)
        elif t == "member_exit":
            self.owned.pop(e["member"], None)
            self.streams.pop(e["member"], None)
            self.connect.pop(e["member"], None)
            self.share_deliveries.pop(e["member"], None)
        elif t in CONNECT_RUNS:
            self._fold_connect(e, t)
        elif t == "action_end" and e.get("kind") == Step.ADD_PARTITIONS and isinstance(e.get("count"), int):
            self._added |= {(e.get("topic"), p) for p in range(int(e.get("before") or 0), e["count"])}
        elif t == "share_acquired":
            tp = (e.get("topic"), e.get("partition"))
            self._share_first[tp] = min(self._share_first.get(tp, e.get("offset")), e.get("offset"))
            self.share_deliveries[e.get("member")] = self.share_deliveries.get(e.get("member"), 0) + 1
            self._share_last[(e.get("topic"), e.get("partition"), e.get("offset"))] = int(e.get("delivery_count") or 1)
            self._share_unsure.pop((e.get("topic"), e.get("partition"), e.get("offset")), None)  # it came back
        elif t == "share_acked" and answer_lost(e) and e.get("ack") in ("accept", "reject"):
            self._share_unsure[(e.get("topic"), e.get("partition"), e.get("offset"))] = float(e["requested_mono"])
        elif t == "share_acked" and e.get("ok") and e.get("topic") in self.topics and (
                e.get("ack") in ("accept", "reject") or self.share_limit is not None and self._share_last.get(
                    (e["topic"], e["partition"], e["offset"]), 0) >= self.share_limit):
            # done with (what draining a share group waits for): accepted, rejected, or released at the limit
            # (archived)
            self._processed.setdefault((e["topic"], e["partition"]), set()).add(e["offset"])
        if e.get("source") == "member" or t in ("tasks", "stream_state", "task_active", "task_active_end"):
            self._fold_streams(e, t)

    def _fold_streams(self, e: dict, t: str) -> None:
        m = e.get("member")
        if m is None or t not in ("tasks", "stream_state", "task_active", "task_active_end"):
            return
        v = self.streams.setdefault(m, {"active": {}, "standby": {}, "state": "CREATED", "running": set()})
        if t == "tasks":
            v["active"], v["standby"] = e["active"], e["standby"]
        elif t == "stream_state":
            v["state"] = e["to"]
        elif t == "task_active":
            v["running"].add(e["task"])
        else:
            v["running"].discard(e["task"])

    def _fold_connect(self, e: dict, t: str) -> None:
        v = self.connect.setdefault(e.get("member"), {"connectors": set(), "tasks": set()})
        if t.startswith("connect_task_"):
            what, key = v["tasks"], (e.get("connector"), e.get("task"))
        else:
            what, key = v["connectors"], e.get("connector")
        (what.add if t.endswith("_started") else what.discard)(key)

    # -- views
    def ownership(self) -> dict[str, set[tuple[str, int]]]:
        """(topic, partition) of the run's topics each live member holds now, by its own assigned/revoked/lost
        events."""
        return {m: set(ps) for m, ps in self.owned.items()}

    def unprocessed(self, now: float | None = None) -> int:
        """How many acknowledged records of the run's topics no member has processed yet. A share record accepted
        or rejected whose answer was lost is done once its lock ran out (at `now`, the host's monotonic clock)
        without it coming back: the broker took the acknowledgement (share_completion counts it so too). A share
        group under `latest` is not waited for on the records it skipped by that policy (`_skipped_below`)."""
        if self._share_unsure and self.share_lock_s is not None:
            now = time.monotonic() if now is None else now
            for r, at in list(self._share_unsure.items()):
                if at + self.share_lock_s + 1.0 <= now and r[0] in self.topics:
                    self._processed.setdefault((r[0], r[1]), set()).add(r[2])
                    del self._share_unsure[r]
        return sum(len(self._due(p, offs) - self._processed.get(p, set())) for p, offs in self._acked.items())

    def _due(self, tp: tuple[str, int], offs: set[int]) -> set[int]:
        below = self._skipped_below(tp)
        return {o for o in offs if o >= below} if below else offs

    def _skipped_below(self, tp: tuple[str, int]) -> int:
        """The offset below which a share group under `latest` skipped a partition's records by its policy: the first
        it delivered there, in a partition it consumed from its start (share_completion's rule, which judges them);
        0 otherwise: every record is waited for, those of a partition added while the group ran above all."""
        if self.share_reset != "latest" or tp in self._added:
            return 0
        return self._share_first.get(tp, 0)

    def streams_view(self, live: set[str]) -> dict[str, dict]:
        """Per live Streams instance: its latest tasks snapshot (active, standby), state, and running tasks."""
        return {m: v for m, v in self.streams.items() if m in live}
