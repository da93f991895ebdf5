"""The membership story of a synthetic consumer-group run that a correct group writes (`synth_run` writes it out).

`story(shape, ...)` plays N members of one group on one topic of P partitions under one protocol: the members
start in waves over a few seconds (each wave joins together), the group settles after each wave, a `scale_in`
stops a third of them gracefully at once, their partitions go to the survivors, and the survivors stop at the end.
Every step has the shape the protocol gives it, as the real runs' histories show it (docs/history.md):

- `consumer` (KIP-848, the brokers' `uniform` assignor): each join or leave is one group epoch, logged by the
  coordinator (`Member M joins the consumer group ...`, `Bumped group epoch to N ...`, `Computed a new target
  assignment ...`); a member that loses partitions revokes them (`revoked`, then the client's empty `assigned`), and
  only then does the coordinator give them to their new owner (`assigned`, incremental).
- `classic-cooperative` (cooperative-sticky): one generation that revokes what moves (every member gets its
  incremental, maybe empty, `assigned`), then, when anything was revoked, a second generation (a member that
  revoked rejoins: `Updating metadata for member ...`) that assigns it.
- `classic-eager` (range): every member revokes everything it holds, then gets its whole new assignment.

Assignments are what the assignor in force gives: the sticky ones (uniform, cooperative-sticky) keep each member's
partitions up to its new quota and move the fewest; range deals contiguous blocks in member id order, the larger
first. A graceful stop writes what the harness and the member write (`member_stop`, the last commit, `revoked`,
`stopped`, `member_exit` graceful) and the coordinator's leave lines.

The story is the events of every file (mono, line) and each partition's ownership intervals, from which
`synth_records` writes the records and their processing.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from harness.base.vocabulary import CONSUMER_PROTOCOLS

#: the logger and prefix of the group coordinator's lines (Kafka 4.x)
LOGGER = "org.apache.kafka.coordinator.group.GroupMetadataManager"
PREFIX = "[GroupCoordinator id=1 topic=__consumer_offsets partition=0] "
HASH = "-1864045145125554559"
#: seconds between two waves of starting members; members per wave at most
WAVE_GAP_S, WAVES = 1.6, 10
CLIENT = "confluent-kafka 2.16.1 librdkafka 2.16.0"


@dataclass(frozen=True)
class Shape:
    """What to generate: `members` in one group on `partitions` (one topic) under `protocol`, about `events`
    history events in all, from `seed`; `poll_s`: how often a member polls."""

    members: int = 3
    partitions: int = 6
    events: int = 10_000
    protocol: str = "consumer"
    seed: int = 0
    poll_s: float = 0.2

    def problem(self) -> str | None:
        """Why the shape cannot be generated (one line), or None."""
        if self.protocol not in CONSUMER_PROTOCOLS:
            return f"protocol must be one of {', '.join(CONSUMER_PROTOCOLS)}, not {self.protocol!r}"
        if self.members < 2:
            return f"members must be 2 or more (a third of them stop), not {self.members}"
        if self.partitions < self.members:
            return f"partitions ({self.partitions}) must be at least members ({self.members}): every member owns one"
        if self.events < 1000:
            return f"events must be 1000 or more, not {self.events}"
        return None


@dataclass
class Story:
    """Every file's events as (mono, line), each partition's owners as [member, assigned at, revoked at or None],
    each member's life (started, stop begun) and the run's times."""

    shape: Shape
    run_id: str
    topic: str
    group: str
    t0: float
    wall0: float
    files: dict = field(default_factory=dict)  # file key ("harness", "brokers", a member id) -> [(mono, line)]
    owners: dict = field(default_factory=dict)  # partition -> [[member, assigned, revoked]]
    lives: dict = field(default_factory=dict)  # member -> [started, stop begun]
    ids: dict = field(default_factory=dict)  # member -> its group member id
    held: dict = field(default_factory=dict)  # member -> its partitions now (sorted)
    generation: int = 0
    coordinator_free: float = 0.0  # the coordinator handles one request at a time: its next line comes no sooner
    prod: tuple = (0.0, 0.0)  # the producer's first and last ack
    end: float = 0.0

    def emit(self, key: str, mono: float, event_type: str, /, **fields) -> None:
        ev = {"type": event_type, "mono": round(mono, 6), "wall": round(mono + self.wall0, 6), **fields}
        self.files.setdefault(key, []).append((mono, json.dumps(ev, separators=(",", ":")) + "\n"))

    def handled(self, mono: float) -> float:
        """When the coordinator handles a request that reached it at `mono` (after the one it handles now)."""
        at = max(mono, self.coordinator_free)
        self.coordinator_free = at + 0.002  # its lines for one request, each stamped to the millisecond, stay together
        return at

    def broker(self, mono: float, message: str) -> None:
        wall = round(mono + self.wall0, 3)  # the brokers stamp their lines to the millisecond
        ev = {"type": "broker", "mono": round(wall - self.wall0, 5), "wall": wall, "broker": 1, "level": "INFO",
              "logger": LOGGER, "message": PREFIX + message}
        self.files.setdefault("brokers", []).append((ev["mono"], json.dumps(ev, separators=(",", ":")) + "\n"))

    def tps(self, parts) -> list:
        return [[self.topic, p] for p in sorted(parts)]

    def give(self, m: str, parts, at: float) -> None:
        """`m` is assigned `parts` (incremental; also an empty assignment) at `at`."""
        self.emit(m, at, "assigned", member=m, partitions=self.tps(parts))
        for p in parts:
            self.owners.setdefault(p, []).append([m, at, None])
        self.held[m] = sorted(set(self.held.get(m, [])) | set(parts))

    def take(self, m: str, parts, at: float) -> None:
        """`m` revokes `parts` at `at`."""
        if not parts:
            return
        self.emit(m, at, "revoked", member=m, partitions=self.tps(parts))
        for p in parts:
            self.owners[p][-1][2] = at
        self.held[m] = sorted(set(self.held.get(m, [])) - set(parts))


def sticky_target(held: dict, members: list[str], partitions: int) -> dict[str, list[int]]:
    """A balanced assignment that keeps each member's partitions up to its quota (the fewest moves): the larger
    quotas go to the members holding the most."""
    q, r = divmod(partitions, len(members))
    order = sorted(members, key=lambda m: (-len(held.get(m, ())), members.index(m)))
    quota = {m: q + (1 if i < r else 0) for i, m in enumerate(order)}
    target = {m: sorted(held.get(m, ()))[:quota[m]] for m in members}
    kept = {p for ps in target.values() for p in ps}
    free = iter(p for p in range(partitions) if p not in kept)
    for m in members:
        target[m] = sorted(target[m] + [next(free) for _ in range(quota[m] - len(target[m]))])
    return target


def range_target(ids: dict, members: list[str], partitions: int) -> dict[str, list[int]]:
    """Range's assignment: contiguous blocks in member id order, the first P mod n one larger."""
    order = sorted(members, key=lambda m: ids[m])
    q, r = divmod(partitions, len(members))
    out, start = {}, 0
    for i, m in enumerate(order):
        n = q + (1 if i < r else 0)
        out[m] = list(range(start, start + n))
        start += n
    return out


