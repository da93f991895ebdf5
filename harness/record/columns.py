"""The history reader's columns: bulk events as numpy arrays, and compact lines read without a dict each.

Most of a long history is per-record events (`BULK_TYPES`), written by the harness's own writers in one
compact layout (`json.dumps(..., separators=(",", ":"))`). Parsing each line into a dict and then into
columns cost most of a judgment (1,000,000 events: 17.5 s of CPU before, docs/benchmarks.md).

Two readers of the compact lines fill the same columns; every other line goes to orjson either way:

- The compiled scanner (`_bulkscan.c`, `_Scanned`), built by `pip install -e .` when a C compiler is there: one pass
  over a block, every line checked and read field by field, strings turned into codes as `History._code_list`
  makes them. It is hand-written because no maintained library reads fast enough: the JSON libraries that read
  JSON lines into typed columns (polars, DuckDB, pyarrow, each given an explicit schema) or typed objects (msgspec)
  were measured on the 165 MB history of bench/judge.py's default run (bench/json_readers.py; docs/benchmarks.md,
  "JSON libraries as the reader"): the fastest takes 1.0 s of CPU and 0.2 s to import for the bulk fields alone,
  twice the 0.5 s a load may take for a run to be judged in under 1 s; the scanner takes about 0.25 s.
- The numpy path (`_Chunk`, `History._fast`), where the scanner is not built: the layout of the first compact line of
  a block is learned (`_template`), and every line of that type is checked byte for byte against it
  (`_Chunk.match`); numbers are read exactly from their digits (`_Chunk.number`: integers as such; floats as
  digits / 10**k, exact below 16 digits, else the standard conversion); strings become codes. About 3 times slower.

Both take a line only when it is in the writers' layout and its values are ones the columns hold as written; any
line that is not (other spacing or field order, escapes, non-ASCII, exponents, negative numbers, wrong types) is
left to orjson by the caller, so a third-party member's valid JSON reads the same, and a bad line is refused the
same way; tests/unit/test_history.py holds both readers to the same dicts. The scanner's rule is per line (the
header of `_bulkscan.c`): it takes every line the numpy path takes and also the compact lines of layouts beyond the
few the numpy path learns per block.
"""

from __future__ import annotations

import json
from array import array

from harness.record.format import BULK_TYPES, HistoryFormatError, loads as _loads

_WORD = {t: int.from_bytes((b'"' + t.encode() + b'",')[:8], "little") for t in BULK_TYPES}  # bytes 8-15 of a line
_P10 = [float(10**i) for i in range(23)]  # exact doubles


def _np():  # the reader's columns: imported when reading, so that members' writers need no numpy
    import numpy

    return numpy


class Bulk:
    """One bulk type's events in history order, a numpy array per field (strings as codes into `History.values`,
    0 is None): `seq` (position in history order); `processed`: `mono`, `member`, `topic`, `partition`, `first`,
    `last` (offsets), `task`; `acked`: `mono`, `topic`, `partition`, `offset`; `committed`: `mono`, `member`, `ok`,
    `requested` (`requested_mono`, else `mono`), its offsets by row: `c_row`, `c_topic`, `c_partition`, `c_offset`."""

    FIELDS = (
        "seq",
        "mono",
        "member",
        "topic",
        "task",
        "partition",
        "first",
        "last",
        "offset",
        "ok",
        "requested",
        "c_row",
        "c_topic",
        "c_partition",
        "c_offset",
    )
    __slots__ = (*FIELDS, "type", "n")

    def __init__(self, type_: str, cols: dict) -> None:
        self.type, self.n = type_, len(cols.get("seq", ()))
        for f, dt in zip(self.FIELDS, "qdiiiqqqqbdiiqq"):
            setattr(self, f, _np().asarray(cols.get(f, ()), dtype=dt))


