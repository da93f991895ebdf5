"""The cost of recording the order at the request proxy (harness/kproxy/order.py): a scenario's wall time with the
order recorded and without, and the size of its `order` lines per minute of run.

    .venv/bin/python bench/order_overhead.py --scenario race-commit-across-revocation --pairs 2 --seed 1

Each pair is two runs of the scenario under the same seed, each on its own cluster with the request proxy (the
scenario has request faults, or the proxy is put in the path all the same), one with the recorder on and one with
it off (`OrderRecorder.enabled`), in alternating order; it prints each run's wall time (run.json's `duration_s`,
cluster start to verdicts), the `order` lines' bytes in harness.jsonl and the history's bytes, per minute of run.
With `--micro N` it first times the recorder alone: N requests through its hooks (read, sent on, answered) on one
event loop, its `order` lines written by a HistoryWriter to a temporary file: CPU microseconds per request, which
the runs' row counts turn into the recorder's share of a run's time whatever the machine's load.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from harness.kproxy import order
from harness.plan.config import RunConfig
from harness.run import runner


def _run(scenario: str, seed: int, root: Path, *, record: bool) -> dict:
    init = order.OrderRecorder.__init__

    def patched(self, emit, **kw):
        init(self, emit, **{**kw, "enabled": record})
    order.OrderRecorder.__init__ = patched
    try:
        cfg = RunConfig.for_scenario(scenario, seed=seed, runs_root=str(root))
        new = runner.new_cluster
        result = runner.Run(cfg, make_cluster=lambda **kw: new(backend=cfg.backend, **{**kw, "request_faults": True}),
                            progress=lambda *_: None).execute()
    finally:
        order.OrderRecorder.__init__ = init
    d = Path(result.run_dir)
    meta = json.loads((d / "run.json").read_text())
    lines = (d / "history" / "harness.jsonl").read_bytes().splitlines()
    order_bytes = sum(len(x) + 1 for x in lines if x.startswith(b'{"type":"order"'))
    hist = sum(p.stat().st_size for p in (d / "history").glob("*.jsonl"))
    minutes = meta["duration_s"] / 60
    return {"record": record, "status": result.status, "wall_s": meta["duration_s"],
            "order_bytes_per_min": round(order_bytes / minutes), "history_bytes_per_min": round(hist / minutes),
            "order_lines": sum(x.startswith(b'{"type":"order"') for x in lines), "run_dir": str(d)}


def micro(n: int) -> float:
    """CPU microseconds per request of the recorder's hooks, its lines written to a file."""
    import asyncio
    import time
    from types import SimpleNamespace

    from harness.kproxy.wire import RequestHead
    from harness.record.history import HistoryWriter
    with tempfile.TemporaryDirectory() as tmp, HistoryWriter(Path(tmp) / "h.jsonl", source="harness") as w:
        rec = order.OrderRecorder(w.event)
        conns = [SimpleNamespace(conn_id=i, broker=1) for i in range(1, 9)]
        heads = [RequestHead(k, 5, c, "m1") for c, k in zip(range(n), [1, 12, 1, 8] * (n // 4 + 1))]

        async def go():
            for c, head in enumerate(heads):
                conn = conns[c % len(conns)]
                await rec.request(conn, head, "m1")
                rec.passed(conn, head, "m1")
                rec.answered(conn, head.correlation_id)
        t0 = time.process_time()
        asyncio.run(go())
        rec.flush()
        return (time.process_time() - t0) / n * 1e6


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="race-commit-across-revocation")
    p.add_argument("--pairs", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--runs-root", default=None)
    p.add_argument("--micro", type=int, default=0, metavar="N")
    a = p.parse_args(argv)
    if a.micro:
        print(f"recorder alone: {micro(a.micro):.1f} us of CPU per request ({a.micro} requests)", flush=True)
        if not a.pairs:
            return 0
    root = Path(a.runs_root or tempfile.mkdtemp(prefix="order-overhead-"))
    rows = []
    for i in range(a.pairs):
        for record in ((True, False) if i % 2 == 0 else (False, True)):
            rows.append(_run(a.scenario, a.seed, root, record=record))
            print(json.dumps(rows[-1]), flush=True)
    on = [r["wall_s"] for r in rows if r["record"]]
    off = [r["wall_s"] for r in rows if not r["record"]]
    print(f"wall time, median: recorded {statistics.median(on):.1f} s, not recorded {statistics.median(off):.1f} s "
          f"({100 * (statistics.median(on) / statistics.median(off) - 1):+.1f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