def target(s: Story, members: list[str]) -> dict[str, list[int]]:
    if s.shape.protocol == "classic-eager":
        return range_target(s.ids, members, s.shape.partitions)
    return sticky_target(s.held, members, s.shape.partitions)


def member_id(rng: random.Random, protocol: str, m: str) -> str:
    """The group member id: the consumer protocol's client draws one; the classic coordinator makes client.id-uuid."""
    if protocol == "consumer":
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        return "".join(rng.choice(alphabet) for _ in range(22))
    h = "%032x" % rng.getrandbits(128)
    return f"{m}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def bump_lines(s: Story, at: float, cause: str) -> float:
    """The consumer protocol coordinator's lines for one epoch: its cause, the bump, the new target."""
    at = s.handled(at)
    s.generation += 1
    s.broker(at, f"[GroupId {s.group}] {cause}")
    s.broker(at + 0.0005, f"[GroupId {s.group}] Bumped group epoch to {s.generation} with metadata hash {HASH}.")
    s.broker(at + 0.001, f"[GroupId {s.group}] Computed a new target assignment for epoch {s.generation} with "
                         f"'uniform' assignor in 0ms.")
    return at


def classic_round(s: Story, prepare: float, reason: str, stable: float) -> None:
    """The classic coordinator's lines for one generation: prepared for `reason`, stabilized at `stable`."""
    s.broker(prepare, f"Preparing to rebalance group {s.group} in state PreparingRebalance with old generation "
                      f"{s.generation} (reason: {reason}).")
    s.generation += 1
    n = len(s.held)
    s.broker(stable, f"Stabilized group {s.group} generation {s.generation} with {n} members.")
    leader = min(s.held, key=lambda m: s.lives[m][0])
    s.broker(stable + 0.004, f"Assignment received from leader {s.ids[leader]} for group {s.group} for generation "
                             f"{s.generation}. The group has {n} members, 0 of which are static.")


