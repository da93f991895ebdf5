"""What the Streams task assignor ran with at a moment: the settings checkers 2 to 4 judge warmups, probing and
standbys by, per moment, from what the instances and the brokers recorded.

Under the classic protocol the assignment is computed in the client, by the group leader's
StreamsPartitionAssignor (KIP-441), with the leader's own `acceptable.recovery.lag`, `max.warmup.replicas`,
`probing.rebalance.interval.ms`, `num.standby.replicas` and `rack.aware.assignment.tags`. Each instance's
`started` event records them: `effective` (its StreamsConfig's values, defaults included), else `settings` (the
values it was given). The history does not say which instance led, so the *candidates* at t are the distinct
settings of the instances alive at t; when they agree (the usual case) there is one, and when they differ (a
settings roll half done) a checker holds a rule broken only when it is broken under every candidate: the leader
ran one of them. Under the `streams` protocol (KIP-1071) the brokers assign: standbys are the group config
`streams.num.standby.replicas` (else the brokers' `group.streams.num.standby.replicas`, from the latest
`group_settings` event), and the assignor has neither warmups nor rack awareness. A value no instance and no
broker recorded is the run's (`StreamsCheckSettings`), and the source says so.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.invariants.clock import run_t0
from harness.invariants.settings import group_setting_ms, latest_at, started_of
from harness.invariants.streams.view import StreamsCheckSettings, _View

#: the assignor settings of a Streams instance: (key, StreamsCheckSettings field, from ms to the field's unit)
KEYS = (("acceptable.recovery.lag", "acceptable_recovery_lag", 1),
        ("max.warmup.replicas", "max_warmup_replicas", 1),
        ("probing.rebalance.interval.ms", "probing_interval_s", 1000),
        ("num.standby.replicas", "standby_replicas", 1))
RACK_TAGS = "rack.aware.assignment.tags"


@dataclass(frozen=True)
class Assignor:
    """The settings one possible assignor ran with; `source` says whose they are and where they were read."""

    protocol: str  # classic | streams
    acceptable_recovery_lag: int
    max_warmup_replicas: int
    probing_interval_s: float
    standby_replicas: int
    rack_aware: bool
    source: str

    @property
    def warmups(self) -> bool:
        """Whether this assignor promises warmups: the classic one (KIP-441 in the client); KIP-1071's
        broker-side `streams` assignor has none yet."""
        return self.protocol != "streams"

    @property
    def racks(self) -> bool:
        """Whether it promises rack-aware standbys: the classic one (KIP-708's tags); the broker-side
        StickyTaskAssignor of the `streams` protocol ignores racks."""
        return self.protocol != "streams"

    def value(self, field: str) -> str:
        """`field`=value (source), for a message."""
        key = next((k for k, f, _ in KEYS if f == field), field)
        v = getattr(self, field)
        return f"{key}={v * 1000 if field == 'probing_interval_s' else v:g} ({self.source})"


def assignors_at(vw: _View, settings: StreamsCheckSettings, t: float) -> list[Assignor]:
    """The assignor settings that may have decided the assignment at t, one per distinct set (see the module)."""
    return vw.history.derived(("streams-assignors", round(t, 6)), lambda: _assignors_at(vw, settings, t))


def _assignors_at(vw: _View, settings: StreamsCheckSettings, t: float) -> list[Assignor]:
    live = vw.live(t) or vw.live(t, before=True)
    by_values: dict[tuple, dict[str, list[str]]] = {}
    for m in live:
        vals, how = _instance(vw, settings, m, t)
        by_values.setdefault(vals, {}).setdefault(how, []).append(m)
    if not by_values:
        vals, how = _instance(vw, settings, None, t)
        by_values[vals] = {how: []}
    out = []
    for vals, hows in by_values.items():
        src = "; ".join(f"{', '.join(ms)}: {how}" if ms else how for how, ms in hows.items())
        if len(by_values) > 1:
            src = f"one of {len(by_values)} settings of the instances alive then, the leader unknown: {src}"
        out.append(Assignor(*vals, source=src))
    return out


def _instance(vw: _View, settings: StreamsCheckSettings, member: str | None, t: float) -> tuple[tuple, str]:
    """The assignor values of `member`'s life at t (its protocol's), and where they came from."""
    st = started_of(vw.events, member, t) if member else None
    eff = (st or {}).get("effective") if isinstance((st or {}).get("effective"), dict) else {}
    given = (st or {}).get("settings") if isinstance((st or {}).get("settings"), dict) else {}
    protocol = str(eff.get("group.protocol") or given.get("group.protocol") or (st or {}).get("protocol")
                   or settings.protocol).lower()
    vals, run_keys = [], []
    for key, field, unit in KEYS:
        raw = eff.get(key, given.get(key))
        try:
            vals.append(int(raw) / unit if unit != 1 else int(raw))
        except (TypeError, ValueError):
            vals.append(getattr(settings, field))
            run_keys.append(key)
    if RACK_TAGS in eff or RACK_TAGS in given:
        rack_aware = bool(str(eff.get(RACK_TAGS, given.get(RACK_TAGS)) or "").strip("[] "))
    else:
        rack_aware = settings.rack_aware
        run_keys.append(RACK_TAGS)
    how = "the Streams settings at its start" if st is not None else "no start recorded"
    if protocol == "streams":
        gev = latest_at([e for e in vw.events if e["type"] == "group_settings"], t)
        # MissingSetting when the history cannot tell
        standbys, gsrc = group_setting_ms(gev, "streams", "standbys", t0=run_t0(vw.history))
        vals[3] = standbys
        how += f", on the streams protocol: standbys from {gsrc}"
        run_keys = [k for k in run_keys if k != "num.standby.replicas"]
    if member is not None and len(run_keys) == len(KEYS) + 1:
        how = "the run's settings: its start recorded no assignor settings"
    elif run_keys and member is not None:
        how += f" (the run's value of {', '.join(run_keys)}: not recorded)"
    elif member is None:
        how = "the run's settings: no instance alive then"
    return (protocol, *vals, rack_aware), how


def broken_under_all(cands: list[Assignor], judge) -> tuple[list, Assignor | None]:
    """`judge(assignor)` -> its problems; the problems of the first candidate when every candidate has some (the
    leader ran one of them, so the rule was broken whichever it was), else none. (problems, the candidate)."""
    found = []
    for a in cands:
        got = judge(a)
        if not got:
            return [], None
        found.append((got, a))
    return found[0] if found else ([], None)
