"""The history format: header checked, torn last line dropped, files merged on the shared clock."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from harness.record import columns
from harness.record.history import BULK_TYPES, History, HistoryFormatError, HistoryWriter, read_file


@pytest.fixture(params=["compiled", "numpy"])
def reader(request, monkeypatch):
    """History.load's reader of compact bulk lines: the compiled scanner (harness/record/_bulkscan.c), or the numpy
    path it falls back to where it was not built; each load test runs with both."""
    if request.param == "numpy":
        monkeypatch.setattr(columns, "COMPILED", None)
    elif columns.COMPILED is None:
        import shutil
        import sysconfig
        if shutil.which((sysconfig.get_config_var("CC") or "cc").split()[0]):
            pytest.fail("harness.record._bulkscan is not built (or is of an older source): `pip install -e .` again")
        pytest.skip("no C compiler here: the compiled scanner is not built")
    return request.param


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
            "from harness.record.history import HistoryWriter\n"
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



# -- the compact reader: bulk events as columns, the rest as dicts; same answers as plain dicts
def _write_run(d, n=300):
    """A small run: a harness file, a producer, two members, their lines interleaved on the clock; a blank
    line in one file and a torn last line in another."""
    import random
    rng = random.Random(7)
    t = [100.0]

    def tick():
        t[0] += rng.choice([0.0, 0.001, 0.01])  # equal monos too: ties keep file order
        return t[0]

    h = HistoryWriter(d / "harness.jsonl", source="harness")
    p = HistoryWriter(d / "producer.jsonl", source="producer", member="producer")
    ms = {m: HistoryWriter(d / f"member-{m}.jsonl", source="member", member=m) for m in ("m1", "m2")}
    h._write({"type": "run_start", "mono": tick(), "wall": 1.0, "settings": {"topic": "t", "partitions": 2}})
    for m, w in ms.items():
        h._write({"type": "member_start", "mono": tick(), "wall": 1.0, "member": m})
        w._write({"type": "assigned", "mono": tick(), "wall": 1.0, "partitions": [["t", 0 if m == "m1" else 1]]})
    offs = {0: 0, 1: 0}
    for i in range(n):
        part = i % 2
        p._write({"type": "acked", "mono": tick(), "wall": 1.0, "topic": "t", "partition": part, "offset": offs[part],
                  "key": f"k{i}", "seq": i})
        if rng.random() < 0.9:  # some records are lost
            ms["m1" if part == 0 else "m2"]._write({"type": "processed", "mono": tick(), "wall": 1.0, "topic": "t",
                                                   "partition": part, "first_offset": offs[part],
                                                   "last_offset": offs[part], "count": 1})
        if i % 7 == 0:
            ms["m1"]._write({"type": "committed", "mono": tick(), "wall": 1.0, "offsets": [["t", 0, offs[0]]],
                             "ok": True, "error": None})
        if i % 13 == 0:  # a commit of several partitions (the compact reader's layout per offset count)
            ms["m2"]._write({"type": "committed", "mono": tick(), "wall": 1.0,
                             "offsets": [["t", 1, offs[1]], ["t", 0, offs[0]]][: 1 + i % 2], "ok": True, "error": None})
        if i % 11 == 0:
            p._write({"type": "failed", "mono": tick(), "wall": 1.0, "topic": "t", "key": "x", "seq": 0,
                      "error": "e"})
        offs[part] += 1
    h._write({"type": "run_end", "mono": tick(), "wall": 1.0, "status": "complete"})
    for w in (h, p, *ms.values()):
        w.close()
    with open(d / "member-m2.jsonl", "ab") as f:
        f.write(b"\n")  # a blank line (skipped) ...
    with open(d / "member-m1.jsonl", "ab") as f:
        f.write(b'{"type":"processed","mono":1')  # ... and a torn last line (dropped)


def _plain(d):
    """What the reader gave before it stored columns: every file's dicts, merged by (mono, file order)."""
    evs = [e for f in sorted(d.glob("*.jsonl")) for e in read_file(f)[1]]
    return [evs[i] for i in sorted(range(len(evs)), key=lambda i: (evs[i]["mono"], i))]


