"""Streams invariant 6 (`output_integrity`); see the package docstring."""
from __future__ import annotations

from collections import defaultdict

from harness.history import History
from harness.invariants.core import Verdict, verdict, witness
from harness.invariants.streams.view import StreamsCheckSettings, _outcome


def check_output_integrity(history: History, settings: StreamsCheckSettings) -> Verdict:
    """Judge what the instances committed to the output topic against what the producer had acknowledged."""
    name = "output_integrity"
    control = [e for _, e in history.control()]
    reads = [e for e in control if e["type"] == "output_read"]
    if not reads:
        return verdict(name, "unknown", "the output topic was not read back (no output_read event)")
    rd = reads[-1]
    if not rd.get("complete"):
        return verdict(name, "unknown", f"the read_committed read of {rd.get('output_topic')} did not reach its end "
                       f"({rd.get('records')} records read): an open transaction, or a broker down", [rd])
    ack, tc = history.bulk("acked"), history.code(rd.get("topic"))
    acked = {(p, o): s for t, p, o, s in zip(ack.topic.tolist(), ack.partition.tolist(), ack.offset.tolist(),
                                                      ack.seq.tolist()) if t == tc}
    seen: dict[tuple, list[dict]] = defaultdict(list)
    for e in control:
        if e["type"] == "output" and e.get("topic") == rd.get("topic"):
            seen[(e["partition"], e["offset"])].append(e)
    missing = sorted(k for k in acked if k not in seen)
    dups = sorted(k for k, es in seen.items() if len(es) > 1)
    m = {"acked": len(acked), "output_records": sum(map(len, seen.values())), "missing": len(missing),
         "duplicated": len(dups), "exactly_once": settings.exactly_once}
    if not acked:
        return verdict(name, "unknown", "no acknowledged input record to look for", measurements=m)
    problems, wits = [], []
    if missing:
        p, o = missing[0]
        problems.append(f"{len(missing)} acknowledged input records never reached the committed output "
                        f"(first: partition {p} offset {o})")
        evs = history.events_at(acked[k] for k in missing[:4])
        wits += [witness(evs[acked[k]], "acknowledged, not in the committed output") for k in missing[:4]]
    if dups and settings.exactly_once:
        p, o = dups[0]
        problems.append(f"{len(dups)} input records are in the committed output more than once under "
                        f"exactly_once_v2 (first: partition {p} offset {o}, {len(seen[dups[0]])} times)")
        wits += [witness(e, "committed output of one input record, again") for k in dups[:3] for e in seen[k][:2]]
    ok = (f"all {len(acked)} acknowledged records in the committed output, "
          + ("none twice (exactly_once_v2)" if settings.exactly_once else f"{len(dups)} more than once (at_least_once)"))
    return _outcome(name, problems, wits, m, ok)
