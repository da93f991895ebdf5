"""The table's proof data (harness/base/steps.py, each row's `Proof`) says what `schedule_performed`
(harness/invariants/performed.py) checks of each step today, so that the checker can read the rows instead of its
own constants and per-kind branches without changing a verdict.

Verify: the request steps are the request proxy's rule actions; and, step by step, `performed._missing` over a history
missing everything names exactly what the row's proof says must be there (the member events of the result's
members, the fault, the member the fault must name, the broker restarts, the member's control event, the result's
own check) and nothing else: performed.py reads the rows, and this holds its reading to what each row says.
"""
from __future__ import annotations

from collections import defaultdict

import pytest

from harness.base import steps
from harness.base.steps import ACTIONS, KILL, START, STOP
from harness.invariants import performed


def test_the_request_steps_are_the_proxys_rule_actions_and_every_result_check_is_used():
    from harness.kproxy.rules import ACTIONS as RULE_ACTIONS
    assert steps.REQUEST_STEPS == RULE_ACTIONS and len(steps.REQUEST_STEPS) == 6
    assert set(steps.RESULT_CHECKS) == {r.proof.result for r in ACTIONS.values() if r.proof.result}


def _index(*events):
    ix = performed._Index.__new__(performed._Index)
    ix.by_type, ix.fault_end, ix.end, ix.history = defaultdict(list), {}, float("inf"), None
    for e in events:
        ix.by_type[e["type"]].append(e)
        if e["type"] == "fault_end":
            ix.fault_end[e["fault_id"]] = e
    return ix


def _fault_window(kind: str, member: str) -> tuple[dict, dict]:
    return ({"type": "fault_start", "mono": 0.5, "fault_id": "f1", "kind": kind, "members_affected": [member],
             "brokers_affected": [1]}, {"type": "fault_end", "mono": 0.9, "fault_id": "f1"})


_EVENT = {START: "no member_start of {}", STOP: "no member_stop or member_exit of {}", KILL: "no member_exit (kill) of {}"}
#: what performed.py says when a result check of RESULT_CHECKS finds nothing (a result naming broker 1, no member)
_RESULT = {"restarted": "no member was restarted", "moved": "no leader moved off broker 1",
           "read_back": "no group_settings event", "grew": "the partition count went from",
           "sampled": "the autoscaler took no lag sample", "rule_applied": "the proxy applied rule",
           "reached": "not the 1 it waited for", "members_killed": "no member_exit (kill) of m-member"}

#: the result checks performed.py makes of a step's fault window once found (the others whatever the fault)
_WITHIN_FAULT = {"read_back", "grew", "sampled", "members_killed"}


def _expected(row, *, fault_found: bool) -> list[str]:
    """What `_missing` must name of a step of `row` whose result names a member under each key, in a history with
    no member event (and the row's fault window, when `fault_found`)."""
    p, out = row.proof, []
    for m in p.members:
        out += [_EVENT[m.event].format(f"m-{k}") for k in m.keys]
    if p.result and p.result not in _WITHIN_FAULT:
        out.append(_RESULT[p.result])
    if p.fault and not fault_found:
        return out + [f"no {p.fault} fault"]
    if p.restarts_brokers:
        out.append("broker 1 was not stopped within the fault")
    if p.control:
        out.append(f"no control event of m-member applying the {p.control}")
    if p.result in _WITHIN_FAULT:
        out.append(_RESULT[p.result])
    return out


def _says_exactly(why: str | None, expected: list[str]) -> None:
    parts = why.split("; ") if why else []
    for x in expected:
        assert any(x in part for part in parts), (x, why)
    for part in parts:
        assert any(x in part for x in expected), (part, expected)


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_performed_checks_what_the_row_says_and_nothing_else(name):
    row = ACTIONS[name]
    keys = {k for m in row.proof.members for k in m.keys} | {"member"}
    end = {"mono": 1.0, "ok": True, "broker": 1, **{k: f"m-{k}" for k in keys}}
    start = {"kind": name, "params": {}, "mono": 0.0}
    _says_exactly(performed._missing(start, end, _index()), _expected(row, fault_found=False))
    if row.proof.fault:
        ix = _index(*_fault_window(row.proof.fault, "m-member"))
        _says_exactly(performed._missing(start, end, ix), _expected(row, fault_found=True))
        # a fault window naming another member proves the step only when its row does not ask for the member
        why = performed._missing(start, end, _index(*_fault_window(row.proof.fault, "m-other")))
        assert (f"no {row.proof.fault} fault affecting m-member" in (why or "")) == row.proof.fault_member, why


@pytest.mark.parametrize("name", sorted(n for n, r in ACTIONS.items() if any(m.none for m in r.proof.members)))
def test_a_result_naming_no_member_is_what_the_row_says(name):
    row = ACTIONS[name]
    why = performed._missing({"kind": name, "params": {}, "mono": 0.0}, {"mono": 1.0, "ok": True}, _index())
    for m in row.proof.members:
        if m.none:
            assert m.none in why, (m, why)


def test_the_checks_above_see_a_wrong_row():
    """A row claiming a member event performed.py does not check is caught: the test is not vacuous."""
    row = ACTIONS[steps.Step.SCALE_OUT]
    wrong = type(row.proof)(members=(steps.Members(("member",), KILL, "no member"),))
    with pytest.raises(AssertionError):
        end = {"mono": 1.0, "ok": True, "member": "m-member"}
        _says_exactly(performed._missing({"kind": row.name, "params": {}, "mono": 0.0}, end, _index()),
                      _expected(type(row)(row.name, row.params, row.doc, proof=wrong), fault_found=False))
