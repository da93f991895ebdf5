"""What a known finding's bug leaves in a run's history (harness/findings/registry.py): its marks.

A finding names the invariants it fails; that alone would excuse any failure of those invariants in its scenario.
Each evidence function reads the run's history for the bug itself and returns one `Mark` per place it shows: the
member it struck, the partitions (and, where the bug is about records, the records) it held, and the time window
on the history's monotonic clock while the bug acted. harness/findings/match.py then asks that every witness of
every failing verdict lie inside a mark. Only members that ran librdkafka are read (their `started` events name
their client); a member whose history names no client (a team's own program, a start never written) is not read: it
may run anything, and no client's bug explains it. Read from the history files directly (small: it runs only on
a failed run that matched the rest).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from harness.record.format import HistoryFormatError, read_file
from harness.record.history import History
from harness.invariants.coordinator_log import client_of
from harness.invariants.settings import group_value, latest_at
from harness.record.rundir import BROKERS_HISTORY, HARNESS_HISTORY, HISTORY, LOGS, member_histories, member_log

#: what a member's history says about its assignment: after one of these it has heard from the group
HEARD = frozenset({"assigned", "revoked", "lost", "started", "stopped"})
#: the client library of the findings with evidence about librdkafka (a member's `started` event names its client)
LIBRARY = "librdkafka"
#: the Java member's client, as its `started` event names it (harness/members/java/Member.java)
JAVA_LIBRARY = "apache-kafka-java"


@dataclass(frozen=True)
class Mark:
    """One place a bug shows in a history: who it struck, what they held, and when (monotonic seconds)."""

    members: frozenset[str]
    partitions: frozenset[tuple[str, int]]
    start: float
    end: float
    says: str  # what the history shows, with its times
    records: frozenset[tuple[str, int, int]] = frozenset()  # (topic, partition, offset): a bug about records
    held_from: float | None = None  # when the members were given the partitions they held as it began
    #: the faults that struck the member (their start names it: a request fault on its requests, or a partition that
    #: cut it off, `members_affected`) and ended while it held them,
    #: by fault_id: the bug's trigger, which may end just before the window (its last word came after the fault)
    faults: frozenset[str] = frozenset()

    def to_dict(self) -> dict:
        return {"members": sorted(self.members), "partitions": sorted(map(list, self.partitions)),
                "records": sorted(map(list, self.records)), "start": self.start, "end": self.end,
                "held_from": self.held_from, **({"faults": sorted(self.faults)} if self.faults else {}),
                "says": self.says}


def _tps(e: dict) -> set[tuple[str, int]]:
    return {(t, int(p)) for t, p, *_ in e.get("partitions") or e.get("offsets") or ()}


def _members(run_dir: str | Path, library: str = LIBRARY) -> list[tuple[str, list[dict]]]:
    """(member id, its events) of every member history whose `started` events name `library`'s client, each of
    them (a history that names none is not read: the module docstring)."""
    out = []
    for path in member_histories(Path(run_dir) / HISTORY):
        try:
            events = read_file(path)[1]
        except (OSError, HistoryFormatError):
            continue
        clients = {str(e.get("client") or (e.get("effective") or {}).get("client") or "")
                   for e in events if e.get("type") == "started"} - {""}
        if clients and all(library in c for c in clients) and events:
            out.append((str(events[0].get("member") or path.stem), events))
    return out


def _control(run_dir: str | Path) -> list[dict] | None:
    try:
        return read_file(Path(run_dir) / HISTORY / HARNESS_HISTORY)[1]
    except (OSError, HistoryFormatError):
        return None


def program_starts(run_dir: str | Path) -> list[dict]:
    """The `member_start` events of members that ran a team's own program (their `program`)."""
    return [e for e in _control(run_dir) or () if e.get("type") == "member_start" and e.get("program")]


def run_seconds(run_dir: str | Path):
    """How a time of the history reads in a mark's words: seconds from the run's start (its `run_start`), as the
    verdicts say them; a history without one keeps the monotonic clock, said so."""
    start = History.from_events(_control(run_dir) or []).run_start()
    t0 = start.get("mono") if start else None
    return (lambda t: f"{t - t0:.1f} s") if t0 is not None else (lambda t: f"{t:.3f} (monotonic)")


