"""A member of the fake backend (harness/cluster/fake.py): the member contract without Kafka.

Run with the HARNESS_* environment of docs/member-contract.md, HARNESS_BOOTSTRAP being a fake
cluster's `fake:<dir>`; in a RunConfig: `member_command=(sys.executable, <this file>)`. It registers with
the fake coordinator through files (its pid, a heartbeat), follows the assignment file the coordinator
writes for it (recording `revoked` and `assigned` before acting, then acknowledging the epoch), reads
the records of its partitions from the fake topic's files from the committed offset, records
`processed` and `committed`, and on SIGTERM revokes everything, commits, leaves and records `stopped`.
Paused past its session timeout it finds its registration gone: it records `lost` and joins again.

Imports only the standard library and harness.record.history (the paths are those of
harness/cluster/fake_workload.py's docstring).

`HARNESS_MISBEHAVE=claim-extra`: once its assignment has been quiet for a moment, it records as assigned
one partition it was not given (held by another member) for a second, then records it revoked; it
never reads it. A run with it must fail `exclusive_ownership`.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a plain script
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from harness.record.history import HistoryWriter  # noqa: E402

POLL_S = 0.05
BATCH = 500
CLAIM_AFTER_S = 0.3  # claim-extra: how long the assignment must have been quiet first
CLAIM_FOR_S = 1.0


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


class FakeMember:
    def __init__(self, env: dict) -> None:
        boot = env["HARNESS_BOOTSTRAP"]
        if not boot.startswith("fake:"):
            raise SystemExit(f"fake member: HARNESS_BOOTSTRAP must be a fake cluster's fake:<dir>, not {boot!r}")
        self.root = Path(boot[len("fake:"):])
        self.member_id = env["HARNESS_MEMBER_ID"]
        self.topic = env["HARNESS_TOPIC"]
        self.group_id = env["HARNESS_GROUP_ID"]
        self.protocol = env["HARNESS_PROTOCOL"]
        self.instance_id = env.get("HARNESS_INSTANCE_ID") or None
        self.rack = env.get("HARNESS_RACK") or None
        self.misbehave = env.get("HARNESS_MISBEHAVE") or None
        conf = json.loads(env.get("HARNESS_CLIENT_CONFIG") or "{}")
        self.session_s = conf["session.timeout.ms"] / 1000 if "session.timeout.ms" in conf else None
        self.hist = HistoryWriter(env["HARNESS_HISTORY"], source="member", member=self.member_id)
        gdir = self.root / "groups" / self.group_id
        for sub in ("members", "assign", "ack", "offsets"):
            (gdir / sub).mkdir(parents=True, exist_ok=True)
        self.reg = gdir / "members" / f"{self.member_id}.json"
        self.assign = gdir / "assign" / f"{self.member_id}.json"
        self.ack = gdir / "ack" / self.member_id
        self.offsets = gdir / "offsets"
        self.tdir = self.root / "topics" / self.topic
        self.partitions = json.loads((self.tdir / "meta.json").read_text())["partitions"]
        self.running = True
        self.epoch = 0
        self.held: dict[int, list[int]] = {}  # partition -> [next offset, byte position in its file]
        self.changed = time.monotonic()  # when the assignment last changed
        self.claim: tuple[int, float] | None = None
        self.claimed = False

    def _tps(self, ps) -> list:
        return [[self.topic, p] for p in sorted(ps)]

    # -- the group, through files
    def _register(self) -> None:
        _write_atomic(self.reg, json.dumps({"pid": os.getpid(), "topic": self.topic, "joined": time.monotonic(),
                                            "session_timeout_s": self.session_s, "protocol": self.protocol}))

    def _heartbeat(self) -> None:
        try:
            os.utime(self.reg)
        except FileNotFoundError:  # the coordinator dropped us (silent past the session timeout)
            self._end_claim()
            if self.held:
                self.hist.event("lost", member=self.member_id, partitions=self._tps(self.held))
                self.held.clear()
                self.changed = time.monotonic()
            self._register()

    def _follow(self) -> None:
        a = _read_json(self.assign)
        if not a or a["epoch"] <= self.epoch:
            return
        self._end_claim()
        new = set(a["partitions"])
        gone, added = set(self.held) - new, new - set(self.held)
        if gone:
            self.hist.event("revoked", member=self.member_id, partitions=self._tps(gone))
            for p in gone:
                del self.held[p]
        if added:
            self.hist.event("assigned", member=self.member_id, partitions=self._tps(added))
            for p in added:
                self.held[p] = self._position(p)
        if gone or added:
            self.changed = time.monotonic()
        self.epoch = a["epoch"]
        _write_atomic(self.ack, str(self.epoch))

    def _position(self, p: int) -> list[int]:
        """[committed offset, its byte position in the partition's file] (earliest when none)."""
        try:
            off = int((self.offsets / f"{self.topic}-{p}").read_text())
        except (FileNotFoundError, ValueError):
            off = 0
        with open(self.tdir / f"p{p}.log", "rb") as f:
            data = f.read()
        pos = 0
        for _ in range(off):
            pos = data.index(b"\n", pos) + 1
        return [off, pos]

    # -- consuming
    def _consume(self) -> None:
        done = []
        for p, st in sorted(self.held.items()):
            with open(self.tdir / f"p{p}.log", "rb") as f:
                f.seek(st[1])
                data = f.read()
            end = data.rfind(b"\n")
            if end < 0:
                continue
            lines = data[:end + 1].split(b"\n")[:-1][:BATCH]
            first, count = st[0], len(lines)
            self.hist.event("processed", member=self.member_id, topic=self.topic, partition=p,
                            first_offset=first, last_offset=first + count - 1, count=count)
            st[0] += count
            st[1] += sum(len(x) + 1 for x in lines)
            done.append(p)
        if done:
            self._commit(done)

    def _commit(self, parts) -> None:
        requested = time.monotonic()
        for p in parts:
            _write_atomic(self.offsets / f"{self.topic}-{p}", str(self.held[p][0]))
        self.hist.event("committed", member=self.member_id, ok=True, error=None, requested_mono=requested,
                        offsets=[[self.topic, p, self.held[p][0]] for p in parts])

    # -- misbehaviour
    def _misbehave(self) -> None:
        if self.misbehave != "claim-extra":
            return
        now = time.monotonic()
        if self.claim is not None and now - self.claim[1] >= CLAIM_FOR_S:
            self._end_claim()
        elif not self.claimed and self.held and now - self.changed >= CLAIM_AFTER_S:
            free = [p for p in range(self.partitions) if p not in self.held]
            if free:
                self.claimed = True
                self.claim = (free[0], now)
                self.hist.event("assigned", member=self.member_id, partitions=self._tps([free[0]]))

    def _end_claim(self) -> None:
        if self.claim is not None:
            self.hist.event("revoked", member=self.member_id, partitions=self._tps([self.claim[0]]))
            self.claim = None

    # -- the life
    def run(self) -> int:
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "running", False))
        signal.signal(signal.SIGINT, lambda *_: setattr(self, "running", False))
        self._register()
        self.hist.event("started", member=self.member_id, pid=os.getpid(), protocol=self.protocol,
                        group_id=self.group_id, topic=self.topic, instance_id=self.instance_id, rack=self.rack,
                        client="fake-member")
        while self.running:
            self._heartbeat()
            self._follow()
            self._consume()
            self._misbehave()
            time.sleep(POLL_S)
        self._end_claim()
        self._consume()
        if self.held:
            self.hist.event("revoked", member=self.member_id, partitions=self._tps(self.held))
            self.held.clear()
        self.reg.unlink(missing_ok=True)
        self.hist.event("stopped", member=self.member_id, reason="sigterm")
        self.hist.close()
        return 0


def main() -> int:
    return FakeMember(dict(os.environ)).run()


if __name__ == "__main__":
    sys.exit(main())
