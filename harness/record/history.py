"""A run's history as the invariants read it: every file of a history directory merged on the shared clock.

Control events (ownership, lives, faults, ...) are kept as dicts; the per-record events of `BULK_TYPES`
as numpy columns (`history_columns.Bulk`), read without a dict per line where the line is in the writers'
compact layout. The format itself, the writer and the plain per-file reader are in `history_format`;
this module re-exports them, so `from harness.record.history import HistoryWriter` keeps working.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_right
from collections import defaultdict
from operator import itemgetter
from pathlib import Path
from typing import Callable, Iterable, Iterator

from harness.record import columns as _columns
from harness.record.columns import _COMMITTED, _SPEC, _WORD, Bulk, _Chunk, _dict_columns, _np, _Scanned, _template
from harness.record.format import (
    BULK_TYPES,
    CHUNK_BYTES,
    GLOB,
    SCHEMA,
    VERSION,
    HistoryFormatError,
    HistoryIncomplete,
    HistoryWriter,
    _blocks,
    _defaults,
    _header,
    _loads,
    _parse,
    event_problem,
    read_file,
)

__all__ = [
    "BULK_TYPES",
    "CHUNK_BYTES",
    "GLOB",
    "SCHEMA",
    "VERSION",
    "Bulk",
    "History",
    "HistoryFormatError",
    "HistoryIncomplete",
    "HistoryWriter",
    "read_file",
]

_KIND = defaultdict(int, {t: k for k, t in enumerate(BULK_TYPES, start=1)})  # other types: 0, control events


def _refuse_malformed(path: Path, evs: list, numbers) -> None:
    """HistoryIncomplete naming the file and line of the first event no writer could truthfully write."""
    for j, e in enumerate(evs):
        if isinstance(e, dict) and e.get("type") in ("processed", "acked") and (why := event_problem(e)):
            raise HistoryIncomplete(f"{path}:{int(numbers[j]) + 1}: malformed {e['type']} event: {why}: "
                                    f"the run is incomplete")


class _File:
    """A loaded file, to read its events again: its path, header, first event's id, byte offset of each event."""

    def __init__(self, path: Path, header: dict, base: int) -> None:
        self.path, self.header, self.base, self.count, self.index = path, header, base, 0, []