def member_ids(run_dir: str | Path) -> dict[str, str]:
    """The group's member ids (as the brokers name members) of each member, from the harness's `group_assignment`
    events: {member id: member}; empty without them."""
    out: dict[str, str] = {}
    for e in _control(run_dir) or ():
        for m in (e.get("members") or ()) if e.get("type") == "group_assignment" else ():
            if isinstance(m, dict) and isinstance(m.get("member"), str) and isinstance(m.get("consumer_id"), str) \
                    and m["consumer_id"]:
                out[m["consumer_id"]] = m["member"]
    return out


def commits_refused_unheard(run_dir: str | Path) -> list[Mark]:
    """librdkafka-848-commit-starves-heartbeat's mark: a consumer-protocol member whose commits the group refused
    with UNKNOWN_MEMBER_ID for longer than its session timeout (the group's, as recorded) without hearing from the
    group meanwhile (no assigned, revoked or lost). A member's heartbeat would tell it within a heartbeat interval
    that it was fenced: the members that pass write `lost` at their first refused commit (docs/findings.md).
    The mark: that member and the partitions it held, from its last word from the group before the refusals (its
    last successful commit or assignment change: the group could have fenced it only after that) to the event
    that ended them (its `lost`, `revoked` or stop; else its last event), with the faults that struck that
    member (by name: `member` or `members_affected`) and ended while it held them (`Mark.faults`: the failed
    heartbeats that got it fenced, the partition that cut it off). A commit the group took ends the refusals as well (the mark then ends at the last refused one): a fenced member's commit
    taking effect is a broker's fencing failing, not this bug."""
    control, at = _control(run_dir), run_seconds(run_dir)
    if control is None:
        return []
    settings = [e for e in control if e.get("type") == "group_settings"]
    marks = []
    for member, events in _members(run_dir):
        held: dict[tuple[str, int], float] = {}
        word, streak, then = None, [], ({}, None)
        for e in events + [{"type": "stopped", "mono": events[-1].get("mono", 0.0), "end": True}]:
            kind, t = e.get("type"), e.get("mono")
            if kind == "committed" and not e.get("ok") and "UNKNOWN_MEMBER_ID" in str(e.get("error")):
                if not streak:
                    then = (dict(held), word)
                streak.append(e)
                continue
            ok = kind == "committed" and e.get("ok")
            if kind in HEARD or ok:  # a commit the group took ends it too: the member was not fenced
                until = {**streak[-1], "type": "last refused commit"} if ok and streak else e
                if (m := _livelock(member, streak, settings, *then, until, at)) is not None:
                    marks.append(m)
                streak = []
            if kind == "assigned":
                held.update({tp: t for tp in _tps(e) if tp not in held})
            elif kind in ("revoked", "lost"):
                for tp in _tps(e):
                    held.pop(tp, None)
            if kind in HEARD - {"stopped"} or ok:
                word = t
    return [replace(m, faults=_own_faults(control, m)) for m in marks]


def _own_faults(control: list[dict], mark: Mark) -> frozenset[str]:
    """The faults whose start names the mark's member (as `member`, or in `members_affected`) that ended between the
    time it was given the partitions and the mark's end."""
    own = {e.get("fault_id") for e in control if e.get("type") == "fault_start" and (
        e.get("member") in mark.members or mark.members & set(e.get("members_affected") or ()))}
    lo = mark.held_from if mark.held_from is not None else mark.start
    return frozenset(e["fault_id"] for e in control if e.get("type") == "fault_end" and e.get("fault_id") in own
                     and isinstance(e.get("mono"), (int, float)) and lo <= e["mono"] <= mark.end)


def _livelock(member, streak, settings, held, word, until, at) -> Mark | None:
    if len(streak) < 2:
        return None
    first, last = streak[0], streak[-1]
    ms, source = group_value(latest_at(settings, first["mono"]), "consumer", "session")
    if ms is None or last["mono"] - first["mono"] <= ms / 1000 or not held:
        return None
    ended = "until its last event" if until.get("end") else f"until its {until['type']} at {at(until['mono'])}"
    says = (f"{member}'s commits refused with UNKNOWN_MEMBER_ID {len(streak)} times over "
            f"{last['mono'] - first['mono']:.1f}s without a word from the group (longer than its session timeout, "
            f"{source}), holding {_names(held)} {ended}")
    start = word if word is not None else min(held.values())
    return Mark(frozenset({member}), frozenset(held), start, max(until["mono"], last["mono"]), says,
                held_from=min(held.values()))


