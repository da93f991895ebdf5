"""Whether a run's history is whole enough to be judged (docs/history.md, "Totals: a torn or missing file").

A history that is not whole is not judged: `HistoryIncomplete` names the file (and line), and `harness check` and the
run's own judging end with it, never with a verdict. A verdict read from a cut file would blame Kafka for records
whose events were lost with the file's end, or pass on the half of a producer file that is left.

- Before anything is opened (`check_files`): each history file is a regular file (a directory or a FIFO there is
  refused by its type, so reading never blocks) and can be read; `harness.jsonl` is there.
- After reading (`check_whole`): every member the harness started has its file, and the producer's is there once
  the harness recorded its totals or the drain after it stopped; no file ends in a torn line (bytes
  after its last newline) but a member's whose process died of a signal, the one way a writer's single write(2) can
  be cut; each file the harness recorded the totals of when its writer ended (`member_exit`'s and
  `producer_totals`'s `history_bytes`, `history_lines`; the producer's `acked` too) still holds exactly that.
- Events no writer could truthfully write: a `processed` batch whose count is not its offset range, or a negative
  offset (`format.event_problem`, refused by `History.load(strict=True)` with its file and line), and a negative
  partition or one beyond the count the run recorded for its topic (`check_partitions`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from typing import Callable

from harness.base.steps import Step
from harness.record.format import GLOB, HistoryIncomplete

_KINDS = {stat.S_ISDIR: "a directory", stat.S_ISFIFO: "a FIFO", stat.S_ISSOCK: "a socket", stat.S_ISCHR: "a device",
          stat.S_ISBLK: "a device"}


def check_files(history_dir: str | os.PathLike, *, harness_file: str = "") -> None:
    """Every history file a regular, readable file, and the harness's own (`harness_file`, the run directory's name
    for it) there; HistoryIncomplete naming the first that is not. Nothing is opened: a FIFO is refused by its type,
    never read."""
    d = Path(history_dir)
    for p in sorted(d.glob(GLOB)):
        try:
            mode = os.stat(p).st_mode
        except OSError as e:
            raise HistoryIncomplete(f"{p}: cannot be read ({e.strerror})") from None
        if not stat.S_ISREG(mode):
            what = next((w for test, w in _KINDS.items() if test(mode)), "not a regular file")
            raise HistoryIncomplete(f"{p}: is {what}, not a history file: the run is incomplete")
        if not os.access(p, os.R_OK):
            raise HistoryIncomplete(f"{p}: cannot be read (permission denied): the run is incomplete")
    if harness_file and not (d / harness_file).is_file():
        raise HistoryIncomplete(f"{d / harness_file}: missing: the run is incomplete")


def file_totals(path: str | os.PathLike) -> dict:
    """What the harness records of a history file when its writer ended: its length in bytes and its lines (whole
    ones: newlines). Read in blocks; O(size)."""
    n, lines = 0, 0
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            n, lines = n + len(block), lines + block.count(b"\n")
    return {"history_bytes": n, "history_lines": lines}


def _lines_in(path: Path, length: int) -> int:
    """The newlines among a file's first `length` bytes."""
    lines, left = 0, length
    with open(path, "rb") as f:
        while left > 0 and (block := f.read(min(left, 1 << 20))):
            lines, left = lines + block.count(b"\n"), left - len(block)
    return lines


def _torn(path: Path, size: int) -> bool:
    if not size:
        return False
    with open(path, "rb") as f:
        f.seek(size - 1)
        return f.read(1) != b"\n"


def _against(path: Path, size: int, totals: dict, who: str) -> None:
    """HistoryIncomplete unless the file still is as long, and has as many lines, as the harness recorded."""
    want, lines = totals.get("history_bytes"), totals.get("history_lines")
    if not isinstance(want, int) or not isinstance(lines, int):
        return
    if size != want:
        raise HistoryIncomplete(f"{path}: {size} bytes, but the harness recorded {want} when {who} ended "
                                f"({'cut' if size < want else 'written after'}): the run is incomplete")
    if (got := _lines_in(path, size)) != lines:
        raise HistoryIncomplete(f"{path}: {got} lines, but the harness recorded {lines} when {who} ended: "
                                f"the run is incomplete")


