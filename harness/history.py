"""Append-only JSON-lines history: the writer every process uses (standard library only: members run it in an
isolated client install) and the reader checkers get (numpy; orjson if installed): control events as dicts, those of
`BULK_TYPES` as columns (`Bulk`), a compact line read by numpy (`_Chunk`), others by orjson; merged on `mono`."""
from __future__ import annotations

import json
import os
import time
from array import array
from bisect import bisect_right
from collections import defaultdict
from operator import itemgetter
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

try:  # a C JSON parser, several times faster than json's; the writer does not need it
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - members' isolated installs
    _loads = json.loads

SCHEMA = "rebalance-history"
VERSION = 1
#: the many per-record event types, stored as columns by the reader
BULK_TYPES = ("processed", "committed", "acked", "failed")
_KIND = defaultdict(int, {t: k for k, t in enumerate(BULK_TYPES, start=1)})  # other types: 0, control events
CHUNK_BYTES = 4 << 20
_P10 = [float(10 ** i) for i in range(23)]  # exact doubles
_WORD = {t: int.from_bytes((b'"' + t.encode() + b'",')[:8], "little") for t in BULK_TYPES}  # bytes 8-15 of a line

class HistoryFormatError(ValueError):
    """A history file is not of a schema or version this reader knows, or not JSON lines."""

class HistoryWriter:
    """Writes one event per line, each with one write() and flushed, so SIGKILL tears at most the last line."""
    def __init__(self, path: str | os.PathLike, *, source: str, **header: object) -> None:
        (p := Path(path)).parent.mkdir(parents=True, exist_ok=True)
        self.path = p
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._write({"type": "header", "schema": SCHEMA, "version": VERSION, "source": source, **header})
    def _write(self, obj: dict) -> None:  # compact, as the reader's fast path expects
        os.write(self._fd, (json.dumps(obj, separators=(",", ":")) + "\n").encode())
    def event(self, type_: str, **fields: object) -> dict:
        """Append one event stamped with the shared monotonic clock and wall time."""
        self._write(ev := {"type": type_, "mono": time.monotonic(), "wall": time.time(), **fields})
        return ev
    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
    def __enter__(self) -> "HistoryWriter":
        return self
    def __exit__(self, *exc: object) -> None:
        self.close()

def _header(path, line: bytes) -> dict:
    try:
        header = _loads(line)
    except ValueError as e:
        raise HistoryFormatError(f"{path}: header is not JSON: {e}") from None
    if not isinstance(header, dict) or header.get("type") != "header" or header.get("schema") != SCHEMA:
        raise HistoryFormatError(f"{path}: not a {SCHEMA} file")
    if header.get("version") != VERSION:
        raise HistoryFormatError(f"{path}: history version {header.get('version')!r} is not supported (want {VERSION})")
    return header

def _blocks(path) -> Iterator[tuple[int, bytes]]:
    """(byte offset, complete lines) of a file by blocks; what follows the last newline (a torn line) is dropped."""
    with open(path, "rb") as f:
        carry, pos = b"", 0
        while block := f.read(CHUNK_BYTES):
            buf = carry + block if carry else block
            if cut := buf.rfind(b"\n") + 1:
                yield pos, buf[:cut]
            carry, pos = buf[cut:], pos + cut

def _parse(path, lines: list[bytes], numbers: Sequence[int]) -> tuple[list, list[int]]:
    """The events of some lines, numbered from 0 in their file (blank ones skipped: their indices are returned)."""
    try:
        return list(map(_loads, lines)), []
    except ValueError:
        out, blank = [], []
    for j, line in enumerate(lines):
        try:
            out.append(_loads(line)) if line.strip() else blank.append(j)
        except ValueError as e:
            raise HistoryFormatError(f"{path}:{numbers[j] + 1}: bad event line: {e}") from None
    return out, blank

def _defaults(ev: dict, header: dict) -> dict:
    if not isinstance(ev, dict):
        raise HistoryFormatError(f"an event line is not a JSON object: {ev!r:.80}")
    ev.setdefault("source", header.get("source"))
    if header.get("source") == "member":
        ev.setdefault("member", header.get("member"))
    return ev

