"""The history format: header checked, torn last line dropped, files merged on the shared clock."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from harness.history import History, HistoryFormatError, HistoryWriter, read_file


def test_round_trip_and_merge_order(tmp_path):
    with HistoryWriter(tmp_path / "a.jsonl", source="member", member="m1") as a, \
            HistoryWriter(tmp_path / "b.jsonl", source="harness") as b:
        a.event("started", member="m1")
        b.event("fault_start", fault_id="f1")
        a.event("assigned", member="m1", partitions=[["t", 0]])
    h = History.load(tmp_path)
    assert [e["type"] for e in h] == ["started", "fault_start", "assigned"]
    assert all(h.events[i]["mono"] <= h.events[i + 1]["mono"] for i in range(len(h) - 1))


def test_torn_last_line_is_dropped(tmp_path):
    p = tmp_path / "m.jsonl"
    with HistoryWriter(p, source="member", member="m1") as w:
        w.event("started")
    with open(p, "a") as f:
        f.write('{"type": "assigned", "mono": 1')  # what a SIGKILL mid-write leaves
    header, events = read_file(p)
    assert [e["type"] for e in events] == ["started"]
    assert events[0]["member"] == "m1"


def test_broken_line_in_the_middle_is_an_error(tmp_path):
    p = tmp_path / "m.jsonl"
    with HistoryWriter(p, source="member", member="m1") as w:
        w.event("started")
    with open(p, "a") as f:
        f.write("not json\n")
    with pytest.raises(HistoryFormatError, match="bad event line"):
        read_file(p)


def test_unknown_version_is_refused(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text(json.dumps({"type": "header", "schema": "rebalance-history", "version": 99}) + "\n")
    with pytest.raises(HistoryFormatError, match="version 99"):
        read_file(p)


def test_other_schema_is_refused(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text(json.dumps({"type": "header", "schema": "something-else", "version": 1}) + "\n")
    with pytest.raises(HistoryFormatError, match="not a rebalance-history"):
        read_file(p)


def test_sigkill_while_writing_leaves_a_readable_history(tmp_path):
    """A writer killed with SIGKILL in a tight write loop leaves a file every line of which parses."""
    p = tmp_path / "k.jsonl"
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from harness.history import HistoryWriter\n"
            "w = HistoryWriter(%r, source='member', member='m1')\n"
            "i = 0\n"
            "while True:\n"
            "    w.event('processed', member='m1', topic='t', partition=0, first_offset=i, last_offset=i, count=1,"
            " pad='x' * 3000)\n"
            "    i += 1\n") % (os.getcwd(), str(p))
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not p.exists() or p.stat().st_size < 100_000):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    header, events = read_file(p)
    assert len(events) > 10
    assert [e["first_offset"] for e in events] == list(range(len(events)))