def _refused_generation(e: dict) -> bool:
    return e.get("type") == "committed" and not e.get("ok") and "ILLEGAL_GENERATION" in str(e.get("error"))


def illegal_generation_lost(run_dir: str | Path) -> list[Mark]:
    """librdkafka-4059-commit-during-cooperative-rebalance's mark: a member's commit refused with
    ILLEGAL_GENERATION and, at once (before any other event of that member but an empty assignment), its whole
    assignment `lost`: the client took a commit racing a second join for a lost assignment and rejoined, a rebalance
    nothing drove. The mark: that member and the partitions it lost and was committing, from the batch the first
    refused commit of that streak was for (its `processed` events since the commit before it was asked: the refusals
    since the member was last given partitions, across the cooperative first round's revoke, are one race; that
    revoke, the rebalance's start, is in the mark with its partitions) to its next assignment (it rejoined)."""
    at = run_seconds(run_dir)
    marks = []
    for member, events in _members(run_dir):
        held: dict[tuple[str, int], float] = {}
        for i, e in enumerate(events):
            if e.get("type") == "assigned":
                held.update({tp: e["mono"] for tp in _tps(e) if tp not in held})
            elif e.get("type") in ("revoked", "lost"):
                for tp in _tps(e):
                    held.pop(tp, None)
            j = next((k for k in range(i + 1, len(events))
                      if not (events[k].get("type") == "assigned" and not _tps(events[k]))), None)
            if not _refused_generation(e) or j is None or events[j].get("type") != "lost":
                continue
            nxt, first, revoke = events[j], i, None
            for k in range(i - 1, -1, -1):  # back over the streak: refusals, batches and the cooperative first
                ty = events[k].get("type")  # round's revoke (empty assignment) of the rebalance it raced; not past
                if ty == "lost" or (ty == "assigned" and _tps(events[k])):  # a loss or a new assignment
                    break
                if _refused_generation(events[k]):
                    first = k
                elif ty == "revoked" and revoke is None:  # the latest: the first round of the rebalance it raced
                    revoke = events[k]
            asked = events[first].get("requested_mono", events[first]["mono"])
            before = max((x.get("requested_mono", x["mono"]) for x in events[:first] if x.get("type") == "committed"
                          and x.get("requested_mono", x["mono"]) < asked), default=float("-inf"))
            batch = [x["mono"] for x in events[:first] if x.get("type") == "processed" and x["mono"] <= asked]
            batch = [t for t in batch if t > before] or batch[-1:]  # every event of the batch it was for
            back = next((x["mono"] for x in events[j + 1:] if x.get("type") == "assigned" and _tps(x)),
                        events[-1]["mono"])
            parts = _tps(nxt) | {tp for x in events[first:i + 1] if _refused_generation(x) for tp in _tps(x)}
            if revoke is not None:  # the rebalance the refused commits raced began with it
                parts |= _tps(revoke)
                batch.append(revoke["mono"])
            says = (f"{member}'s commit refused with ILLEGAL_GENERATION at {at(e['mono'])}"
                    + (f" ({sum(map(_refused_generation, events[first:i + 1]))} refusals from "
                       f"{at(events[first]['mono'])})" if first < i else "")
                    + f", then its assignment ({_names(parts)}) lost at {at(nxt['mono'])}")
            marks.append(Mark(frozenset({member}), frozenset(parts), min(batch, default=asked), back, says,
                              held_from=min((held[tp] for tp in parts if tp in held), default=None)))
    return marks


#: the group coordinator's line when the group's target moves (a member joined, left or changed its subscription)
EPOCH_BUMP = "Bumped group epoch to"