def read_file(path: str | os.PathLike) -> tuple[dict, list[dict]]:
    """Read one history file: its header and its events as dicts (a torn last line is dropped)."""
    header, events, lineno = None, [], 0
    for _, buf in _blocks(path):
        lineno += len(lines := buf[:-1].split(b"\n"))
        if header is None:
            header, lines = _header(path, lines[0]), lines[1:]
        evs, _ = _parse(path, lines, range(lineno - len(lines), lineno))
        events += [_defaults(e, header) for e in evs]
    if header is None:
        raise HistoryFormatError(f"{path}: empty history file (no header)")
    return header, events

def _np():  # the reader's columns: imported when reading, so that members' writers need no numpy
    import numpy
    return numpy

class Bulk:
    """One bulk type's events in history order, a numpy array per field (strings as codes into `History.values`,
    0 is None): `seq` (position in history order); `processed`: `mono`, `member`, `topic`, `partition`, `first`,
    `last` (offsets), `task`; `acked`: `mono`, `topic`, `partition`, `offset`; `committed`: `mono`, `member`, `ok`,
    `requested` (`requested_mono`, else `mono`), its offsets by row: `c_row`, `c_topic`, `c_partition`, `c_offset`."""
    FIELDS = ("seq", "mono", "member", "topic", "task", "partition", "first", "last", "offset", "ok", "requested",
              "c_row", "c_topic", "c_partition", "c_offset")
    __slots__ = (*FIELDS, "type", "n")
    def __init__(self, type_: str, cols: dict) -> None:
        self.type, self.n = type_, len(cols.get("seq", ()))
        for f, dt in zip(self.FIELDS, "qdiiiqqqqbdiiqq"):
            setattr(self, f, _np().asarray(cols.get(f, ()), dtype=dt))

#: the columns of each bulk type (committed: and more): (column, event field, kind: f float, i integer, c code)
_SPEC = {"processed": (("mono", "mono", "f"), ("partition", "partition", "i"), ("first", "first_offset", "i"),
                       ("last", "last_offset", "i"), ("task", "task", "c"), ("member", "member", "c"),
                       ("topic", "topic", "c")), "failed": (("mono", "mono", "f"),),
         "acked": (("mono", "mono", "f"), ("topic", "topic", "c"), ("partition", "partition", "i"),
                   ("offset", "offset", "i")), "committed": (("mono", "mono", "f"), ("member", "member", "c"))}
_COMMITTED = {"requested_mono": ("requested", "f"), "c_partition": ("c_partition", "i"), "c_offset": ("c_offset", "i"),
              "c_topic": ("c_topic", "c")}  # what the numpy path reads of a committed line too

def _dict_columns(type_: str, ds: list[dict], mdef, code) -> dict:
    """The columns of some events of a bulk type (HistoryFormatError if one lacks a field); `code`: values' codes."""
    try:
        out = {col: code([d.get(key, mdef if key == "member" else None) for d in ds]) if kind == "c"
               else array("d" if kind == "f" else "q", [d[key] for d in ds]) for col, key, kind in _SPEC[type_]}
        if type_ == "committed":
            offs = [[(t, int(p), int(o)) for t, p, o in (d.get("offsets") or ())] for d in ds]
            flat = [x for tps in offs for x in tps]
            out.update(ok=[1 if d.get("ok") else 0 for d in ds], c_row=[i for i, x in enumerate(offs) for _ in x],
                       requested=array("d", [d.get("requested_mono", d["mono"]) for d in ds]), c_topic=code(
                           [x[0] for x in flat]), c_partition=array("q", [x[1] for x in flat]), c_offset=array(
                           "q", [x[2] for x in flat]))
        return out
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        for d in ds if len(ds) > 1 else ():  # which one
            _dict_columns(type_, [d], mdef, code)
        raise HistoryFormatError(f"a {type_} event lacks a field or has a wrong one ({e!r}): {ds[0]!r:.200}") from None

