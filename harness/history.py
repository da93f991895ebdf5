"""Append-only JSON-lines history: the writer every process uses and the reader checkers get.

This module imports only the standard library: member processes run it under an isolated
client install, and the invariants read its output without any I/O of their own.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

SCHEMA = "rebalance-history"
VERSION = 1


class HistoryFormatError(ValueError):
    """A history file is not of a schema or version this reader knows."""


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


def read_file(path: str | os.PathLike) -> tuple[dict, list[dict]]:
    """Read one history file: its header and its events (a torn last line is dropped)."""
    data = Path(path).read_bytes().decode("utf-8", errors="replace")
    lines = data.split("\n")
    # the text after the last newline is either empty or a torn line written by a killed process
    lines = lines[:-1]
    if not lines:
        raise HistoryFormatError(f"{path}: empty history file (no header)")
    try:
        header = json.loads(lines[0])
    except json.JSONDecodeError as e:
        raise HistoryFormatError(f"{path}: header is not JSON: {e}") from None
    if header.get("type") != "header" or header.get("schema") != SCHEMA:
        raise HistoryFormatError(f"{path}: not a {SCHEMA} file")
    if header.get("version") != VERSION:
        raise HistoryFormatError(f"{path}: history version {header.get('version')!r} is not supported (want {VERSION})")
    events = []
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError as e:
            raise HistoryFormatError(f"{path}:{n}: bad event line: {e}") from None
        ev.setdefault("source", header.get("source"))
        if header.get("source") == "member":
            ev.setdefault("member", header.get("member"))
        events.append(ev)
    return header, events


@dataclass
class History:
    """Every event of a run, merged from all its files and ordered by the shared monotonic clock."""

    events: list[dict] = field(default_factory=list)
    headers: list[dict] = field(default_factory=list)

    @classmethod
    def from_events(cls, events: Iterable[dict]) -> "History":
        """Build a history from events in any order (used by tests with hand-made events)."""
        evs = list(events)
        order = sorted(range(len(evs)), key=lambda i: (evs[i]["mono"], i))
        return cls(events=[evs[i] for i in order])

    @classmethod
    def load(cls, history_dir: str | os.PathLike) -> "History":
        """Load and merge every `*.jsonl` file of a run's history directory."""
        d = Path(history_dir)
        headers, merged = [], []
        for f in sorted(d.glob("*.jsonl")):
            h, evs = read_file(f)
            headers.append(h)
            merged.extend(evs)
        hist = cls.from_events(merged)
        hist.headers = headers
        return hist

    def __iter__(self) -> Iterator[dict]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def of_type(self, *types: str) -> list[dict]:
        return [e for e in self.events if e["type"] in types]