def test_load_gives_the_same_events_as_plain_dicts(tmp_path, reader):
    _write_run(tmp_path)
    h, plain = History.load(tmp_path), _plain(tmp_path)
    assert len(h) == len(plain)
    assert [e["type"] for _, e in h.control()] == [e["type"] for e in plain if e["type"] not in BULK_TYPES]
    assert h.events == plain  # built on first use, in history order
    assert [e["type"] for e in h.of_type("member_start", "run_end")] == ["member_start"] * 2 + ["run_end"]


def test_columns_hold_what_the_dicts_say(tmp_path, reader):
    _write_run(tmp_path)
    h, plain = History.load(tmp_path), _plain(tmp_path)
    for ty in BULK_TYPES:
        b = h.bulk(ty)
        want = [(i, e) for i, e in enumerate(plain) if e["type"] == ty]
        assert list(b.seq) == [i for i, _ in want] and b.n == len(want)
        assert h.events_at(b.seq[:5]) == {i: e for i, e in want[:5]}
    p, vals = h.bulk("processed"), h.values
    got = [(vals[p.member[r]], vals[p.topic[r]], p.partition[r], p.first[r], p.last[r], p.mono[r]) for r in range(p.n)]
    assert got == [(e["member"], e["topic"], e["partition"], e["first_offset"], e["last_offset"], e["mono"])
                   for e in plain if e["type"] == "processed"]
    c = h.bulk("committed")
    assert [(c.c_row[i], vals[c.c_topic[i]], c.c_partition[i], c.c_offset[i]) for i in range(len(c.c_row))] == \
        [(r, *o) for r, e in enumerate(x for x in plain if x["type"] == "committed") for o in e["offsets"]]
    assert max(len(e["offsets"]) for e in plain if e["type"] == "committed") == 2


def test_a_loaded_history_is_judged_as_its_dicts_are(tmp_path, reader):
    from harness.invariants import CheckSettings, check_all, judge
    from harness.invariants.applies import decide
    _write_run(tmp_path)
    loaded, plain = History.load(tmp_path), History.from_events(_plain(tmp_path))
    s = CheckSettings(topic="t", partitions=2)
    a = {n: v.to_dict() for n, v in check_all(loaded, s).items()}
    assert a == {n: v.to_dict() for n, v in check_all(plain, s).items()}
    assert a["record_integrity"]["status"] == "invalid"  # the lost records are found, with their witnesses
    assert a["record_integrity"]["witnesses"][0]["type"] == "acked"
    judged = {n: v.to_dict() for n, v in judge(History.load(tmp_path)).items()}
    assert judged.pop("schedule_performed")["status"] == "valid"  # no step: nothing to perform
    # its run_start records no `applies` (an older run's): a checker's skip is unknown, the rest as check_all's with
    # the settings its run_start records (no member timings: the bounds that need them are unknown, never defaulted)
    recorded = CheckSettings.from_dict({"topic": "t", "partitions": 2})
    assert judged == {n: decide(v, None).to_dict() for n, v in check_all(loaded, recorded).items()}
    assert judged["coverage_liveness"]["status"] == "unknown" and a["coverage_liveness"]["status"] == "valid"


def test_a_bulk_event_without_its_fields_is_refused(tmp_path, reader):
    p = tmp_path / "member-m1.jsonl"
    with HistoryWriter(p, source="member", member="m1") as w:
        w.event("processed", topic="t", partition=0, first_offset=0)  # no last_offset
    with pytest.raises(HistoryFormatError, match="processed event lacks a field"):
        History.load(tmp_path)


def test_a_torn_line_elsewhere_than_at_the_end_is_an_error(tmp_path, reader):
    p = tmp_path / "m.jsonl"
    with HistoryWriter(p, source="member", member="m1") as w:
        w.event("started")
    with open(p, "a") as f:
        f.write('{"type": "assigned", "mono": 1\n{"type":"stopped","mono":2}\n')
    with pytest.raises(HistoryFormatError, match=r"m.jsonl:3: bad event line"):
        History.load(tmp_path)


