"""Convergence and balance: soon after the last disturbance the assignment is complete, balanced, quiet.

Let T be the last disturbance before the workload end W (see `timeline`: the end of a fault, a fault
still active, a member start or exit, a broker event; the start of the run if none). Scale-outs,
bounces and kills are disturbances as well as faults: each legitimately starts a rebalance. Let C be
the time of the last ownership change (`assigned`, `revoked`, `lost`, or the exit of an owner) before W.
The group converged at max(C, T) when the state at W is complete and balanced:

- *complete*: every partition of every topic that at least one live member subscribes to has exactly
  one live owner (see `topics` for subscriptions; a member that names none subscribes to every topic).
  A partition of a topic nobody alive subscribes to need not be owned.
- *balanced*: no live member A holds at least two partitions more than a live member B while B
  subscribes to the topic of one of A's partitions (the sticky assignor's own notion of balance: B
  could take one). Counts are over every topic together, not per topic, as assignors balance the
  total. With equal subscriptions this is: the partition counts of live members differ by at most one.

Then:

- `invalid` when the state at W is not complete and balanced and W - T > `convergence_bound_s` (it had
  its chance), or when it is but max(C, T) - T > `convergence_bound_s` (it settled too late);
- `unknown` when the state is not yet complete and balanced but the bound has not passed, or when
  W - max(C, T) < `quiet_period_s` (too short a quiet period to tell whether another rebalance follows);
- `valid` otherwise.

Tolerances: `convergence_bound_s` (derive it from the configured timeouts: session timeout plus
rebalance delays), `quiet_period_s`. Measurements: `convergence_s` (max(C, T) - T), `quiet_s`, the
final counts per member, `since_last_disturbance_s`; when members wrote subscriptions, also
`subscriptions` (member -> topics at W) and `unbalanced_pair` (A, B) when there is one.
"""
from __future__ import annotations

from harness.history import History
from harness.invariants import timeline
from harness.invariants.core import CheckSettings, Verdict, empty, secs, verdict, witness

NAME = "convergence_balance"


def check(history: History, settings: CheckSettings) -> Verdict:
    """Judge that the group converged to a complete, balanced, quiet assignment within the bound."""
    if (v := empty(NAME, history)) is not None:
        return v
    tl = timeline.build(history, settings)
    P = tl.partitions
    if P <= 0:
        return verdict(NAME, "unknown", "partition count unknown: set partitions")
    W, before = tl.workload_end, tl.end_before
    if W is None:
        return verdict(NAME, "unknown", "no member alive at the end of the history and no drained event")
    last = tl.last_disturbance(W, before)
    T, t_ev = last if last else (tl.start, None)
    changes = [(o.start, o.start_event) for o in tl.ownerships if o.start < W or (not before and o.start <= W)]
    changes += [(o.end, o.end_event) for o in tl.ownerships if o.end < W or (not before and o.end <= W)]
    C, c_ev = max(changes, key=lambda x: x[0]) if changes else (tl.start, None)
    owners = tl.owners_at(W, before)
    alive = tl.alive_members(W, before)
    held: dict[str, list[int]] = {x: [] for x in alive}
    for p in tl.all_partitions:
        for x in owners.get(p, ()):
            if x in alive:
                held[x].append(p)
    counts = {x: len(ps) for x, ps in held.items()}
    complete = all(len([x for x in owners.get(p, ()) if x in alive]) == 1 for p in tl.required(W, before))
    subs = {x: tl.subscribed(x, W, before) for x in alive}
    pair = _unbalanced_pair(tl, held, subs)
    balanced = bool(counts) and pair is None
    at = max(C, T)
    m = {"since_last_disturbance_s": secs(W - T), "final_counts": dict(sorted(counts.items())),
         "complete": complete, "balanced": balanced}
    if tl.subscriptions.declared:
        m["subscriptions"] = {x: tl.subscriptions.show(subs[x]) for x in sorted(alive)}
        if pair is not None:
            m["unbalanced_pair"] = list(pair)
    bound = settings.convergence_bound_s
    wits = [witness(e, why) for e, why in ((t_ev, "the last disturbance"), (c_ev, "the last ownership change"))
            if e is not None]
    if not (complete and balanced):
        what = ("incomplete" if not complete else "") + (" and " if not complete and not balanced else "") + \
               ("unbalanced " + str(m["final_counts"]) if not balanced else "") + \
               (f" ({pair[0]} holds {counts[pair[0]]}, {pair[1]} holds {counts[pair[1]]} and could take one)"
                if pair is not None and tl.subscriptions.declared else "")
        if W - T > bound:
            return verdict(NAME, "invalid", f"assignment still {what} at the end, {W - T:.3f}s after the last "
                                            f"disturbance (bound {bound:g}s)", wits, m)
        return verdict(NAME, "unknown", f"assignment {what} at the end, only {W - T:.3f}s after the last "
                                        f"disturbance (bound {bound:g}s)", wits, m)
    m["convergence_s"], m["quiet_s"] = secs(at - T), secs(W - at)
    if at - T > bound:
        return verdict(NAME, "invalid", f"converged {at - T:.3f}s after the last disturbance (bound {bound:g}s)",
                       wits, m)
    if W - at < settings.quiet_period_s:
        return verdict(NAME, "unknown", f"quiet for only {W - at:.3f}s before the end (need "
                                        f"{settings.quiet_period_s:g}s)", wits, m)
    return verdict(NAME, "valid", f"complete and balanced {at - T:.3f}s after the last disturbance, then quiet for "
                                  f"{W - at:.3f}s", (), m)


def _unbalanced_pair(tl: timeline.Timeline, held: dict[str, list[int]], subs: dict[str, frozenset]):
    """(A, B): live members where A holds at least two partitions more than B and B subscribes to the topic
    of one of A's partitions (the most loaded A, the least loaded such B); None when balanced."""
    by_load = sorted(held, key=lambda x: (-len(held[x]), x))
    for a in by_load:
        topics = {tl.layout.topic_of(p) for p in held[a]}
        for b in reversed(by_load):
            if len(held[a]) - len(held[b]) < 2:
                break
            if topics & subs[b]:
                return a, b
    return None
