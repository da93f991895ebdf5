"""JSON libraries against the history reader: the CPU each takes to read a run's history files into columns.

What runs: for each candidate, a FRESH Python process imports it, then reads every `*.jsonl` file of --history (say
the history of the run bench/judge.py generates) and reports to this one the CPU seconds (user + system of every
thread of the process, resource.getrusage) of the import and of the reading, the wall seconds and the peak RSS.

- harness: History.load, the reader the invariants use (its import includes numpy's; it orders, codes, checks);
- polars: polars.read_ndjson per file with an explicit schema of the bulk fields but the committed offsets;
  polars-1t: the same with POLARS_MAX_THREADS=1; polars-offsets: the offsets too, as List(List(String)) (the
  closest type polars has for [topic, partition, offset]);
- duckdb, duckdb-1t: read_json(format='newline_delimited', columns=...) per file, fetchnumpy, 2 and 1 threads;
- pyarrow, pyarrow-1t: pyarrow.json.read_json per file with an explicit schema, unexpected fields ignored, with
  and without threads;
- msgspec: a Decoder of a tagged union (a Struct per bulk type with its fields, an empty one per control type)
  over each file (decode_lines), then the bulk fields into lists by attribute.

The libraries' rows are a floor: the bulk fields as typed columns, with none of the reader's other work (the
history's order, strings as codes, the byte offset of every line, refusing a bad line). A candidate that is not
installed says so; none of them is a dependency of the harness. docs/benchmarks.md has the figures:

    cd $RUNS && $CHECKOUT/.venv/bin/python $CHECKOUT/bench/json_readers.py --history $RUNS/jb1m/*/history --repeat 3
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import glob, json, os, resource, sys, time, typing
which, hist = sys.argv[1], sys.argv[2]
files = sorted(glob.glob(hist + "/*.jsonl"))
F = {"type": "s", "mono": "f", "member": "s", "topic": "s", "partition": "i", "first_offset": "i",
     "last_offset": "i", "offset": "i", "ok": "b", "requested_mono": "f"}
CONTROL = ("header broker group_assignment group_settings assigned revoked lost started stopped member_start "
           "member_stop member_exit action_start action_end run_start run_end drained").split()
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
def polars():
    import polars as pl
    t = {"s": pl.String, "f": pl.Float64, "i": pl.Int64, "b": pl.Boolean}
    schema = {k: t[v] for k, v in F.items()} | ({"offsets": pl.List(pl.List(pl.String))} if "offsets" in which else {})
    return lambda: sum(len(pl.read_ndjson(f, schema=schema)) for f in files)
def duckdb():
    import duckdb
    con = duckdb.connect()
    con.execute(f"SET threads={1 if which.endswith('-1t') else 2}")
    con.execute("SET enable_progress_bar=false")
    t = {"s": "VARCHAR", "f": "DOUBLE", "i": "BIGINT", "b": "BOOLEAN"}
    cols = "{" + ",".join(f"'{k}':'{t[v]}'" for k, v in F.items()) + "}"
    q = "select * from read_json('FILE', format='newline_delimited', columns=" + cols + ")"
    return lambda: sum(len(con.execute(q.replace("FILE", f)).fetchnumpy()["type"]) for f in files)
def pyarrow():
    import pyarrow as pa, pyarrow.json as pj
    t = {"s": pa.string(), "f": pa.float64(), "i": pa.int64(), "b": pa.bool_()}
    po = pj.ParseOptions(explicit_schema=pa.schema([(k, t[v]) for k, v in F.items()]), unexpected_field_behavior="ignore")
    ro = pj.ReadOptions(use_threads=not which.endswith("-1t"), block_size=16 << 20)
    return lambda: sum(pj.read_json(f, read_options=ro, parse_options=po).num_rows for f in files)
def msgspec():
    import msgspec
    from operator import attrgetter
    S = lambda tag, fs: msgspec.defstruct(tag, fs, tag_field="type", tag=tag, gc=False)
    bulk = {"processed": [("mono", float), ("topic", str), ("partition", int), ("first_offset", int),
                          ("last_offset", int), ("member", str | None, None)],
            "acked": [("mono", float), ("topic", str), ("partition", int), ("offset", int)],
            "committed": [("mono", float), ("ok", bool | None, None), ("requested_mono", float | None, None),
                          ("offsets", list[tuple[str, int, int]], []), ("member", str | None, None)],
            "failed": [("mono", float)]}
    bulk = {t: S(t, fs) for t, fs in bulk.items()}
    dec = msgspec.json.Decoder(typing.Union[(*bulk.values(), *(S(t, []) for t in CONTROL))])
    def run():
        n = 0
        for f in files:
            objs = dec.decode_lines(open(f, "rb").read())
            for T in bulk.values():
                sel = [o for o in objs if type(o) is T]
                cols = {k: list(map(attrgetter(k), sel)) for k in T.__struct_fields__}
            n += len(objs)
        return n
    return run
def harness():
    from harness.record.history import History
    import numpy
    return lambda: len(History.load(hist))
c0, w0 = cpu(), time.perf_counter()
read = {"polars": polars, "duckdb": duckdb, "pyarrow": pyarrow, "msgspec": msgspec}.get(which.split("-")[0], harness)()
c1 = cpu()
rows = read()
c2 = cpu()
json.dump({"import": c1 - c0, "read": c2 - c1, "wall": time.perf_counter() - w0, "rows": rows,
           "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "load": os.getloadavg()[0]}, sys.stdout)
"""
CANDIDATES = ("harness", "polars", "polars-1t", "polars-offsets", "duckdb", "duckdb-1t", "pyarrow", "pyarrow-1t", "msgspec")


def run(which: str, history: Path) -> dict | str:
    """One candidate's figures from a fresh process, or why there are none."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    if which.endswith("-1t") and which.startswith("polars"):
        env["POLARS_MAX_THREADS"] = "1"
    done = subprocess.run([sys.executable, "-c", CHILD, which, str(history)], env=env, capture_output=True, text=True)
    if done.returncode:
        last = done.stderr.strip().splitlines()[-1:] or ["?"]
        return "not installed" if "ModuleNotFoundError" in last[0] else last[0][:100]
    return json.loads(done.stdout[done.stdout.rindex('{"import"'):])  # after anything a library printed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/json_readers.py", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--history", type=Path, required=True, help="a run's history directory")
    p.add_argument("--only", action="append", choices=CANDIDATES, help="this candidate only (repeatable)")
    p.add_argument("--repeat", type=int, default=1, help="fresh processes per candidate (default %(default)s)")
    args = p.parse_args(argv)
    size = sum(f.stat().st_size for f in args.history.glob("*.jsonl"))
    print(f"history: {args.history} ({size / 1e6:.0f} MB)\n")
    print(f"{'candidate':14} {'import cpu s':>12} {'read cpu s':>10} {'wall s':>7} {'rows':>8} {'peak RSS MB':>11}  load")
    for r in range(args.repeat):
        for which in args.only or CANDIDATES:
            got = run(which, args.history)
            print(f"{which:14} {got}" if isinstance(got, str) else
                  f"{which:14} {got['import']:12.3f} {got['read']:10.3f} {got['wall']:7.2f} {got['rows']:8} "
                  f"{got['rss']:11.0f}  {got['load']:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
