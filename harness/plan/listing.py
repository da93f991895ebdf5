"""`harness scenarios`: the built-in scenarios grouped by kind of group, each line wrapped to the terminal.

A heading per kind (consumer, streams, connect, share, then any other, each with its count), then a line per scenario:
its name, `[smoke]` when it is one of the short smoke set, and its description, wrapped so that no line is longer
than the width (the terminal's, `shutil.get_terminal_size`: COLUMNS, else the terminal, else 80), continuation lines
indented under the description. A name too long for the column stands on a line of its own; a name is never cut,
so the listing is never narrower than the longest name and its indent (46 characters today). Within a kind the
scenarios keep the order of SCENARIOS (harness/plan/scenarios.py).
"""
from __future__ import annotations

import shutil
import textwrap

from harness.base.vocabulary import GROUP_KINDS

#: the heading of each kind of group
HEADINGS = {"consumer": "consumer groups", "streams": "Kafka Streams", "connect": "Kafka Connect",
            "share": "share groups (KIP-932)"}
#: the narrowest width the listing wraps to (a longer name widens it: names are never cut)
NARROWEST = 40
#: the names' indent under their heading
INDENT = 2
SMOKE = "[smoke] "


def width() -> int:
    """The width to wrap to: the terminal's (COLUMNS, else the terminal, else 80)."""
    return shutil.get_terminal_size().columns


def _by_kind(scenarios) -> dict[str, list]:
    """The scenarios by kind of group, the kinds in GROUP_KINDS's order, then any other in name order."""
    out: dict[str, list] = {k: [] for k in GROUP_KINDS}
    for s in scenarios:
        out.setdefault(s.kind, []).append(s)
    return {k: v for k, v in out.items() if v}


def _entry(s, column: int, cols: int) -> list[str]:
    """One scenario's lines: its name, then its tagged description from `column`, wrapped to `cols`."""
    text = (SMOKE if s.smoke else "") + " ".join(s.doc.split())
    wrapped = textwrap.wrap(text, width=cols - column, break_on_hyphens=False) or [""]
    name = " " * INDENT + s.name
    if len(name) + 1 > column:  # a long name: on a line of its own, the description below it
        return [name] + [" " * column + w for w in wrapped]  # (wrapped to cols - column: it fits)
    return [f"{name:<{column}}{wrapped[0]}".rstrip()] + [" " * column + w for w in wrapped[1:]]


def lines(scenarios, *, cols: int) -> list[str]:
    """The listing's lines at width `cols`: none longer (the width is at least NARROWEST, and the longest name and
    its indent)."""
    scenarios = list(scenarios)
    longest = max((len(s.name) for s in scenarios), default=0)
    cols = max(cols, NARROWEST, INDENT + longest)
    column = min(INDENT + longest + 2, max(cols * 2 // 5, INDENT + 2))
    out: list[str] = []
    for kind, group in _by_kind(scenarios).items():
        if out:
            out.append("")
        n = len(group)
        out.append(f"{HEADINGS.get(kind, kind)}: {n} scenario{'s' if n != 1 else ''}")
        for s in group:
            out += _entry(s, column, cols)
    return out
