"""A history file read as it grows: each read returns the events of the complete lines written since the last
(a line without its newline yet is left for the next). The observer reads every history file of a run this way,
and the member pool its members' own.
"""
from __future__ import annotations

from pathlib import Path

import orjson

from harness.record.format import HistoryFormatError, checked_header


class HistoryTail:
    """One history file read from where the last read stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.header: dict | None = None

    @classmethod
    def from_now(cls, path: Path, header: dict) -> "HistoryTail":
        """A tail of a file whose header was read before, from the end it has now: only what comes next."""
        tail = cls(path)
        tail.header = header
        try:
            with open(path, "rb") as f:
                size = f.seek(0, 2)
                f.seek(max(0, size - 65536))
                last = f.read()
        except FileNotFoundError:
            return tail
        tail.offset = size - (len(last) - 1 - last.rfind(b"\n"))  # after the last complete line
        return tail

    def new_events(self) -> list[dict]:
        """The events of the complete lines written since the last call (the header is taken, not returned)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n")
        if end < 0:
            return []
        self.offset += end + 1
        out = []
        for line in data[:end].split(b"\n"):
            if not line.strip():
                continue
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                raise HistoryFormatError(f"{self.path}: bad event line: {e}") from None
            if self.header is None:
                self.header = checked_header(self.path, ev)
                continue
            if self.header.get("source") == "member":
                ev.setdefault("member", self.header.get("member"))
            out.append(ev)
        return out
