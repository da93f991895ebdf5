"""Append-only JSON-lines history: the writer every process uses and the reader checkers get.

Standard library only (orjson when installed, to read faster): members run the writer under an isolated
client install, and the invariants read its output without any I/O of their own. The reader keeps a long
history lean: the few *control* events (ownership, lives, faults, run start and end, ...) are dicts, the
many per-record events of `BULK_TYPES` are columns (`Bulk`: an `array` per field, rows in history order),
and files are read in chunks. `History.events` (all as dicts) is built on first use, reading the bulk
events' lines again from their files.
"""
from __future__ import annotations

import gc
import json
import os
import time
from array import array
from bisect import bisect_right
from collections import defaultdict
from itertools import accumulate, compress, repeat
from operator import itemgetter
from pathlib import Path
from typing import Callable, Iterable, Iterator

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
_MONO, _ACKED = itemgetter("mono"), itemgetter("partition", "offset")
_PROCESSED = itemgetter("mono", "partition", "first_offset", "last_offset")


class HistoryFormatError(ValueError):
    """A history file is not of a schema or version this reader knows, or not JSON lines."""


class HistoryWriter:
    """Writes one event per line, each with one write() and flushed, so SIGKILL tears at most the last line."""

    def __init__(self, path: str | os.PathLike, *, source: str, **header: object) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._write({"type": "header", "schema": SCHEMA, "version": VERSION, "source": source, **header})

    def _write(self, obj: dict) -> None:
        os.write(self._fd, (json.dumps(obj, separators=(",", ":")) + "\n").encode())

    def event(self, type_: str, **fields: object) -> dict:
        """Append one event stamped with the shared monotonic clock and wall time."""
        ev = {"type": type_, "mono": time.monotonic(), "wall": time.time(), **fields}
        self._write(ev)
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


def _chunks(path) -> Iterator[tuple[int, int, list[bytes]]]:
    """(first line's byte offset and number from 0, complete lines) of a file by chunks; the text after the last
    newline (empty, or a line torn by a killed writer) is dropped."""
    with open(path, "rb") as f:
        carry, pos, lineno = b"", 0, 0
        while block := f.read(CHUNK_BYTES):
            buf = carry + block if carry else block
            if (cut := buf.rfind(b"\n")) >= 0:
                lines, carry = buf[:cut].split(b"\n"), buf[cut + 1:]
                yield pos, lineno, lines
                pos, lineno = pos + cut + 1, lineno + len(lines)
            else:
                carry = buf


def _parse(path, lines: list[bytes], lineno: int) -> tuple[list, list[int]]:
    """The events of some lines (blank ones skipped: their line numbers are returned)."""
    try:
        return list(map(_loads, lines)), []
    except ValueError:
        pass
    out, blank = [], []
    for n, line in enumerate(lines, start=lineno):
        if not line.strip():
            blank.append(n)
            continue
        try:
            out.append(_loads(line))
        except ValueError as e:
            raise HistoryFormatError(f"{path}:{n + 1}: bad event line: {e}") from None
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
    header, events = None, []
    for _, lineno, lines in _chunks(path):
        if header is None:
            header = _header(path, lines[0])
            lines, lineno = lines[1:], 1
        evs, _ = _parse(path, lines, lineno)
        events += [_defaults(e, header) for e in evs]
    if header is None:
        raise HistoryFormatError(f"{path}: empty history file (no header)")
    return header, events


