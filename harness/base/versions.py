"""Release versions as numbers: the pure arithmetic the plan and the kinds' checks need (no lookup, no process)."""
from __future__ import annotations


def version_key(v: str) -> tuple[int, ...]:
    """A release `x.y.z` as a tuple of integers, for ordering and comparing."""
    return tuple(int(x) for x in v.split("."))


def major_minor(v: str) -> tuple[int, int]:
    """The (major, minor) of a release `x.y.z`."""
    return tuple(version_key(v)[:2])  # type: ignore[return-value]


#: group configs (GROUP config resources, KIP-848's dynamic group settings) exist on brokers from 4.0
GROUP_CONFIGS_SINCE = (4, 0)