class History:
    """Every event of a run, merged from its files by the shared monotonic clock (ties in file order, files by name).
    `History(events)` keeps the given order, `from_events` sorts, `load` reads a directory. The invariants read
    `control()`, `run_start()`, `bulk(type)`, `values`/`code()`, `events_at(seqs)`, keep views in `derived()`;
    `events`: all dicts."""

    def __init__(self, events: Iterable[dict] | None = None, headers: list[dict] | None = None) -> None:
        self.headers: list[dict] = list(headers or [])
        self._derived, self._codes, self._values = {}, {None: 0}, []  # views; string -> code; code -> string
        self._files, self._perm, self._pieces = [], None, []  # loaded files; history order -> file order; columns
        evs = self._events = list(events or ())
        self._control, self._n = list(zip(*self._dicts(evs, None, None, self._pieces, list(range(len(evs)))))), len(evs)
        self._finish(None)
        self.mono_range = (evs[0].get("mono", 0.0), evs[-1].get("mono", 0.0)) if evs else (0.0, 0.0)  # first, last

    def _code_list(self, values: list) -> list[int]:
        for v in set(values):
            self._codes.setdefault(v, len(self._codes))
        return list(map(self._codes.__getitem__, values))

    def _finish(self, inv) -> None:
        """Each bulk type's columns from its pieces, rows in history order (`inv`: file order -> history order)."""
        np, self._bulk = _np(), {}
        for t in BULK_TYPES:
            cols: dict[str, list] = {}
            for _, ids, cs in (x for x in self._pieces if x[0] == t):
                if "c_row" in cs:  # rows of the offsets table: relative to the piece
                    cs["c_row"] = np.asarray(cs["c_row"], np.int64) + sum(map(len, cols.get("seq", ())))
                for f, v in (("seq", ids), *cs.items()):
                    cols.setdefault(f, []).append(np.asarray(v))
            cols = {f: np.concatenate(v) for f, v in cols.items()}
            if inv is not None and cols:
                cols["seq"] = seq = inv[cols["seq"]]
                if not (seq[1:] > seq[:-1]).all():  # rows of one file alone are in history order already
                    cols = self._ordered(cols, np.argsort(seq, kind="stable"))
            self._bulk[t] = Bulk(t, cols)
        self._pieces = []

    @staticmethod
    def _ordered(cols: dict, order) -> dict:
        """Columns with their rows in the given order; the offsets table's (`c_`) renumbered and in row order."""
        np = _np()
        cols = {f: (v[order] if not f.startswith("c_") else v) for f, v in cols.items()}
        if "c_row" in cols:
            rank = np.empty(len(order), np.int64)
            rank[order] = np.arange(len(order))  # old row -> new row
            o = np.argsort(c := rank[cols["c_row"]], kind="stable")
            cols.update({f: v[o] for f, v in cols.items() if f.startswith("c_")}, c_row=c[o])
        return cols

    @classmethod
    def from_events(cls, events: Iterable[dict]) -> "History":
        """Build a history from events in any order (used by tests with hand-made events)."""
        return cls(sorted(events, key=itemgetter("mono")))  # stable: ties in the given order

    @classmethod
    def load(cls, history_dir: str | os.PathLike, *, strict: bool = False) -> "History":
        """Load and merge every `*.jsonl` file of a run's history directory; `strict`: refuse (HistoryIncomplete,
        with file and line) a `processed` or `acked` event no writer could truthfully write (`event_problem`)."""
        self, np = cls(), _np()
        self._events, monos, control, cids, n = None, [], [], [], 0  # monos in file order; control events, ids
        for path in sorted(Path(history_dir).glob(GLOB)):
            fh, lineno = None, 0
            for pos, buf in _blocks(path):
                if first := fh is None:
                    self.headers.append((fh := _File(path, _header(path, buf[: buf.index(b"\n")]), n)).header)
                mdef = fh.header.get("member") if fh.header.get("source") == "member" else None
                ch, kind, mono, pieces = self._block(buf, first, mdef)
                lines = np.arange(first, len(ch.s))
                evs, blank = _parse(path, list(map(ch.line, rest := np.flatnonzero(kind == 255))), rest + lineno)
                if strict:  # the compact readers leave every such line to the JSON parser
                    _refuse_malformed(path, evs, np.delete(rest, blank) + lineno)
                kind[rest[blank]] = 254
                cl, cd = self._dicts(evs, fh.header, mdef, pieces, np.delete(rest, blank).tolist(), kind, mono)
                ev, rank = lines[kind[lines] != 254], np.zeros(len(ch.s), np.int64)
                rank[ev] = np.arange(n, n + len(ev))
                self._pieces += [(t, rank[li], cols) for t, li, cols in pieces]
                cids, control, monos = cids + [rank[cl]], control + cd, monos + [mono[ev]]
                fh.index.append(pos + ch.s[ev])
                n, fh.count, lineno = n + len(ev), fh.count + len(ev), lineno + len(ch.s)
            if fh is None:
                raise HistoryFormatError(f"{path}: empty history file (no header)")
            fh.index = np.concatenate(fh.index)
            self._files.append(fh)
        monos = np.concatenate(monos) if monos else np.zeros(0)
        self._n, self._perm, inv = n, np.argsort(monos, kind="stable"), np.empty(n, np.int64)
        inv[self._perm] = np.arange(n)
        self.mono_range = (float(monos[self._perm[0]]), float(monos[self._perm[-1]])) if n else (0.0, 0.0)
        self._control = sorted(zip(inv[np.concatenate(cids)].tolist() if cids else [], control), key=itemgetter(0))
        self._finish(inv)
        return self

    def _block(self, buf: bytes, first: bool, mdef) -> tuple:
        """A block's lines (`s`, `e`, `line`), each line's kind (255: to be parsed; 0: the header) and mono, and the
        columns of its compact bulk lines: by the compiled scanner when it is built, else with numpy."""
        if _columns.COMPILED is not None:
            ch = _Scanned(buf, first, mdef, self._codes)
            return ch, ch.kind, ch.mono, ch.pieces()
        ch, np = _Chunk(buf), _np()
        lines, mono, pieces, kind = np.arange(first, m := len(ch.s)), np.zeros(m), [], np.zeros(m, np.uint8)
        kind[lines] = 255  # not read yet; 254: blank
        word = ch.u64[ch.s[plain := lines[ch.plain[lines]]] + 8]  # bytes 8 to 15 of {"type":"acked",...
        for t in BULK_TYPES:
            pieces += self._fast(ch, t, plain[word == _WORD[t]], kind, mono, mdef)
        return ch, kind, mono, pieces

    def _fast(self, ch: _Chunk, t: str, lines, kind, mono, mdef) -> list:
        """Read the lines of a bulk type laid out compactly (as the writers do) with numpy, without dicts."""
        np, out, spec = ch.np, [], {key: (col, kd) for col, key, kd in _SPEC[t]} | (_COMMITTED if t[0] == "c" else {})
        for _ in range(3 if t[0] != "c" else 8):  # a few layouts (field orders; a committed line's offset count)
            if not len(lines) or not (got := _template(ch.line(lines[0]), t)):
                break
            (tmpl, keys), cols, (ok, spans) = got, {}, ch.match(got[0], lines)
            k = sum(1 for _, _, key in tmpl if key and key.startswith("c_topic#"))  # a committed line's offsets
            for key in [key for _, kd, key in tmpl if kd == "n"]:
                base, _, j = key.partition("#")
                col, kd = spec.get(base, (None, "f"))
                v, good = ch.number(*(x[idx := np.flatnonzero(ok)] for x in spans[key]), kd == "i", col is not None)
                ok[idx[~good]] = False
                cols.update({col + (f"#{j}" if j else ""): (idx, v)} if col else {})
            if t == "processed" and "count" in spans and (idx := np.flatnonzero(ok)).size:  # count: the range's
                c, f, la = (ch.number(*(x[idx] for x in spans[k]), True)[0] for k in ("count", "first_offset",
                                                                                     "last_offset"))
                ok[idx[c != la - f + 1]] = False  # else the JSON parser's, and the reader refuses it
            if not ok.any():
                break
            cols = {c: v[ok[idx]] for c, (idx, v) in cols.items()} | {
                col + suffix: (
                    ch.strings(*(x[ok] for x in spans[key + suffix]), self._code_list)
                    if key + suffix in spans
                    else np.full(
                        int(ok.sum()), self._code_list([mdef if key == "member" and key not in keys else None])[0]
                    )
                )
                for key, (col, kd) in spec.items()
                if kd == "c"
                for suffix in ([f"#{j}" for j in range(k)] if key == "c_topic" else [""])
            }
            if t == "committed":  # k offsets per row, row by row
                m = cols["mono"]
                for c in ("c_topic", "c_partition", "c_offset"):
                    cols[c] = np.stack([cols.pop(f"{c}#{j}") for j in range(k)], 1).ravel()
                cols |= dict(ok=np.full(len(m), int(bool(keys.get("ok")))), c_row=np.repeat(np.arange(len(m)), k),
                             requested=cols.get("requested", m))
            got = lines[ok]
            kind[got], mono[got] = _KIND[t], cols["mono"]
            out, lines = out + [(t, got, cols)], lines[~ok]
        return out

    def _dicts(self, evs: list, header, mdef, pieces, ids, kind=None, mono=None) -> tuple:
        """Events as dicts (and ids): bulk ones to `pieces` as columns; the control ones' ids and dicts returned."""
        try:
            ks = [_KIND[e.get("type")] for e in evs]
            if kind is not None:
                kind[ids], mono[ids] = ks, array("d", [e["mono"] for e in evs])
        except (AttributeError, KeyError, TypeError) as e:
            raise HistoryFormatError(f"an event without a type or a numeric mono, or no JSON object ({e!r})") from None
        for k, t in enumerate(BULK_TYPES, start=1):
            if sel := [j for j, kk in enumerate(ks) if kk == k]:
                pieces.append(
                    (t, [ids[j] for j in sel], _dict_columns(t, [evs[j] for j in sel], mdef, self._code_list))
                )
        sel = [j for j, kk in enumerate(ks) if not kk]
        return [ids[j] for j in sel], [_defaults(evs[j], header) for j in sel] if header else [evs[j] for j in sel]

    @property
    def events(self) -> list[dict]:
        """Every event as a dict, in history order (built on first use for a loaded history)."""
        if self._events is None:
            flat = [e for fh in self._files for e in read_file(fh.path)[1][: fh.count]]
            self._events = [flat[o] for o in self._perm.tolist()]
        return self._events

    def __iter__(self) -> Iterator[dict]:
        return iter(self.events)

    def __len__(self) -> int:  # without building `events`
        return self._n

    def of_type(self, *types: str) -> list[dict]:
        return (
            [e for _, e in self._control if e.get("type") in types]
            if self._events is None and not set(types) & set(BULK_TYPES)
            else [e for e in self.events if e.get("type") in types]
        )

    def control(self) -> list[tuple[int, dict]]:
        """(seq, event) of every event not of BULK_TYPES, in history order."""
        return self._control

    def run_start(self) -> dict | None:
        """The run's first `run_start` event (what the harness ran with: kind, settings, applies, ...), or None in a
        history without one."""
        return self.derived("run_start", lambda: next((e for _, e in self.control() if e.get("type") == "run_start"),
                                                     None))

    def bulk(self, type_: str) -> Bulk:
        """The columns of one bulk type."""
        return self._bulk[type_]

    @property
    def values(self) -> list:
        """The strings the columns hold as codes: values[code]."""
        self._values = self._values if len(self._values) == len(self._codes) else list(self._codes)
        return self._values

    def code(self, value) -> int | None:
        """The code of a string in the columns (None: no column holds it)."""
        return self._codes.get(value) if getattr(value, "__hash__", None) is not None else None

    def events_at(self, seqs: Iterable[int]) -> dict[int, dict]:
        """Events by position in history order, as dicts (read again from their files when loaded)."""
        if self._events is not None:
            return {s: self._events[s] for s in map(int, seqs)}
        bases, out = [fh.base for fh in self._files], {}
        for s, o in ((s, int(self._perm[s])) for s in map(int, seqs)):  # a few events: witnesses
            with open((fh := self._files[bisect_right(bases, o) - 1]).path, "rb") as f:
                out[s] = _defaults(_loads((f.seek(int(fh.index[o - fh.base])), f.readline())[1]), fh.header)
        return out

    def where(self, seq: int) -> tuple[Path | None, int | None]:
        """The file and line (from 1) an event of a loaded history was read from; (None, None) for one built from
        events."""
        if self._events is not None and not self._files:
            return None, None
        o = int(self._perm[seq])
        fh = self._files[bisect_right([f.base for f in self._files], o) - 1]
        left, lines = int(fh.index[o - fh.base]), 1
        with open(fh.path, "rb") as f:
            while left > 0 and (block := f.read(min(left, 1 << 20))):
                lines, left = lines + block.count(b"\n"), left - len(block)
        return fh.path, lines

    def derived(self, key, build: Callable[[], object]):
        """A view derived from this history, built once per key (the history does not change)."""
        return self._derived[key] if key in self._derived else self._derived.setdefault(key, build())