def first_assignment_given_away(run_dir: str | Path) -> list[Mark]:
    """librdkafka-848-first-assignment-given-away's mark: a member's first assignment since it joined, superseded
    before the member took it, whose partitions its very next assignment change revokes. librdkafka heartbeats from
    join state INIT while that assignment waits for the topic's metadata, with an empty owned-partitions list at the
    assignment's epoch; a coordinator whose target moved meanwhile takes the empty list for the revocation done and
    gives the partitions to others, while the member goes on to hand the superseded assignment to the application
    and revokes it at its next reconciliation (docs/findings.md). Superseded: the coordinator logged a new group
    epoch (`Bumped group epoch`) besides the member's own joining between the member's `started` and its first
    `assigned` (two epochs: its own and a later one), or any since the `lost` it rejoined after (a rejoin keeps its
    member id and bumps none). The mark: that member and the partitions revoked, from the assignment to the
    revocation; the members given them meanwhile are the coordinator giving them away. A revocation after the runner
    stopped the member is its leaving, not the mark; a history without the coordinator's lines has no mark. The
    history records no heartbeat: the member's debug log (`debug=cgrp`) shows the empty list."""
    at = run_seconds(run_dir)
    try:
        lines = read_file(Path(run_dir) / HISTORY / BROKERS_HISTORY)[1]
    except (OSError, HistoryFormatError):
        return []
    bumps = sorted(e["mono"] for e in lines if EPOCH_BUMP in str(e.get("message")) and "mono" in e)
    stops = [(e.get("member"), e["mono"]) for e in _control(run_dir) or () if e.get("type") == "member_stop"]
    marks = []
    for member, events in _members(run_dir):
        stop = min((t for m, t in stops if m == member), default=float("inf"))  # revocations after it: its leaving
        held: set[tuple[str, int]] = set()
        joined = (events[0].get("mono", 0.0), 2)  # (since when it joins, the epochs that make its target stale)
        first = None  # its first assignment since it joined, when superseded, until its next assignment change
        for e in events:
            kind, parts = e.get("type"), _tps(e)
            if kind not in ("assigned", "revoked", "lost") or not parts:
                continue
            gone = parts & _tps(first) if first is not None and kind == "revoked" and e["mono"] < stop else set()
            if gone:
                marks.append(Mark(frozenset({member}), frozenset(gone), first["mono"], e["mono"],
                                  f"{member}'s first assignment since it joined ({_names(_tps(first))}) at "
                                  f"{at(first['mono'])}, the group's target moved before it, its next change revoking "
                                  f"{_names(gone)} at {at(e['mono'])}", held_from=first["mono"]))
            stale = joined is not None and sum(joined[0] < b < e["mono"] for b in bumps) >= joined[1]
            first = e if kind == "assigned" and stale else None
            held = held | parts if kind == "assigned" else held - parts
            joined = (e["mono"], 1) if kind == "lost" and not held else None
    return marks


#: the coordinator fencing a consumer-protocol member that did not move off an epoch within its rebalance timeout
FENCED_IN_TRANSITION = "fenced from the group because it failed to transition from epoch"
#: how long after the member learnt it was fenced (its `lost`) the group's handing over is still the mark's
HANDOVER_S = 1.0


#: librdkafka's notice that a ConsumerGroupHeartbeat went unanswered within its timeout (logged without debug)
HEARTBEAT_TIMED_OUT = re.compile(r"^%\d\|(?P<wall>\d+(\.\d+)?)\|REQTMOUT\|.*Timed out ConsumerGroupHeartbeatRequest")


def heartbeats_timed_out(run_dir: str | Path, member: str, events: list[dict]) -> list[float]:
    """When the member's own log (`logs/member-<id>.log`) says a ConsumerGroupHeartbeat of its timed out at the
    client, on the history's monotonic clock (its events pair the wall clock with it); none without the log."""
    return _log_times(run_dir, member, events, HEARTBEAT_TIMED_OUT)


def _log_times(run_dir: str | Path, member: str, events: list[dict], pattern: re.Pattern) -> list[float]:
    """When the member's own log (`logs/member-<id>.log`) has a line `pattern` matches (its `wall` group), on the
    history's monotonic clock (its events pair the wall clock with it); none without the log."""
    ref = next((e for e in events if "wall" in e and "mono" in e), None)
    try:
        text = member_log(Path(run_dir) / LOGS, member).read_text(errors="replace") if ref else ""
    except OSError:
        return []
    shift = ref["mono"] - ref["wall"] if ref else 0.0
    return [float(m["wall"]) + shift for line in text.splitlines() if (m := pattern.match(line))]


