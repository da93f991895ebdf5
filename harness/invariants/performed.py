"""`schedule_performed`: each step of the plan happened, in order and before the run's end, as the history shows it
(a run-level invariant of every kind of group).

A run is judged on what its history holds; a step that did nothing (a kill of an empty slot, a poll stall on a
member that takes no stall control, a request fault whose API the member never sent) leaves a history with no
fault in it, which every other checker would pass. The plan is in the history: `run_start`'s `plan` lists each
step (`action_id` a1, a2, ..., `kind`, `params`) in order, and each planned step must have its `action_start` (of
that kind and those parameters, not before the previous step's `action_end`) and its `action_end`, both before
`run_end`, and its *effect* in the history, between its `action_start` and its `action_end` (S and E below; a
member's exit, which may come after its stop returned, and the request proxy's windows, which come when the member
sends the request, from S on), and never after `run_end` (an effect found only after it is late):

- every step: an `action_end` with `ok` true, said explicitly (the runner writes `ok` false, with the performer's
  `skipped` reason, for a step that did nothing: an empty slot, one member left, `if_supported` on a member or
  broker that cannot; an `action_end` without `ok` proves nothing). The waits (`sleep`, `wait_stable`),
  `workload_rate`, `wait_offsets_compacted` and `clear_request_faults` need nothing more.
- a member started (`scale_out`, a replacement, a bounce's or a roll's new member, a join): its `member_start`
  in [S, E]; a member stopped or killed (`scale_in`, a kill, a bounce, a leave, `restart_all`): its `member_stop`
  or `member_exit` at or after S (a kill: `member_exit` how `kill`).
- a fault (`pause_member`, `poll_stall`, `change_subscription`, `leave_during_join`, `add_partitions`,
  `group_config`, `autoscale`, `restart_all`, the network and broker faults, the leader moves): its `fault_start`
  of the performer's kind in [S, E] with its `fault_end`, naming the member (`members_affected`) or brokers
  (`brokers_affected`) the step's result names. A subscription change also needs the member's own `control` event
  applying it (the way its `subscribe_by` asked: an event without the field went the default way, one
  `subscribe()`). A poll stall is proven by the member's processing gap, not by its word alone: its `control`
  events stalling (in [S, E]) and then resuming (or its exit) bound its window, which must last the step's
  `duration_s` (less `STALL_SLACK_S`: the harness asks the resume that long after it saw the stall, on the same
  clock), and the member wrote no `processed` event strictly inside it (no batch is tolerated: the member writes its
  `control` and `processed` events to one file, in the order it did them, and stops processing once stalled,
  docs/member-contract.md); a member that had nothing to process shows the gap too. A broker restart
  (`broker_bounce`, `kill_coordinator`, `restart_coordinator`, `broker_rolling_restart`, `broker_upgrade`,
  `rack_outage`, `restart_partition_leader`) needs a `broker_event` stopping (`kill`, `terminate`: the backend writes
  it once the broker's process is gone) and one starting each broker of the fault; a group config a
  `group_settings` event in [S, E] reading back each setting the step set; an added partition a count above the
  one before; an autoscaler its lag samples.
- a request fault (`delay_request`, `hold_request`, `drop_request`, `drop_response`, `error_response`,
  `disconnect`): the request proxy's windows (`fault_start` with the step's `rule`) number at least the rule's
  `count` (its `action_end` says it), or one for a rule bounded by time only; `wait_request_fault`: `reached`.
- `move_leaders`: the leaders it moved (`moved`).

Verdict: `valid` when every planned step's effect is there; `unknown` naming each step that did not happen (its
number, counted from 1 as its `action_id` a1, a2, ..., its kind, parameters and what is missing: no line of it
(deleted), another kind or parameters than planned, no `action_end`, no explicit `ok` true, begun before the step
before it ended, begun, ended or its effect only after `run_end`; a step the scenario marks `if_supported` is named
so: it may do nothing, and then the run did not exercise it), and each step not in the plan (extra) or started
twice; `unknown` too for a history without `run_end` (the run did not finish, or its end was cut). Never
`invalid`: a step that did not happen breaks no promise of Kafka's, the run just says nothing about it. An empty
plan, or an older history with no plan and no step: `valid` (nothing was asked).

An older history, recorded before `run_start` carried the plan, is judged on the steps its `action_start` events
show, numbered a1 to aN: a number missing between them is a step with no line (unknown); a step cut from the end
cannot be seen, and the verdict's message says how it was judged (read from a run directory, `RunDir.history`
gives it its run.json's schedule as the plan: harness/record/rundir.py). Measurements: `steps`, `performed`,
`not_performed` (the step numbers).
"""
from __future__ import annotations

