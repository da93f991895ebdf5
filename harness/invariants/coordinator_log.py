"""The group coordinator's own account of each rebalance, read from its log lines (the `broker` events).

Both coordinators say when they start a new generation or group epoch and why; `rebalance_cause` matches each of
those with a cause in the members' histories. This module only reads the lines (Kafka 4.x's group coordinator,
`GroupMetadataManager` and the classic group's `ClassicGroup` code paths; the wording is quoted in the patterns):

- classic protocol: `Preparing to rebalance group G in state S with old generation N (__consumer_offsets-P)
  (reason: R)`. R names the member and what it did: `Adding new member M with group instance id I; client reason:
  C` (a join; C `need to re-join with the given member-id` is the second half of the same join, KIP-394),
  `Updating metadata for member M during Stable; client reason: C` and `Leader M re-joining group during Stable;
  client reason: C` (a member rejoining: its subscription or metadata changed, or the cooperative protocol's second
  round, C `need to revoke partitions and re-join`), `removing member M on heartbeat expiration` (its session
  expired), `explicit \\`LeaveGroup\\` request for (...)` (it left; Kafka 3.x's Scala coordinator: `Removing member M on
  LeaveGroup; client reason: C`, one member a line).
- consumer protocol: `Bumped group epoch to N with metadata hash H` (4.1 on; before, `Computed a new target
  assignment for epoch N`), after the lines that say why: `Member M joins the consumer group ...`, `Member M left
  the consumer group.`, `Member M fenced from the group because the member session expired.`, `Static member M with
  instance id I temporarily left ...` / `... joins ...` / `... re-joins ...`, `Member M fenced from the group because
  it failed to transition from epoch N within T ms` (it did not revoke within its rebalance timeout), `Member M
  updated its subscribed topics to: ...`, `Computed new metadata hash: H` (the subscribed topics' partitions or racks
  changed), `Scanned N topics to refresh regular expressions`. An epoch bumped with none of these before it is
  `unstated`: Kafka 4.x logs a member's subscription change only at DEBUG.

A coordinator that lost its partition of `__consumer_offsets` without knowing it yet (cut off from the controller,
while another broker loaded the partition at a newer leader epoch) goes on expiring and fencing members in its own
memory until it learns; its writes fail and no member talks to it. Its lines are not the group's: a line of a broker
whose last load of the group's partition (`Scheduling loading of metadata from __consumer_offsets-P with epoch E`)
is older than another broker's is marked `deposed` and read for nothing else (seen on the docker backend: broker 3,
cut off for 17 s, fenced the three members 6 s after broker 1 took the group over and went on until it learnt 20 s
after the heal).

A member is named by its group member id: the classic coordinator makes it `<client.id>-<uuid>` (the harness sets
client.id to the member's own name; a static member's starts with its instance id), the consumer protocol's client
draws a random one (`rebalance_cause` tells whose it is from its first join).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness.invariants import brokers

#: the classic coordinator starting a new generation, and its reason
PREPARING = re.compile(r"Preparing to rebalance group (?P<group>\S+) in state \w+ with old generation (?P<gen>\d+) "
                       r"(\(__consumer_offsets-\d+\) )?\(reason: (?P<reason>.*)\)\.?\s*$")
STABILIZED = re.compile(r"Stabilized group (?P<group>\S+) generation (?P<gen>\d+)")
#: the classic reasons (Kafka's ClassicGroup / GroupMetadataManager wording)
CLASSIC_REASONS = (
    ("join", re.compile(r"Adding new member (?P<m>\S+) with group instance id (?P<i>\S+); client reason: (?P<c>.*)")),
    ("rejoin", re.compile(r"Updating metadata for member (?P<m>\S+) during \w+; client reason: (?P<c>.*)")),
    ("rejoin", re.compile(r"Leader (?P<m>\S+) re-joining group during \w+; client reason: (?P<c>.*)")),
    ("expire", re.compile(r"removing member (?P<m>\S+) on heartbeat expiration")),
    ("leave", re.compile(r"explicit `LeaveGroup` request for \((?P<c>.*)")),
    # Kafka 3.x's GroupCoordinator (Scala): one member per line
    ("leave", re.compile(r"Removing member (?P<m>\S+) on LeaveGroup; client reason: (?P<c>.*)")),
    # a consumer group whose last consumer-protocol member departs converted to a classic one (KIP-848's online
    # downgrade, GroupMetadataManager): the member is not named
    ("downgrade", re.compile(r"Downgrade group \S+ from consumer to classic for member (?P<c>.*)")),
)
#: the consumer protocol's epoch bump, and the lines that give its cause
BUMPED = re.compile(r"\[GroupId (?P<group>[^\]]+)\] (Bumped group epoch to (?P<epoch>\d+) |"
                    r"Computed a new target assignment for epoch (?P<epoch2>\d+) )")
CONSUMER_CAUSES = (
    ("join", re.compile(r"\] Member (?P<m>\S+) joins the consumer group")),
    ("join", re.compile(r"\] Static member (?P<m>\S+) with instance id (?P<i>\S+) joins the consumer group")),
    ("join", re.compile(r"\] Static member with instance id (?P<i>\S+) re-joins the consumer group.*? Created a new "
                        r"member (?P<m>\S+) to replace the existing member (?P<old>[^\s.]+)")),
    ("leave", re.compile(r"\] Member (?P<m>\S+) left the consumer group")),
    ("leave", re.compile(r"\] Static member (?P<m>\S+) with instance id (?P<i>\S+) temporarily left")),
    ("expire", re.compile(r"\] Member (?P<m>\S+) fenced from the group because the member session expired")),
    ("fence", re.compile(r"\] Member (?P<m>\S+) fenced from the group because it failed to transition from epoch "
                         r"(?P<c>\d+)")),
    ("subscription", re.compile(r"\] Member (?P<m>\S+) updated its subscribed topics")),
    ("metadata", re.compile(r"\] Computed new metadata hash")),
    ("metadata", re.compile(r"\] Scanned \d+ topics to refresh regular expressions")),
)
#: the metadata hash a consumer-protocol epoch was bumped with (Kafka 4.1 on; 0: none of the subscribed topics was in
#: the coordinator's metadata image)
HASH = re.compile(r"Bumped group epoch to \d+ with metadata hash (?P<hash>-?\d+)")
#: the classic coordinator removing a member that did not rejoin in time (no new generation by itself)
REMOVED = re.compile(r"Member (?P<m>\S+) in group \S+ has failed, removing it from the group")
#: a classic member id: the client.id, a dash, a UUID
CLASSIC_ID = re.compile(r"^(?P<client>.+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
MEMBER_ID_IN = re.compile(r"memberId=(?P<m>[^,)]+)")
#: a coordinator loading a partition of __consumer_offsets at a partition leader epoch (Kafka 4.x)
LOADING = re.compile(r"\[GroupCoordinator id=(?P<b>\d+)\] (?:Scheduling|Finished) loading of metadata from "
                     r"__consumer_offsets-(?P<p>\d+) with epoch (?P<e>\d+)")
#: the partition of __consumer_offsets a group line is about (Kafka 4.x's log context)
PARTITION_OF = re.compile(r"\[GroupCoordinator id=\d+ topic=__consumer_offsets partition=(?P<p>\d+)\]")
INSTANCE_IN = re.compile(r"groupInstanceId=(?P<i>[^,)]+)")


@dataclass(frozen=True)
class Cause:
    """What the coordinator said started a generation or epoch: `kind` (join, rejoin, leave, expire, fence,
    subscription, metadata, unstated), the group member id and instance id it names (None when it names none), its client's reason."""

    kind: str
    member_id: str | None
    instance_id: str | None
    client_reason: str
    event: dict
    replaces: str | None = None  # a static member's new id taking the place of its old one (consumer protocol)


