"""The verdict and the settings every checker shares, and small helpers to build verdicts.

A verdict is one of `valid`, `invalid`, `unknown` (the history cannot tell: too short, never settled,
or the checker failed) and `skipped` (the invariant does not apply: a protocol that does not promise
it, or a history in which the situation it is about never happened). A checker's `skipped` is its claim;
`judge` holds it to the plan's word (`applies`): it stays `skipped` only where the plan said the invariant
does not apply, and is `unknown` elsewhere.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
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
    """from_dict / to_dict of a settings dataclass, as run metadata stores it."""

    @classmethod
    def from_dict(cls, d: dict):
        """Settings from a dict (for example run metadata); unknown keys are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (d or {}).items() if k in known})

    def to_dict(self) -> dict:
        return asdict(self)


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
    # the run's member timings: used only for a member whose start recorded none (`settings.member_settings`)
    session_timeout_s: float = 6.0
    heartbeat_interval_s: float = 0.5
    max_poll_interval_s: float = 300.0  # the clients' default
    migration_slack: int = 0
    quiet_period_s: float = 3.0
    static_grace_s: float = 2.0
    exactly_once: bool = False
    expect_broker: str = ""  # a regex: the scenario expects a broker to refuse with a line matching it

    def __post_init__(self) -> None:
        # a tuple of (str, int) tuples whatever it was given as (JSON lists): hashable, as a cache key
        try:
            topics = tuple((str(t), int(n)) for t, n in (self.topics or ()))
        except (TypeError, ValueError):
            raise ValueError(f"topics must be [name, partitions] pairs, not {self.topics!r}") from None
        if len({t for t, _ in topics}) < len(topics):
            raise ValueError(f"a topic is named twice in topics {[list(x) for x in topics]}")
        object.__setattr__(self, "topics", topics)

    def to_dict(self) -> dict:
        """A JSON-ready dict (`topics` as lists)."""
        d = asdict(self)
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
        out[n] = v
    return out


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
