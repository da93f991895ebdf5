"""`group_settled` for share groups: the rule every kind is judged by (harness/invariants/settled.py), with what a
share group's "settled" and its bound are.

- *Settled* at t (`balance.share`, the runner's stable rule): every live member has been delivered records since
  it started (a share group gives a partition to several members; neither client reports an assignment).
- *Bound* after a disturbance at T: the share session timeout when a member left without a word at T (killed or
  crashed: the coordinator keeps its partitions until its session expires), then the heartbeat interval (a member
  learns its assignment at its next heartbeat) and the record lock duration (the records a departed member held come
  back when their locks run out), each as the run's `group_settings` event read it (`view.group_setting`; one that
  could not be read is MissingSetting: unknown). The runner's own wait (its stable timeout, 60 s) is longer than
  this with the harness's settings.
"""
from __future__ import annotations

from harness.record.history import History
from harness.invariants import balance
from harness.invariants.core import MissingSetting, Verdict
from harness.invariants.settled import judge_settled, stretches, workload_end
from harness.invariants.share.view import ShareCheckSettings, group_setting
from harness.invariants.terms import INF, faults_of

NAME = "group_settled"
RULE = "every live member delivered records since it started (balance.share)"


def _lives(history: History) -> dict[str, tuple[float, float, str]]:
    """member -> (start, end, how it ended: the exit's how, or "open")."""
    out: dict[str, tuple[float, float, str]] = {}
    for _, e in history.control():
        m = e.get("member")
        if e.get("type") == "member_start" and m not in out:
            out[m] = (e["mono"], INF, "open")
        elif e.get("type") == "member_exit" and m in out and out[m][2] == "open":
            out[m] = (out[m][0], e["mono"], e.get("how") or "crash")
    return out


def settled_stretches(history: History, lives: dict, end: float) -> list[tuple[float, float]]:
    """(from, to) of every stretch in which every live member had been delivered records since its start."""
    first: dict[str, float] = {}
    for _, e in history.control():
        m = e.get("member")
        if e.get("type") == "share_acquired" and m in lives and e["mono"] >= lives[m][0]:
            first.setdefault(m, e["mono"])

    def settled_at(t: float) -> bool:
        return balance.share({m: int(first.get(m, INF) <= t) for m, (a, b, _) in lives.items() if a <= t < b}).ok

    return stretches({t for a, b, _ in lives.values() for t in (a, b) if t < INF} | set(first.values()), end,
                     settled_at)


def bound_at(history: History, lives: dict, T: float) -> tuple[float, str]:
    """How long the group may take to settle after a disturbance at T (module docstring). (seconds, why)."""
    got = {k: group_setting(history, k) for k in ("session_ms", "heartbeat_ms", "lock_ms")}
    for k, s in got.items():
        if s.value is None:
            raise MissingSetting(f"the share group's {k.removesuffix('_ms')} setting: {s.source}")
    left = [m for m, (_, e, how) in lives.items() if abs(e - T) < 1e-6 and how in ("kill", "crash")]
    parts = [(got["heartbeat_ms"].value / 1000, got["heartbeat_ms"].says("heartbeat interval", " ms")),
             (got["lock_ms"].value / 1000, got["lock_ms"].says("record lock", " ms"))]
    if left:
        parts.insert(0, (got["session_ms"].value / 1000,
                         f"{', '.join(left)} left without a word: " + got["session_ms"].says("share session timeout",
                                                                                           " ms")))
    return sum(x for x, _ in parts), " + ".join(w for _, w in parts)


def check_group_settled(history: History, s: ShareCheckSettings) -> Verdict:
    """Judge that the share group settled within its bound (harness/invariants/settled.py)."""
    lives = _lives(history)
    control = history.control()
    end = next((e["mono"] for _, e in reversed(control) if e.get("type") == "run_end"),
               control[-1][1]["mono"] if control else 0.0)
    faults = {t for f in faults_of(control, end) for t in (f.start, f.end) if t < INF}
    times = sorted({t for a, b, _ in lives.values() for t in (a, b) if t < INF} | faults)
    start = rs["mono"] if (rs := history.run_start()) else times[0] if times else 0.0
    return judge_settled(history, settled=settled_stretches(history, lives, end), disturbances=times, start=start,
                         end=workload_end(history), bound_at=lambda T: bound_at(history, lives, T), what=RULE)