def reassign(s: Story, rng: random.Random, at: float, cause_member: str, prepare: float) -> float:
    """The group moves to its assignor's target for the members it has (`s.held`'s keys): the coordinator has every
    member's join or leave by `at` (a classic generation was prepared at `prepare`, for `cause_member`); in the
    protocol's shape. Returns when the last member has its partitions."""
    members = sorted(s.held, key=lambda m: s.lives[m][0])
    want = target(s, members)
    lose = {m: sorted(set(s.held[m]) - set(want[m])) for m in members}
    gain = {m: sorted(set(want[m]) - set(s.held[m])) for m in members}
    if s.shape.protocol == "consumer":
        for m in members:
            if lose[m]:
                r = at + rng.uniform(0.02, 0.2)
                s.take(m, lose[m], r)
                s.give(m, [], r + 0.0003)
        for m in members:
            if gain[m] or not s.held[m]:
                s.give(m, gain[m], at + rng.uniform(0.35, 0.55))
        return at + 0.55
    stable = max(at + 0.3, prepare + 1.0) if s.generation == 0 else at + 0.3  # an empty group waits its delay
    if s.shape.protocol == "classic-eager":
        for m in members:
            s.take(m, list(s.held[m]), prepare + rng.uniform(0.02, min(0.2, stable - prepare - 0.01)))
        classic_round(s, prepare, reason_of(s, cause_member), stable)
        for m in members:
            s.give(m, want[m], stable + rng.uniform(0.01, 0.1))
        return stable + 0.1
    # classic-cooperative: a generation that revokes what moves, then one that assigns it
    classic_round(s, prepare, reason_of(s, cause_member), stable)
    moved = any(lose.values())
    for m in members:
        t = stable + rng.uniform(0.01, 0.1)
        s.take(m, lose[m], t)
        s.give(m, [] if moved else gain[m], t + 0.0003)
    if not moved:
        return stable + 0.1
    rejoin = next(m for m in members if lose[m])
    classic_round(s, stable + 0.12, f"Updating metadata for member {s.ids[rejoin]} during Stable; client reason: not "
                                    f"provided", stable + 1.0)
    for m in members:
        s.give(m, gain[m], stable + rng.uniform(1.01, 1.1))
    return stable + 1.1


def reason_of(s: Story, m: str) -> str:
    """The classic coordinator's reason for a generation `m` caused (a join, or its leave if it has left)."""
    if m in s.held:
        return f"Adding new member {s.ids[m]} with group instance id null; client reason: not provided"
    return f"explicit `LeaveGroup` request for ({s.ids[m]}) members."


def join_lines(s: Story, m: str, at: float, first: bool) -> float:
    """The coordinator's lines for `m` joining at `at` (the consumer protocol's epoch; a classic join's ids); returns
    when it logged them."""
    if s.shape.protocol == "consumer":
        return bump_lines(s, at, f"Member {s.ids[m]} joins the consumer group using the consumer protocol.")
    state = "Empty" if first and s.generation == 0 else ("PreparingRebalance" if not first else "Stable")
    at = s.handled(at)
    s.broker(at, f"Dynamic member with unknown member id joins group {s.group} in {state} state. Created a new member "
                 f"id {s.ids[m]} and requesting the member to rejoin with this id.")
    s.broker(at + 0.002, f"Pending dynamic member with id {s.ids[m]} joins group {s.group} in {state} state. Adding "
                         f"to the group now.")
    return at


def start_member(s: Story, rng: random.Random, m: str, at: float) -> float:
    """The harness spawns `m` at `at`; returns when its consumer subscribed (its `started`)."""
    s.ids[m] = member_id(rng, s.shape.protocol, m)
    pid = 20000 + int(m[1:])
    s.emit("harness", at, "member_start", member=m, pid=pid, instance_id=None, rack=None, misbehave=None)
    started = at + 0.45 + rng.uniform(0, 0.05)
    s.emit(m, started, "started", member=m, pid=pid, protocol=s.shape.protocol, group_id=s.group, topic=s.topic,
           subscription=[s.topic], instance_id=None, rack=None, client=CLIENT, controls=["stall", "subscription"],
           client_config=client_config(s.shape.protocol), effective=effective(s.shape.protocol),
           effective_defaults=effective_defaults(s.shape.protocol))
    s.lives[m] = [started, None]
    return started


def client_config(protocol: str) -> dict:
    """What the harness gives a member (the classic protocols' timings are the client's own)."""
    if protocol == "consumer":
        return {"max.poll.interval.ms": 20000}
    return {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "max.poll.interval.ms": 20000}


def effective(protocol: str) -> dict:
    """What the member runs with, as the Python member records it."""
    classic = protocol != "consumer"
    return {"group.protocol": "classic" if classic else "consumer",
            "partition.assignment.strategy": {"classic-eager": "range", "classic-cooperative": "cooperative-sticky"}
            .get(protocol), "group.remote.assignor": None, "group.instance.id": None, "enable.auto.commit": False,
            "commit_mode": "sync", "revoke_delay_ms": 0.0, "client": CLIENT,
            "session.timeout.ms": 6000 if classic else 45000, "heartbeat.interval.ms": 500 if classic else 3000,
            "max.poll.interval.ms": 20000, "auto.commit.interval.ms": 5000}