from collections import defaultdict

from harness.base.steps import ACTIONS, KILL, START, Members
from harness.base.vocabulary import DEFAULT_SUBSCRIBE_BY
from harness.record.history import History
from harness.invariants.core import Verdict, verdict, witness
from harness.invariants.clock import run_s

NAME = "schedule_performed"
#: how much shorter than its `duration_s` a stall's window may read: the harness asks the resume `duration_s` after
#: it saw the member's stall event, on the same clock, so only the rounding of the written clock
STALL_SLACK_S = 0.001
class _Index:
    """The harness's and members' events a step's effect is looked up in."""

    def __init__(self, history: History) -> None:
        self.history, self.by_type = history, defaultdict(list)
        ends = {}
        for _, e in history.control():
            self.by_type[e.get("type")].append(e)
            if e.get("type") == "fault_end":
                ends[e.get("fault_id")] = e
        self.fault_end = ends
        run_end = self.by_type.get("run_end")
        #: the run's end: nothing after it counts (an effect after it is late); no run_end, no bound
        self.end = run_end[0]["mono"] if run_end else float("inf")

    def unbounded(self) -> "_Index":
        """This index without the run_end bound (to tell an effect that is late from one that is missing)."""
        other = _Index.__new__(_Index)
        other.__dict__.update(self.__dict__, end=float("inf"))
        return other

    def of(self, type_: str, lo: float, hi: float = float("inf"), **match) -> list[dict]:
        hi = min(hi, self.end)
        return [e for e in self.by_type.get(type_, ()) if lo <= e["mono"] <= hi
                and all(e.get(k) == v for k, v in match.items())]

    def processed(self, member, lo: float, hi: float) -> int:
        """How many `processed` events the member wrote strictly between lo and hi."""
        code, b = self.history.code(member), self.history.bulk("processed")
        if code is None or not b.n:
            return 0
        return int(((b.member == code) & (b.mono > lo) & (b.mono < hi)).sum())

    def started(self, member, lo: float, hi: float) -> str | None:
        return None if self.of("member_start", lo, hi, member=member) else f"no member_start of {member}"

    def stopped(self, member, lo: float, how: str | None = None) -> str | None:
        if how is not None:
            return None if self.of("member_exit", lo, member=member, how=how) else f"no member_exit ({how}) of {member}"
        return None if self.of("member_stop", lo, member=member) or self.of("member_exit", lo, member=member) \
            else f"no member_stop or member_exit of {member}"

    def fault(self, kind: str, lo: float, hi: float, *, member=None, brokers=()) -> tuple[dict | None, str | None]:
        """The step's fault window (its start in [lo, hi], ended), or what is missing of it."""
        for f in self.of("fault_start", lo, hi, kind=kind):
            if member is not None and member not in (f.get("members_affected") or ()):
                continue
            if not set(brokers) <= set(f.get("brokers_affected") or ()):
                continue
            if f.get("fault_id") not in self.fault_end:
                return None, f"its {kind} fault {f.get('fault_id')} has no fault_end"
            return f, None
        who = f" affecting {member}" if member is not None else (f" on brokers {sorted(brokers)}" if brokers else "")
        return None, f"no {kind} fault{who}"


def _members(e: dict, *keys: str) -> list:
    out = []
    for k in keys:
        v = e.get(k)
        out += v if isinstance(v, list) else ([v] if v else [])
    return out


