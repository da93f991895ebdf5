"""Exclusive ownership: one partition, one owner in good standing; zombies measured and bounded.

(a) Assignment. Take every pair of ownership intervals of one partition by two members, A the older
    (assigned first) and B the newer, overlapping on the shared clock (A's interval still open when B
    is assigned). If A was never under a fault from its `assigned` up to B's `assigned` (A is *clean*
    then), A held the partition in good standing when it was given to B:
    - under protocols that promise revoke-before-assign (classic-cooperative, consumer) that is a
      violation whatever B's own standing: A's `revoked`/`lost` must come before B's `assigned`;
    - under classic-eager it is a violation when B was clean then too (two members in good standing
      holding one partition at once).
    Witnesses: A's and B's `assigned` events. A member that writes `assigned` for a partition someone
    else holds is caught here.
(b) Processing. A `processed` event of a member for a partition it does not hold at that moment (never
    assigned, or after its own `revoked`/`lost`) is a violation: once a member has seen its revoke it
    is no zombie, faulted or not. If instead a fault reached A (a pause, a network fault: the causes view,
    harness/invariants/causes.py, where a network fault reaches members started inside it too) at some time
    between its `assigned` and B's `assigned`, A is a possible zombie: it may have been fenced without seeing
    it. Its overlap window runs from B's `assigned` to A's `revoked`/`lost`/`member_exit` (or to B's
    own end, or the end of the history, if sooner). It is a violation when the window exceeds
    its tolerance (below), or when A commits the partition successfully (`committed` ok=true naming it)
    after B's `assigned` while B holds it: a zombie's commit must be fenced. A commit counts from when
    it was asked for (`requested_mono`, else the event's `mono`): one asked for before B's `assigned`
    and answered after it (the member was paused in between) may have taken effect before the
    reassignment, so it is counted (`zombie_commits_in_flight`) but not judged.

Tolerance: the zombie window of A may last as long as the faults on A kept it from hearing (their recorded
spans, from A's taint to the window's end) plus A's own detection: twice its session timeout and a heartbeat,
as A ran with them (`settings.member_settings`; a member paused or stalled past its session timeout holds its
partitions, in its own view, until it runs again and learns it lost them). The message names the values. Measurements: `max_zombie_window_s`,
`max_zombie_running_s` (the window minus the time the zombie was paused, i.e. the time it could act),
`zombie_pairs`, `zombie_batches_after_reassign`, `processed_without_holding`.
Events a member logs after its own `member_exit` are not read (a SIGKILL is recorded just before it is
sent). Every partition of every topic of the run is judged; with several topics, partitions are named
"topic-p".
"""
from __future__ import annotations

import numpy as np

from harness.record.history import History
from harness.invariants import causes, protocols, timeline
from harness.invariants.core import MAX_WITNESSES, CheckSettings, Verdict, empty, secs, verdict, witness
from harness.invariants.settings import member_settings
from harness.base.steps import Step

NAME = "exclusive_ownership"


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge exclusive ownership (assignment and processing) of the run's topics."""
    if (v := empty(NAME, history)) is not None:
        return v
    rules = protocols.rules_for(settings.protocol)
    tl = timeline.build(history, settings)
    if not tl.ownerships:
        return verdict(NAME, "unknown", f"no partition of {tl.layout.describe()} was ever assigned")
    problems: list[str] = []
    wits: list[dict] = []
    m = {"pairs_overlapping": 0, "zombie_pairs": 0, "max_zombie_window_s": 0.0, "max_zombie_running_s": 0.0,
         "zombie_batches_after_reassign": 0, "zombie_commits_after_reassign": 0, "processed_without_holding": 0,
         "double_assignments": 0, "ignored_after_exit": 0}
    groups = _processed_groups(tl)
    acts = _Acts(tl, groups)
    for g, owns in sorted(tl.by_partition.items()):
        p = tl.name(g)
        for i, b in enumerate(owns):
            for a in owns[:i]:
                if a.member == b.member or not a.end > b.start:
                    continue
                m["pairs_overlapping"] += 1
                if tl.taint(a) > b.start:
                    if rules.revoke_before_assign or tl.taint(b) > b.start:
                        m["double_assignments"] += 1
                        problems.append(f"partition {p} assigned to {b.member} at {b.start - tl.start:.1f}s while {a.member} "
                                        f"held it in good standing")
                        wits += [witness(a.start_event, f"{a.member} holds partition {p} and did not revoke or lose "
                                                        f"it before {b.member} was assigned it"),
                                 witness(b.start_event, f"{b.member} assigned partition {p} while {a.member} held it")]
                else:
                    _zombie(tl, settings, a, b, acts, m, problems, wits)

    n_problems = len(problems) + _processing(tl, groups, m, problems, wits)
    unshown = n_problems - len(problems)  # processed events past the first MAX_WITNESSES, each a witness not kept
    for k in ("max_zombie_window_s", "max_zombie_running_s"):
        m[k] = secs(m[k])
    if n_problems:
        more = f" (and {n_problems - 1} more)" if n_problems > 1 else ""
        return verdict(NAME, "invalid", problems[0] + more, wits, m, found=len(wits) + unshown)
    return verdict(NAME, "valid", f"no partition of {', '.join(map(repr, tl.topics))} had two owners in good "
                                  f"standing; "
                                  f"{m['zombie_pairs']} zombie overlaps within tolerance", (), m)