class Bulk:
    """The events of one bulk type in history order, an array per field (strings as codes into `History.values`,
    0 is None): `seq` (position in history order); `processed`: `mono`, `member`, `topic`, `partition`, `first`,
    `last` (offsets), `task`; `acked`: `topic`, `partition`, `offset`; `committed`: `mono`, `member`, `ok` (1: true),
    `requested` (`requested_mono`, else `mono`) and its offsets by row: `c_row`, `c_topic`, `c_partition`, `c_offset`."""

    FIELDS = ("seq", "mono", "member", "topic", "task", "partition", "first", "last", "offset", "ok", "requested",
              "c_row", "c_topic", "c_partition", "c_offset")
    __slots__ = (*FIELDS, "type", "n")

    def __init__(self, type_: str) -> None:
        self.type, self.n = type_, 0  # n: rows
        for f, tc in zip(self.FIELDS, "qdiiiqqqqbdiiqq"):
            setattr(self, f, array(tc))

    def _reorder(self, order: list[int]) -> None:
        if self.c_row:  # the offsets table follows its rows: renumber them, then sort the table by row
            new = array("i", bytes(4 * len(order)))
            for i, r in enumerate(order):
                new[r] = i
            self.c_row = array("i", map(new.__getitem__, self.c_row))
        for fs, idx in ((self.FIELDS[1:11], order), (self.FIELDS[11:], sorted(range(len(self.c_row)),
                                                                               key=self.c_row.__getitem__))):
            for f in fs:
                if col := getattr(self, f):
                    setattr(self, f, array(col.typecode, map(col.__getitem__, idx)))


class _Columns:
    """Builds the Bulk of every type from dicts, chunk by chunk."""
    def __init__(self, codes: dict) -> None:
        self.codes, self.bulk = codes, {t: Bulk(t) for t in BULK_TYPES}

    def code(self, values: Iterable) -> list[int]:
        values, cs = list(values), self.codes
        for v in set(values):
            cs.setdefault(v, len(cs))
        return list(map(cs.__getitem__, values))

    def add(self, type_: str, ds: list[dict], member_default=None) -> None:
        """Store the events; HistoryFormatError when one lacks a field its type needs or has a wrong one."""
        b = self.bulk[type_]
        try:
            cols = self._values(type_, ds, member_default, b.n)
        except (KeyError, TypeError, ValueError, OverflowError):
            for d in ds:  # which one
                try:
                    self._values(type_, [d], member_default, 0)
                except (KeyError, TypeError, ValueError, OverflowError) as e:
                    raise HistoryFormatError(f"a {type_} event lacks a field or has a wrong one ({e!r}): "
                                             f"{d!r:.200}") from None
            raise
        for f, col in cols.items():
            getattr(b, f).extend(col)
        b.n += len(ds)

    def _values(self, type_: str, ds: list[dict], mdef, n: int) -> dict[str, array]:
        out = {}
        if type_ == "processed":
            mono, part, first, last = zip(*map(_PROCESSED, ds))
            out = {"mono": array("d", mono), "partition": array("q", part), "first": array("q", first),
                   "last": array("q", last), "task": array("i", self.code(map(dict.get, ds, repeat("task"))))}
        elif type_ == "acked":
            part, off = zip(*map(_ACKED, ds))
            out = {"partition": array("q", part), "offset": array("q", off)}
        elif type_ == "committed":
            offs = [[(t, int(p), int(o)) for t, p, o in (d.get("offsets") or ())] for d in ds]
            out = {"mono": array("d", map(_MONO, ds)), "ok": array("b", [1 if d.get("ok") else 0 for d in ds]),
                   "requested": array("d", [d.get("requested_mono", d["mono"]) for d in ds]),
                   "c_row": array("i", [i for i, tps in enumerate(offs, start=n) for _ in tps]),
                   "c_topic": array("i", self.code(x[0] for tps in offs for x in tps)),
                   "c_partition": array("q", [x[1] for tps in offs for x in tps]),
                   "c_offset": array("q", [x[2] for tps in offs for x in tps])}
        if type_ in ("processed", "committed"):
            out["member"] = array("i", self.code(map(dict.get, ds, repeat("member"), repeat(mdef))))
        if type_ in ("processed", "acked"):
            out["topic"] = array("i", self.code(map(dict.get, ds, repeat("topic"))))
        return out


