"""The verdict and the settings every checker shares, and small helpers to build verdicts.

A verdict is one of `valid`, `invalid`, `unknown` (the history cannot tell: too short, never settled,
or the checker failed) and `skipped` (the invariant does not apply: a protocol that does not promise
it, or a history in which the situation it is about never happened). A checker's `skipped` is its claim;
`judge` holds it to the plan's word (`applies`): it stays `skipped` only where the plan said the invariant
does not apply, and is `unknown` elsewhere.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Iterable

from harness.base.vocabulary import DEFAULT_PROTOCOL
from harness.record.history import History

STATUSES = ("valid", "invalid", "unknown", "skipped")

#: event types written by member processes (see docs/history.md)
MEMBER_EVENT_TYPES = frozenset({"started", "assigned", "revoked", "lost", "processed", "committed", "stopped"})

#: how many witnesses a verdict carries at most: the first ones found, enough to show the anomaly (how many were
#: found is `Verdict.found`: a known finding is held against every one, harness/findings/match.py)
MAX_WITNESSES = 12


class MissingSetting(Exception):
    """A bound's input that the history does not hold (a setting that could not be read, or was never recorded): the
    verdicts that need it are `unknown`, naming what was missing, never judged with a default (`run_checkers`)."""


@dataclass(frozen=True)
class Verdict:
    """One invariant's judgement of one history: status, a one-line message, witnesses, measurements.

    `found`: how many witnesses of its finding the checker found, of which `witnesses` keeps the first
    MAX_WITNESSES; None when that is not known (a checker that cut its own list to MAX_WITNESSES before `verdict`
    may have found more)."""

    name: str
    status: str
    message: str
    witnesses: tuple[dict, ...] = ()
    measurements: dict = field(default_factory=dict)
    found: int | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"verdict status {self.status!r} is not one of {', '.join(STATUSES)}")
        object.__setattr__(self, "message", " ".join(str(self.message).split()))
        object.__setattr__(self, "witnesses", tuple(self.witnesses))
        object.__setattr__(self, "measurements", dict(self.measurements))

    @property
    def ok(self) -> bool:
        """True when the invariant held or did not apply."""
        return self.status in ("valid", "skipped")

    def to_dict(self) -> dict:
        """A JSON-ready copy."""
        return {"name": self.name, "status": self.status, "message": self.message,
                "witnesses": [dict(w) for w in self.witnesses],
                **({"witnesses_found": self.found} if self.found is not None else {}),
                "measurements": _jsonable(self.measurements)}


class SettingsDict:
    """from_dict / to_dict of a settings dataclass, as run metadata (the `run_start` event's settings) stores it.

    Settings read by `from_dict` remember which of their fields the dict held (`recorded_at`: a field it did not
    hold is this class's default, which no verdict may take for the run's) and the keys no settings class reads
    (`unread`: an older or newer harness's; `run_checkers` names them in every verdict it returns). Settings built in
    code (`CheckSettings(...)`) are the caller's: every field counts as given."""

    @classmethod
    def from_dict(cls, d: dict):
        """Settings from a dict (for example run_start.settings): its keys of this class; the others are not
        dropped unsaid (`unread`)."""
        d = d if isinstance(d, dict) else {}
        known = {f.name for f in fields(cls)} - {"held"}
        kw = {k: v for k, v in d.items() if k in known}
        if "held" in {f.name for f in fields(cls)}:  # a field: kept by dataclasses.replace
            kw["held"] = frozenset(d) & known
        out = cls(**kw)
        object.__setattr__(out, "_held", frozenset(d) & known)
        object.__setattr__(out, "_unread", {str(k): d[k] for k in d if k not in settings_keys() - {"held"}})
        return out

    def recorded_at(self, name: str) -> str | None:
        """Where the run's value of field `name` was recorded ("run_start.settings"; "given to the checkers" for
        settings built in code), or None when the dict they were read from did not hold it (only a default)."""
        held = getattr(self, "held", None)
        held = getattr(self, "_held", None) if held is None else held
        if held is None:
            return "given to the checkers"
        return "run_start.settings" if name in held else None

    @property
    def unread(self) -> dict:
        """The keys of the dict these settings were read from that no settings class reads, with their values."""
        return dict(getattr(self, "_unread", None) or {})

    def to_dict(self) -> dict:
        return asdict(self)


def settings_keys() -> frozenset[str]:
    """Every field of every settings class (CheckSettings and the Streams, Connect and share ones): a key of
    run_start.settings outside them is read by none."""
    out, todo = set(), [SettingsDict]
    while todo:
        c = todo.pop()
        todo.extend(c.__subclasses__())
        if c is not SettingsDict:
            out |= {f.name for f in fields(c)}
    return frozenset(out)


@dataclass(frozen=True, kw_only=True)
class CheckSettings(SettingsDict):
    """What the checkers need to know about a run, and the tolerances they judge it with.

    `topics`: the run's topics with their partition counts, in run order ((name, partitions), ...; JSON: a
    list of [name, partitions] lists). When given, the checkers judge the group over all of them and
    `topic`/`partitions` are ignored; when empty, the one topic of `topic`/`partitions` (see `timeline`)."""

    topic: str = ""
    partitions: int = 0
    topics: tuple[tuple[str, int], ...] = ()
    protocol: str = DEFAULT_PROTOCOL
    # the run's member timings: used only for a member whose start recorded none (`settings.member_settings`), and
    # then only when run_start.settings held them (`recorded_at`): a default here is never taken for the run's
    session_timeout_s: float = 6.0
    heartbeat_interval_s: float = 0.5
    max_poll_interval_s: float = 300.0  # the clients' default
    migration_slack: int = 0
    quiet_period_s: float = 3.0
    static_grace_s: float = 2.0
    exactly_once: bool = False
    expect_broker: str = ""  # a regex: the scenario expects a broker to refuse with a line matching it
    #: the fields the dict these settings were read from held (`from_dict`); None: built in code, every one given.
    #: Compared: settings of equal values but another provenance judge differently (a history's views are cached
    #: by its settings, `timeline.build`)
    held: frozenset[str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.held is not None:
            object.__setattr__(self, "held", frozenset(self.held))
        # a tuple of (str, int) tuples whatever it was given as (JSON lists): hashable, as a cache key
        try:
            topics = tuple((str(t), int(n)) for t, n in (self.topics or ()))
        except (TypeError, ValueError):
            raise ValueError(f"topics must be [name, partitions] pairs, not {self.topics!r}") from None
        if len({t for t, _ in topics}) < len(topics):
            raise ValueError(f"a topic is named twice in topics {[list(x) for x in topics]}")
        object.__setattr__(self, "topics", topics)

    def to_dict(self) -> dict:
        """A JSON-ready dict (`topics` as lists; without `held`, which is not a setting)."""
        d = asdict(self)
        d.pop("held", None)
        d["topics"] = [[t, n] for t, n in self.topics]
        return d


def witness(ev: dict, why: str) -> dict:
    """A copy of an event with the reason it is a witness."""
    w = dict(ev)
    w["why"] = why
    return w


def has_member_events(history: History) -> bool:
    """Whether the history holds anything about group members at all."""
    return history.derived("has_member_events", lambda: bool(
        history.bulk("processed").n or history.bulk("committed").n or
        any(e.get("type") in MEMBER_EVENT_TYPES or e.get("type") == "member_start" for _, e in history.control())))


def verdict(name: str, status: str, message: str, witnesses=(), measurements: dict | None = None, *,
            found: int | None = None) -> Verdict:
    """Build a verdict, keeping at most MAX_WITNESSES witnesses and how many it was given (`Verdict.found`).
    `found`: how many the checker found when it passes only some; else exactly MAX_WITNESSES given may be a list
    the checker cut itself, and how many it found is not known (None)."""
    given = tuple(witnesses)
    if found is None and len(given) != MAX_WITNESSES:
        found = len(given)
    elif found is not None:
        found = max(int(found), len(given))
    return Verdict(name=name, status=status, message=message, witnesses=given[:MAX_WITNESSES],
                   measurements=measurements or {}, found=found)


def empty(name: str, history: History) -> Verdict | None:
    """The `unknown` verdict of a history without member events, else None: an empty history is never valid."""
    if has_member_events(history):
        return None
    return verdict(name, "unknown", "empty history: no member events")


def run_checkers(checkers: dict, history: History, settings, names: Iterable[str] | None = None, *,
                 precheck=None) -> dict[str, Verdict]:
    """Run the named checkers (all by default) in order; `precheck(name)` may decide first (a verdict, or
    None to go on). A checker that raises or returns no Verdict is `unknown`, never valid; one that raises
    `MissingSetting` is `unknown` with what was missing."""
    names = list(checkers) if names is None else list(names)
    if missing := [n for n in names if n not in checkers]:
        raise ValueError(f"unknown invariants {missing}; known: {', '.join(checkers)}")
    out: dict[str, Verdict] = {}
    for n in names:
        try:
            v = (precheck(n) if precheck else None) or checkers[n](history, settings)
            if not isinstance(v, Verdict):
                v = verdict(n, "unknown", f"checker returned {type(v).__name__}, not a Verdict")
        except MissingSetting as e:  # a bound it needs could not be known: it decides nothing, and says why
            v = verdict(n, "unknown", f"a bound's input is missing: {e}")
        except Exception as e:  # a checker that fails decides nothing
            v = verdict(n, "unknown", f"checker raised {type(e).__name__}: {e}")
        out[n] = _naming_unread(v, settings)
    return out


def _naming_unread(v: Verdict, settings) -> Verdict:
    """The verdict, naming the run_start.settings keys no settings class reads (`SettingsDict.unread`), if any: kept
    and said, never dropped unsaid."""
    unread = settings.unread if isinstance(settings, SettingsDict) else {}
    if not unread:
        return v
    said = ", ".join(f"{k}={unread[k]!r}" for k in sorted(unread))
    return replace(v, message=f"{v.message} (run_start.settings also holds {said}, which this harness does not read)")


def secs(x: float | None) -> float | None:
    """A duration rounded for measurements (None and infinities stay out of JSON)."""
    if x is None or math.isinf(x) or math.isnan(x):
        return None
    return round(float(x), 6)


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in (sorted(x) if isinstance(x, (set, frozenset)) else x)]
    if isinstance(x, float) and (math.isinf(x) or math.isnan(x)):
        return None
    return x