def _template(line: bytes, type_: str) -> tuple[list, set] | None:
    """A compact line's layout, [(literal, kind, field)]: a value of kind n or s (number, string) follows each literal
    but the last; and the line's dict. None when the line cannot serve."""
    try:
        d, spec, out, lit = _loads(line), {key: kind for _, key, kind in _SPEC[type_]}, [], "{"
    except ValueError:
        return None
    if not isinstance(d, dict) or d.get("type") != type_ or not {k for k, c in spec.items() if c != "c"} <= d.keys() \
            or not isinstance(d.get("ok"), (bool, type(None))):
        return None
    for i, (k, v) in enumerate(d.items()):
        if not k.isascii() or not k.isprintable() or '"' in k or "\\" in k:
            return None
        lit, kind = lit + ("," if i else "") + f'"{k}":', spec.get(k)
        if k == "type" or (v is None and kind in (None, "c")) or (kind is None and isinstance(v, bool)):
            lit += json.dumps(v)
        elif k == "offsets" and type_[0] == "c" and type(v) is list and len(v) == 1 and type(v[0]) is list \
                and list(map(type, v[0])) == [str, int, int]:  # one committed offset: [[topic, partition, offset]]
            out, lit = out + [(lit + '[["', "s", "c_topic"), ('",', "n", "c_partition"), (",", "n", "c_offset")], "]]"
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and kind != "c":
            out, lit = out + [(lit, "n", k)], ""
        elif isinstance(v, str) and kind in (None, "c"):
            out, lit = out + [(lit + '"', "s", k)], '"'
        else:
            return None
    out = [(x.encode(), kind, k) for x, kind, k in out] + [((lit + "}").encode(), None, None)]
    return (out, d) if max(len(x) for x, _, _ in out) < 4000 else None