class _File:
    """What is needed to read the events of a loaded file again: the byte offset of each line, the numbers of
    its blank lines (no event), its first event's id in file order, its events."""

    def __init__(self, path: Path, header: dict, base: int) -> None:
        self.path, self.header, self.base, self.count, self.index, self.blank = path, header, base, 0, array("q"), []

    def read(self, ordinals: list[int]) -> dict[int, dict]:
        """The file's events of the given ordinals (from 0), read again."""
        out: dict[int, dict] = {}
        with open(self.path, "rb") as f:
            for o in sorted(set(ordinals)):
                n = o + 1  # the line number: the header is line 0, blank lines hold no event
                for b in self.blank:
                    n += b <= n
                f.seek(self.index[n])
                out[o] = _defaults(_loads(f.readline()), self.header)
        return out


class History:
    """Every event of a run, merged from all its files and ordered by the shared monotonic clock (ties in file
    order, files by name). `History(events)` keeps the given order, `from_events` sorts, `load` reads a
    directory. The invariants read `control()`, `bulk(type)`, `values`/`code()`, `events_at(seqs)`, and keep
    what they derive in `derived()`; `events` (all as dicts) is for other callers."""

    def __init__(self, events: Iterable[dict] | None = None, headers: list[dict] | None = None) -> None:
        self.headers: list[dict] = list(headers or [])
        self._derived, self._codes, self._values = {}, {None: 0}, []  # views; string -> code; code -> string
        self._files: list[_File] = []
        self._perm: array | None = None  # history order -> file order (loaded histories)
        #: the mono of the first and of the last event in history order
        evs = self._events = list(events or ())
        cols, control, ids = _Columns(self._codes), [], [[] for _ in range(len(BULK_TYPES) + 1)]
        self._ingest(evs, 0, None, cols, control, ids)
        self._n, self._control, self._bulk = len(evs), list(zip(ids[0], control)), cols.bulk
        for k, t in enumerate(BULK_TYPES, start=1):
            cols.bulk[t].seq = array("q", ids[k])
        self.mono_range = (evs[0].get("mono", 0.0), evs[-1].get("mono", 0.0)) if evs else (0.0, 0.0)

    @staticmethod
    def _ingest(evs: list, base: int, header: dict | None, cols: _Columns, control: list, ids: list[list[int]]) -> bytes:
        """File events (ids from base on): control ones as dicts (with the file's defaults), bulk ones into their
        columns; return their kinds."""
        try:
            ks = bytes(map(_KIND.__getitem__, map(dict.get, evs, repeat("type"))))
        except TypeError as e:
            raise HistoryFormatError(f"an event that is no JSON object with a string type ({e})") from None
        mdef = header.get("member") if header and header.get("source") == "member" else None
        present = set(ks)
        for k in sorted(present):
            sel = list(map(k.__eq__, ks)) if len(present) > 1 else None
            oids = list(compress(range(base, base + len(ks)), sel)) if sel else list(range(base, base + len(ks)))
            ds = list(compress(evs, sel)) if sel else evs
            if k == 0:
                control += [_defaults(d, header) for d in ds] if header else ds
            else:
                cols.add(BULK_TYPES[k - 1], ds, mdef)
            ids[k] += oids
        return ks

    @classmethod
    def from_events(cls, events: Iterable[dict]) -> "History":
        """Build a history from events in any order (used by tests with hand-made events)."""
        evs = list(events)
        return cls([evs[i] for i in sorted(range(len(evs)), key=lambda i: (evs[i]["mono"], i))])

    @classmethod
    def load(cls, history_dir: str | os.PathLike) -> "History":
        """Load and merge every `*.jsonl` file of a run's history directory."""
        was = gc.isenabled()
        gc.disable()  # a million short-lived dicts: the cyclic collector would scan them over and over
        try:
            return cls()._load(Path(history_dir))
        finally:
            if was:
                gc.enable()

    def _load(self, history_dir: Path) -> "History":
        self._events, cols = None, _Columns(self._codes)
        monos, kinds, control = array("d"), bytearray(), []  # every event's mono and kind in file order; control ones
        ids: list[list[int]] = [[] for _ in range(len(BULK_TYPES) + 1)]  # file-order ids of each kind
        for path in sorted(history_dir.glob("*.jsonl")):
            fh = None
            for pos, lineno, lines in _chunks(path):
                if fh is None:
                    fh = _File(path, _header(path, lines[0]), len(monos))
                    self.headers.append(fh.header)
                fh.index.extend(accumulate(map((1).__add__, map(len, lines[:-1])), initial=pos))
                evs, blank = _parse(path, lines[1:] if lineno == 0 else lines, lineno or 1)
                fh.blank += blank
                try:
                    kinds += self._ingest(evs, len(monos), fh.header, cols, control, ids)
                    monos.extend(map(_MONO, evs))
                except (KeyError, TypeError) as e:
                    raise HistoryFormatError(f"{path}: an event without a type or a numeric mono ({e!r})") from None
                fh.count += len(evs)
            if fh is None:
                raise HistoryFormatError(f"{path}: empty history file (no header)")
            self._files.append(fh)
        self._n = len(monos)
        # history order: by mono, ties in file order; each kind's rows keep that order among themselves
        perm = sorted(range(len(monos)), key=monos.__getitem__)
        self._perm = array("i", perm)
        self.mono_range = (monos[perm[0]], monos[perm[-1]]) if perm else (0.0, 0.0)
        in_order = bytes(map(kinds.__getitem__, perm))
        seqs = [list(compress(range(len(perm)), map(k.__eq__, in_order))) if oids else []
                for k, oids in enumerate(ids)]
        order = sorted(range(len(control)), key=array("d", map(monos.__getitem__, ids[0])).__getitem__)
        self._control = [(s, control[i]) for s, i in zip(seqs[0], order)]
        for k, t in enumerate(BULK_TYPES, start=1):
            oids, ss = ids[k], seqs[k]
            o = sorted(range(len(oids)), key=array("d", map(monos.__getitem__, oids)).__getitem__)
            if o != list(range(len(o))):
                cols.bulk[t]._reorder(o)
            cols.bulk[t].seq = array("q", ss)
        self._bulk = cols.bulk
        return self

    # -- what every caller reads
    @property
    def events(self) -> list[dict]:
        """Every event as a dict, in history order (built on first use for a loaded history)."""
        if self._events is None:
            flat = [e for fh in self._files for e in read_file(fh.path)[1][:fh.count]]
            self._events = [flat[o] for o in self._perm]
        return self._events

    def __iter__(self) -> Iterator[dict]:
        return iter(self.events)

    def __len__(self) -> int:  # without building `events`
        return self._n

    def of_type(self, *types: str) -> list[dict]:
        if self._events is None and not set(types) & set(BULK_TYPES):
            return [e for _, e in self._control if e.get("type") in types]
        return [e for e in self.events if e.get("type") in types]

    # -- what the invariants read
    def control(self) -> list[tuple[int, dict]]:
        """(seq, event) of every event not of BULK_TYPES, in history order."""
        return self._control

    def bulk(self, type_: str) -> Bulk:
        """The columns of one bulk type."""
        return self._bulk[type_]

    @property
    def values(self) -> list:
        """The strings the columns hold as codes: values[code]."""
        if len(self._values) != len(self._codes):
            self._values = list(self._codes)
        return self._values

    def code(self, value) -> int | None:
        """The code of a string in the columns (None: no column holds it)."""
        try:
            return self._codes.get(value)
        except TypeError:
            return None

    def events_at(self, seqs: Iterable[int]) -> dict[int, dict]:
        """Events by position in history order, as dicts (read again from their files when loaded)."""
        if self._events is not None:
            return {s: self._events[s] for s in seqs}
        bases, want, out = [fh.base for fh in self._files], {}, {}
        for s in seqs:
            f = bisect_right(bases, self._perm[s]) - 1
            want.setdefault(f, []).append((s, self._perm[s] - bases[f]))
        for f, pairs in want.items():
            got = self._files[f].read([o for _, o in pairs])
            out.update({s: got[o] for s, o in pairs})
        return out

    def derived(self, key, build: Callable[[], object]):
        """A view derived from this history, built once per key (the history does not change)."""
        if key not in self._derived:
            self._derived[key] = build()
        return self._derived[key]
