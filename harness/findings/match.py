"""Whether a known finding's marks (harness/findings/evidence.py) explain a failing verdict: the failure, not the
neighbourhood.

A failing verdict is explained only when it has witnesses and every one of them lies inside a mark of the bug:

- a witness that is a record (topic, partition, offset: an acknowledged record never processed, a delivery) is one
  of the mark's records, when the mark names records; one of a member is then also that member's, in the window;
- a witness of the mark's member is in the mark's window, on the mark's partitions when it names partitions (or it
  is the member's own `assigned` of them, between `held_from` and the window: the holding the bug prolonged);
- a witness of another member names only the mark's partitions, in the window (the group giving them away);
- a witness that names partitions and no member names only the mark's partitions, in the window;
- a broker's line that names one member by its group member id (the harness's `group_assignment` events map them)
  is that member's witness;
- a witness that names no member, partition or record (a fault, the runner's wait) is inside only when it is the
  start or end of one of the mark's own faults (`Mark.faults`: naming the struck member, ended while it held
  the partitions: the trigger, which can end just before the member's last word from the group); never by its time
  alone (a wait or another fault in the window is no part of the bug).

Every witness the checker found is held against the marks, not the first MAX_WITNESSES it keeps: a verdict that
found more than it keeps (`witnesses_found`), or keeps MAX_WITNESSES without saying how many it found (a checker
that cut its own list), is not explained (the ones not kept cannot be compared); nor is one whose checker cuts its
list shorter and counts its problems in a measurement (`COUNTED`: commit_progress's `stalls`) that shows fewer. A
witness that stands for several events (commit_progress's first stall of a member and partition, with `stalls`, how
many, and `until_mono`, the last one's time) counts as that many and is inside a mark only when its last time is
inside the window too.

The brokers' lines a checker appends to a failing verdict as context (`with_broker_context`: what the brokers said
about the group near its witnesses) are not witnesses of the failure and are not compared: a line about an earlier,
unrelated fencing of the same member would otherwise keep a run that shows the bug from matching it. A verdict with
no other witness has none to compare.

A witness without a time (`mono`) is never inside, nor is a commit that took effect (`committed`, ok): every mark
is of refusals or of records, and a fenced member's commit taking effect is the broker's fencing failing. A verdict
that counts lost records (`lost`) is explained only when the marks name at least as many records (its witnesses
show only the first few).
"""
from __future__ import annotations

from harness.findings.evidence import Mark
from harness.invariants.brokers import BROKER_CONTEXT
from harness.invariants.core import MAX_WITNESSES


def _field(v, name: str, default=None):
    return v.get(name, default) if isinstance(v, dict) else getattr(v, name, default)


def status(v) -> str:
    """A verdict's status, of a Verdict or of its dict in verdicts.json."""
    return str(_field(v, "status"))


def _parts(w: dict) -> set[tuple[str, int]]:
    out = {(t, int(p)) for t, p, *_ in w.get("partitions") or w.get("offsets") or ()
           if isinstance(t, str) and isinstance(p, int)}
    if isinstance(w.get("topic"), str) and isinstance(w.get("partition"), int):
        out.add((w["topic"], w["partition"]))
    return out


def _record(w: dict) -> tuple[str, int, int] | None:
    if isinstance(w.get("topic"), str) and isinstance(w.get("partition"), int) and isinstance(w.get("offset"), int):
        return w["topic"], w["partition"], w["offset"]
    return None


def inside(w: dict, k: Mark, ids: dict[str, str] | None = None) -> bool:
    """Whether witness w lies inside mark k (the module docstring); `ids`: the members by their group member ids
    (`evidence.member_ids`), for a broker's line that names a member by that id."""
    t, member, parts, rec = w.get("mono"), w.get("member"), _parts(w), _record(w)
    if not isinstance(t, (int, float)) or (w.get("type") == "committed" and w.get("ok")):
        return False
    member = member if isinstance(member, str) else _named(w, ids or {})
    if w.get("type") in ("fault_start", "fault_end") and w.get("fault_id") in k.faults:
        return True
    until = w.get("until_mono")  # a witness standing for events up to then (commit_progress's stalled events)
    in_window = k.start <= t <= k.end and (not isinstance(until, (int, float)) or k.start <= until <= k.end)
    if rec is not None and k.records:
        return rec in k.records and (member is None or (member in k.members and in_window))
    if member in k.members:
        if parts and not parts & k.partitions:
            return False
        return in_window or (w.get("type") == "assigned" and k.held_from is not None and k.held_from <= t <= k.start)
    if member is not None or parts:
        return bool(parts) and parts <= k.partitions and in_window
    return False  # it names nothing of the bug's: never inside by its time alone