#: the columns of each bulk type (committed: and more): (column, event field, kind: f float, i integer, c code)
_SPEC = {
    "processed": (
        ("mono", "mono", "f"),
        ("partition", "partition", "i"),
        ("first", "first_offset", "i"),
        ("last", "last_offset", "i"),
        ("task", "task", "c"),
        ("member", "member", "c"),
        ("topic", "topic", "c"),
    ),
    "failed": (("mono", "mono", "f"),),
    "acked": (
        ("mono", "mono", "f"),
        ("topic", "topic", "c"),
        ("partition", "partition", "i"),
        ("offset", "offset", "i"),
    ),
    "committed": (("mono", "mono", "f"), ("member", "member", "c")),
}
_COMMITTED = {
    "requested_mono": ("requested", "f"),
    "c_partition": ("c_partition", "i"),
    "c_offset": ("c_offset", "i"),
    "c_topic": ("c_topic", "c"),
}  # what the numpy path reads of a committed line too


def _dict_columns(type_: str, ds: list[dict], mdef, code) -> dict:
    """The columns of some events of a bulk type (HistoryFormatError if one lacks a field); `code`: values' codes."""
    try:
        out = {
            col: (
                code([d.get(key, mdef if key == "member" else None) for d in ds])
                if kind == "c"
                else array("d" if kind == "f" else "q", [d[key] for d in ds])
            )
            for col, key, kind in _SPEC[type_]
        }
        if type_ == "committed":
            offs = [[(t, int(p), int(o)) for t, p, o in (d.get("offsets") or ())] for d in ds]
            flat = [x for tps in offs for x in tps]
            out.update(
                ok=[1 if d.get("ok") else 0 for d in ds],
                c_row=[i for i, x in enumerate(offs) for _ in x],
                requested=array("d", [d.get("requested_mono", d["mono"]) for d in ds]),
                c_topic=code([x[0] for x in flat]),
                c_partition=array("q", [x[1] for x in flat]),
                c_offset=array("q", [x[2] for x in flat]),
            )
        return out
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        for d in ds if len(ds) > 1 else ():  # which one
            _dict_columns(type_, [d], mdef, code)
        raise HistoryFormatError(f"a {type_} event lacks a field or has a wrong one ({e!r}): {ds[0]!r:.200}") from None


#: the most offsets a committed line may name and still be read by the numpy path (one layout per count)
MAX_OFFSETS = 16