def first_assignment_never_reconciled(run_dir: str | Path) -> list[Mark]:
    """librdkafka-848-first-assignment-not-reconciled's mark: a member that kept its first assignment since it joined
    (the first of its life, or the first after a `lost`: librdkafka rejoins from the same join state) unchanged (no
    revocation, no new assignment) until it learnt it was fenced (its `lost`), with the coordinator's line fencing a
    member for not moving off an epoch within its rebalance timeout between the two, and no fault touching that
    member (aimed at it, or at no member: a broker's) started meanwhile: the member went on polling while the
    group's target had moved, never revoked, and the coordinator gave its partitions away at the fence
    (docs/findings.md). The mark: that member and its partitions, from the assignment to HANDOVER_S after its
    `lost`; the members given them are the coordinator giving them away. Its account names the heartbeats the
    member's log says timed out at the client meanwhile: the answer that moved it lost so (docs/findings.md)."""
    at = run_seconds(run_dir)
    try:
        lines = read_file(Path(run_dir) / HISTORY / BROKERS_HISTORY)[1]
    except (OSError, HistoryFormatError):
        return []
    fences = sorted(e["mono"] for e in lines if FENCED_IN_TRANSITION in str(e.get("message")) and "mono" in e)
    faults = [e for e in _control(run_dir) or () if e.get("type") == "fault_start"]
    marks = []
    for member, events in _members(run_dir):
        moves = [e for e in events if e.get("type") in ("assigned", "revoked", "lost") and _tps(e)]
        touched = [e["mono"] for e in faults if member in (e.get("members_affected") or [member])]
        for i, (got, lost) in enumerate(zip(moves, moves[1:])):
            joined = not any(e["type"] == "assigned" for e in moves[:i]) or moves[i - 1]["type"] == "lost"
            if got["type"] != "assigned" or lost["type"] != "lost" or not joined or not _tps(got) <= _tps(lost) \
                    or any(got["mono"] <= t <= lost["mono"] for t in touched):
                continue
            if fenced := [t for t in fences if got["mono"] < t <= lost["mono"]]:
                timed_out = [t for t in heartbeats_timed_out(run_dir, member, events) if got["mono"] < t < fenced[0]]
                why = (f"; its log: {len(timed_out)} heartbeat request(s) timed out at the client meanwhile, the "
                       f"first at {at(timed_out[0])}") if timed_out else ""
                marks.append(Mark(frozenset({member}), frozenset(_tps(got)), got["mono"], lost["mono"] + HANDOVER_S,
                                  f"{member} held its first assignment since it joined ({_names(_tps(got))}) from "
                                  f"{at(got['mono'])}, unchanged, until it learnt at {at(lost['mono'])} that it was "
                                  f"fenced; the coordinator fenced a member for not moving off an epoch at "
                                  f"{at(fenced[0])}{why}", held_from=got["mono"]))
    return marks


#: the classic coordinator's line for a member's LeaveGroup
LEFT = re.compile(r"Member (?P<m>\S+) has left group through explicit `LeaveGroup` request")


def left_before_revoking(run_dir: str | Path) -> list[Mark]:
    """librdkafka-close-leaves-before-revoking's mark: a classic member the runner stopped (`member_stop`) whose
    LeaveGroup the coordinator logged before the member's revocation of the partitions it held (its first `revoked`
    after the stop): closed while a rebalance was under way, librdkafka sent the LeaveGroup at once and served the
    revoke callback after it, so the coordinator could give the partitions to others while the application still
    held them in its handler (docs/findings.md). The mark: that member and the partitions revoked, from its leave to
    its revocation (held from when it was given them); the members given them meanwhile are the coordinator's
    giving them away. A history without the coordinator's lines has no mark."""
    at = run_seconds(run_dir)
    try:
        lines = read_file(Path(run_dir) / HISTORY / BROKERS_HISTORY)[1]
    except (OSError, HistoryFormatError):
        return []
    left = [(client_of(m["m"]), e["mono"]) for e in lines if "mono" in e and (m := LEFT.search(str(e.get("message"))))]
    stops = [(e.get("member"), e["mono"]) for e in _control(run_dir) or () if e.get("type") == "member_stop"]
    marks = []
    for member, events in _members(run_dir):
        for stop in (t for m, t in stops if m == member):
            revoked = next((e for e in events if e.get("type") == "revoked" and e["mono"] >= stop and _tps(e)), None)
            leave = min((t for m, t in left if m == member and stop <= t), default=None)
            if revoked is None or leave is None or leave >= revoked["mono"]:
                continue
            parts = _tps(revoked)
            given = [e["mono"] for e in events if e.get("type") == "assigned" and e["mono"] <= leave
                     and _tps(e) & parts]
            marks.append(Mark(frozenset({member}), frozenset(parts), leave, revoked["mono"],
                              f"{member}, stopped at {at(stop)}, left the group at {at(leave)} (the coordinator's "
                              f"line) and revoked {_names(parts)} only at {at(revoked['mono'])}",
                              held_from=min(given) if given else leave))
    return marks