def _named(w: dict, ids: dict[str, str]) -> str | None:
    """The member a broker's line names by its group member id (one member only), else None."""
    text = w.get("message") if w.get("type") == "broker" else None
    named = {m for i, m in ids.items() if isinstance(text, str) and i in text}
    return named.pop() if len(named) == 1 else None


def compared(verdict) -> list[dict]:
    """A verdict's witnesses of the failure: all but the brokers' lines appended as context (the module docstring)."""
    return [w for w in _field(verdict, "witnesses", ()) or ()
            if not (w.get("type") == "broker" and w.get("why") == BROKER_CONTEXT)]


def holding(verdicts, marks: list[Mark], ids: dict[str, str] | None = None) -> tuple[Mark, ...]:
    """The marks that hold a witness of one of the verdicts."""
    ws = [w for v in verdicts for w in compared(v)]
    return tuple(k for k in marks if any(inside(w, k, ids) for w in ws))


def outside(verdict, marks: list[Mark], ids: dict[str, str] | None = None, *, at=None) -> str | None:
    """Why a failing verdict is not explained by the marks (the first witness outside them), or None; `at` says a
    time of the history as the run's seconds (evidence's `run_seconds`)."""
    witnesses = compared(verdict)
    name = _field(verdict, "name", "the verdict")
    if not witnesses:
        return f"{name} has no witness to compare"
    if (unseen := _unseen(verdict, len(witnesses))) is not None:
        return f"{name} {unseen}, which cannot be held against the marks"
    for w in witnesses:
        if not any(inside(w, k, ids) for k in marks):
            return f"{name}'s witness {_show(w, at)} lies outside every mark"
    lost = (_field(verdict, "measurements", {}) or {}).get("lost")
    named = len(set().union(*(k.records for k in marks)))
    if isinstance(lost, int) and lost > named and any(k.records for k in marks):
        return f"{name} counts {lost} lost records, the marks name {named}"
    return None


def found(verdict) -> int | None:
    """How many witnesses of its failure a verdict's checker found (`Verdict.found`, `witnesses_found` in
    verdicts.json), or None when it did not say."""
    got = verdict.get("witnesses_found") if isinstance(verdict, dict) else getattr(verdict, "found", None)
    return got if isinstance(got, int) and not isinstance(got, bool) else None


#: the checkers that show fewer problems than they found below MAX_WITNESSES, before `verdict` (so `found` cannot
#: tell): the measurement that counts their problems and the type of the witness that shows each one
COUNTED = {"commit_progress": ("stalls", "processed")}


def _unseen(verdict, kept: int) -> str | None:
    """What of a verdict's witnesses was not kept (so cannot be compared), or None when it kept every one."""
    name = _field(verdict, "name", "")
    if name in COUNTED:
        key, kind = COUNTED[name]
        counted = (_field(verdict, "measurements", {}) or {}).get(key)
        shown = sum(w.get("stalls") if isinstance(w.get("stalls"), int) else 1 for w in compared(verdict)
                    if w.get("type") == kind)
        if isinstance(counted, int) and counted > shown:
            return f"counts {counted} {key} and shows {shown}"
    n = found(verdict)
    if n is None and kept >= MAX_WITNESSES:
        return f"keeps {kept} witnesses and does not say how many it found (the rest were not kept)"
    if n is not None and n > kept:
        return f"found {n} witnesses and keeps {kept}: {n - kept} were not kept"
    return None


def _show(w: dict, at=None) -> str:
    said = {k: w[k] for k in ("type", "member", "partitions", "topic", "partition", "offset") if k in w}
    t = w.get("mono")
    if not isinstance(t, (int, float)):
        return f"{said} (no time)"
    return f"{said} at {at(t)}" if at is not None else f"{said} at {t:.3f} (monotonic)"
