"""Verify: a history that is not whole is never judged: `harness check` ends incomplete (exit 2, one line naming the
file), never with a loss blamed on Kafka and never with a pass; and it never tracebacks or hangs on what it finds
where a history file should be (docs/history.md, "Totals: a torn or missing file").

Setup: copies of the kept run fixtures/histories/joins-seconds-apart (STATUS set to pass), edited by hand; some
given the totals the harness records now (`member_exit`'s `history_bytes`/`history_lines`, `producer_totals`), as
the pool and the workload write them; the CLI's `main` called in-process, and as a process where a regression
could hang or exhaust memory.
"""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.record import columns
from harness.record.intact import file_totals

KEPT = Path(__file__).resolve().parents[2] / "fixtures" / "histories" / "joins-seconds-apart"
TOPIC = "t-20261128T031225-fenced-consumer-1"


@pytest.fixture
def run(tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(KEPT, copy)
    (copy / "STATUS").write_text("pass\n")
    return copy


def _harness_events(run):
    return [json.loads(x) for x in (run / "history" / "harness.jsonl").read_text().splitlines()]


def _write_harness_events(run, events):
    (run / "history" / "harness.jsonl").write_text("".join(json.dumps(e, separators=(",", ":")) + "\n"
                                                           for e in events))


def _with_totals(run):
    """The copy as the harness records it now: each member_exit with its file's totals, and the producer's."""
    evs, hist = _harness_events(run), run / "history"
    for e in evs:
        if e["type"] == "member_exit":
            e.update(file_totals(hist / f"member-{e['member']}.jsonl"))
    acked = sum(1 for x in (hist / "producer.jsonl").read_text().splitlines() if '"type":"acked' in x)
    end = next(i for i, e in enumerate(evs) if e["type"] == "drained")
    evs.insert(end, {"type": "producer_totals", "mono": evs[end]["mono"] - 0.001, "wall": evs[end]["wall"],
                     "sent": acked, "acked": acked, "failed": 0, "unacknowledged": 0, "last_offsets": [],
                     **file_totals(hist / "producer.jsonl")})
    _write_harness_events(run, evs)
    return run


def _check(run, capsys):
    code = main(["check", str(run)])
    return code, capsys.readouterr()


def _incomplete(run, capsys, *names):
    code, out = _check(run, capsys)
    err = out.err.strip().splitlines()
    assert code == 2, (code, out.out[-400:], out.err)
    assert len(err) == 1 and "incomplete" in err[0] and all(n in err[0] for n in names), err
    assert "record_integrity" not in out.out  # never judged: no verdict table at all
    return err[0]


def _cut(path: Path, *, size: int):
    with open(path, "r+b") as f:
        f.truncate(size)


def _append(path: Path, line: str):
    with open(path, "a") as f:
        f.write(line)


def test_the_unedited_copy_passes(run, capsys):
    assert _check(run, capsys)[0] == 0


def test_the_unedited_copy_with_totals_passes(run, capsys):
    code, out = _check(_with_totals(run), capsys)
    assert code == 0, out.err


@pytest.mark.parametrize("totals", [False, True])
def test_a_producer_file_cut_mid_line_is_incomplete_not_a_pass(run, capsys, totals):
    run = _with_totals(run) if totals else run
    p = run / "history" / "producer.jsonl"
    _cut(p, size=p.stat().st_size // 2)
    _incomplete(run, capsys, "producer.jsonl", "cut")


@pytest.mark.parametrize("totals", [False, True])
def test_a_member_file_cut_mid_line_is_incomplete_not_a_loss(run, capsys, totals):
    run = _with_totals(run) if totals else run
    p = run / "history" / "member-m2.jsonl"
    _cut(p, size=p.stat().st_size // 2)
    _incomplete(run, capsys, "member-m2.jsonl")


def test_a_member_file_cut_at_a_line_boundary_is_incomplete(run, capsys):
    p = _with_totals(run) / "history" / "member-m2.jsonl"
    data = p.read_bytes()
    _cut(p, size=data.rindex(b"\n", 0, len(data) // 2) + 1)  # whole lines, the later ones gone
    assert "recorded" in _incomplete(run, capsys, "member-m2.jsonl", "cut")


def test_a_producer_file_cut_at_a_line_boundary_is_incomplete(run, capsys):
    p = _with_totals(run) / "history" / "producer.jsonl"
    data = p.read_bytes()
    _cut(p, size=data.rindex(b"\n", 0, len(data) // 2) + 1)
    _incomplete(run, capsys, "producer.jsonl")


def test_acknowledgements_fewer_than_the_recorded_total_are_incomplete(run, capsys):
    run = _with_totals(run)
    evs = _harness_events(run)
    for e in evs:
        if e["type"] == "producer_totals":
            e["acked"] += 3
    _write_harness_events(run, evs)
    assert "acknowledgements" in _incomplete(run, capsys, "producer.jsonl")


def test_a_member_file_written_after_its_exit_is_incomplete(run, capsys):
    _append(_with_totals(run) / "history" / "member-m2.jsonl",
            '{"type":"stopped","mono":81951.5,"wall":1795835593.0,"member":"m2","reason":"sigterm"}\n')
    _incomplete(run, capsys, "member-m2.jsonl", "written after")


def test_a_deleted_member_file_is_incomplete_not_a_loss(run, capsys):
    (run / "history" / "member-m2.jsonl").unlink()
    assert "missing" in _incomplete(run, capsys, "member-m2.jsonl")


def test_a_deleted_producer_file_is_incomplete_not_unknown(run, capsys):
    (run / "history" / "producer.jsonl").unlink()
    assert "drained" in _incomplete(run, capsys, "producer.jsonl", "missing")


def test_a_deleted_harness_file_is_incomplete(run, capsys):
    (run / "history" / "harness.jsonl").unlink()
    _incomplete(run, capsys, "harness.jsonl", "missing")


def test_a_directory_where_a_history_file_should_be_is_incomplete(run, capsys):
    p = run / "history" / "member-m2.jsonl"
    p.unlink()
    p.mkdir()
    _incomplete(run, capsys, "member-m2.jsonl", "directory")


def _alarm(*_):
    raise TimeoutError("harness check blocked on a FIFO")


def test_a_fifo_where_a_history_file_should_be_is_refused_without_blocking(run, capsys):
    p = run / "history" / "producer.jsonl"
    p.unlink()
    os.mkfifo(p)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(20)  # a regression fails here rather than hangs
    try:
        began = time.monotonic()
        _incomplete(run, capsys, "producer.jsonl", "FIFO")
        assert time.monotonic() - began < 15
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("junk", [b"\xff\xfe\x00\x81 not text\n", bytes(range(7, 256, 3)) + b"\n"],
                         ids=["not-utf8", "binary"])
def test_non_utf8_or_binary_bytes_are_one_line_exit_2(run, capsys, junk):
    with open(run / "history" / "member-m2.jsonl", "ab") as f:
        f.write(junk)
    _incomplete(run, capsys, "member-m2.jsonl")


def test_a_binary_file_in_place_of_a_history_file_is_one_line_exit_2(run, capsys):
    (run / "history" / "member-m2.jsonl").write_bytes(bytes(range(256)) * 8)
    _incomplete(run, capsys, "member-m2.jsonl")


def _processed(partition=3, first=0, last=32, count=33):
    return (f'{{"type":"processed","mono":81940.0,"wall":1795835581.8,"member":"m2","topic":"{TOPIC}",'
            f'"partition":{partition},"first_offset":{first},"last_offset":{last},"count":{count}}}\n')


@pytest.mark.parametrize("line,why", [
    (_processed(count=500), "count 500"),  # compact: the compiled and numpy readers leave it to the parser
    (_processed(count=1), "count 1"),
    (_processed(first=-5, count=38), "first_offset -5"),
    (_processed(first=10, last=4, count=1), "below"),
    (_processed(partition=-1, first=0, last=0, count=1), "partition -1"),
])
@pytest.mark.parametrize("reader", ["compiled", "numpy"])
def test_a_processed_event_no_member_could_write_is_malformed(run, capsys, monkeypatch, line, why, reader):
    """Either reader of the compact lines (harness/record/columns.py) leaves such a line to the JSON parser."""
    if reader == "numpy":
        monkeypatch.setattr(columns, "COMPILED", None)
    elif columns.COMPILED is None:
        pytest.skip("the compiled scanner is not built here (tests/unit/test_history.py says why)")
    p = run / "history" / "member-m2.jsonl"
    lines = p.read_text().count("\n")
    _append(p, line)
    err = _incomplete(run, capsys, f"member-m2.jsonl:{lines + 1}", "malformed")
    assert why in err


def test_an_assignment_of_a_partition_that_does_not_exist_is_malformed(run, capsys):
    p = run / "history" / "member-m2.jsonl"
    lines = p.read_text().count("\n")
    _append(p, f'{{"type":"assigned","mono":81940.0,"wall":1795835581.8,"member":"m2","partitions":[["{TOPIC}",6]]}}\n')
    assert "which has 6 partitions" in _incomplete(run, capsys, f"member-m2.jsonl:{lines + 1}", "partition 6")


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))  # 2 GiB: 10**17 partitions laid out would need more


@pytest.mark.parametrize("partition", [10**6, 10**17])
@pytest.mark.parametrize("kind", ["processed", "acked"])
def test_a_huge_partition_is_refused_fast_and_in_bounded_memory(run, partition, kind):
    if kind == "processed":
        _append(run / "history" / "member-m2.jsonl", _processed(partition=partition, first=0, last=0, count=1))
    else:
        _append(run / "history" / "producer.jsonl",
                f'{{"type":"acked","mono":81940.0,"wall":1795835581.8,"topic":"{TOPIC}","partition":{partition},'
                f'"offset":0,"key":"k1","seq":999}}\n')
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "harness", "check", str(run)], capture_output=True, text=True,
                          timeout=60, preexec_fn=_limit_memory)
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(err) == 1, done.stderr[-600:]
    assert f"partition {partition}" in err[0] and "incomplete" in err[0]
    assert time.monotonic() - began < 30


def _judge_in_a_process(history_dir):
    code = ("import sys; from harness.invariants import judge; from harness.record.history import History; "
            "from harness.record.rundir import status_of; "
            "print(status_of(v.status for v in judge(History.load(sys.argv[1])).values()))")
    return subprocess.run([sys.executable, "-c", code, str(history_dir)], capture_output=True, text=True, timeout=60,
                          preexec_fn=_limit_memory)


@pytest.mark.parametrize("partition", [10**6, 10**17])
def test_a_huge_partition_of_a_history_recording_no_count_is_refused_fast(run, capsys, partition):
    """No count recorded (run_start's `partitions` removed): the most to infer is the history's number of events."""
    h = run / "history" / "harness.jsonl"
    h.write_text(h.read_text().replace('"partitions":6,', ""))
    _append(run / "history" / "member-m2.jsonl", _processed(partition=partition, first=0, last=0, count=1))
    assert "beyond any count to infer" in _incomplete(run, capsys, "member-m2.jsonl", f"partition {partition}")
    began = time.monotonic()
    judged = _judge_in_a_process(run / "history")  # judge() itself, as a library: the timeline refuses to infer it
    assert judged.returncode == 0 and judged.stdout.strip() == "unknown", judged.stderr[-600:]
    assert time.monotonic() - began < 30


def test_without_the_huge_partition_the_history_recording_no_count_is_judged(run, capsys):
    h = run / "history" / "harness.jsonl"
    h.write_text(h.read_text().replace('"partitions":6,', ""))
    assert _check(run, capsys)[0] == 0
    assert _judge_in_a_process(run / "history").stdout.strip() == "pass"


def test_a_killed_member_may_leave_one_torn_line(run, capsys):
    """The one legitimate torn line: a member whose process died of a signal, cut inside its last write."""
    evs = _harness_events(run)
    for e in evs:
        if e["type"] == "member_exit" and e["member"] == "m2":
            e.update(how="kill", code=-9)
    _write_harness_events(run, evs)
    _append(run / "history" / "member-m2.jsonl", '{"type":"processed","mono":81951.0,"wa')
    code, out = _check(run, capsys)
    assert code in (0, 1) and not out.err, out.err  # judged: the torn line dropped
    assert "record_integrity" in out.out


def test_a_torn_line_of_a_member_that_exited_by_itself_is_incomplete(run, capsys):
    _append(run / "history" / "member-m2.jsonl", '{"type":"processed","mono":81951.0,"wa')
    _incomplete(run, capsys, "member-m2.jsonl", "did not die of a signal")


def test_the_pool_records_a_members_file_totals_when_its_process_is_gone(tmp_path):
    from harness.members.pool import MemberPool, MemberProcess, MemberSpec
    got = []
    pool = MemberPool(bootstrap="x", group_id="g", topic="t", history_dir=tmp_path, log_dir=tmp_path,
                      on_event=lambda t, **f: got.append((t, f)), merge_settings=None)
    hist = tmp_path / "member-m1.jsonl"
    hist.write_text('{"type":"header"}\n{"type":"started"}\n{"type":"processed","mono":1.0,"wa')
    m = MemberProcess("m1", MemberSpec(protocol="consumer"), proc=None, history=hist)
    pool._exited(m, "kill", -9)
    pool._exited(m, "kill", -9)  # once
    assert got == [("member_exit", {"member": "m1", "how": "kill", "code": -9,
                                    "history_bytes": hist.stat().st_size, "history_lines": 2})]


def test_the_workload_records_the_producers_totals_in_the_harness_history_once(tmp_path):
    from harness.members.workload import Workload
    got = []
    w = Workload(bootstrap="127.0.0.1:1", topics=["t"], history_path=tmp_path / "producer.jsonl", rate_per_s=1000,
                 on_event=lambda t, **f: got.append((t, f)))
    w.start()
    time.sleep(0.05)
    left = w.stop(timeout_s=0.2)
    w.stop(timeout_s=0.2)
    assert [t for t, _ in got] == ["producer_totals"]
    f = got[0][1]
    assert f["sent"] == w.sent > 0 and f["acked"] == 0 and f["unacknowledged"] == left
    assert (f["history_bytes"], f["history_lines"]) == (os.path.getsize(tmp_path / "producer.jsonl"), 1)
