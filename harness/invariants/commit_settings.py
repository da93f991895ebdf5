"""How each member life commits, as its own `started` event says: the commit part of a member's settings.

A member's `started` event carries `effective`, the settings its client actually runs with (`commit_mode`,
`enable.auto.commit`, `auto.commit.interval.ms` in ms, `client`, ...), and `effective_defaults`, the keys
whose value is the library's documented default rather than given. A member restarted (bounce, settings
roll) writes a new `started` with its new values: settings are per life. Older histories lack `effective`:
then the run-wide values, and `source` says so: run_start's `commit_mode` (the harness's default, `sync`,
when it names none) and the `auto.commit.interval.ms` the member was given (its `started` event's
`client_config`, else run_start's `client_settings`, else the client's default of 5 s). `effective.revoke_delay_ms` is
how long its revoke handler waits before its commit (HARNESS_REVOKE_DELAY_MS; none: 0). `effective.offset_store` is
the path its commits' offsets take (the Python member's `harness.offset.store`): `explicit`, the offsets it names;
`automatic`, `message`, `offsets`, what librdkafka's offset store holds, committed by the auto-commit timer (`auto`)
or by `commit()` without offsets after each poll's records (`sync`, `async`). The path changes no bound: the stored
offsets are committed when the mode commits, after the store (`message`, `offsets`: after processing; `automatic`:
as each record was handed over, before it). It names the path in the messages.

The commit part of a member life's settings, for `commit_progress`: `settings.member_settings` reads the
same `started` event (found by `settings.life_at` and `settings.started_event`) for the session timings;
this adds where each commit value came from (given, the library's default, or run-wide), for the messages.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness.base.vocabulary import COMMIT_MODES, DEFAULT_COMMIT_MODE
from harness.invariants.settings import life_at, started_event
from harness.invariants.terms import INF, Life

#: librdkafka's and the Java client's default auto.commit.interval.ms
DEFAULT_AUTO_COMMIT_MS = 5000


@dataclass(frozen=True)
class CommitSettings:
    """How one member life commits, and where that was read."""

    member: str
    start: float  # the life's start (mono)
    mode: str  # sync | async | auto | never
    auto_commit_s: float  # its auto.commit.interval.ms in seconds (read under auto only)
    source: str  # where `mode` came from
    interval_source: str  # where `auto_commit_s` came from
    revoke_delay_s: float = 0.0  # its revoke handler's wait before its commit (`effective.revoke_delay_ms`; none: 0)
    store: str = ""  # the path its commits' offsets take (`effective.offset_store`; "": its start does not say)
    t0: float = 0.0  # the run's start (mono): `describe` says the life's start in seconds from it

    @property
    def retry_bound_s(self) -> float:
        """How long after a refused commit the member may go before its retry: `bound_s`, plus its revoke handler's
        wait, since the poll that retries may first run the revoke handler, which waits before it commits."""
        return self.bound_s + self.revoke_delay_s

    @property
    def bound_s(self) -> float:
        """How long after processing a record the member may go without committing it: its auto-commit interval
        under `auto`; 0 under `sync`, `async` (they commit after each poll's records) and `never`."""
        return self.auto_commit_s if self.mode == "auto" else 0.0

    def store_words(self) -> str:
        """E.g. " of the offsets it stored by message (offset_store message)"; "" for the explicit path or none named."""
        what = {"automatic": "as librdkafka stored them when it handed each record over",
                "message": "it stored record by record", "offsets": "it stored partition by partition"}.get(self.store)
        return f", the offsets {what} (offset_store {self.store})" if what else ""

    def describe(self) -> str:
        """E.g. "m2, auto-commit every 5 s (librdkafka default) since its start at 12.3 s"."""
        if self.mode == "auto":
            how = f"auto-commit every {self.auto_commit_s:g} s ({self.interval_source}){self.store_words()}"
        elif self.mode == "never":
            how = f"commits nothing (commit_mode never, {self.source})"
        else:
            how = f"commits {'asynchronously ' if self.mode == 'async' else ''}after each poll's records" \
                  f"{self.store_words()} (commit_mode {self.mode}, {self.source})"
        wait = f", its revoke handler waiting {self.revoke_delay_s:g} s before its commit" if self.revoke_delay_s else ""
        return f"{self.member}, {how}{wait} since its start at {self.start - self.t0:.1f} s"


class LifeSettings:
    """Each member life's CommitSettings, read once (the life and its `started` event as `settings` finds them)."""

    def __init__(self, tl) -> None:
        self.tl = tl
        self.run_start = tl.history.run_start() or {}
        self._by_life: dict[tuple[str, float], CommitSettings] = {}

    def at(self, member: str, t: float) -> CommitSettings:
        """The settings of the member's life covering t (else its last life begun by t, else its first)."""
        life = life_at(self.tl, member, t) or Life(member, t, INF, None, None, {}, None)
        key = (member, life.start)
        if key not in self._by_life:
            st = started_event(self.tl, life) if life.start_event else None
            self._by_life[key] = life_settings(member, life.start, st, self.run_start, t0=self.tl.start)
        return self._by_life[key]

    def all(self) -> list[CommitSettings]:
        return [self.at(m, lf.start) for m, ls in self.tl.lives.items() for lf in ls]


def life_settings(member: str, start: float, started: dict | None, run_start: dict | None, *,
                  t0: float = 0.0) -> CommitSettings:
    """How a member life commits: its `started` event's `effective` settings, else the run-wide values (`t0`: the
    run's start, which its description counts seconds from)."""
    st, run = started or {}, run_start or {}
    eff = st.get("effective") if isinstance(st.get("effective"), dict) else None
    lib = _library(str((eff or {}).get("client") or st.get("client") or ""))
    mode, source = None, "from its started event"
    if eff is not None:
        mode = eff.get("commit_mode") if eff.get("commit_mode") in COMMIT_MODES else None
        if mode is None and "enable.auto.commit" in eff:
            mode = "auto" if _true(eff["enable.auto.commit"]) else None
    if mode is None:
        run_mode = run.get("commit_mode")
        mode = run_mode if run_mode in COMMIT_MODES else DEFAULT_COMMIT_MODE
        source = "run-wide, run_start's commit_mode" if run_mode in COMMIT_MODES else \
            "run-wide, the harness's default: run_start names none"
        source += ("; its started event carries no effective settings" if eff is None else
                   "; its started event's effective settings name none")
    given = st.get("client_config") if isinstance(st.get("client_config"), dict) else {}
    run_wide = run.get("client_settings") if isinstance(run.get("client_settings"), dict) else {}
    if eff is not None and _ms(eff.get("auto.commit.interval.ms")) is not None:
        ms = _ms(eff["auto.commit.interval.ms"])
        where = f"{lib} default" if "auto.commit.interval.ms" in (st.get("effective_defaults") or ()) else \
            "as set, from its started event"
    elif _ms(given.get("auto.commit.interval.ms")) is not None:
        ms, where = _ms(given["auto.commit.interval.ms"]), "as given, its started event's client_config"
    elif _ms(run_wide.get("auto.commit.interval.ms")) is not None:
        ms, where = _ms(run_wide["auto.commit.interval.ms"]), "run-wide, run_start's client_settings"
    else:
        ms, where = DEFAULT_AUTO_COMMIT_MS, f"{lib} default, assumed: its start names none"
    delay = (eff or {}).get("revoke_delay_ms")
    wait = float(delay) / 1000.0 if isinstance(delay, (int, float)) and not isinstance(delay, bool) and delay > 0 else 0.0
    store = (eff or {}).get("offset_store")
    return CommitSettings(member, start, mode, ms / 1000.0, source, where, wait, store if isinstance(store, str) else "",
                          t0)


def _library(client: str) -> str:
    """The library whose defaults a client runs with, for messages."""
    low = client.lower()
    if "librdkafka" in low or "confluent" in low:
        return "librdkafka"
    if "java" in low or "kafka-clients" in low or "kafka " in low:
        return "the Java client's"
    return "the client's"


def _true(v) -> bool:
    return v is True or (isinstance(v, str) and v.strip().lower() == "true")


def _ms(v) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if x > 0 else None
