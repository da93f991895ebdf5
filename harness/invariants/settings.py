"""What each member was running with at a moment: the bounds every checker derives its tolerances from.

A member's own settings are those of its `started` event (`effective`, written by the member at each start:
a bounce, a settings roll, an upgrade each start a new process that writes them again). Under the classic
protocols the session and heartbeat timings are the client's; under the consumer protocol (KIP-848) they are
the group's: the `group_settings` event the harness writes when the run starts and after every `group_config`
step, from the brokers' DescribeConfigs (the group config `consumer.session.timeout.ms` over the brokers'
`group.consumer.session.timeout.ms`). A member program that does not write `effective` (older runs, a team's
own program), or writes it without one of the timings, is judged with the run's value of it only when the run_start
event's settings recorded it (`CheckSettings.recorded_at`), and `source` says so and where; otherwise that timing is
missing (`MissingSetting` when a verdict reads it), never a client's documented default. A group timing the history
cannot tell (no `group_settings` event, or DescribeConfigs could not read it: the event's `unread`) raises
`MissingSetting`: the verdicts that need it are `unknown`, naming it, never judged with Kafka's documented defaults
(45 s, 5 s) while the brokers may run with others.

Every value comes with where it came from, for the checkers' messages. How a member commits (its commit mode
and auto-commit interval, from the same `started` event) is `commit_settings`, for `commit_progress`.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from harness.base.steps import Step, fault_of
from harness.invariants.clock import events_t0
from harness.invariants.core import MissingSetting
from harness.invariants.protocols import rebalance_rounds
from harness.invariants.terms import Life

#: how often a classic member's client refreshes its metadata (its group leader learns of new partitions then):
#: librdkafka's topic.metadata.refresh.interval.ms, the Java client's metadata.max.age.ms; both 300000 by default
REFRESH_KEYS = ("topic.metadata.refresh.interval.ms", "metadata.max.age.ms")
REFRESH_DEFAULT_MS = 300000
#: group-side keys per group protocol: (the group config, the brokers' default)
GROUP_KEYS = {
    "consumer": {"session": ("consumer.session.timeout.ms", "group.consumer.session.timeout.ms"),
                 "heartbeat": ("consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms")},
    "streams": {"session": ("streams.session.timeout.ms", "group.streams.session.timeout.ms"),
                "heartbeat": ("streams.heartbeat.interval.ms", "group.streams.heartbeat.interval.ms"),
                "standbys": ("streams.num.standby.replicas", "group.streams.num.standby.replicas")},
}


@dataclass(frozen=True)
class MemberSettings:
    """The settings one member life ran with that bound what the protocol allows; `source` says where from. A value
    the history cannot tell is None, with why in `missing` (setting -> why): reading it raises MissingSetting, so
    only a verdict that needs it is unknown."""

    member: str
    group_protocol: str  # classic | consumer
    instance_id: str | None
    session_s: float | None  # read `session_timeout_s`
    hb_s: float | None  # read `heartbeat_s`
    poll_s: float | None  # read `max_poll_s`
    source: str  # e.g. "m4's client, session.timeout.ms=60000 given, since its start at 12.3s"
    recorded: bool  # False: some value is not the member's own (the run's were used, `source` says which) or missing
    missing: tuple[tuple[str, str], ...] = ()  # (setting, why the history cannot tell it)

    @property
    def static(self) -> bool:
        return bool(self.instance_id)

    def _value(self, value: float | None, key: str) -> float:
        if value is None:
            raise MissingSetting(dict(self.missing).get(key, f"{self.member}'s {key}"))
        return value

    @property
    def session_timeout_s(self) -> float:
        """The session timeout; MissingSetting when the history cannot tell it."""
        return self._value(self.session_s, "session.timeout.ms")

    @property
    def heartbeat_s(self) -> float:
        """The heartbeat interval; MissingSetting when the history cannot tell it."""
        return self._value(self.hb_s, "heartbeat.interval.ms")

    @property
    def max_poll_s(self) -> float:
        """max.poll.interval.ms (the rebalance timeout); MissingSetting when the history cannot tell it."""
        return self._value(self.poll_s, "max.poll.interval.ms")

    @property
    def heartbeat_missing(self) -> str:
        """Why the heartbeat interval is missing ("" when it is known)."""
        return dict(self.missing).get("heartbeat.interval.ms", "")

    def session(self) -> str:
        """The session timeout with its source, for a message."""
        return f"session timeout {self.session_timeout_s:g}s ({self.source})"


def started_event(tl, life: Life) -> dict | None:
    """The `started` event a member life wrote (its first at or after the life's start), or None."""
    for _, e in tl.member_events(life.member, {"started"}):
        if life.start - 1e-9 <= e["mono"] <= life.end:
            return e
    return None


def revoke_wait_s(tl, life: Life) -> float:
    """How long the life's revoke handler waits before its commit, as its started event's effective settings say
    (`revoke_delay_ms`; none: 0)."""
    ms = ((started_event(tl, life) or {}).get("effective") or {}).get("revoke_delay_ms")
    return ms / 1000.0 if isinstance(ms, (int, float)) and not isinstance(ms, bool) and ms > 0 else 0.0


def life_at(tl, member: str, t: float) -> Life | None:
    """The member's life covering t, else its last life that started at or before t, else its first."""
    ls = tl.lives.get(member, ())
    if not ls:
        return None
    for lf in ls:
        if lf.start <= t < lf.end:
            return lf
    before = [lf for lf in ls if lf.start <= t]
    return before[-1] if before else ls[0]


def group_settings_at(tl, t: float) -> dict | None:
    """The last `group_settings` event at or before t (the first one when t is earlier), or None."""
    evs = tl.history.derived("group_settings_events",
                             lambda: [e for _, e in tl.control if e["type"] == "group_settings"])
    return latest_at(evs, t)


def latest_at(evs: list[dict], t: float) -> dict | None:
    """Of events in time order, the last at or before t, else the first (None without any): the rule of
    `life_at` and `group_settings_at`, for the views that keep no `Life` (Streams, Connect: one life a member)."""
    if not evs:
        return None
    before = [e for e in evs if e["mono"] <= t]
    return before[-1] if before else evs[0]


def started_of(events: list[dict], member: str, t: float) -> dict | None:
    """The `started` event of `member`'s life at t among control events (`latest_at` of its `started` events)."""
    return latest_at([e for e in events if e["type"] == "started" and e.get("member") == member], t)


def recorded_ms(started: dict | None, keys: tuple[str, ...]) -> tuple[int, str] | None:
    """(ms, key) of the first of `keys` that a `started` event's `settings` holds as a number, else None."""
    got = (started or {}).get("settings")
    for k in keys if isinstance(got, dict) else ():
        try:
            return int(got[k]), k
        except (KeyError, TypeError, ValueError):
            continue
    return None


def session_bound(events: list[dict], member: str, t: float, keys: tuple[str, ...], what: str, factor: float,
                  run_value: float, run_name: str) -> tuple[float, str]:
    """`factor` x the session timeout `member` ran with at t, by its `started` event's settings (`keys`, the first
    it holds; `what` names those settings, "its worker config"), else the run's `run_name`=`run_value`.
    (seconds, source: the value, the member and the time of its start, or why the run's was used)."""
    st = started_of(events, member, t)
    t0 = events_t0(events)
    got = recorded_ms(st, keys)
    if got is None:
        why = f"{member}'s start recorded no {keys[0]}" if st else f"no start of {member} recorded"
        return float(run_value), f"the run's {run_name}={run_value:g}s: {why}"
    ms, k = got
    times = "" if factor == 1 else ("twice " if factor == 2 else f"{factor:g} x ")
    return factor * ms / 1000, f"{times}{member}'s {k}={ms} ({what} at its start at {st['mono'] - t0:.1f}s)"


def group_value(ev: dict | None, protocol: str, which: str, *, t0: float | None = None) -> tuple[int | None, str]:
    """(value, source) of a group-side setting (a timing in ms, a count) from a group_settings event: the group
    config, else the brokers'. The source says when DescribeConfigs read it in seconds from the run's start `t0`
    (not said without it: a raw clock is never printed)."""
    if ev is None:
        return None, ""
    gkey, bkey = GROUP_KEYS[protocol][which]
    for scope, key in (("group", gkey), ("broker", bkey)):
        v = (ev.get(scope) or {}).get(key)
        if v not in (None, ""):
            try:
                return int(v), f"{'group config' if scope == 'group' else 'brokers'} {key}={int(v)} " \
                               f"({described(ev, t0)})"
            except (TypeError, ValueError):
                pass
    return None, ""


def unread_of(ev: dict | None) -> dict[str, str]:
    """What a `group_settings` event says could not be read: {"group": why} and/or {"broker <id>": why}. An older
    event with an `error` and no `unread` did not say which resource failed: the group's configs are then taken as
    unread (the conservative reading: a group config may have been set)."""
    if not ev:
        return {}
    got = ev.get("unread")
    if isinstance(got, dict):
        return {str(k): str(v) for k, v in got.items()}
    return {"group": str(ev["error"])} if ev.get("error") else {}


def described(ev: dict, t0: float | None) -> str:
    """Where a group_settings event's values come from: "DescribeConfigs at 2.2s" (seconds from the run's start)."""
    return "DescribeConfigs" if t0 is None else f"DescribeConfigs at {ev['mono'] - t0:.1f}s"


def group_setting_ms(ev: dict | None, protocol: str, which: str, *, t0: float | None = None) -> tuple[int, str]:
    """(value, source) of a group-side setting (`GROUP_KEYS`) as the run recorded it: the group config, else the
    brokers' value. MissingSetting, naming what could not be read, when the history cannot tell it: no
    `group_settings` event, the group's configs unread (a group config may override the brokers'), or neither
    value read. Never Kafka's documented default: the brokers may run with another."""
    gkey, bkey = GROUP_KEYS[protocol][which]
    if ev is None:
        raise MissingSetting(f"{gkey}: the history holds no group_settings event (DescribeConfigs)")
    value, src = group_value(ev, protocol, which, t0=t0)
    unread = unread_of(ev)
    at = described(ev, t0)
    if value is not None and ("group" not in unread or src.startswith("group config")):
        return value, src
    if "group" in unread:
        raise MissingSetting(f"the group's {gkey} could not be read ({at}: {unread['group']}); the brokers' {bkey} is "
                             f"no stand-in for a group config that may be set")
    why = "; ".join(f"{k}: {w}" for k, w in sorted(unread.items()))
    raise MissingSetting(f"neither the group's {gkey} nor the brokers' {bkey} was read ({at}"
                         + (f"; unread: {why})" if why else ")"))


def member_settings(tl, member: str, t: float) -> MemberSettings:
    """What `member` ran with at t (its life then, and the group's settings then under the consumer protocol)."""
    # what it depends on of t: the member's life then and the group settings then (constant between them)
    life, gev = life_at(tl, member, t), group_settings_at(tl, t)
    # and the run's settings (a member that recorded none of a timing takes the run's, when recorded)
    key = ("member_settings", tl.settings, member, life.start if life else None, gev["mono"] if gev else None)
    return tl.history.derived(key, lambda: _member_settings(tl, member, t))


#: a member's timings: (its client's setting, the run's CheckSettings field)
TIMINGS = (("session.timeout.ms", "session_timeout_s"), ("heartbeat.interval.ms", "heartbeat_interval_s"),
           ("max.poll.interval.ms", "max_poll_interval_s"))


def run_value_s(run, key: str, field: str, why: str) -> tuple[float | None, str]:
    """The run's value of a member timing (`field` of its CheckSettings) for a member whose start recorded none
    (`why`): (seconds, its source), or (None, why it is missing) when the run's settings do not hold it either."""
    where = run.recorded_at(field)
    if where is None:
        return None, f"{key}: {why}, and run_start.settings records no {field} (never a client's default)"
    value = float(getattr(run, field))
    return value, f"{key}: the run's {field}={value:g}s ({where}): {why}"


def _member_settings(tl, member: str, t: float) -> MemberSettings:
    run = tl.settings
    life = life_at(tl, member, t)
    st = started_event(tl, life) if life is not None else None
    eff = (st or {}).get("effective") if isinstance((st or {}).get("effective"), dict) else None
    iid = (life.instance_id if life else None) or (st or {}).get("instance_id")
    fallback_protocol = "consumer" if run.protocol == "consumer" else "classic"
    gp = (eff or {}).get("group.protocol") or fallback_protocol
    values: dict[str, float | None] = {}
    said: list[str] = []  # where each value that is not the member's own came from
    missing: list[tuple[str, str]] = []
    for key, field in TIMINGS:
        got = _ms((eff or {}).get(key))
        if got is not None:  # the member's own
            values[key] = got / 1000
            continue
        why = f"{member}'s start recorded no {key}" if eff is not None else f"{member}'s start recorded no settings"
        values[key], src = run_value_s(run, key, field, why)
        if values[key] is None:
            missing.append((key, src))
        else:
            said.append(src)
    if eff is None:
        src = f"the run's settings: {member}'s start recorded none"
    elif gp == "classic" and _ms(eff.get("session.timeout.ms")) is not None:
        how = "default" if "session.timeout.ms" in set(st.get("effective_defaults") or ()) else "given"
        src = f"{member}'s client, session.timeout.ms={values['session.timeout.ms'] * 1000:g} {how}, since its " \
              f"start at {st['mono'] - tl.start:.1f}s"
    elif gp == "classic":
        src = f"{member}'s client"
    if gp != "classic":  # the group's timings as the brokers reported them; one not read is missing, not defaulted
        src, said, missing = _group_timings(tl, member, t, values, said, missing)
    if said:
        src = f"{src}; {'; '.join(said)}"
    return MemberSettings(member, gp, (eff or {}).get("group.instance.id") or iid, values["session.timeout.ms"],
                          values["heartbeat.interval.ms"], values["max.poll.interval.ms"], src,
                          eff is not None and not said and not missing, tuple(missing))


def _group_timings(tl, member: str, t: float, values: dict, said: list, missing: list) -> tuple[str, list, list]:
    """Under the consumer protocol: the session and heartbeat timings are the group's (`group_setting_ms`), never
    the member's own nor the run's; (source, the other sources, what is missing)."""
    gev = group_settings_at(tl, t)
    keep = ("session.timeout.ms", "heartbeat.interval.ms")
    said = [x for x in said if not x.startswith(keep)]
    missing = [x for x in missing if x[0] not in keep]
    src = f"{member} on the consumer protocol"
    ms, gsrc = group_setting_ms(gev, "consumer", "session", t0=tl.start)  # MissingSetting: nothing of it is known
    values["session.timeout.ms"] = ms / 1000
    try:
        values["heartbeat.interval.ms"] = group_setting_ms(gev, "consumer", "heartbeat", t0=tl.start)[0] / 1000
    except MissingSetting as e:
        values["heartbeat.interval.ms"] = None
        missing.append(("heartbeat.interval.ms", str(e)))
    return f"{member} on the consumer protocol: {gsrc}", said, missing


def _ms(v) -> int | None:
    """A setting's value in ms as a member recorded it, or None (absent, or not a number)."""
    if v is None or isinstance(v, bool):
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _stretch(tl, t: float) -> int:
    """Which stretch between member starts and exits and group settings events t falls in (what a member's settings
    and the live members depend on): a cache key for the views that are constant over one."""
    points = tl.history.derived(("settings_change_points", tl.end), lambda: sorted(
        {x for ls in tl.lives.values() for lf in ls for x in (lf.start, lf.end)}
        | {e["mono"] for _, e in tl.control if e["type"] == "group_settings"}))
    return bisect_right(points, t)


def longest_heartbeat_s(tl, t: float) -> float:
    """The longest heartbeat interval of the members alive at t (0 when none is: no rebalance to spread)."""
    return tl.history.derived(("longest_heartbeat_s", tl.settings, tl.end, _stretch(tl, t)), lambda: max(
        (member_settings(tl, x, t).heartbeat_s for x in tl.alive_members(t)), default=0.0))


def rebalance_timeout_s(tl, t: float) -> tuple[float, str]:
    """The longest a rebalance round may take at t under the protocol: the coordinator waits up to the members'
    rebalance timeout (their max.poll.interval.ms) for every live member to rejoin. (seconds, source). Constant
    between two member starts or exits or group settings events: computed once per such stretch."""
    return tl.history.derived(("rebalance_timeout_s", tl.settings, tl.end, _stretch(tl, t)),
                              lambda: _rebalance_timeout_s(tl, t))


def _rebalance_timeout_s(tl, t: float) -> tuple[float, str]:
    alive = sorted(tl.alive_members(t)) or sorted(tl.lives)
    if not alive:
        value, src = run_value_s(tl.settings, "max.poll.interval.ms", "max_poll_interval_s", "no member started")
        if value is None:
            raise MissingSetting(src)
        return value, src
    best = max((member_settings(tl, m, t) for m in alive), key=lambda s: s.max_poll_s)
    own = [x for x in best.source.split("; ") if x.startswith("max.poll.interval.ms: ")]
    what = own[0].removeprefix("max.poll.interval.ms: ") if own else "recorded"
    return best.max_poll_s, f"{best.member}'s max.poll.interval.ms={best.max_poll_s * 1000:g} ({what})"


def rebalance_allowance(tl, t: float) -> tuple[float, str]:
    """The longest the rebalance after t may take by the protocol: its rounds (two under the cooperative and
    consumer protocols: revoke, then assign) times the rebalance timeout the coordinator waits for members
    (their max.poll.interval.ms, as recorded). (seconds, why)."""
    rto, src = rebalance_timeout_s(tl, t)
    rounds = rebalance_rounds(tl.settings.protocol)
    return rounds * rto, f"{rounds} rebalance round{'s' if rounds > 1 else ''} of {rto:g}s ({src})"


def growth_refresh_s(tl, t: float) -> tuple[float, str] | None:
    """Under a classic protocol, when partitions were added at t (an `add_partitions` action or fault started or
    ended then): the longest metadata refresh interval of the members alive then, as their clients were given it (the
    client's default otherwise), since the group's leader learns of the new partitions only at its next refresh.
    None otherwise (the consumer protocol's coordinator learns of them itself)."""
    if tl.settings.protocol == "consumer" or not _growth_at(tl, t):
        return None
    best, why = -1.0, ""
    for m in sorted(tl.alive_members(t)) or sorted(tl.lives):
        secs, src = member_refresh_s(tl, m, t)
        if secs > best:
            best, why = secs, f"{m}'s metadata refresh {secs:g}s ({src})"
    return (best, why) if best >= 0 else None


def member_refresh_s(tl, member: str, t: float) -> tuple[float, str]:
    """How often `member`'s client (its life at t) refreshed its metadata, as given to it (REFRESH_KEYS) or the
    clients' default: (seconds, source)."""
    life = life_at(tl, member, t)
    given = ((started_event(tl, life) if life else None) or {}).get("client_config") or {}
    key = next((k for k in REFRESH_KEYS if k in given), None)
    try:
        ms, src = (float(given[key]), f"{key}={given[key]} given") if key else (REFRESH_DEFAULT_MS, "the default")
    except (TypeError, ValueError):
        ms, src = REFRESH_DEFAULT_MS, f"{key}={given[key]!r} unreadable, the default"
    return ms / 1000, src


def growth_times(tl) -> list[float]:
    """Every moment that marks partitions being added, sorted: an `add_partitions` action's start (the partitions
    exist from the controller's commit, before CreatePartitions answers), its fault's start and end, and the
    action's end (`Growth`)."""
    return tl.history.derived(("growth_times", tl.end), lambda: sorted(set(tl.growth.times) | {
        e["mono"] for _, e in tl.control if e["type"] == "action_start" and e.get("kind") == Step.ADD_PARTITIONS} | {
        t for f in tl.faults if f.kind == fault_of(Step.ADD_PARTITIONS) for t in (f.start, f.end)}))


def _growth_at(tl, t: float) -> bool:
    times = growth_times(tl)
    i = bisect_right(times, t)
    return i > 0 and times[i - 1] == t


def disturbance_bound(tl, t: float) -> tuple[float, str]:
    """How long the group may take to be whole again after the disturbance at t: the longest session timeout of a
    member that departed then without leaving the group (killed, or a static member: the coordinator's detection),
    or, for partitions added under a classic protocol, the members' metadata refresh interval (`growth_refresh_s`),
    plus the rebalance allowance. (seconds, why)."""
    allow, awhy = rebalance_allowance(tl, t)
    if (refresh := growth_refresh_s(tl, t)) is not None:
        return refresh[0] + allow, f"{refresh[1]}; then {awhy}"
    gone = [lf for ls in tl.lives.values() for lf in ls if abs(lf.end - t) < 1e-9 and lf.exit_event is not None]
    worst = max((member_settings(tl, lf.member, t - 1e-6) for lf in gone
                 if lf.how in ("kill", "crash") or lf.instance_id), key=lambda ms: ms.session_timeout_s, default=None)
    if worst is None:
        return allow, awhy
    return worst.session_timeout_s + allow, f"{worst.member}'s {worst.session()}; then {awhy}"