def effective_defaults(protocol: str) -> list[str]:
    if protocol == "consumer":
        return ["session.timeout.ms", "heartbeat.interval.ms", "auto.commit.interval.ms"]
    return ["auto.commit.interval.ms"]


def join_wave(s: Story, rng: random.Random, wave: list[str], at: float) -> float:
    """`wave` starts together from `at` and joins; returns when the group has its new assignment."""
    joined = []
    for i, m in enumerate(wave):
        joined.append((start_member(s, rng, m, at + 0.01 * i) + 0.05, m))
    joined.sort()
    logged = []
    for i, (t, m) in enumerate(joined):
        logged.append(join_lines(s, m, t, i == 0))
        s.held[m] = []
    return reassign(s, rng, logged[-1] + 0.01, joined[0][1], logged[0] + 0.003)


def stop_members(s: Story, rng: random.Random, leavers: list[str], at: float) -> tuple[float, float, float]:
    """The harness stops `leavers` together from `at` (SIGTERM to each); each commits, revokes what it holds and
    leaves; returns (the first leave line, the last, the last exit)."""
    lines, last_exit = [], at
    for i, m in enumerate(leavers):
        stop = at + 0.0005 * i
        s.emit("harness", stop, "member_stop", member=m)
        s.lives[m][1] = stop
        s.take(m, list(s.held[m]), stop + 0.06)
        del s.held[m]
        s.emit(m, stop + 0.07, "stopped", member=m, reason="sigterm")
        line = stop + 0.075
        if s.shape.protocol == "consumer":
            line = bump_lines(s, line, f"Member {s.ids[m]} left the consumer group.")
        else:
            line = s.handled(line)
            s.broker(line, f"[Group {s.group}] Member {s.ids[m]} has left group through explicit `LeaveGroup` "
                           f"request; client reason: not provided")
        exit_at = stop + 0.17 + rng.uniform(0, 0.02)
        s.emit("harness", exit_at, "member_exit", member=m, how="graceful", code=0)
        lines.append(line)
        last_exit = max(last_exit, exit_at)
    return lines[0], lines[-1], last_exit


def empty_lines(s: Story, first: str, first_leave: float, last_leave: float) -> None:
    """A classic group whose members all leave: the first leave prepares a generation no one rejoins."""
    if s.shape.protocol == "consumer":
        return
    s.broker(first_leave + 0.0005, f"Preparing to rebalance group {s.group} in state PreparingRebalance with old "
                                   f"generation {s.generation} (reason: explicit `LeaveGroup` request for "
                                   f"({s.ids[first]}) members.).")
    s.generation += 1
    s.broker(last_leave + 0.001, f"Group {s.group} with generation {s.generation} is now empty.")


def watch_answers(s: Story, interval_s: float = 0.5) -> None:
    """The coordinator's answers as the runner's group watch writes them (`group_assignment`, only on a change):
    sampled every `interval_s` from the first member's start to the last exit, each member alive then listed with
    the partitions it holds (the coordinator gives before its member holds and takes back before it revokes, so a
    sample of the holdings lists each holding in the answer after its start), and a last, blind event when the
    watch stops."""
    first = min(start for start, _ in s.lives.values())
    t, last, since = first, None, first
    group_type = "consumer" if s.shape.protocol == "consumer" else "classic"
    while t <= s.end:
        held: dict[str, list[int]] = {m: [] for m, (start, stop) in s.lives.items()
                                      if start <= t and (stop is None or t < stop + 0.1)}
        for p, owners in s.owners.items():
            for m, a, r in owners:
                if a <= t and (r is None or t < r) and m in held:
                    held[m].append(p)
        members = [{"member": m, "consumer_id": s.ids[m], "instance_id": None, "partitions": s.tps(ps)}
                   for m, ps in sorted(held.items())]
        if members != last:
            s.emit("harness", t, "group_assignment", members=members, group_type=group_type, state="stable",
                   asked_mono=round(t - 0.003, 6), interval_s=interval_s, error=None,
                   longest_gap_s=round(min(interval_s, t - since), 3) if last is not None else None)
            last = members
        since = t
        t += interval_s
    s.emit("harness", s.end + 0.005, "group_assignment", members=None, group_type=group_type, state="unknown",
           asked_mono=round(s.end + 0.004, 6), interval_s=interval_s, longest_gap_s=interval_s, error=None,
           stopped=True)