# -- the reader's numpy path (compact lines) and its fallback (any other valid JSON line)
def _columns(h):
    vals, out = h.values, {}
    for ty in BULK_TYPES:
        b = h.bulk(ty)
        cols = {f: getattr(b, f) for f in ("member", "topic", "task", "mono", "partition", "first", "last", "offset")}
        out[ty] = [(int(b.seq[r]), *((vals[c[r]] if f in ("member", "topic", "task") else c[r].item()) if len(c)
                                     else None for f, c in cols.items())) for r in range(b.n)]
        out[ty] += [(vals[t], p, o, r) for t, p, o, r in zip(b.c_topic, b.c_partition, b.c_offset, b.c_row)]
        out[ty] += [(b.ok.tolist(), b.requested.tolist())]
    return out


_HDR = '{"type":"header","schema":"rebalance-history","version":1,"source":"member","member":"m1"}\n'
#: member lines by other writers: other spacing, field order, escapes, exponents, nulls, non-ASCII; and compact
#: ones in more layouts than the numpy path learns in a block, at the edges of what the compiled scanner reads
_ANY_LAYOUT = [
    '{"type":"processed","mono":1.5,"wall":1.0,"topic":"t","partition":0,"first_offset":0,"last_offset":4}',
    '{"type": "processed", "mono": 1.6, "topic": "t", "partition": 1, "first_offset": 5, "last_offset": 9}',
    '{"mono":1.7,"type":"processed","topic":"t","partition":2,"first_offset":10,"last_offset":12}',
    '{"type":"processed","mono":1.8e0,"topic":"t\\"q","partition":0,"first_offset":13,"last_offset":14}',
    '{"type":"processed","mono":1.9,"topic":"t\\u00e9","partition":3,"first_offset":-1,"last_offset":0}',
    '{"type":"processed","mono":2,"member":null,"topic":"t","partition":0,"first_offset":0,"last_offset":0}',
    '{"type":"processed","mono":2.1,"member":"m9","topic":"u","task":"0_1","partition":0,"first_offset":1,'
    '"last_offset":1,"extra":[1,{"a":null}]}',
    '{"type":"processed","mono":2.25,"topic":"t","partition":0,"first_offset":12345678901234567,'
    '"last_offset":12345678901234568}',
    '{"type":"acked","mono":2.3,"topic":"t","partition":0,"offset":7,"key":"k,\\"}","seq":1}',
    '{"type":"acked","mono":2.4,"topic":"t","partition":0,"offset":8,"key":"k","seq":1.5e3}',
    '{"type":"acked","mono":0.000001,"topic":"t","partition":5,"offset":0}',
    '{"type":"failed","mono":2.5,"topic":"t","error":"x"}',
    '{"type":"committed","mono":2.6,"offsets":[["t",0,5]],"ok":true}',
    '{"type":"committed","mono":2.61,"offsets":[["t",1,6]],"ok":false,"requested_mono":2.0}',
    '{"type":"committed","mono":2.62,"member":"m2","offsets":[["t",1,6],["u",2,3]],"ok":true}',
    '{"type":"committed","mono":2.63,"offsets":[],"ok":1}',
    '{"type":"committed","mono":2.64,"offsets":[["t",1,7]]}',
    '{"type":"committed","mono":2.65,"offsets":[["t",0,5]],"ok":true}',
    '{"type":"committed","mono":2.66,"offsets":[["t",0,6],["t",1,8]],"ok":true}',
    '{"type":"committed","mono":2.67,"offsets":[["t",0,7],["t",1,9]],"ok":true}',
    '{"type":"committed","mono":2.68,"offsets":[["t",0,8],["u",1,9],["t",2,1]],"ok":false,"error":"x"}',
    '{"type":"committed","mono":2.69,"ok":true}',
    '{"type":"committed","mono":2.691,"offsets":null,"ok":true}',
    '{"type":"committed","mono":2.692,"offsets":[["t",0,9]],"ok":null,"requested_mono":2}',
    '{"type":"committed","mono":2.693,"offsets":[%s],"ok":true}' % ",".join(f'["t",{i},{i}]' for i in range(16)),
    '{"type":"committed","mono":2.694,"offsets":[%s],"ok":true}' % ",".join(f'["t",{i},{i}]' for i in range(17)),
    '{"type":"processed","mono":2.701,"member":"m2","topic":"a,b}\x7f","partition":0,"first_offset":1,'
    '"last_offset":2,"wall":1.5,"x":true,"y":false,"z":null,"ok":false}',
    '{"type":"processed","mono":1234567.890123456789,"topic":"","partition":0,"first_offset":0,'
    '"last_offset":123456789012345678}',
    '{"type":"processed","mono":2.703,"topic":"t","partition":0,"first_offset":0,'
    '"last_offset":1234567890123456789}',
    '{"type":"processed","mono":0.1e1,"topic":"t","partition":0,"first_offset":0,"last_offset":0}',
    '{"type":"processed","mono":0,"topic":"%s","partition":0,"first_offset":0,"last_offset":0}' % ("long" * 20),
    '{"type":"processed","mono":2.705,"topic":"t","partition":0,"first_offset":0,"last_offset":0,"wall":1,'
    '"wall":2}',
    '{"type":"processed","mono":2.706,"topic":"t","partition":0,"first_offset":0,"last_offset":0,"ok":1}',
    '{"type":"processed","mono":2.707,"topic":"t","partition":0,"first_offset":0,"last_offset":0} ',
    '{"type":"acked","mono":2.708,"topic":null,"partition":0,"offset":3,"member":5,"task":[1]}',
    '{"type":"acked","mono":2.709,"topic":"t","partition":0,"offset":4,"key":"k","seq":123456789012345678901}',
    '{"type":"failed","mono":2.71,"topic":7}',
    '{"type":"failedX","mono":2.711}',
    '{"type":"stopped","mono":2.72}',
]


