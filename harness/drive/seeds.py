"""The seeds of a repeated run: distinct seeds drawn deterministically from one.

`harness run --repeat N`, `harness nightly --repeat N` and the suites' `--harness-repeat N` run one
scenario under N seeds. The first is the base seed itself, so a repeat of one is the run without repeat
and the first run of any repeat is `--seed`'s own; the others come from `random.Random(base)`, skipping any
already drawn. The same base always gives the same seeds in the same order, and a longer repeat starts
with a shorter one's seeds.
"""
from __future__ import annotations

import random
from collections.abc import Iterator

#: seeds are drawn below this (the CLI's own random seeds are too)
SEED_LIMIT = 1 << 31


def seeds(base: int, count: int | None = None) -> Iterator[int]:
    """`count` distinct seeds from `base` (None: without end), the first of them `base`."""
    rng = random.Random(base)
    seen: set[int] = set()
    s = base
    while count is None or len(seen) < count:
        seen.add(s)
        yield s
        while s in seen and len(seen) != count:  # no draw past the last seed wanted
            s = rng.randrange(SEED_LIMIT)


def nth(base: int, index: int) -> int:
    """The seed of repeat number `index` (1-based) from `base`."""
    if index < 1:
        raise ValueError(f"repeat numbers start at 1, not {index}")
    return list(seeds(base, index))[-1]