def _missing(a: dict, e: dict, ix: _Index) -> str | None:
    """What of the step's effect is not in the history (None: it happened): what its row of the table of steps says
    it leaves as proof (harness/base/steps.py, `Proof`)."""
    kind, p, lo, hi = a.get("kind"), a.get("params") or {}, a["mono"], e["mono"]
    row = ACTIONS.get(kind)
    if row is None:
        return f"{kind!r} is no step of the table (harness/base/steps.py)"
    proof = row.proof
    if proof.wait:
        return None
    if proof.result == "rule_applied":
        return _request_fault(e, ix, lo)
    if proof.result == "reached":
        return None if e.get("reached") else (f"rule {e.get('rule')} was applied to {e.get('applied')} requests, "
                                              f"not the {p.get('applied', 1)} it waited for")
    problems = []
    for want in proof.members:
        problems += _member_events(want, e, ix, lo, hi)
    if proof.result == "restarted":
        rolled = [r for r in e.get("restarted") or () if isinstance(r, dict)]
        problems += [r.get("skipped") for r in rolled] or ["no member was restarted"]
        problems += [ix.stopped(r.get("stopped"), lo) for r in rolled if r.get("stopped")]
        problems += [ix.started(r.get("started"), lo, hi) for r in rolled if r.get("started")]
    elif proof.result == "moved" and not e.get("moved"):
        problems.append(f"no leader moved off broker {e.get('broker')}")
    if proof.fault:
        problems += _fault(row, p, e, ix, lo, hi)
    return "; ".join(x for x in problems if x) or None


def _member_events(want: Members, e: dict, ix: _Index, lo: float, hi: float) -> list[str | None]:
    """What is missing of the member events the result's members (under `want.keys`) must have left."""
    names = _members(e, *want.keys)
    if not names:
        return [want.none]
    if want.event == START:
        return [ix.started(m, lo, hi) for m in names]
    return [ix.stopped(m, lo, "kill" if want.event == KILL else None) for m in names]


def _fault(row, p: dict, e: dict, ix: _Index, lo: float, hi: float) -> list[str | None]:
    proof = row.proof
    member = e.get("member") if proof.fault_member else None
    brokers = [b for b in _members(e, "broker", "brokers") if isinstance(b, int)]
    f, why = ix.fault(proof.fault, lo, hi, member=member, brokers=brokers if proof.restarts_brokers else ())
    if f is None:
        return [why]
    out: list[str | None] = []
    f_end = ix.fault_end[f["fault_id"]]["mono"]
    if proof.control == "stall":
        out.append(_stall(e.get("member"), p, ix, lo, hi))
    elif proof.control == "subscription":
        out.append(_subscribed(e.get("member"), p, ix, lo, hi))
    if proof.restarts_brokers:
        for b in f.get("brokers_affected") or ():
            down = [x for x in ix.of("broker_event", f["mono"], f_end, broker=b) if x.get("what") in ("kill", "terminate")]
            up = [x for x in ix.of("broker_event", f["mono"], f_end, broker=b) if x.get("what") == "start"]
            if not down or not up or up[-1]["mono"] < down[0]["mono"]:
                out.append(f"broker {b} was not {'stopped' if not down else 'started again'} within the fault")
    if proof.result == "members_killed":
        out += [ix.stopped(m, lo, "kill") for m in f.get("members_affected") or ()]
    elif proof.result == "read_back":
        out += _read_back(e, ix, lo, hi)
    elif proof.result == "grew" and not (isinstance(e.get("count"), int) and isinstance(e.get("before"), int)
                                         and e["count"] > e["before"]):
        out.append(f"the partition count went from {e.get('before')} to {e.get('count')}")
    elif proof.result == "sampled":
        if not e.get("samples"):
            out.append("the autoscaler took no lag sample")
        for d in e.get("decisions") or ():
            out += [ix.started(m, lo, hi) if d.get("scale") == "out" else ix.stopped(m, lo) for m in _members(d, "member")]
    return out


def _subscribed(who, p: dict, ix: _Index, lo: float, hi: float) -> str | None:
    """What of a subscription change's proof is missing: the member's `control` event applying it, the way its
    `subscribe_by` asked."""
    done = [c for c in ix.of("control", lo, hi, member=who) if "subscription" in c]
    by = p.get("subscribe_by", DEFAULT_SUBSCRIBE_BY)
    if not done:
        return f"no control event of {who} applying the subscription"
    if not any(c.get("subscribe_by", DEFAULT_SUBSCRIBE_BY) == by for c in done):
        return (f"{who}'s control event applied the subscription by "
                f"{done[-1].get('subscribe_by', DEFAULT_SUBSCRIBE_BY)}, not by {by} as the step asked")
    return None


def _read_back(e: dict, ix: _Index, lo: float, hi: float) -> list[str]:
    """What of a group config's proof is missing: a `group_settings` event in the step reading each setting back."""
    read = ix.of("group_settings", lo, hi)
    if not read:
        return ["no group_settings event read the group's configs back"]
    got, err = read[-1].get("group") or {}, read[-1].get("error")
    return [f"the group's {k} reads {got.get(k)!r}, not {v!r}" + (f" ({err})" if err else "")
            for k, v in (e.get("settings") or {}).items() if str(got.get(k)) != str(v)]