def _template(line: bytes, type_: str) -> tuple[list, set] | None:
    """A compact line's layout, [(literal, kind, field)]: a value of kind n or s (number, string) follows each literal
    but the last; and the line's dict. None when the line cannot serve."""
    try:
        d, spec, out, lit = _loads(line), {key: kind for _, key, kind in _SPEC[type_]}, [], "{"
    except ValueError:
        return None
    if (
        not isinstance(d, dict)
        or d.get("type") != type_
        or not {k for k, c in spec.items() if c != "c"} <= d.keys()
        or not isinstance(d.get("ok"), (bool, type(None)))
        or (type_[0] == "c" and "offsets" not in d)  # a committed line without offsets: the dict path's
    ):
        return None
    for i, (k, v) in enumerate(d.items()):
        if not k.isascii() or not k.isprintable() or '"' in k or "\\" in k:
            return None
        if type_[0] == "c" and (
            (k == "offsets" and type(v) is not list) or (k == "requested_mono" and type(v) not in (int, float))
        ):  # the dict path's: a committed line's offsets that are no list, a requested_mono that is no number
            return None
        lit, kind = lit + ("," if i else "") + f'"{k}":', spec.get(k)
        if k == "type" or (v is None and kind in (None, "c")) or (kind is None and isinstance(v, bool)):
            lit += json.dumps(v)
        elif (
            k == "offsets"
            and type_[0] == "c"
            and type(v) is list
            and 1 <= len(v) <= MAX_OFFSETS
            and all(type(x) is list and list(map(type, x)) == [str, int, int] for x in v)
        ):  # k committed offsets: [[topic, partition, offset], ...], the j-th one's fields named "c_topic#j" etc.
            for j in range(len(v)):
                out += [(lit + '[["' if not j else '],["', "s", f"c_topic#{j}"), ('",', "n", f"c_partition#{j}"),
                        (",", "n", f"c_offset#{j}")]
            lit = "]]"
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
        a, p = self.a[: len(buf)], self.a[: len(buf) + 2]
        self.u64 = np.ndarray((len(a) + 4088,), "<u8", self.a, 0, (1,))  # the 8 bytes from each position
        self.e = nl = np.flatnonzero(a == 10)
        self.s, self.buf = np.concatenate(([0], nl[:-1] + 1)), buf
        self.ends = {
            "n": np.flatnonzero((p == 44) | (p == 125) | (p == 93)),  # where a number ends
            "s": np.flatnonzero(p == 34),
        }  # where a string ends
        odd = np.flatnonzero((a.view(np.int8) < 32) | (a == 92))  # escapes, non-ASCII, controls (newlines: at ends)
        self.plain = np.searchsorted(odd, self.s) == np.searchsorted(odd, self.e)

    def line(self, i: int) -> bytes:
        return self.buf[self.s[i] : self.e[i]]

    def match(self, tmpl: list, lines, whole: bool = True):
        """Which lines have the layout (`whole`: and nothing after it), and the [start, end) of each value."""
        np, pos, ok, spans = self.np, self.s[lines], self.np.ones(len(lines), bool), {}
        for lit, kind, key in tmpl:
            for j in range(0, len(lit), 8):  # 8 bytes at a time
                word, w = int.from_bytes(lit[j : j + 8], "little"), self.u64[pos + j]
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
        ok = (
            (w >= 1)
            & (w <= W)
            & (dig | ~inside | (False if integer else dot)).all(0)
            & dig[0]
            & dig[np.clip(w - 1, 0, W - 1), np.arange(len(w))]
            & ((n_dot := dot.sum(0)) <= (0 if integer else 1))
            & ((M[0] != 48) | (w == 1) | (dot[1] if W > 1 else False))
        )
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


try:  # the compiled scanner (_bulkscan.c), built at install when a C compiler is there; else the numpy path
    from harness.record import _bulkscan as COMPILED

    COMPILED = COMPILED if getattr(COMPILED, "VERSION", None) == 2 else None  # built from another source: not used
except ImportError:  # pragma: no cover - an install without a C compiler
    COMPILED = None


class _Scanned:
    """The complete lines of a block read by the compiled scanner: line bounds (`s`, `e`), each line's kind (as
    History.load keeps it: 255 to be parsed, 0 the header) and mono, and the columns of the compact bulk lines."""

    def __init__(self, buf: bytes, first: bool, mdef, codes: dict) -> None:
        np, self.buf = _np(), buf
        _, *cols = COMPILED.scan(buf, first, codes, mdef)
        self.s, self.e, self.kind, self.mono, *self.cols = [np.frombuffer(c, t) for c, t in zip(cols, "qqBdqqqqqqdqq")]
        self.table = [np.frombuffer(c, np.int64) for c in cols[13:]]  # committed offsets: topic, partition, offset

    def line(self, i: int) -> bytes:
        return self.buf[self.s[i] : self.e[i]]

    def pieces(self) -> list:
        """(type, lines, columns) of each bulk type read, the columns as the numpy path makes them."""
        np, out = _np(), []
        member, topic, task, partition, first, last, requested, ok, nofs = self.cols
        for k, t in enumerate(BULK_TYPES, start=1):
            if not len(li := np.flatnonzero(self.kind == k)):
                continue
            cols = {"mono": self.mono[li]}
            if t == "processed":
                cols |= dict(partition=partition[li], first=first[li], last=last[li], task=task[li],
                             member=member[li], topic=topic[li])
            elif t == "acked":
                cols |= dict(topic=topic[li], partition=partition[li], offset=first[li])
            elif t == "committed":
                cols |= dict(member=member[li], ok=ok[li], c_row=np.repeat(np.arange(len(li)), nofs[li]),
                             requested=requested[li], c_topic=self.table[0], c_partition=self.table[1],
                             c_offset=self.table[2])
            out.append((t, li, cols))
        return out