@dataclass
class Bump:
    """One new generation (classic) or group epoch (consumer protocol), at `mono`, with the causes the coordinator
    gave for it (none: it gave none that these patterns read)."""

    mono: float
    protocol: str  # classic | consumer
    number: int  # the new generation or epoch
    event: dict
    causes: list[Cause] = field(default_factory=list)
    deposed: str | None = None  # why its broker was no longer the group's coordinator (its bumps are not the group's)


def _null(v: str | None) -> str | None:
    return None if v in (None, "null", "Optional.empty", "") else v


def classic_bump(e: dict, m: re.Match) -> Bump:
    reason = m["reason"]
    bump = Bump(e["mono"], "classic", int(m["gen"]) + 1, e)
    for kind, pat in CLASSIC_REASONS:
        r = pat.search(reason)
        if r is None:
            continue
        d = r.groupdict()
        if kind == "leave" and "m" not in d:  # (M1, M2) members, or (memberId=..., groupInstanceId=..., reason: ...)
            ids, insts = MEMBER_ID_IN.findall(reason), INSTANCE_IN.findall(reason)
            if not ids:
                ids = [x.strip() for x in re.split(r"[,\s]+", d["c"].split(")")[0]) if x.strip()]
            for k, mid in enumerate(ids or [None]):
                bump.causes.append(Cause("leave", _null(mid), _null(insts[k] if k < len(insts) else None), reason, e))
        else:
            bump.causes.append(Cause(kind, _null(d.get("m")), _null(d.get("i")), d.get("c") or "", e))
        break
    return bump


def metadata_hash(b: Bump) -> int | None:
    """The metadata hash the coordinator logged with an epoch bump (None: not logged, a classic generation, or before
    Kafka 4.1)."""
    m = HASH.search(b.event.get("message") or "")
    return int(m["hash"]) if m else None