def _stall(who, p: dict, ix: _Index, lo: float, hi: float) -> str | None:
    """What of a poll stall's proof is missing: the member's own `control` events bound its stall window, and its
    processing gap proves it (no `processed` event of the member inside the window, which lasts `duration_s`)."""
    on = next((c for c in ix.of("control", lo, hi, member=who) if c.get("stall") is True), None)
    if on is None:
        return f"no control event of {who} applying the stall"
    off = next((c for c in ix.of("control", on["mono"], hi, member=who) if c.get("stall") is False), None)
    gone = ix.of("member_exit", on["mono"], hi, member=who)
    if off is None and not gone:
        return (f"no control event of {who} resuming after its stall at {run_s(ix.history, on['mono'])}, nor its exit, "
                f"in the step")
    until = off["mono"] if off is not None else gone[0]["mono"]
    want = p.get("duration_s") if isinstance(p.get("duration_s"), (int, float)) else 0.0
    if off is not None and until - on["mono"] < want - STALL_SLACK_S:
        return (f"{who}'s stall lasted {until - on['mono']:.3f} s by its control events ({run_s(ix.history, on['mono'])} to "
                f"{run_s(ix.history, until)}), not the step's duration_s {want:g}")
    if n := ix.processed(who, on["mono"], until):
        return (f"{who} processed {n} batch{'es' * (n != 1)} inside its stall ({run_s(ix.history, on['mono'])} to {run_s(ix.history, until)}, by "
                f"its control events): its word says stalled, its processing says not")
    return None


def _request_fault(e: dict, ix: _Index, lo: float) -> str | None:
    rule = e.get("rule")
    applied = len([f for f in ix.of("fault_start", lo, rule=rule) if f.get("api")])
    want = e.get("count") if isinstance(e.get("count"), int) else 1
    if applied >= want:
        return None
    return f"the proxy applied rule {rule} ({e.get('member', 'all')}) to {applied} request{'s' * (applied != 1)}" \
           f", not {want}" + (" (its count)" if isinstance(e.get("count"), int) else "")


def _plan(history: History) -> tuple[list[dict] | None, str | None]:
    """The planned steps run_start carries (None: an older history without them), or what is wrong with them."""
    start = history.run_start() or {}
    if "plan" not in start:
        return None, None
    plan = start["plan"]
    if not isinstance(plan, list) or not all(isinstance(x, dict) and isinstance(x.get("action_id"), str)
                                             for x in plan):
        return [], f"run_start's plan is not a list of steps with their action_id: {plan!r:.200}"
    return plan, None


def _steps(history: History, ix: _Index) -> tuple[list[tuple], list[str], str]:
    """(number, planned step or None, action_start or None, action_end or None) of each step to judge, what is
    extra to the plan, and how the steps were found (for the verdict's message)."""
    starts = ix.by_type.get("action_start", [])
    ends: dict = {}
    for e in ix.by_type.get("action_end", ()):
        ends.setdefault(e.get("action_id"), e)
    by_id: dict = {}
    for a in starts:
        by_id.setdefault(a.get("action_id"), []).append(a)
    plan, bad = _plan(history)
    how = ""
    if plan is None:
        plan, how = _older_plan(starts)
    elif (history.run_start() or {}).get("plan_source"):
        how = (f" (this history's run_start carries no plan, as one recorded before it did: its plan is the schedule "
               f"its {history.run_start()['plan_source']} recorded)")
    planned = {x["action_id"] for x in plan}
    extra = [f"an extra step {a.get('action_id')} {a.get('kind')} {a.get('params') or {}} that the plan does not "
             f"hold" for a in starts if a.get("action_id") not in planned]
    extra += [f"step {i} has {len(v)} action_start events" for i, v in by_id.items() if i in planned and len(v) > 1]
    extra += [bad] if bad else []
    rows = [(n, x, (by_id.get(x["action_id"]) or [None])[0], ends.get(x["action_id"])) for n, x in enumerate(plan, 1)]
    return rows, extra, how


