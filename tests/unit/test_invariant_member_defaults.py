"""No default in a verdict's facts (issue 45): a member timing the history lacks is the run's value only when
run_start.settings recorded it (said so, and where), else the bound that needs it is unknown, naming the setting;
a client's default is never taken for what a member ran with, nor called "recorded".

The run: two classic members; b is killed at 10 and a takes b's partitions at `taken` (b's 6 s session timeout,
then two cooperative rounds of a's max.poll.interval.ms). The run gave its clients 20 s; a client's default is 300 s.
"""
from __future__ import annotations

import pytest
from histbuild import (assigned, drained, effective, history, join, member_exit, revoked, run_end, run_start,
                       settings)

from harness.invariants import judge
from harness.invariants.core import CheckSettings, MissingSetting
from harness.invariants.settings import member_settings, rebalance_timeout_s
from harness.invariants.timeline import build

RUN = {"topic": "t", "partitions": 4, "protocol": "classic-cooperative"}
TIMINGS = {"session_timeout_s": 6.0, "heartbeat_interval_s": 0.5, "max_poll_interval_s": 20.0}


def without(*keys: str, **kw) -> dict:
    """A member's `effective` lacking `keys`."""
    return {k: v for k, v in effective(**kw).items() if k not in keys}


def run(eff_a: dict | None, *, taken: float = 17.0, recorded: dict | None = None, eff_b: dict | None = None) -> list:
    eff_b = eff_b if eff_b is not None else effective(max_poll_ms=20000)
    return [run_start(0.0, settings={**RUN, **(recorded or {})}),
            *join("a", 0.1, [0, 1], effective=eff_a), *join("b", 0.2, [2, 3], effective=eff_b),
            member_exit("b", 10.0, how="kill"), assigned("a", taken, [2, 3]), drained(taken + 13.0),
            revoked("a", taken + 17.0, [0, 1, 2, 3]), member_exit("a", taken + 17.5), run_end(taken + 18.0)]


def timeline(evs: list):
    start = next(e for e in evs if e["type"] == "run_start")
    return build(history(evs), CheckSettings.from_dict(start["settings"]))


def test_a_member_lacking_max_poll_interval_is_never_judged_with_the_clients_default():
    # before: 300 s "(recorded)", a bound of 606 s that a 50 s gap passed while the run gave its clients 20 s
    late = judge(history(run(without("max.poll.interval.ms"), taken=60.0)))["convergence_balance"]
    assert late.status == "unknown", late.message
    assert "max.poll.interval.ms: a's start recorded no max.poll.interval.ms, and run_start.settings records no " \
           "max_poll_interval_s" in late.message
    assert "300" not in late.message and "(recorded)" not in late.message


def test_the_runs_recorded_value_stands_in_labelled_with_where_it_was_recorded():
    evs = run(without("max.poll.interval.ms"), taken=60.0, recorded={"max_poll_interval_s": 20.0})
    late = judge(history(evs))["convergence_balance"]
    assert late.status == "invalid", late.message  # 6 s + 2 x 20 s: 46 s, not 606 s
    assert "(bound 46.0s" in late.message
    assert "a's max.poll.interval.ms=20000 (the run's max_poll_interval_s=20s (run_start.settings): a's start " \
           "recorded no max.poll.interval.ms)" in late.message and "(recorded)" not in late.message
    assert judge(history(run(without("max.poll.interval.ms"), recorded={"max_poll_interval_s": 20.0}))
                 )["convergence_balance"].status == "valid"  # 7 s: within


def test_a_members_own_value_is_the_one_called_recorded():
    tl = timeline(run(effective(max_poll_ms=20000)))
    assert rebalance_timeout_s(tl, 12.0) == (20.0, "a's max.poll.interval.ms=20000 (recorded)")
    assert member_settings(tl, "a", 12.0).recorded


def test_a_missing_heartbeat_interval_is_unknown_or_the_runs_said_so():
    tl = timeline(run(without("heartbeat.interval.ms", max_poll_ms=20000)))
    ms = member_settings(tl, "a", 5.0)
    with pytest.raises(MissingSetting, match="heartbeat.interval.ms: a's start recorded no heartbeat.interval.ms, "
                                             "and run_start.settings records no heartbeat_interval_s"):
        ms.heartbeat_s
    assert ms.max_poll_s == 20.0 and ms.session_timeout_s == 6.0  # what it did record still bounds
    assert not ms.recorded
    tl = timeline(run(without("heartbeat.interval.ms", max_poll_ms=20000), recorded={"heartbeat_interval_s": 0.5}))
    ms = member_settings(tl, "a", 5.0)
    assert ms.heartbeat_s == 0.5 and "heartbeat.interval.ms: the run's heartbeat_interval_s=0.5s " \
                                      "(run_start.settings): a's start recorded no heartbeat.interval.ms" in ms.source
    assert "3000" not in ms.source and "3s" not in ms.source


def test_a_missing_session_timeout_is_unknown_or_the_runs_said_so_never_given():
    eff_b = without("session.timeout.ms", max_poll_ms=20000)
    v = judge(history(run(effective(max_poll_ms=20000), eff_b=eff_b)))["convergence_balance"]
    assert v.status == "unknown" and "session.timeout.ms: b's start recorded no session.timeout.ms, and " \
                                     "run_start.settings records no session_timeout_s" in v.message
    evs = run(effective(max_poll_ms=20000), eff_b=eff_b, recorded={"session_timeout_s": 6.0})
    ms = member_settings(timeline(evs), "b", 9.0)
    assert ms.session_timeout_s == 6.0 and "given" not in ms.source
    assert "session.timeout.ms: the run's session_timeout_s=6s (run_start.settings)" in ms.source
    assert judge(history(evs))["convergence_balance"].status == "valid"


def test_a_member_that_recorded_no_settings_is_judged_with_the_runs_only_when_recorded():
    bare = judge(history(run(None, eff_b=None)))  # no run timings in run_start.settings
    assert bare["convergence_balance"].status == "unknown"
    assert "a's start recorded no settings" in bare["convergence_balance"].message
    judged = judge(history([{**e, "effective": None} if e["type"] == "started" else e
                            for e in run(None, recorded=TIMINGS)]))
    assert judged["convergence_balance"].status == "valid", judged["convergence_balance"].message
    # settings built in code (a test's, a caller's) are the caller's word: every field given
    assert CheckSettings(**RUN).recorded_at("max_poll_interval_s") == "given to the checkers"
    assert CheckSettings.from_dict(RUN).recorded_at("max_poll_interval_s") is None
    assert settings().recorded_at("session_timeout_s") == "given to the checkers"


def test_an_unknown_run_start_settings_key_is_kept_and_named_in_every_verdict():
    recorded = {**TIMINGS, "future_bound_s": 9.0}
    vs = judge(history(run(effective(max_poll_ms=20000), recorded=recorded)))
    plain = judge(history(run(effective(max_poll_ms=20000), recorded=TIMINGS)))
    said = "run_start.settings also holds future_bound_s=9.0, which this harness does not read"
    from harness.invariants import CHECKERS
    for name in CHECKERS:
        assert said in vs[name].message, (name, vs[name].message)
        assert said not in plain[name].message
        assert vs[name].status == plain[name].status
    assert CheckSettings.from_dict({**RUN, "future_bound_s": 9.0}).unread == {"future_bound_s": 9.0}
    # an older harness's key that another settings class reads (Streams' settle_s, merged into old runs) is no
    # unknown key: the kept share and broker-partition runs hold it
    assert CheckSettings.from_dict({**RUN, "settle_s": 5.0}).unread == {}