def batch_skipped_at_rebalance(run_dir: str | Path) -> list[Mark]:
    """librdkafka-2.0-batch-skip's mark: a member that held a partition throughout, whose two batches of it in a row
    leave offsets out, with an `assigned` of that member (an incremental rebalance that left it the partition)
    between them: the records fetched into the batch being filled at the rebalance's pause, dropped and never
    fetched again (docs/findings.md). The mark: that member, the partition and the offsets left out, from the
    first batch to the second. A gap inside one batch, or one after the partition left the member, is not it."""
    at = run_seconds(run_dir)
    marks = []
    for member, events in _members(run_dir):
        last: dict[tuple[str, int], tuple[int, float]] = {}  # partition -> (last offset processed, when)
        rebalanced: set[tuple[str, int]] = set()  # partitions an `assigned` left this member since that batch
        for e in events:
            kind = e.get("type")
            if kind == "assigned":
                rebalanced |= set(last)
            elif kind in ("revoked", "lost"):
                for tp in _tps(e):
                    last.pop(tp, None)
                    rebalanced.discard(tp)
            elif kind == "processed" and "first_offset" in e:
                tp = (e["topic"], int(e["partition"]))
                prev = last.get(tp)
                if prev is not None and tp in rebalanced and e["first_offset"] > prev[0] + 1:
                    gap = range(prev[0] + 1, e["first_offset"])
                    marks.append(Mark(frozenset({member}), frozenset({tp}), prev[1], e["mono"],
                                      f"{member} processed {tp[0]}-{tp[1]} up to offset {prev[0]} at {at(prev[1])} "
                                      f"and from {e['first_offset']} at {at(e['mono'])}, an assignment between: "
                                      f"offsets {gap.start}-{gap.stop - 1} skipped",
                                      records=frozenset((tp[0], tp[1], o) for o in gap)))
                last[tp] = (int(e["last_offset"]), e["mono"])
                rebalanced.discard(tp)
    return marks


#: how soon after its connection was closed a member's two deliveries with one count are taken for the finding
RECONNECT_WINDOW_S = 5.0


def share_count_kept_after_reconnect(run_dir: str | Path) -> list[Mark]:
    """share-count-kept-after-reconnect's mark: a share member whose connection a request fault left to be closed
    (the fault's end says `closed`: the client gave it up at its request timeout) was handed one record twice with
    the same delivery count, both within RECONNECT_WINDOW_S after that close: the broker counted one of the two
    deliveries not at all, though the application got both. The mark: that member and that record, from the close
    to the second delivery."""
    at = run_seconds(run_dir)
    control = _control(run_dir)
    if control is None:
        return []
    member_of = {e.get("fault_id"): e.get("member") for e in control if e.get("type") == "fault_start" and e.get("api")}
    closed = [(member_of[e["fault_id"]], e["mono"]) for e in control
              if e.get("type") == "fault_end" and e.get("outcome") == "closed" and member_of.get(e.get("fault_id"))]
    marks = []
    for member, events in _members(run_dir):
        seen: dict = {}
        for e in events:
            if e.get("type") != "share_acquired":
                continue
            key = (e.get("topic"), e.get("partition"), e.get("offset"), e.get("delivery_count"))
            first, seen[key] = seen.get(key), e
            hit = None if first is None else next(((m, t) for m, t in closed if m == member and t <= first["mono"]
                                                   and e["mono"] - t <= RECONNECT_WINDOW_S), None)
            if hit is not None:
                m, t = hit
                marks.append(Mark(frozenset({m}), frozenset({(key[0], key[1])}), t, e["mono"],
                                  f"{m} was handed offset {key[2]} of {key[0]}-{key[1]} twice with delivery count "
                                  f"{key[3]} ({at(first['mono'])}, {at(e['mono'])}), {first['mono'] - t:.3f}s after "
                                  f"its connection was closed at {at(t)}",
                                  records=frozenset({(key[0], key[1], key[2])})))
    return marks