class _Chunk:
    """The complete lines of a block of a file, read with numpy: line bounds, layouts, values."""
    def __init__(self, buf: bytes) -> None:
        np = self.np = _np()
        self.mask = np.array([(1 << 8 * i) - 1 for i in range(9)], np.uint64)  # the low i bytes of a word
        self.a = np.frombuffer(buf + b',"' + bytes(4094), np.uint8)  # ends of a number and a string; room to read on
        a, p = self.a[:len(buf)], self.a[:len(buf) + 2]
        self.u64 = np.ndarray((len(a) + 4088,), "<u8", self.a, 0, (1,))  # the 8 bytes from each position
        self.e = nl = np.flatnonzero(a == 10)
        self.s, self.buf = np.concatenate(([0], nl[:-1] + 1)), buf
        self.ends = {"n": np.flatnonzero((p == 44) | (p == 125) | (p == 93)),  # where a number ends
                     "s": np.flatnonzero(p == 34)}  # where a string ends
        odd = np.flatnonzero((a.view(np.int8) < 32) | (a == 92))  # escapes, non-ASCII, controls (newlines: at ends)
        self.plain = np.searchsorted(odd, self.s) == np.searchsorted(odd, self.e)
    def line(self, i: int) -> bytes:
        return self.buf[self.s[i]:self.e[i]]
    def match(self, tmpl: list, lines, whole: bool = True):
        """Which lines have the layout (`whole`: and nothing after it), and the [start, end) of each value."""
        np, pos, ok, spans = self.np, self.s[lines], self.np.ones(len(lines), bool), {}
        for lit, kind, key in tmpl:
            for j in range(0, len(lit), 8):  # 8 bytes at a time
                word, w = int.from_bytes(lit[j:j + 8], "little"), self.u64[pos + j]
                ok &= (w if len(lit) - j >= 8 else w & ((1 << 8 * (len(lit) - j)) - 1)) == word
            pos = pos + len(lit)
            if kind:
                end = self.ends[kind][np.minimum(np.searchsorted(self.ends[kind], pos), len(self.ends[kind]) - 1)]
                spans[key], pos = (pos, end), end
        return (ok & (pos == self.e[lines]) if whole else ok), spans
    def number(self, st, en, integer: bool, value: bool = True):
        """The JSON numbers at [st, en) that are plain (digits; for floats one dot too), and which are."""
        np, w = self.np, en - st
        W = max(1, min(int(w.max(initial=1)), 18 if integer else 24))
        B = np.stack([self.u64[st + j] for j in range(0, W, 8)], 1).view(np.uint8)[:, :W]
        M = np.where(inside := np.arange(W)[:, None] < w, B.T, 0)  # byte j of every number: row j
        dig, dot = (M - 48) < 10, M == 46
        ok = (w >= 1) & (w <= W) & (dig | ~inside | (False if integer else dot)).all(0) & dig[0] \
            & dig[np.clip(w - 1, 0, W - 1), np.arange(len(w))] & ((n_dot := dot.sum(0)) <= (0 if integer else 1)) \
            & ((M[0] != 48) | (w == 1) | (dot[1] if W > 1 else False))
        if not value:
            return None, ok
        m = np.zeros(len(w), np.int64)
        for j in range(W):  # the digits as an integer
            m = np.where(dig[j], m * 10 + (M[j] - 48), m)
        if integer:
            return m, ok
        frac = np.where(n_dot > 0, w - 1 - (dot * np.arange(W)[:, None]).sum(0), 0)  # m / 10**frac: exact (Clinger)
        v, slow = m / np.asarray(_P10)[np.clip(frac, 0, 22)], ok & ((w - n_dot > 15) | (frac > 22))
        if slow.any():
            v[slow] = np.ascontiguousarray(np.where(inside, M, 0).T[slow]).view(f"S{W}").ravel().astype(np.float64)
        return v, ok
    def strings(self, st, en, code):
        """The codes of the strings at [st, en) (8 bytes at a time, zeros after the end)."""
        np, w = self.np, en - st
        keep = np.clip(w[:, None] - np.arange(0, max(1, int(w.max(initial=0))), 8), 0, 8)
        M = np.stack([self.u64[st + 8 * j] for j in range(keep.shape[1])], 1) & self.mask[keep]
        if (M == M[0]).all():
            return np.full(len(w), code([M[0].tobytes().rstrip(b"\0").decode()])[0], np.int64)
        u, inv = np.unique(np.ascontiguousarray(M).view(f"S{8 * keep.shape[1]}").ravel(), return_inverse=True)
        return np.asarray(code([x.decode() for x in u]), np.int64)[inv.ravel()]

class _File:
    """A loaded file, to read its events again: its path, header, first event's id, byte offset of each event."""
    def __init__(self, path: Path, header: dict, base: int) -> None:
        self.path, self.header, self.base, self.count, self.index = path, header, base, 0, []