def test_lines_of_any_layout_are_read_as_their_dicts(tmp_path, reader):
    """Member files by other writers: other spacing, field order, escapes, exponents, nulls, non-ASCII; the
    columns and events must be what the dicts say (as History.from_events builds them)."""
    (tmp_path / "member-m1.jsonl").write_text(_HDR + "\n".join(_ANY_LAYOUT) + "\n")
    h = History.load(tmp_path)
    plain = _plain(tmp_path)
    assert h.events == plain
    assert _columns(h) == _columns(History(plain))
    i = next(i for i, e in enumerate(plain) if e.get("topic") == 't"q')
    assert History.load(tmp_path).events_at([0, i]) == {0: plain[0], i: plain[i]}  # read again from the file


@pytest.mark.parametrize("line, what", [
    ('{"type":"processed","mono":1.0,"topic":"t","partition":1.5,"first_offset":0,"last_offset":1}', "lacks a field"),
    ('{"type":"processed","mono":1.0,"topic":"t","partition":"1","first_offset":0,"last_offset":1}', "lacks a field"),
    ('{"type":"processed","mono":1.0,"topic":"t","partition":1,"first_offset":0}', "lacks a field"),
    ('{"type":"processed","mono":1.,"topic":"t","partition":1,"first_offset":0,"last_offset":1}', "bad event line"),
    ('{"type":"processed","mono":1.0,"topic":"t","partition":01,"first_offset":0,"last_offset":1}', "bad event line"),
    ('{"type":"acked","mono":1.0,"topic":"t","partition":1,"offset":2}x', "bad event line"),
    ('{"type":"acked","mono":1.0,"topic":"t\tx","partition":1,"offset":2}', "bad event line"),
    ('{"type":"acked","mono":"1","topic":"t","partition":1,"offset":2}', "numeric mono"),
    ('{"type":"acked","mono":null,"topic":"t","partition":1,"offset":2}', "numeric mono"),
    ('{"type":"processed","mono":1.0,"topic":"t","partition":1,"first_offset":0,"last_offset":-1e400}',
     "bad event line"),
    ('{"type":"committed","mono":1.0,"offsets":[["t",0,1]],"ok":true,"requested_mono":"1"}', "lacks a field"),
    ('{"type":"committed","mono":1.0,"offsets":[["t",0,1]],"ok":true,"requested_mono":null}', "lacks a field"),
    ('{"type":"committed","mono":1.0,"offsets":5,"ok":true}', "lacks a field"),
    ('{"type":"committed","mono":1.0,"offsets":[["t",0]],"ok":true}', "lacks a field"),
    ('{"type":"processed","mono":1.0,"topic":"t","partition":1,"first_offset":0,"last_offset":1,}', "bad event line"),
])
def test_a_wrong_bulk_line_among_compact_ones_is_refused(tmp_path, reader, line, what):
    good = '{"type":"%s","mono":0.5,"topic":"t","partition":1,%s}' % (
        ("processed", '"first_offset":0,"last_offset":1') if "processed" in line else ("acked", '"offset":1'))
    hdr = '{"type":"header","schema":"rebalance-history","version":1,"source":"member","member":"m1"}\n'
    (tmp_path / "member-m1.jsonl").write_text(hdr + f"{good}\n{line}\n{good}\n")
    with pytest.raises(HistoryFormatError, match=what):
        History.load(tmp_path)