def check_whole(history_dir: str | os.PathLike, control: list[dict], *, acked: int, producer_file: str,
                member_file: Callable[[Path, str], Path]) -> None:
    """Every file of the history whole, as the module docstring says; `control`: the harness's events (member_start,
    member_exit, producer_totals); `acked`: the acknowledgements the producer's file holds; `producer_file`,
    `member_file(dir, member)`: the run directory's names of the files."""
    d, exits, started, totals, drained = Path(history_dir), {}, [], None, None
    for e in control:
        if e.get("type") == "member_start" and e.get("member") not in started:
            started.append(e.get("member"))
        elif e.get("type") == "member_exit":
            exits[e.get("member")] = e
        elif e.get("type") == "producer_totals":
            totals = e
        elif e.get("type") == "drained":
            drained = e
    if (totals or drained) is not None and not (d / producer_file).is_file():
        raise HistoryIncomplete(f"{d / producer_file}: missing, though the harness recorded the producer's "
                                f"{(totals or drained)['type']}: the run is incomplete")
    for m in started:
        if not (p := member_file(d, m)).is_file():
            raise HistoryIncomplete(f"{p}: missing, though the harness started member {m}: the run is incomplete")
    members = {member_file(d, m).name: m for m in [*started, *exits]}
    for p in sorted(d.glob(GLOB)):
        size, member = p.stat().st_size, members.get(p.name)
        ended = exits.get(member) if member is not None else totals if p.name == producer_file else None
        if ended is not None:
            _against(p, size, ended, f"member {member}'s process" if member is not None else "the producer")
        if _torn(p, size) and not (ended is not None and member is not None and isinstance(ended.get("code"), int)
                                   and ended["code"] < 0):
            raise HistoryIncomplete(f"{p}: cut mid-line (its last line, ending at byte {size}, has no newline) "
                                    f"and its writer did not die of a signal: the run is incomplete")
    if totals is not None and isinstance(totals.get("acked"), int) and totals["acked"] != acked:
        raise HistoryIncomplete(f"{d / producer_file}: {acked} acknowledgements, but the harness recorded "
                                f"{totals['acked']} when the producer stopped: the run is incomplete")


def recorded_counts(run_start: dict | None, control: list[dict]) -> dict[str, int]:
    """Each run topic's partition count as the history recorded it: `run_start`'s settings (`topics`, else `topic`
    and `partitions`), raised by the `add_partitions` steps' results; empty when the history records none."""
    st, counts = (run_start or {}).get("settings") or {}, {}
    if not isinstance(st, dict):
        return counts
    pairs = st.get("topics") if isinstance(st.get("topics"), list) and st.get("topics") else \
        [[st.get("topic"), st.get("partitions")]]
    for pair in pairs:
        if isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], str) and _int(pair[1]) \
                and pair[1] > 0:
            counts[pair[0]] = pair[1]
    for e in control:
        if e.get("type") == "action_end" and e.get("kind") == Step.ADD_PARTITIONS and e.get("topic") in counts \
                and _int(e.get("count")):
            counts[e["topic"]] = max(counts[e["topic"]], e["count"])
    return counts


def _int(v) -> bool:
    return type(v) is int


def _named(e: dict) -> list:
    """The (topic, partition) pairs a control event names at its top level (a null partition names none)."""
    out = [tuple(x) for x in e.get("partitions") or () if isinstance(x, (list, tuple)) and len(x) == 2] \
        if isinstance(e.get("partitions"), list) else []
    out += [(e["topic"], e["partition"])] if "topic" in e and "partition" in e else []
    return [x for x in out if x[1] is not None]


def check_partitions(history) -> None:
    """HistoryIncomplete naming the file and line of the first event that names a negative partition, or one beyond
    the count the history recorded for its topic (`recorded_counts`; for a topic it records none for, the history's
    number of events, the most the timeline infers): a partition that does not exist is the writer's false word, and
    an unbounded one would have the checkers lay out that many partitions."""
    import numpy as np

    control = history.control()
    counts, bad = recorded_counts(history.run_start(), [e for _, e in control]), []  # bad: (seq, topic, partition)
    for ty, part, topic, seq in (("processed", "partition", "topic", None), ("acked", "partition", "topic", None),
                                 ("committed", "c_partition", "c_topic", "c_row")):
        b = history.bulk(ty)
        ps, ts = getattr(b, part), getattr(b, topic)
        known = [c for t in counts if (c := history.code(t)) is not None]  # the topics with a recorded count
        over = (ps < 0) | ((ps >= len(history)) & ~np.isin(ts, known))
        for name, n in counts.items():
            if (code := history.code(name)) is not None:
                over |= (ts == code) & (ps >= n)
        if (rows := np.flatnonzero(over)).size:  # the first in history order (the offsets table: by row)
            r = int(rows[0])
            bad.append((int(b.seq[b.c_row[r]] if seq else b.seq[r]), history.values[int(ts[r])], int(ps[r])))
    for s, e in control:
        for t, p in _named(e):
            if not _int(p) or p < 0 or p >= counts.get(t, len(history)):
                bad.append((s, t, p))
                break
    if bad:
        s, t, p = min(bad, key=lambda x: x[0])
        path, line = history.where(s)
        n, why = counts.get(t), ""
        if _int(p) and p >= 0:
            why = (f", which has {n} partitions (run_start's settings)" if n else f", beyond any count to infer: the "
                   f"history records none for the topic and holds {len(history)} events")
        raise HistoryIncomplete(f"{path}:{line}: malformed event: partition {p!r} of topic {t}{why}: "
                                f"the run is incomplete")