def full_assignment_unrevoked(run_dir: str | Path) -> list[Mark]:
    """librdkafka-848-eager-callbacks's mark: a consumer-protocol member whose `assigned` lists a partition it already
    held: its client handed the rebalance callback its whole new assignment (librdkafka before 2.10.0 serves the
    consumer protocol's callbacks by `partition.assignment.strategy`, eager by default) and took away, with no revoke,
    what that list leaves out. An incremental client never assigns a partition twice. The mark: that member and the
    partitions it was never told it lost, from that `assigned` to its next word about them (revoked, lost) or the end of
    its history (held from when it was given them)."""
    at = run_seconds(run_dir)
    marks = []
    for member, events in _members(run_dir):
        if not any(e.get("type") == "started" and e.get("protocol") == "consumer" for e in events):
            continue
        held: dict[tuple[str, int], float] = {}
        for i, e in enumerate(events):
            kind, parts = e.get("type"), _tps(e)
            if kind in ("revoked", "lost"):
                for tp in parts:
                    held.pop(tp, None)
            if kind != "assigned":
                continue
            dropped = set(held) - parts
            if parts & set(held) and dropped:
                told = [x["mono"] for x in events[i + 1:] if x.get("type") in ("revoked", "lost") and _tps(x) & dropped]
                end = min(told, default=events[-1]["mono"])
                marks.append(Mark(frozenset({member}), frozenset(dropped), e["mono"], end,
                                  f"{member} was assigned {_names(parts)} at {at(e['mono'])} while it held "
                                  f"{_names(held)}: {_names(dropped)} taken away with no revoke",
                                  held_from=min(held[tp] for tp in dropped)))
                for tp in dropped:
                    held.pop(tp)
            held.update({tp: e["mono"] for tp in parts if tp not in held})
    return marks


def records_before_assigned(run_dir: str | Path) -> list[Mark]:
    """kafka-clients-3.7-848-records-before-callback's mark: a consumer-protocol Java member that processed records of
    a partition it did not hold, then an `assigned` (its onPartitionsAssigned) that gave it that partition: the poll
    returned the partition's records before the listener ran, which its contract says runs first (docs/findings.md).
    The mark: that member and those partitions, from the first such batch to that `assigned`."""
    at = run_seconds(run_dir)
    marks = []
    for member, events in _members(run_dir, JAVA_LIBRARY):
        if not any(e.get("type") == "started" and e.get("protocol") == "consumer" for e in events):
            continue
        held: set[tuple[str, int]] = set()
        early: dict[tuple[str, int], float] = {}  # partition -> its first batch processed while not held
        for e in events:
            kind = e.get("type")
            if kind == "processed" and (tp := (e.get("topic"), e.get("partition"))) not in held:
                early.setdefault(tp, e["mono"])
            elif kind in ("revoked", "lost"):
                held -= _tps(e)
            elif kind == "assigned":
                parts = _tps(e)
                held |= parts
                given = {tp: t for tp, t in early.items() if tp in parts}
                if given:
                    marks.append(Mark(frozenset({member}), frozenset(given), min(given.values()), e["mono"],
                                      f"{member} processed {_names(given)} from {at(min(given.values()))}, before its "
                                      f"onPartitionsAssigned gave them at {at(e['mono'])}"))
                early = {tp: t for tp, t in early.items() if tp not in parts}
    return marks


def _names(parts) -> str:
    return ", ".join(f"{t}-{p}" for t, p in sorted(parts))


#: librdkafka's notice that a ConsumerGroupHeartbeat timed out behind the OffsetCommit ahead of it on the coordinator's
#: connection (librdkafka spells it "preceeding"): the broker reads one request of a connection at a time
HEARTBEAT_HELD_BACK = re.compile(r"^%\d\|(?P<wall>\d+(\.\d+)?)\|REQTMOUT\|.*Timed out ConsumerGroupHeartbeatRequest"
                                 r".*possibly held back by preceed?ing OffsetCommitRequest")
#: the consumer-protocol coordinator's line for a member it expired (`Member <id> fenced ... session expired.`)
SESSION_EXPIRED = re.compile(r"Member (?P<id>\S+) fenced from the group because the member session expired")


