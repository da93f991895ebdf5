"""The history format (docs/history.md, harness/record/history.schema.json): the writer every process uses, the
plain reading of one file, and the header: `header()` is the one spelling of a header line in Python (the Java
programs' is HistoryHeader.java, whose constants are generated from the same schema) and `header_problem()` the one
check of it, for every reader (this one, the merged reader, the tail, the Spark job). Standard library only (orjson
when installed): member processes import the writer under an isolated client install.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Iterator, Sequence

try:  # a C JSON parser, several times faster than json's; the writer does not need it
    from orjson import loads
except ImportError:  # pragma: no cover - members' isolated installs
    loads = json.loads
_loads = loads

SCHEMA = "rebalance-history"
VERSION = 1
#: a history file's name ends so; a history is every such file of its directory
SUFFIX = ".jsonl"
GLOB = "*" + SUFFIX
#: the many per-record event types, stored as columns by the reader
BULK_TYPES = ("processed", "committed", "acked", "failed")
CHUNK_BYTES = 4 << 20


class HistoryFormatError(ValueError):
    """A history file is not of a schema or version this reader knows, or not JSON lines."""


class HistoryIncomplete(HistoryFormatError):
    """A history file is torn, missing, cut or unreadable, or holds an event no writer could truthfully write: the
    run is incomplete, not judged (harness/record/intact.py)."""


def _int(v) -> bool:
    return type(v) is int


def event_problem(ev: dict) -> str | None:
    """Why a `processed` or `acked` event is one no writer could truthfully write, or None: a negative partition or
    offset, a batch whose last offset is below its first, or whose `count` is not its offset range (every member
    writes a batch of consecutive offsets: docs/history.md, "processed")."""
    p = ev.get("partition")
    if _int(p) and p < 0:
        return f"partition {p} is negative"
    if ev.get("type") == "acked":
        return f"offset {ev['offset']} is negative" if _int(ev.get("offset")) and ev["offset"] < 0 else None
    f, la, n = ev.get("first_offset"), ev.get("last_offset"), ev.get("count")
    if not (_int(f) and _int(la)):
        return None  # the columns refuse it
    if f < 0:
        return f"first_offset {f} is negative"
    if la < f:
        return f"last_offset {la} is below first_offset {f}"
    if n is not None and (not _int(n) or n != la - f + 1):
        return f"count {n!r} is not the {la - f + 1} offsets of {f}..{la}"
    return None


class HistoryWriter:
    """Writes one event per line, each with one write() and flushed, so SIGKILL tears at most the last line."""

    def __init__(self, path: str | os.PathLike, *, source: str, **fields: object) -> None:
        (p := Path(path)).parent.mkdir(parents=True, exist_ok=True)
        self.path = p
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._write(header(source, **fields))

    def _write(self, obj: dict) -> None:  # compact, as the reader's fast path expects
        os.write(self._fd, (json.dumps(obj, separators=(",", ":")) + "\n").encode())

    def event(self, type_: str, **fields: object) -> dict:
        """Append one event stamped with the shared monotonic clock and wall time."""
        self._write(ev := {"type": type_, "mono": time.monotonic(), "wall": time.time(), **fields})
        return ev

    def record(self, ev: dict) -> None:
        """Append an event stamped elsewhere (its `mono` and `wall` given), e.g. a broker's log line."""
        self._write(ev)

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "HistoryWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def header(source: str, **fields: object) -> dict:
    """A history file's header line: this schema and version, the file's `source` and what else it names (a
    member file's `member`)."""
    return {"type": "header", "schema": SCHEMA, "version": VERSION, "source": source, **fields}


def header_problem(line: object) -> str | None:
    """Why a file's first line (parsed) is not a header this reader takes, or None when it is."""
    if not isinstance(line, dict) or line.get("type") != "header" or line.get("schema") != SCHEMA:
        return f"not a {SCHEMA} file"
    if line.get("version") != VERSION:
        return f"history version {line.get('version')!r} is not supported (want {VERSION})"
    return None


def checked_header(path, line: object) -> dict:
    """`line` (a file's first line, parsed) when it is a header this reader takes, else HistoryFormatError."""
    if (problem := header_problem(line)) is not None:
        raise HistoryFormatError(f"{path}: {problem}")
    return line  # type: ignore[return-value]


def _header(path, line: bytes) -> dict:
    try:
        parsed = _loads(line)
    except ValueError as e:
        raise HistoryFormatError(f"{path}: header is not JSON: {e}") from None
    return checked_header(path, parsed)


def _blocks(path) -> Iterator[tuple[int, bytearray]]:
    """(byte offset, complete lines) of a file by blocks; what follows the last newline (a torn line) is dropped.
    Each block is a new buffer that the file is read into, after the previous block's last partial line: no copy of
    a block (two copies of each were a third of the compiled reader's time)."""
    with open(path, "rb") as f:
        carry, pos = b"", 0
        while True:
            buf = bytearray(len(carry) + CHUNK_BYTES)
            buf[: len(carry)] = carry
            with memoryview(buf) as view, view[len(carry) :] as rest:
                got = f.readinto(rest)
            if not got:
                return
            del buf[len(carry) + got :]
            cut = buf.rfind(b"\n") + 1
            carry, pos = bytes(buf[cut:]), pos + cut
            if cut:
                del buf[cut:]
                yield pos - cut, buf


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
