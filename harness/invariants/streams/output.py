"""Streams invariant 6 (`output_integrity`); see the package docstring.

Whether duplicates are judged is the processing guarantee the instances ran with: each records its
`processing.guarantee` at its start (`effective`, else `settings`). Exactly-once is judged when every instance
that recorded one ran an exactly-once guarantee; when some ran at_least_once, duplicates are what it allows
(counted, not judged), and the message says which instances; a history where none recorded one is judged by
the run's `exactly_once`."""
from __future__ import annotations

from collections import defaultdict

from harness.record.history import History
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
    eos, eos_src = exactly_once(control, settings)
    m = {"acked": len(acked), "output_records": sum(map(len, seen.values())), "missing": len(missing),
         "duplicated": len(dups), "exactly_once": eos}
    if not acked:
        return verdict(name, "unknown", "no acknowledged input record to look for", measurements=m)
    problems, wits = [], []
    if missing:
        p, o = missing[0]
        problems.append(f"{len(missing)} acknowledged input records never reached the committed output "
                        f"(first: partition {p} offset {o})")
        evs = history.events_at(acked[k] for k in missing[:4])
        wits += [witness(evs[acked[k]], "acknowledged, not in the committed output") for k in missing[:4]]
    if dups and eos:
        p, o = dups[0]
        problems.append(f"{len(dups)} input records are in the committed output more than once under "
                        f"{eos_src} (first: partition {p} offset {o}, {len(seen[dups[0]])} times)")
        wits += [witness(e, "committed output of one input record, again") for k in dups[:3] for e in seen[k][:2]]
    ok = (f"all {len(acked)} acknowledged records in the committed output, "
          + (f"none twice ({eos_src})" if eos else f"{len(dups)} more than once, as {eos_src} allows"))
    return _outcome(name, problems, wits, m, ok)


EXACTLY_ONCE = ("exactly_once_v2", "exactly_once", "exactly_once_beta")


def exactly_once(control: list[dict], settings: StreamsCheckSettings) -> tuple[bool, str]:
    """Whether the instances ran exactly-once, by their recorded `processing.guarantee` (see the module), and
    the source for a message."""
    ran: dict[str, list[str]] = defaultdict(list)
    for e in control:
        if e["type"] == "started" and e.get("client") == "kafka-streams":
            got = [d.get("processing.guarantee") for d in (e.get("effective"), e.get("settings")) if isinstance(d, dict)]
            if g := next((x for x in got if x), None):
                ran[str(g)].append(e["member"])
    if not ran:
        g = "exactly_once_v2" if settings.exactly_once else "at_least_once"
        return settings.exactly_once, f"the run's {g}: no instance recorded its processing.guarantee"
    text = "; ".join(f"processing.guarantee={g} on {', '.join(dict.fromkeys(ms))}" for g, ms in sorted(ran.items()))
    return all(g in EXACTLY_ONCE for g in ran), text
