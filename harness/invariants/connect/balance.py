"""9c. `connect_balance`: after convergence, connectors and tasks per worker differ by at most one, and no
rebalance follows in the quiet period (no storm).

The quiet period is Q = [W, the first `member_stop` after W] (W the `drained` event: the harness waited for a
stable group before it, and sleeps `quiet_period_s` after it). At the end of Q, counting the runs open on each
live worker, connectors per worker and tasks per worker each differ by at most `balance_slack`, and every
configured unit runs exactly once (and nothing else runs): the kind's one rule, `balance.connect`, which the
runner's stable wait calls too. Any connector or task started or stopped inside Q is a storm. `unknown`
without a `drained` event or without live workers at the end of Q. Measurements: `at_s`, `connectors_per_worker`,
`tasks_per_worker`, `moves_in_quiet_period`.
"""
from __future__ import annotations

from harness.record.history import History
from harness.invariants import balance
from harness.invariants.connect.view import STARTS, STOPS, ConnectCheckSettings, unit_name, view_of
from harness.invariants.core import Verdict, verdict, witness

NAME = "connect_balance"


def check_balance(history: History, settings: ConnectCheckSettings) -> Verdict:
    v = view_of(history)
    if not any(e["type"] == "drained" for e in v.events):
        return verdict(NAME, "unknown", "the run never reached its end (no drained event): no converged state")
    q0 = v.window_end
    q1 = min([e["mono"] for e in v.events if e["type"] == "member_stop" and e["mono"] >= q0] + [v.end])
    live = {m for m, t in v.born.items() if t <= q1 and (m not in v.died or v.died[m][0] > q1)}
    if not live:
        return verdict(NAME, "unknown", "no live worker at the end of the run")
    held: dict[str, list] = {m: [] for m in live}
    for r in v.runs_at(q1):
        if r.member in live:
            held[r.member].append(r.key)
    got = balance.connect(held, settings.connectors, settings.tasks or {}, settings.balance_slack)
    conns, tasks = got.connectors, got.tasks
    bad = [{"why": f"{what} per worker differ by more than {settings.balance_slack}: "
                   f"{dict(sorted((conns if what == 'connectors' else tasks).items()))}"} for what in got.unbalanced]
    bad += [{"unit": unit_name(key), "why": f"{unit_name(key)} runs {n} times at the end"} for key, n in got.wrong]
    storm = [witness(e, f"{unit_name((STARTS.get(e['type']) or STOPS.get(e['type']), e.get('connector'), e.get('task')))}"
                        f" {e['type'].rsplit('_', 1)[1]} on {e.get('member')} in the quiet period")
             for e in v.events if q0 < e["mono"] < q1 and (e["type"] in STARTS or e["type"] in STOPS)]
    m = {"at_s": q1, "connectors_per_worker": dict(sorted(conns.items())),
         "tasks_per_worker": dict(sorted(tasks.items())), "moves_in_quiet_period": len(storm)}
    if bad or storm:
        return verdict(NAME, "invalid", "; ".join(filter(None, [
            f"{len(bad)} balance problem(s)" if bad else "", f"{len(storm)} start/stop(s) in the quiet period"
            if storm else ""])), bad + storm, m)
    return verdict(NAME, "valid", f"balanced at the end: connectors {sorted(conns.values())}, tasks "
                                  f"{sorted(tasks.values())} per worker; quiet for {q1 - q0:.1f}s", measurements=m)