def heartbeats_held_back(run_dir: str | Path, member: str, events: list[dict]) -> list[float]:
    """When the member's own log says a ConsumerGroupHeartbeat of its timed out held back by the OffsetCommit ahead of
    it, on the history's monotonic clock; none without the log."""
    return _log_times(run_dir, member, events, HEARTBEAT_HELD_BACK)


def expired_behind_stalled_commit(run_dir: str | Path) -> list[Mark]:
    """kafka-848-heartbeat-behind-stalled-commit's mark: a consumer-protocol member the coordinator expired ("fenced
    from the group because the member session expired", naming its member id) after a fault on a broker (its start
    names brokers and no member) began, whose own log says a heartbeat of its timed out held back by a preceding
    OffsetCommit between the fault's start and the expiry, and that heard nothing from the group (no assigned,
    revoked or lost) from that timeout to the expiry: the coordinator's writes waited on the cut broker's replica of
    its offsets partition, the commit held the connection and the heartbeat behind it was never read
    (docs/findings.md). Each such member's mark: it and the partitions it held at the expiry (`held_from`: since it
    was given them), from its first held-back heartbeat after the fault's start to HANDOVER_S after its next `lost`
    (else its last event): the coordinator's line, the member's holding and the group giving its partitions away.
    Marks whose windows overlap are one mark (the same stall expired those members one after another, and the group
    passed their partitions among them: an `assigned` of one names its own partitions given back and another's)."""
    at, control = run_seconds(run_dir), _control(run_dir) or []
    try:
        lines = read_file(Path(run_dir) / HISTORY / BROKERS_HISTORY)[1]
    except (OSError, HistoryFormatError):
        return []
    ids = member_ids(run_dir)
    expiries = [(ids.get(m["id"]), e["mono"]) for e in lines if isinstance(e.get("mono"), (int, float))
                and (m := SESSION_EXPIRED.search(str(e.get("message") or "")))]
    cuts = [e["mono"] for e in control if e.get("type") == "fault_start" and e.get("brokers_affected")
            and not e.get("members_affected") and not e.get("member") and isinstance(e.get("mono"), (int, float))]
    marks = []
    for member, events in _members(run_dir):
        held_back = heartbeats_held_back(run_dir, member, events)
        for expired in [t for m, t in expiries if m == member]:
            after = [t for t in held_back if any(c <= t for c in cuts) and t < expired]
            heard = [e["mono"] for e in events if e.get("type") in HEARD - {"started", "stopped"}
                     and isinstance(e.get("mono"), (int, float))]
            if not after or any(after[-1] < t < expired for t in heard):
                continue
            held = _held_at(events, expired)
            lost = next((e["mono"] for e in events if e.get("type") == "lost" and e.get("mono", 0) > expired),
                        events[-1].get("mono", expired))
            marks.append(Mark(frozenset({member}), frozenset(held), after[0], lost + HANDOVER_S,
                              f"{member}'s heartbeats timed out held back by its OffsetCommit from {at(after[0])} "
                              f"({len(after)} time(s), the last at {at(after[-1])}); the coordinator expired it at "
                              f"{at(expired)} holding {_names(held) or 'nothing'}",
                              held_from=min(held.values()) if held else None))
    return _merged(marks)


def _merged(marks: list[Mark]) -> list[Mark]:
    """The marks with those whose windows overlap made one (members, partitions, window and accounts joined)."""
    out: list[Mark] = []
    for k in sorted(marks, key=lambda k: k.start):
        if out and k.start <= out[-1].end:
            j = out[-1]
            froms = [t for t in (j.held_from, k.held_from) if t is not None]
            out[-1] = Mark(j.members | k.members, j.partitions | k.partitions, j.start, max(j.end, k.end),
                           f"{j.says}; {k.says}", held_from=min(froms) if froms else None)
        else:
            out.append(k)
    return out


def _held_at(events: list[dict], t: float) -> dict[tuple[str, int], float]:
    """The partitions a member held at time t, each with when it was given them."""
    held: dict[tuple[str, int], float] = {}
    for e in events:
        if not isinstance(e.get("mono"), (int, float)) or e["mono"] > t:
            break
        if e.get("type") == "assigned":
            held.update({tp: e["mono"] for tp in _tps(e) if tp not in held})
        elif e.get("type") in ("revoked", "lost"):
            for tp in _tps(e):
                held.pop(tp, None)
    return held