class _Group:
    """The `processed` events of one member and one partition of the run's topics up to E, in history order."""

    __slots__ = ("member", "partition", "rows", "seqs", "monos")

    def __init__(self, member: str, partition: int, rows: list[int], seqs: list[int], monos: list[float]) -> None:
        self.member, self.partition, self.rows, self.seqs, self.monos = member, partition, rows, seqs, monos


def _processed_groups(tl: timeline.Timeline) -> list[_Group]:
    b, vals = tl.history.bulk("processed"), tl.history.values
    _, gpart = tl.layout.columns(b)
    return [_Group(vals[int(b.member[rs[0]])], int(gpart[rs[0]]), rs, b.seq[rs], b.mono[rs])
            for rs in tl.processed_pairs()]


def _processing(tl: timeline.Timeline, groups: list[_Group], m: dict, problems: list[str], wits: list[dict]) -> int:
    """(b): count `processed` events of a member not holding the partition; describe the first ones."""
    first: list[tuple[int, _Group, int]] = []  # (seq, group, index in the group) of the earliest violations
    total = 0
    for g in groups:
        n = len(g.rows)
        alive, held = np.zeros(n, bool), np.zeros(n, bool)
        for lf in tl.lives.get(g.member, ()):
            alive |= (g.monos >= lf.start) & (g.monos < lf.end)
        for o in tl.by_member.get((g.member, g.partition), ()):
            lo, hi = np.searchsorted(g.seqs, o.start_seq, "right"), np.searchsorted(g.seqs, o.end_seq, "left")
            held[lo:hi] = True
        m["ignored_after_exit"] += int(n - np.count_nonzero(alive))
        bad = np.flatnonzero(alive & ~held)
        total += len(bad)
        first += [(int(g.seqs[j]), g, int(j)) for j in bad[:MAX_WITNESSES]]
    m["processed_without_holding"] += total
    first.sort(key=lambda x: x[0])
    first = first[:MAX_WITNESSES]
    evs = tl.history.events_at([s for s, _, _ in first])
    for s, g, j in first:
        mem, gp, t = g.member, g.partition, float(g.monos[j])
        p = tl.name(gp)
        prev = [o for o in tl.by_member.get((mem, gp), ()) if o.start_seq < s]
        if prev:
            problems.append(f"{mem} processed partition {p} at {t - tl.start:.1f}s after its own {prev[-1].end_reason}")
            if prev[-1].end_event is not None:
                wits.append(witness(prev[-1].end_event, f"{mem} gave up partition {p} here"))
        else:
            problems.append(f"{mem} processed partition {p} at {t - tl.start:.1f}s without ever being assigned it")
        wits.append(witness(evs[s], f"{mem} processed partition {p} while not holding it"))
    return total


class _Acts:
    """A member's `processed` and `committed` events up to E, read when a zombie pair needs them."""

    def __init__(self, tl: timeline.Timeline, groups: list[_Group]) -> None:
        self.tl, self.groups = tl, {(g.member, g.partition): g for g in groups}
        self._commits: dict[str, list[tuple[float, int, int]]] | None = None

    def processed_between(self, member: str, p: int, lo: float, hi: float) -> int:
        """How many of the member's `processed` events of partition p have lo < mono < hi."""
        g = self.groups.get((member, p))
        if g is None:
            return 0
        return int(np.count_nonzero((g.monos > lo) & (g.monos < hi)))

    def commits(self, member: str) -> list[tuple[float, int, int]]:
        """(mono, seq, row) of the member's successful commits up to E, in history order."""
        if self._commits is None:
            c, tl = self.tl.history.bulk("committed"), self.tl
            vals = tl.history.values
            self._commits = {}
            for r in np.flatnonzero((c.ok != 0) & (c.mono <= tl.end)).tolist():
                self._commits.setdefault(vals[c.member[r]], []).append((float(c.mono[r]), int(c.seq[r]), r))
        return self._commits.get(member, [])

    def names(self, row: int, p: int) -> bool:
        """Whether a committed row names partition p (of the run's topics)."""
        c, lay = self.tl.history.bulk("committed"), self.tl.layout
        i = int(np.searchsorted(c.c_row, row, "left"))
        while i < len(c.c_row) and c.c_row[i] == row:
            base = lay.code_base(int(c.c_topic[i]))
            if base >= 0 and (c.c_partition[i] >= 0 or not lay.multi) and base + c.c_partition[i] == p:
                return True
            i += 1
        return False