def test_compact_commits_of_several_partitions_are_read_as_columns(tmp_path, reader, monkeypatch):
    """A member commits every partition it processed at once: such lines are read as columns, not parsed as dicts
    (the numpy path: one layout per offset count), and hold what the dicts say; so are the other bulk lines."""
    import harness.record.history as hist_mod
    parsed = []
    real = hist_mod._dict_columns
    monkeypatch.setattr(hist_mod, "_dict_columns", lambda t, ds, *a: parsed.append((t, len(ds))) or real(t, ds, *a))
    _write_run(tmp_path, n=600)
    h = History.load(tmp_path)
    assert not parsed, parsed  # no bulk line of the writers' is left to the JSON parser
    c = h.bulk("committed")
    assert len(c.c_row) > c.n and set(np.bincount(c.c_row).tolist()) == {1, 2}
    assert _columns(h) == _columns(History(_plain(tmp_path)))


def test_the_compiled_scanner_leaves_to_the_json_parser_only_lines_not_laid_out_as_the_writers_do(tmp_path,
                                                                                               monkeypatch):
    """Every line the numpy path reads, the compiled scanner reads too; it also reads compact lines of more layouts
    than the numpy path learns in a block. What it leaves: other spacing or field order, escapes, exponents, a
    negative number, an integer of 19 digits, a list it does not take, a duplicate key, `ok` not a boolean, a
    trailing space, and the lines of no bulk type."""
    import harness.record.history as hist_mod
    if columns.COMPILED is None:
        pytest.skip("the compiled scanner is not built here")
    (tmp_path / "member-m1.jsonl").write_text(_HDR + "\n".join(_ANY_LAYOUT) + "\n")
    real, left = hist_mod._parse, {}

    def parse(path, lines, numbers):  # the lines handed to the JSON parser
        left[mode] = sorted(_ANY_LAYOUT.index(x.decode()) for x in lines)
        return real(path, lines, numbers)

    monkeypatch.setattr(hist_mod, "_parse", parse)
    for mode, scanner in (("compiled", columns.COMPILED), ("numpy", None)):
        monkeypatch.setattr(columns, "COMPILED", scanner)
        History.load(tmp_path)
    assert left["compiled"] == [1, 2, 3, 4, 6, 8, 9, 15, 21, 22, 25, 28, 29, 31, 32, 33, 34, 37, 38]
    assert set(left["compiled"]) < set(left["numpy"])
