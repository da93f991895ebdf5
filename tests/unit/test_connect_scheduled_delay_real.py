"""`connect_scheduled_delay` on the matrix's `connect-rolling-upgrade-sessioned` (Kafka 4.4.0, connect-runtime 3.9.1,
sessioned; issue 44), kept trimmed as fixtures/histories/connect-rolling-upgrade-sessioned-leave-before-exit.jsonl
(the harness's events, the workers' `started`, `stopped`, rebalance and unit start/stop events).

m2's graceful stop began (`member_stop`) at 33920.09; it sent its LeaveGroup at 01:39:09.849 by its log, wrote
`stopped` at 33921.28 and its exit was seen (`member_exit`) at 33921.49. The leader m3 got generation 11 at
01:39:10.014 with `delay=10000`, 0.17 s before that exit was seen: its assignor started the delay before the exit.
harness-sink and harness-sink-2 started on m4 at 33931.47 / 33931.48, 9.98 / 9.99 s after the exit but 11.38 s
after the stop began: judged once "before the 10s delay", a pass by the protocol.
"""
import json
from pathlib import Path

from connectbuild import history

from harness.invariants import judge

NAME = "connect_scheduled_delay"
RUN = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / \
    "connect-rolling-upgrade-sessioned-leave-before-exit.jsonl"
STOP = 33920.088496133  # m2's member_stop
EXIT = 33921.487500263  # m2's member_exit


def _events(restart_at: float | None = None) -> list[dict]:
    """The kept run; restart_at: m4's first start of m2's units (harness-sink, harness-sink-2) moved there."""
    evs = [json.loads(x) for x in RUN.read_text().splitlines() if x]
    if restart_at is not None:
        for e in evs:
            if e.get("member") == "m4" and e.get("connector") == "harness-sink" and e["mono"] > EXIT \
                    and e["type"] in ("connect_connector_started", "connect_task_started") \
                    and e.get("task") in (None, 2):
                e["mono"] = restart_at + (0.008 if e.get("task") == 2 else 0.0)
    return sorted(evs, key=lambda e: e["mono"])


def test_the_real_graceful_leave_seen_after_the_leaders_delay_began_passes():
    v = judge(history(*_events()))[NAME]
    assert v.status == "valid", v.message
    m2 = next(d for d in v.measurements["departures"] if d["member"] == "m2")
    assert m2["how"] == "graceful" and round(m2["first_restart_s"], 2) == 9.98 and m2["delay_s"] == 10.0


def test_the_same_units_restarted_well_before_the_delay_still_fail():
    """The buggy-side twin: the same departure, m2's units started on m4 5 s after its stop began."""
    v = judge(history(*_events(STOP + 5.0)))[NAME]
    assert v.status == "invalid"
    assert "harness-sink of m2 (graceful) restarted on m4 5.00s after its stop began" in v.message
    assert "before the 10s delay (the leader m3" in v.message and "less 0.05s of clock slack" in v.message


def test_a_restart_beyond_the_clock_slack_before_the_delay_fails():
    """Only the clocks' slack (0.05 s) is allowed before stop + delay: 0.1 s before it fails."""
    assert judge(history(*_events(STOP + 9.9)))[NAME].status == "invalid"
    assert judge(history(*_events(STOP + 9.97)))[NAME].status == "valid"
