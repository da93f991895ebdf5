"""The records of a synthetic correct run (`synth_run`): what the producer had acknowledged, and each record
processed once, by its partition's owner at that moment, and committed.

The producer acknowledges `count` records between the story's first and last ack, each on a partition drawn at
random (its key `k<n>` lives on one partition, its `seq` counts up per key). Every member polls every `poll_s`
from its start: a poll processes, for each partition the member holds then (from just after it was assigned
until just before it revokes it), the records acknowledged since that partition's last processed one (one
`processed` batch per partition), then commits them synchronously (one `committed` event, the next offset of
each). Before revoking, a member polls once more, so that it commits what it processed before giving a partition
up (the harness's revoke handler). Records acknowledged while a partition has no owner wait for the next one.
"""
from __future__ import annotations

import numpy as np

#: a poll processes what was acknowledged this long before it; it commits this long after
ACK_LAG_S, COMMIT_AFTER_S = 0.002, 0.006
#: the last poll before a revoke, this long before it; no regular poll this close to a revoke
REVOKE_POLL_S, QUIET_BEFORE_REVOKE_S = 0.01, 0.03


def producer(story, count: int, rng: np.random.Generator) -> tuple[list, list]:
    """The `acked` events (mono, line) of `count` records, and each partition's ack times (sorted)."""
    t_first, t_last = story.prod
    times = np.sort(rng.uniform(t_first, t_last, count))
    parts = rng.integers(0, story.shape.partitions, count)
    parts[: story.shape.partitions] = np.arange(story.shape.partitions)  # every partition has a record
    P = story.shape.partitions
    offsets = np.zeros(count, dtype=np.int64)
    per = np.zeros(P, dtype=np.int64)
    for i, p in enumerate(parts.tolist()):  # offsets in ack order per partition
        offsets[i] = per[p]
        per[p] += 1
    topic, wall0 = story.topic, story.wall0
    fmt = ('{"type":"acked","mono":%.6f,"wall":%.6f,"topic":"' + topic +
           '","partition":%d,"offset":%d,"key":"k%d","seq":%d}\n')
    lines = [(t, fmt % (t, t + wall0, p, o, p + P * (o % 8), o // 8))
             for t, p, o in zip(times.tolist(), parts.tolist(), offsets.tolist())]
    ack = {p: times[parts == p] for p in range(P)}
    return lines, ack


def polls(story, m: str, phase: float) -> np.ndarray:
    """The times `m` polls at (regularly, from its start until it stops)."""
    start, stop = story.lives[m]
    stop = stop if stop is not None else story.end
    return np.arange(start + phase, stop, story.shape.poll_s)


def processing(story, ack: dict, rng: np.random.Generator) -> dict[str, list]:
    """Per member, its `processed` and `committed` events (mono, line): every record processed once."""
    grids = {m: polls(story, m, float(rng.uniform(0, story.shape.poll_s))) for m in story.lives}
    batches: dict[str, dict[float, list]] = {m: {} for m in story.lives}  # member -> poll time -> [(p, first, last)]
    for p in range(story.shape.partitions):
        times, done = ack[p], 0
        for m, a, r in story.owners.get(p, []):
            grid = grids[m]
            hi = r - QUIET_BEFORE_REVOKE_S if r is not None else np.inf
            qs = grid[(grid > a + 0.005) & (grid < hi)].tolist()
            if r is not None:
                qs.append(r - REVOKE_POLL_S)
            for q in qs:
                upto = int(np.searchsorted(times, q - ACK_LAG_S, side="right"))
                if upto > done:
                    batches[m].setdefault(round(q, 6), []).append((p, done, upto - 1))
                    done = upto
        if done != len(times):
            raise AssertionError(f"partition {p}: {len(times) - done} records never processed (a story too short)")
    return {m: _lines(story, m, b) for m, b in batches.items()}


def _lines(story, m: str, batches: dict[float, list]) -> list:
    topic, wall0 = story.topic, story.wall0
    proc = ('{"type":"processed","mono":%.6f,"wall":%.6f,"member":"' + m + '","topic":"' + topic +
            '","partition":%d,"first_offset":%d,"last_offset":%d,"count":%d}\n')
    out = []
    for q, bs in batches.items():
        for i, (p, first, last) in enumerate(bs):
            t = q + 0.000001 * i  # in the poll's order, before the commit is asked for
            out.append((t, proc % (t, t + wall0, p, first, last, last - first + 1)))
        c = q + COMMIT_AFTER_S
        offs = ",".join(f'["{topic}",{p},{last + 1}]' for p, _, last in bs)
        out.append((c, '{"type":"committed","mono":%.6f,"wall":%.6f,"member":"%s","ok":true,"error":null,'
                       '"requested_mono":%.6f,"offsets":[%s]}\n' % (c, c + wall0, m, q + 0.000001 * len(bs) + 0.00001, offs)))
    return out