def bumps(lines: list[dict], group: str) -> list[Bump]:
    """Every new generation or epoch of `group` the coordinators logged, in time order, each with its causes (a line
    of a deposed coordinator gives a Bump marked `deposed`, and no cause to any other)."""
    out: list[Bump] = []
    pending: dict[object, list[Cause]] = {}  # per broker: a cause line belongs to that broker's next bump
    last: dict[object, Bump] = {}
    loads = _Loads()
    for e in sorted(lines, key=lambda x: x["mono"]):
        text = e.get("message") or ""
        if loads.read(e, text) or group not in text:
            continue
        b = e.get("broker")
        deposed = loads.deposed(b, text)
        if (m := PREPARING.search(text)) and m["group"] == group:
            out.append(classic_bump(e, m))
            out[-1].deposed = deposed
            continue
        if (m := BUMPED.search(text)) and m["group"] == group:
            number = int(m["epoch"] or m["epoch2"])
            if b in last and last[b].protocol == "consumer" and last[b].number == number:
                continue  # "Computed a new target assignment" after its own "Bumped group epoch"
            causes = pending.pop(b, None) or [Cause("unstated", None, None, "", e)]
            last[b] = Bump(e["mono"], "consumer", number, e, causes, deposed)
            out.append(last[b])
            continue
        for kind, pat in CONSUMER_CAUSES:
            if r := pat.search(text):
                d = r.groupdict()
                pending.setdefault(b, []).append(
                    Cause(kind, _null(d.get("m")), _null(d.get("i")), d.get("c") or "", e, _null(d.get("old"))))
                break
    return out


class _Loads:
    """Which broker last loaded each partition of __consumer_offsets, at which partition leader epoch."""

    def __init__(self) -> None:
        self.epochs: dict[int, dict[object, int]] = {}  # partition -> broker -> the newest epoch it loaded at

    def read(self, e: dict, text: str) -> bool:
        """Take a loading line (True), else False."""
        m = LOADING.search(text)
        if m is None:
            return False
        p, b, epoch = int(m["p"]), int(m["b"]), int(m["e"])
        held = self.epochs.setdefault(p, {})
        if epoch > held.get(b, -1):
            held[b] = epoch
        return True

    def deposed(self, broker, text: str) -> str | None:
        """Why the broker that logged this group line was no longer the coordinator of its partition, else None."""
        m = PARTITION_OF.search(text) or re.search(r"\(__consumer_offsets-(?P<p>\d+)\)", text)
        if m is None or broker is None:
            return None
        held = self.epochs.get(int(m["p"]), {})
        mine = held.get(broker)
        newer = [(e, b) for b, e in held.items() if b != broker and mine is not None and e > mine]
        if not newer:
            return None
        epoch, other = max(newer)
        return f"broker {broker} loaded __consumer_offsets-{m['p']} at leader epoch {mine}, broker {other} at {epoch}"


def offsets_loads(history) -> list[tuple[float, int, int]]:
    """(mono, broker, leader epoch) of each broker's finished load of the run's group's partition of
    __consumer_offsets (the broker-log header's `offsets_partition`), in time order; empty when the history does not
    name that partition."""
    part = next((h.get("offsets_partition") for h in history.headers if h.get("source") == "broker-log"), None)
    if part is None:
        return []
    return sorted((e["mono"], int(m["b"]), int(m["e"])) for e in brokers.said(history) if "mono" in e and
                  (m := LOADING.search(str(e.get("message")))) and "Finished" in m[0] and int(m["p"]) == part)


def deposed_at(loads: list[tuple[float, int, int]], broker, t: float) -> str | None:
    """Why the broker that answered at t (an answer's `coordinator`) had been deposed by then, else None: another
    broker had loaded the group's partition of __consumer_offsets at a newer leader epoch than its own last load (a
    broker cut off from the others goes on answering its stale record: in `harness matrix`, rack-partition on Kafka
    4.4.0, broker 3 answered the group empty for 20 s while broker 1, which had loaded it, ran its generation 2)."""
    if not isinstance(broker, int):
        return None
    mine = max((e for at, b, e in loads if b == broker and at <= t), default=None)
    newer = [(e, b, at) for at, b, e in loads if b != broker and mine is not None and e > mine and at <= t]
    if not newer:
        return None
    epoch, other, at = max(newer)
    return f"broker {broker} had loaded the group's partition of __consumer_offsets at leader epoch {mine}, broker " \
           f"{other} at {epoch}"


def client_of(member_id: str | None) -> str | None:
    """The client.id a classic member id starts with (the harness's member name), or None."""
    m = CLASSIC_ID.match(member_id or "")
    return m["client"] if m else None
