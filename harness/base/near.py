"""A "did you mean": the known word closest to a misspelt one, said the one way every bad-input line says it.

Pure (difflib only): a scenario's name, a command, a kind, a protocol, a backend, a scenario file's field or action
misspelt is refused in one line that names the word probably meant (`did you mean member-kill?`), or, when none is
close, the known words where they are few enough to list.
"""
from __future__ import annotations

from collections.abc import Iterable
from difflib import get_close_matches

#: how close a known word must be to be offered (difflib's ratio): `memberkill` is 0.95 of `member-kill`
CUTOFF = 0.6
#: at most this many known words are listed when none is close
LISTED = 12


def closest(word: str, known: Iterable[str], *, n: int = 1, cutoff: float = CUTOFF) -> list[str]:
    """The known words closest to `word`, best first (at most `n`; none when none is close enough)."""
    return get_close_matches(str(word), sorted({str(k) for k in known}), n=n, cutoff=cutoff)


def hint(word: str, known: Iterable[str], *, n: int = 1, cutoff: float = CUTOFF) -> str:
    """`did you mean X?` (or `X or Y`), else `known: a, b, c` when they are at most LISTED, else ''."""
    known = [str(k) for k in known]
    if near := closest(word, known, n=n, cutoff=cutoff):
        return f"did you mean {' or '.join(near)}?"
    return f"known: {', '.join(known)}" if len(known) <= LISTED else ""


def unknown(what: str, word: str, known: Iterable[str], *, n: int = 1) -> str:
    """The one line refusing `word` as a `what`: `unknown protocol 'x'; did you mean y?`."""
    said = hint(word, known, n=n)
    return f"unknown {what} {word!r}" + (f"; {said}" if said else "")
