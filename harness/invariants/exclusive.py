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
    is no zombie, faulted or not. If instead A was under a fault (pause, network) at some time between
    its `assigned` and B's `assigned`, A is a possible zombie: it may have been fenced without seeing
    it. Its overlap window runs from B's `assigned` to A's `revoked`/`lost`/`member_exit` (or to B's
    own end, or the end of the history, if sooner). It is a violation when the window exceeds
    `zombie_tolerance_s`, or when A commits the partition successfully (`committed` ok=true naming it)
    after B's `assigned` while B holds it: a zombie's commit must be fenced. A commit counts from when
    it was asked for (`requested_mono`, else the event's `mono`): one asked for before B's `assigned`
    and answered after it (the member was paused in between) may have taken effect before the
    reassignment, so it is counted (`zombie_commits_in_flight`) but not judged.

Tolerance: `zombie_tolerance_s`, the longest allowed zombie window. A member paused (SIGSTOP) past the
session timeout holds its partitions, in its own view, until it runs again and learns it lost them, so
scenarios that pause members set it to the pause plus detection. Measurements: `max_zombie_window_s`,
`max_zombie_running_s` (the window minus the time the zombie was paused, i.e. the time it could act),
`zombie_pairs`, `zombie_batches_after_reassign`, `processed_without_holding`.
Events a member logs after its own `member_exit` are not read (a SIGKILL is recorded just before it is
sent).
"""
from __future__ import annotations

from bisect import bisect_right

from harness.history import History
from harness.invariants import protocols, timeline
from harness.invariants.core import CheckSettings, Verdict, empty, secs, verdict, witness

NAME = "exclusive_ownership"


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge exclusive ownership (assignment and processing) of the settings' topic."""
    if (v := empty(NAME, history)) is not None:
        return v
    rules = protocols.rules_for(settings.protocol)
    tl = timeline.build(history, settings)
    if not tl.ownerships:
        return verdict(NAME, "unknown", f"no partition of topic {tl.topic!r} was ever assigned")
    problems: list[str] = []
    wits: list[dict] = []
    m = {"pairs_overlapping": 0, "zombie_pairs": 0, "max_zombie_window_s": 0.0, "max_zombie_running_s": 0.0,
         "zombie_batches_after_reassign": 0, "zombie_commits_after_reassign": 0, "processed_without_holding": 0,
         "double_assignments": 0, "ignored_after_exit": 0}

    acts: dict[str, list[dict]] = {}  # each member's processed/committed events, in time order
    for e in tl.events:
        if e["type"] in ("processed", "committed") and e["mono"] <= tl.end:
            acts.setdefault(e.get("member"), []).append(e)
    times = {k: [e["mono"] for e in v] for k, v in acts.items()}
    for p, owns in sorted(tl.by_partition.items()):
        for i, b in enumerate(owns):
            for a in owns[:i]:
                if a.member == b.member or not a.end > b.start:
                    continue
                m["pairs_overlapping"] += 1
                if tl.taint(a) > b.start:
                    if rules.revoke_before_assign or tl.taint(b) > b.start:
                        m["double_assignments"] += 1
                        problems.append(f"partition {p} assigned to {b.member} at {b.start:.3f} while {a.member} "
                                        f"held it in good standing")
                        wits += [witness(a.start_event, f"{a.member} holds partition {p} and did not revoke or lose "
                                                        f"it before {b.member} was assigned it"),
                                 witness(b.start_event, f"{b.member} assigned partition {p} while {a.member} held it")]
                else:
                    _zombie(tl, settings, a, b, acts.get(a.member, []), times.get(a.member, []), m, problems, wits)

    starts: dict[tuple, list[int]] = {}
    for i, e in enumerate(tl.events):
        if e["type"] != "processed" or e.get("topic") != tl.topic or e["mono"] > tl.end:
            continue
        mem, p, t = e.get("member"), int(e["partition"]), e["mono"]
        if not tl.alive(mem, t):
            m["ignored_after_exit"] += 1
            continue
        mine = tl.by_member.get((mem, p), [])  # disjoint, in order
        if (mem, p) not in starts:
            starts[(mem, p)] = [o.start_seq for o in mine]
        k = bisect_right(starts[(mem, p)], i - 1) - 1
        if k >= 0 and i < mine[k].end_seq:
            continue
        m["processed_without_holding"] += 1
        prev = mine[:k + 1]
        if prev:
            problems.append(f"{mem} processed partition {p} at {t:.3f} after its own {prev[-1].end_reason}")
            if prev[-1].end_event is not None:
                wits.append(witness(prev[-1].end_event, f"{mem} gave up partition {p} here"))
        else:
            problems.append(f"{mem} processed partition {p} at {t:.3f} without ever being assigned it")
        wits.append(witness(e, f"{mem} processed partition {p} while not holding it"))

    for k in ("max_zombie_window_s", "max_zombie_running_s"):
        m[k] = secs(m[k])
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return verdict(NAME, "invalid", problems[0] + more, wits, m)
    return verdict(NAME, "valid", f"no partition of {tl.topic!r} had two owners in good standing; "
                                  f"{m['zombie_pairs']} zombie overlaps within tolerance", (), m)


def _zombie(tl, settings, a, b, acts: list[dict], times: list[float], m, problems, wits) -> None:
    """Measure and judge the overlap of a possibly fenced old owner `a` with the new owner `b`."""
    p = a.partition
    m["zombie_pairs"] += 1
    end = min(a.end, b.end, tl.end)
    window = max(0.0, end - b.start)
    running = window - tl.frozen_time(a.member, b.start, end)
    m["max_zombie_window_s"] = max(m["max_zombie_window_s"], window)
    m["max_zombie_running_s"] = max(m["max_zombie_running_s"], running)
    if window > settings.zombie_tolerance_s:
        problems.append(f"zombie {a.member} held partition {p} for {window:.3f}s after {b.member} was assigned it "
                        f"(tolerance {settings.zombie_tolerance_s:g}s)")
        wits.append(witness(b.start_event, f"{b.member} assigned partition {p}: the zombie window starts"))
        wits.append(witness(a.end_event or a.start_event,
                            f"zombie {a.member} gave up partition {p} {window:.3f}s later" if a.end_event
                            else f"zombie {a.member} still held partition {p} at the end of the history"))
    upto = min(b.end, tl.end + 1e-9)
    for e in acts[bisect_right(times, b.start):]:
        if e["mono"] >= upto:
            break
        if e["type"] == "processed" and e.get("topic") == tl.topic and int(e["partition"]) == p \
                and e["mono"] < a.end:
            m["zombie_batches_after_reassign"] += 1
        elif e["type"] == "committed" and e.get("ok") and p in timeline.commit_offsets(e, tl.topic):
            if e.get("requested_mono", e["mono"]) < b.start:
                # asked for before the new owner was assigned (a pause can freeze a member between
                # sending a commit and reading its answer): it may have taken effect before the
                # reassignment, so it is no proof of a zombie commit
                m["zombie_commits_in_flight"] = m.get("zombie_commits_in_flight", 0) + 1
                continue
            m["zombie_commits_after_reassign"] += 1
            problems.append(f"zombie {a.member} committed partition {p} at {e['mono']:.3f}, after {b.member} "
                            f"was assigned it")
            wits.append(witness(b.start_event, f"{b.member} assigned partition {p}"))
            wits.append(witness(e, f"zombie {a.member}'s commit of partition {p} took effect after the new owner "
                                   f"was assigned"))
