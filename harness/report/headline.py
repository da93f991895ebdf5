"""What a run's outcome says in one line, and its witnesses as sentences, in seconds from the run's start.

The first line of a failing test's message, of `harness run`'s and `harness check`'s end and the row of a
`--repeat` table is `headline`:

    <invariant>: <its first witness as a sentence> (+ <the other failing invariants>)[; undecided: <invariants>]
    undecided: <invariant>: <the missing fact: its message> (+ <the other undecided invariants>)
    pass: <n> invariants held, <k> did not apply
    <status>: <the error>[; its partial history judged: <one of the above>]   (status error or incomplete)

A witness reads as a sentence (`sentence`): its `why` first and whole, then the event it is in words (who, what
partitions or records, at what second of the run); a witness with no `why` reads from its keys. Every moment is in
seconds from the run's start (`harness.invariants.clock`): the keys that hold the host's monotonic clock
(`is_mono_key`) are printed relative to it, and the wall clock is not printed at all. The raw values stay in the JSON
(verdicts.json, the attachments).
"""
from __future__ import annotations

import json

from harness.record.rundir import VERDICTS_JSON

#: witness keys whose values are the host's monotonic clock (besides any key ending in `_mono`)
MONO_KEYS = frozenset({"mono", "at", "deadline", "from", "until", "start", "end", "t", "stop_at", "older_start",
                       "newer_start", "older_end", "newer_end"})
#: witness keys never printed: the raw wall clock, and what the sentence says already
UNSAID_KEYS = frozenset({"wall", "why", "source", "seq"})
#: how much of a broker's log line a witness without a `why` shows
LOG_CHARS = 200


def is_mono_key(key: str) -> bool:
    """Whether a witness key holds a monotonic time."""
    return key in MONO_KEYS or key.endswith("_mono")


def at(t, t0: float | None) -> str:
    """A monotonic time as the second of the run: "12.3 s" ("?" when it is no number or the start is unknown)."""
    if not isinstance(t, (int, float)) or isinstance(t, bool) or t0 is None:
        return "?"
    return f"{t - t0:.1f} s"


def run_t0(run_dir) -> float | None:
    """The run's start on the monotonic clock, from its harness history file alone (`clock.run_t0`: its run_start
    event's mono, else its first event's); None when the file cannot be read."""
    from harness.invariants.clock import run_t0 as start_of
    from harness.record.history import History, read_file
    from harness.record.rundir import HARNESS_HISTORY, RunDir
    try:
        _, events = read_file(RunDir(run_dir).history_file(HARNESS_HISTORY))
    except (OSError, ValueError):  # missing, or not a history file (HistoryFormatError is a ValueError)
        return None
    return start_of(History(e for e in events if isinstance(e.get("mono"), (int, float)))) if events else None


def _partitions(w: dict) -> str:
    """The partitions or records a witness names, in words ("" when none)."""
    ps = w.get("partitions")
    if isinstance(ps, list) and ps:
        by_topic: dict = {}
        for p in ps:
            topic, n = (p[0], p[1]) if isinstance(p, (list, tuple)) and len(p) == 2 else (None, p)
            by_topic.setdefault(topic, []).append(str(n))
        return "; ".join(f"partition{'s' if len(ns) > 1 else ''} {', '.join(ns)}" + (f" of {t}" if t else "")
                         for t, ns in by_topic.items())
    if w.get("partition") is not None:
        where = f"partition {w['partition']}" + (f" of {w['topic']}" if w.get("topic") else "")
        return where + (f" at offset {w['offset']}" if w.get("offset") is not None else "")
    for k in ("task", "unit"):
        if w.get(k) is not None:
            return f"{k} {w[k]}"
    return ""


def _when(w: dict, t0: float | None) -> str:
    """The witness's moment: its `mono`, else its first key holding a monotonic time."""
    for k in ("mono", "at", *sorted(k for k in w if is_mono_key(k))):
        if isinstance(w.get(k), (int, float)) and not isinstance(w.get(k), bool):
            return f"at {at(w[k], t0)}"
    return ""


def facts(w: dict, t0: float | None) -> str:
    """The event a witness is, in words: who, what, which partitions or records, at what second of the run."""
    who = w.get("member") or w.get("worker") or (f"broker {w['broker']}" if w.get("broker") is not None else "")
    what = str(w.get("type") or "")
    if what == "broker":  # a broker's log line: its words are the why's to quote; without one, a part of them
        what = "logged" + (f" {str(w['message'])[:LOG_CHARS]!r}" if not w.get("why") and w.get("message") else "")
    words = " ".join(x for x in (str(who), what, _partitions(w), _when(w, t0)) if x)
    return words if (who or what) else ""


def _value(k: str, v, t0: float | None) -> str:
    if is_mono_key(k) and isinstance(v, (int, float)) and not isinstance(v, bool):
        return at(v, t0)
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, default=str)
    return str(v)


def sentence(w, *, t0: float | None) -> str:
    """A witness as one sentence: its `why` whole, then the event in words; else its keys, times in run seconds."""
    if not isinstance(w, dict):
        return str(w)
    said = facts(w, t0)
    if w.get("why"):
        return f"{w['why']} ({said})" if said else str(w["why"])
    if said:
        return said
    return "; ".join(f"{k} {_value(k, v, t0)}" for k, v in w.items() if k not in UNSAID_KEYS) or "(empty witness)"


def _plain(v) -> dict:
    return v if isinstance(v, dict) else v.to_dict()


def witness_lines(v, *, t0: float | None, limit: int = 5) -> list[str]:
    """A verdict's witnesses as sentences, the first `limit`, then how many more it holds."""
    ws = list(_plain(v).get("witnesses") or ())
    lines = [sentence(w, t0=t0) for w in ws[:limit]]
    if len(ws) > limit:
        lines.append(f"(and {len(ws) - limit} more in {VERDICTS_JSON})")
    return lines


def headline(verdicts: dict, *, t0: float | None, status: str | None = None, error: str | None = None) -> str:
    """The run's outcome in one line (the module's docstring gives its forms)."""
    ds = {n: _plain(v) for n, v in (verdicts or {}).items()}
    if status in ("error", "incomplete"):
        judged = f"; its partial history judged: {_judged(ds, t0)}" if ds else ""
        return f"{status}: {error or 'the run did not finish'}{judged}"
    return _judged(ds, t0) if ds else f"{status or 'unknown'}: {error or 'no verdicts: the run was not judged'}"


def _judged(ds: dict, t0: float | None) -> str:
    """The verdicts' outcome in one line: the first failure's witness, else the first undecided fact, else a pass."""
    failed = [n for n, d in ds.items() if d.get("status") == "invalid"]
    undecided = [n for n, d in ds.items() if d.get("status") == "unknown"]
    if failed:
        d = ds[failed[0]]
        ws = d.get("witnesses") or ()
        line = f"{failed[0]}: {sentence(ws[0], t0=t0) if ws else d.get('message', '')}"
        line += f" (+ {', '.join(failed[1:])})" if failed[1:] else ""
        return line + (f"; undecided: {', '.join(undecided)}" if undecided else "")
    if undecided:
        line = f"undecided: {undecided[0]}: {ds[undecided[0]].get('message', '')}"
        return line + (f" (+ {', '.join(undecided[1:])})" if undecided[1:] else "")
    held = sum(d.get("status") == "valid" for d in ds.values())
    return f"pass: {held} invariants held, {len(ds) - held} did not apply"
