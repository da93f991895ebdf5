"""What a kind and the nemesis are handed of a run: `RunContext`, built by the runner, never the runner itself.

Each field is written once. Those known when the run is planned are given when the context is made; those that
exist only after a step of set-up are set by the runner at that step, and reading one before then is an
AttributeError that names the step, never a half-built run:

- `plan`: the `RunPlan` (its `cfg`, scenario, kind settings, Kafka version, racks, schedule);
- `run_id`: the run directory's name, which the run's topic names carry;
- `group_id`: the group (or Streams application, or Connect cluster) the members join;
- `topics`: the run's topics (`harness.plan.topics.Topic`), in the scenario's order; the one list of the run, so
  a partition count an action raised (`harness.cluster.topics.add_partitions`) is what the waits and the lag see;
- `run_dir`: the `RunDir` (the state, Connect and history paths inside it);
- `say`: a progress line (stamped with the time since the run began);
- `event`: an event into the harness history (dropped once judging began);
- `clock`: the run's monotonic clock;
- `cluster`: the run's cluster, set when it is up (or the shared one taken);
- `pool`: the `MemberPool`, set when it is made, before the first member starts;
- `observer`: the `Observer` of the history, set beside the pool;
- `waits`: the run's `Waits`, set once the observer is: the only way a kind or the nemesis waits.

`topic` (the first topic's name on the cluster) is read from `topics`, not a field of its own.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

#: the fields the runner sets after set-up began -> the step that sets them
LATER = {"cluster": "when the cluster is up", "pool": "when the member pool is made",
         "observer": "beside the member pool", "waits": "once the observer is made"}


@dataclass(eq=False)
class RunContext:
    """A run as its kind and its nemesis see it (module docstring: each field and when it is set)."""

    plan: Any
    run_id: str
    group_id: str
    topics: list
    run_dir: Any
    say: Callable[[str], None]
    event: Callable[..., None]
    clock: Callable[[], float] = time.monotonic
    cluster: Any = field(init=False, repr=False)
    pool: Any = field(init=False, repr=False)
    observer: Any = field(init=False, repr=False)
    waits: Any = field(init=False, repr=False)

    @property
    def topic(self) -> str:
        """The first topic's name on the cluster (a run without named topics has only that one)."""
        return self.topics[0].real

    def __setattr__(self, name: str, value) -> None:
        if name not in self.__dataclass_fields__:
            raise AttributeError(f"RunContext has no field {name!r}")
        if name in self.__dict__:
            raise AttributeError(f"RunContext.{name} is set once, and it is set")
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str):  # only for what is not set: a field set later, or no field at all
        if name in LATER:
            raise AttributeError(f"RunContext.{name} is not set yet: the runner sets it {LATER[name]}")
        raise AttributeError(f"RunContext has no field {name!r}")