#: faults that cut brokers off the controller quorum: a cut-off coordinator keeps its members as zombies until,
#: after the heal, it reconnects to the quorum and gives the group up (docs/findings.md, broker-partition)
PARTITION_FAULT_KINDS = frozenset({Step.BROKER_PARTITION, Step.RACK_PARTITION})
#: Kafka's default socket.connection.setup.timeout.max.ms: a connection to the quorum begun while cut off is given
#: up only then (plus 20 % jitter), and the cut-off broker acts as the leader it was until it reconnects
CONNECTION_SETUP_TIMEOUT_MAX_MS = 30000
#: the most the client adds to that timeout as jitter (Kafka's ClusterConnectionStates: +/- 20 %)
CONNECTION_SETUP_JITTER = 1.2


def zombie_tolerance(tl, a, end: float) -> tuple[float, str]:
    """How long old owner `a` may hold on after the new owner got the partition: the time the faults on it kept
    it from hearing (their recorded spans from its taint to `end`; after a partition of brokers, also the cut-off
    coordinator's reconnect to the quorum), then its own detection: twice its session timeout (the coordinator's
    expiry, then its own next heartbeat's answer) and a heartbeat. (seconds, why)."""
    start = tl.taint(a)
    faulted, reach, cut = 0.0, start, False
    for f in causes.build(tl).touching(a.member, start, end):  # every fault that reached it (`causes`), by start
        cut = cut or f.event.get("kind") in PARTITION_FAULT_KINDS
        lo, hi = max(f.start, reach), min(f.end, end)
        if hi > lo:
            faulted += hi - lo
            reach = hi
    ms = member_settings(tl, a.member, a.start)
    tol = faulted + 2 * ms.session_timeout_s + ms.heartbeat_s
    why = f"{faulted:.1f}s of faults on {a.member} + twice its {ms.session()} + its {ms.heartbeat_s:g}s heartbeat"
    if cut:
        setup_ms, src = _connection_setup_max_ms(tl)
        tol += CONNECTION_SETUP_JITTER * setup_ms / 1000
        why += f" + the cut-off coordinator's reconnect after the heal ({CONNECTION_SETUP_JITTER:g} x {src})"
    return tol, why


def _connection_setup_max_ms(tl) -> tuple[int, str]:
    """The brokers' socket.connection.setup.timeout.max.ms as the run set it (run_start `broker_settings`), else
    Kafka's default; (ms, where it came from)."""
    key = "socket.connection.setup.timeout.max.ms"
    start = tl.history.run_start() or {}
    given = (start.get("broker_settings") or {}).get(key)
    try:
        return int(given), f"the brokers' {key}={int(given)}"
    except (TypeError, ValueError):
        return CONNECTION_SETUP_TIMEOUT_MAX_MS, f"Kafka's default {key}={CONNECTION_SETUP_TIMEOUT_MAX_MS}"


def _zombie(tl, settings, a, b, acts: _Acts, m, problems, wits) -> None:
    """Measure and judge the overlap of a possibly fenced old owner `a` with the new owner `b`."""
    gp, p = a.partition, tl.name(a.partition)
    m["zombie_pairs"] += 1
    end = min(a.end, b.end, tl.end)
    window = max(0.0, end - b.start)
    running = window - tl.frozen_time(a.member, b.start, end)
    m["max_zombie_window_s"] = max(m["max_zombie_window_s"], window)
    m["max_zombie_running_s"] = max(m["max_zombie_running_s"], running)
    tol, why = zombie_tolerance(tl, a, end)
    m["zombie_tolerance_s"] = max(m.get("zombie_tolerance_s") or 0.0, tol)
    if window > tol:
        problems.append(f"zombie {a.member} held partition {p} for {window:.3f}s after {b.member} was assigned it "
                        f"(tolerance {tol:.1f}s: {why})")
        wits.append(witness(b.start_event, f"{b.member} assigned partition {p}: the zombie window starts"))
        wits.append(witness(a.end_event or a.start_event,
                            f"zombie {a.member} gave up partition {p} {window:.3f}s later" if a.end_event
                            else f"zombie {a.member} still held partition {p} at the end of the history"))
    upto = min(b.end, tl.end + 1e-9)
    m["zombie_batches_after_reassign"] += acts.processed_between(a.member, gp, b.start, min(upto, a.end))
    c = tl.history.bulk("committed")
    for t, seq, r in acts.commits(a.member):
        if t <= b.start:
            continue
        if t >= upto:
            break
        if not acts.names(r, gp):
            continue
        if c.requested[r] < b.start:
            # asked for before the new owner was assigned (a pause can freeze a member between
            # sending a commit and reading its answer): it may have taken effect before the
            # reassignment, so it is no proof of a zombie commit
            m["zombie_commits_in_flight"] = m.get("zombie_commits_in_flight", 0) + 1
            continue
        m["zombie_commits_after_reassign"] += 1
        problems.append(f"zombie {a.member} committed partition {p} at {t - tl.start:.1f}s, after {b.member} "
                        f"was assigned it")
        wits.append(witness(b.start_event, f"{b.member} assigned partition {p}"))
        wits.append(witness(tl.history.events_at([seq])[seq], f"zombie {a.member}'s commit of partition {p} took effect "
                                                      f"after the new owner was assigned"))
