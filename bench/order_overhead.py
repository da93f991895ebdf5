"""The cost of recording the order at the request proxy (harness/kproxy/order.py): a scenario's wall time with the
order recorded and without, and the size of its `order` lines per minute of run.

    .venv/bin/python bench/order_overhead.py --scenario race-commit-across-revocation --pairs 2 --seed 1

Each pair is two runs of the scenario under the same seed, each on its own cluster with the request proxy (the
scenario has request faults, or the proxy is put in the path all the same), one with the recorder on and one with
it off (`OrderRecorder.enabled`), in alternating order; it prints each run's wall time (run.json's `duration_s`,
cluster start to verdicts), the `order` lines' bytes in harness.jsonl and the history's bytes, per minute of run.
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="race-commit-across-revocation")
    p.add_argument("--pairs", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--runs-root", default=None)
    a = p.parse_args(argv)
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