def _older_plan(starts: list[dict]) -> tuple[list[dict], str]:
    """An older history's steps (its run_start carries no plan): a1 to aN, N the highest its action_start events
    number, with no gap (a number missing is a step whose lines are not there); then any step otherwise named, in
    history order, judged on its own (`any_order`)."""
    ids = list(dict.fromkeys(a.get("action_id") for a in starts))
    top = max((int(i[1:]) for i in ids if isinstance(i, str) and i[:1] == "a" and i[1:].isdigit()), default=0)
    plan = [{"action_id": f"a{n}"} for n in range(1, top + 1)]
    plan += [{"action_id": i, "any_order": True} for i in ids if i not in {x["action_id"] for x in plan}]
    numbered = f", numbered a1 to a{top} with no gap; a step cut from its end cannot be seen" if top else ""
    return plan, (f" (this history's run_start carries no plan, as one recorded before it did: judged on the steps "
                  f"its action_start events show{numbered})" if plan else "")


def _why(want: dict, a: dict | None, e: dict | None, prev: dict | None, ix: _Index) -> str | None:
    """Why the planned step did not happen as planned, or None."""
    if a is None:
        return "the history has no line of it (no action_start)"
    if "kind" in want and (a.get("kind"), a.get("params") or {}) != (want.get("kind"), want.get("params") or {}):
        return f"its action_start is {a.get('kind')} {a.get('params') or {}}, not the planned step"
    if e is None:
        return "it has no action_end (it never finished)"
    if e.get("ok") is not True:
        return e.get("skipped") or e.get("error") or ("its action_end says it failed" if "ok" in e else
                                                      "its action_end has no `ok`: nothing says it went well")
    if a["mono"] > ix.end or e["mono"] > ix.end:
        return f"it {'began' if a['mono'] > ix.end else 'ended'} after run_end (late)"
    if prev is not None and a["mono"] < prev["mono"]:
        return "it began before the step planned before it ended (out of order)"
    why = _missing(a, e, ix)
    if why is not None and ix.end != float("inf") and _missing(a, e, ix.unbounded()) is None:
        return f"its effect came after run_end (late): before it, {why}"
    return why


def _died(history: History, ix: _Index, wits: list) -> list[str]:
    """A broker whose process ended on its own (`broker_event` `died`, written by the backend when it notices): no
    step did it, so the run did not happen as written; Kafka's own reason (its log's last error) is said."""
    start = (history.run_start() or {}).get("mono")
    said = []
    for e in ix.of("broker_event", float("-inf"), what="died"):
        at = f" at {e['mono'] - start:.1f} s" if start is not None else ""
        code = e.get("code")
        how = f"killed by signal {-code}" if isinstance(code, int) and code < 0 else f"exit code {code}"
        words = (f"broker {e.get('broker')} died on its own{at} ({how})"
                 + (f": {e['reason']}" if e.get("reason") else ": its log names no error")
                 + "; no step stopped it, so the run did not happen as written")
        said.append(words)
        wits.append(witness(e, words))
    return said


def check(history: History) -> Verdict:
    """Judge that each step of the plan happened, in order and before run_end (see the module docstring)."""
    ix = _Index(history)
    rows, extra, how = _steps(history, ix)
    missed, wits, prev = [], [], None
    for n, want, a, e in rows:
        why = _why(want, a, e, None if want.get("any_order") else prev, ix)
        prev = e if e is not None else prev
        if why is None:
            continue
        p = (a or want).get("params") or {}
        words = f"step {n} ({want['action_id']}) {(a or want).get('kind', '')} {p} did not happen: {why}" + \
            (" (if_supported: the scenario allows it to do nothing, and then the run did not exercise it)"
             if p.get("if_supported") else "")
        missed.append((n, words.replace("  ", " ")))
        wits += [witness(a, words)] if a is not None else []
        wits += [witness(e, "its end")] if e is not None else []
    m = {"steps": len(rows), "performed": len(rows) - len(missed), "not_performed": [n for n, _ in missed]}
    problems = ([] if ix.end != float("inf") else
                ["the history has no run_end: the run did not finish, or its end was cut, so its schedule is not "
                 "proven"]) + extra + _died(history, ix, wits)
    if missed or problems:
        said = ([f"{len(missed)} of {len(rows)} steps did not happen, so the run did not exercise them: "
                 + "; ".join(w for _, w in missed)] if missed else []) + problems
        return verdict(NAME, "unknown", "; ".join(said) + how, wits, m)
    if not rows:
        return verdict(NAME, "valid", "the schedule has no step: nothing to perform", (), m)
    return verdict(NAME, "valid", f"every one of the {len(rows)} steps happened in order before run_end, its effect "
                                  f"in the history{how}", (), m)