class History:
    """Every event of a run, merged from its files by the shared monotonic clock (ties in file order, files by name).
    `History(events)` keeps the given order, `from_events` sorts, `load` reads a directory. The invariants read
    `control()`, `bulk(type)`, `values`/`code()`, `events_at(seqs)`, keep views in `derived()`; `events`: all dicts."""
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
                order = np.argsort(seq := inv[cols["seq"]], kind="stable")
                cols = {f: (v[order] if not f.startswith("c_") else v) for f, v in cols.items()} | {"seq": seq[order]}
                if "c_row" in cols:
                    o = np.argsort(c := np.argsort(order)[cols["c_row"]], kind="stable")  # rows renumbered
                    cols.update({f: v[o] for f, v in cols.items() if f.startswith("c_")}, c_row=c[o])
            self._bulk[t] = Bulk(t, cols)
        self._pieces = []
    @classmethod
    def from_events(cls, events: Iterable[dict]) -> "History":
        """Build a history from events in any order (used by tests with hand-made events)."""
        return cls(sorted(events, key=itemgetter("mono")))  # stable: ties in the given order
    @classmethod
    def load(cls, history_dir: str | os.PathLike) -> "History":
        """Load and merge every `*.jsonl` file of a run's history directory."""
        self, np = cls(), _np()
        self._events, monos, control, cids, n = None, [], [], [], 0  # monos in file order; control events, ids
        for path in sorted(Path(history_dir).glob("*.jsonl")):
            fh, lineno = None, 0
            for pos, buf in _blocks(path):
                ch, first = _Chunk(buf), fh is None
                self.headers += [(fh := _File(path, _header(path, ch.line(0)), n)).header] if first else []
                mdef = fh.header.get("member") if fh.header.get("source") == "member" else None
                lines, mono, pieces, kind = np.arange(first, m := len(ch.s)), np.zeros(m), [], np.zeros(m, np.uint8)
                kind[lines] = 255  # not read yet; 254: blank
                word = ch.u64[ch.s[plain := lines[ch.plain[lines]]] + 8]  # bytes 8 to 15 of {"type":"acked",...
                for t in BULK_TYPES:
                    pieces += self._fast(ch, t, plain[word == _WORD[t]], kind, mono, mdef)
                evs, blank = _parse(path, list(map(ch.line, rest := np.flatnonzero(kind == 255))), rest + lineno)
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
    def _fast(self, ch: _Chunk, t: str, lines, kind, mono, mdef) -> list:
        """Read the lines of a bulk type laid out compactly (as the writers do) with numpy, without dicts."""
        np, out, spec = ch.np, [], {key: (col, kd) for col, key, kd in _SPEC[t]} | (_COMMITTED if t[0] == "c" else {})
        for _ in range(3):  # a few layouts (field orders) per block
            if not len(lines) or not (got := _template(ch.line(lines[0]), t)):
                break
            (tmpl, keys), cols, (ok, spans) = got, {}, ch.match(got[0], lines)
            for key in [key for _, kd, key in tmpl if kd == "n"]:
                col, kd = spec.get(key, (None, "f"))
                v, good = ch.number(*(x[idx := np.flatnonzero(ok)] for x in spans[key]), kd == "i", col is not None)
                ok[idx[~good]] = False
                cols.update({col: (idx, v)} if col else {})
            if not ok.any():
                break
            cols = {c: v[ok[idx]] for c, (idx, v) in cols.items()} | {
                col: ch.strings(*(x[ok] for x in spans[key]), self._code_list) if key in spans else np.full(
                    int(ok.sum()), self._code_list([mdef if key == "member" and key not in keys else None])[0])
                for key, (col, kd) in spec.items() if kd == "c"}
            if t == "committed":  # one offset per row
                cols |= dict(ok=np.full(len(m := cols["mono"]), int(bool(keys.get("ok")))), c_row=np.arange(len(m)),
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
                pieces.append((t, [ids[j] for j in sel], _dict_columns(t, [evs[j] for j in sel], mdef,
                                                                       self._code_list)))
        sel = [j for j, kk in enumerate(ks) if not kk]
        return [ids[j] for j in sel], [_defaults(evs[j], header) for j in sel] if header else [evs[j] for j in sel]
    @property
    def events(self) -> list[dict]:
        """Every event as a dict, in history order (built on first use for a loaded history)."""
        if self._events is None:
            flat = [e for fh in self._files for e in read_file(fh.path)[1][:fh.count]]
            self._events = [flat[o] for o in self._perm.tolist()]
        return self._events
    def __iter__(self) -> Iterator[dict]:
        return iter(self.events)
    def __len__(self) -> int:  # without building `events`
        return self._n
    def of_type(self, *types: str) -> list[dict]:
        return [e for _, e in self._control if e.get("type") in types] if self._events is None and not \
            set(types) & set(BULK_TYPES) else [e for e in self.events if e.get("type") in types]
    def control(self) -> list[tuple[int, dict]]:
        """(seq, event) of every event not of BULK_TYPES, in history order."""
        return self._control
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
    def derived(self, key, build: Callable[[], object]):
        """A view derived from this history, built once per key (the history does not change)."""
        return self._derived[key] if key in self._derived else self._derived.setdefault(key, build())
