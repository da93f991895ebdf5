"""Unix manners for the command line: a reader that leaves early ends nothing and hears nothing.

`harness scenarios | head -3` closes the pipe after three lines. Python ignores SIGPIPE, so the next write
raises BrokenPipeError, and the flush of stdout at exit raises it again ("Exception ignored ..."): a
traceback and exit 1 for a listing that did its job. `quiet_when_readers_leave()` puts standard output and
standard error on writers that drop what a gone reader would have read, so every command goes on to its
own end and exits with its own code (a run is still judged, its exit code still its verdict's), saying
nothing about the reader that left. Killing the process with SIGPIPE instead would cut a run short with its
cluster and members running, and would also kill it on a broken socket.
"""
from __future__ import annotations

import io
import sys


class _ReaderMayLeave(io.FileIO):
    """A file descriptor whose writes to a pipe nobody reads any more are dropped, not raised."""

    def write(self, b) -> int:
        try:
            return super().write(b)
        except BrokenPipeError:
            return len(b)  # the reader left: what it would have read goes nowhere


def quiet_when_readers_leave() -> None:
    """Standard output and error of this process, from now on, drop writes once their reader has left.

    A stream some caller already replaced (pytest's capture, a program's own redirection) is theirs and is
    left as it is."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None or stream is not getattr(sys, f"__{name}__"):
            continue
        try:
            fd = stream.fileno()
            stream.flush()
        except (OSError, ValueError):
            continue  # no descriptor under it, or already broken: nothing of ours was written yet
        raw = _ReaderMayLeave(fd, "w", closefd=False)
        setattr(sys, name, io.TextIOWrapper(io.BufferedWriter(raw), encoding=stream.encoding, errors=stream.errors,
                                            line_buffering=stream.line_buffering, write_through=stream.write_through))
