"""Explore request interleavings: `harness run SCENARIO --explore N` (docs/repeat.md, "Explore").

    harness run race-commit-across-revocation --explore 20 --seed 1

N runs of the scenario under one seed (its schedule the same in each), on one cluster with the request proxy in the
client path; in each, the proxy perturbs the order of the members' requests (harness/kproxy/perturb.py): chosen
requests, or the broker's answers to them, of chosen members are held until every other member has sent a request on,
or delayed. The perturbations of run i are drawn by `schedule(seed, i, ...)` (the same seed: the same perturbations),
each run's unlike every earlier run's, and the bounds come from the group's timings (`bounds`). Each run's planned and
applied perturbations go to its directory's explore.json, and into its history as request faults (`hold_request`,
`delay_request`, ids `kx1`, ...), so the checkers take them as causes; the runs are judged as any run. The first
failing run's perturbations are shrunk (harness/drive/explore_shrink.py) and its exact replay is printed.

The strategy is PCT's (Burckhardt et al., "A randomized scheduler with probabilistic guarantees of finding bugs",
ASPLOS 2010) cut to what the proxy can choose: a bug of depth d needs d - 1 ordering constraints, each "this request
(or answer) of this member comes after the others' next ones"; a run draws d - 1 perturbations, each one such
constraint among `members x apis x positions x sides`, so it hits a given bug with probability at least
(1 / (members x apis x positions x 2)) ** (d - 1), and N runs hit it with 1 - (1 - p) ** N. Timing still varies on a
real cluster: the bound is of the proxy's choices, given that holding the request produces the order.
"""
from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import replace
from pathlib import Path

from harness.base.errors import BadInput
from harness.base.steps import Step
from harness.kproxy.perturb import Explorer, Perturbation

#: the depth PCT aims at unless `--explore-depth` says otherwise: d - 1 perturbations a run
DEPTH = 3
EXPLORE_JSON = "explore.json"
#: the positions a perturbation may take in a member's stream of an API (from 1): about a run's rebalances
POSITIONS = {"JoinGroup": 3, "SyncGroup": 3, "Heartbeat": 6, "OffsetCommit": 6, "LeaveGroup": 1,
             "ConsumerGroupHeartbeat": 8, "StreamsGroupHeartbeat": 8, "ShareGroupHeartbeat": 8, "ShareAcknowledge": 4}
CLASSIC_APIS = ("JoinGroup", "SyncGroup", "Heartbeat", "OffsetCommit", "LeaveGroup")
APIS = {"consumer": ("ConsumerGroupHeartbeat", "OffsetCommit"), "streams": ("StreamsGroupHeartbeat", "OffsetCommit"),
        "share": ("ShareGroupHeartbeat", "ShareAcknowledge")}


def apis_of(protocol: str) -> tuple[str, ...]:
    """The group-protocol APIs a run's members send under `protocol` (classic-*, consumer, streams, share)."""
    return APIS.get(protocol, CLASSIC_APIS)


def _ms(settings: dict, key: str, default_s: float) -> tuple[float, str]:
    if key in settings:
        return float(settings[key]) / 1000, f"{key}={settings[key]}"
    return default_s, f"{key} {default_s:g} s (the harness's setting)"


def bounds(cfg, broker_settings: dict | None = None) -> dict:
    """The perturbations' bounds from the group's timings, with where each came from: a hold lasts at most half the
    smaller of the session and rebalance timeouts (a hold alone never expires a member); a delay is at most twice the
    heartbeat interval, and at most the hold's bound."""
    client = dict(cfg.client_settings)
    if cfg.protocol in ("consumer", "streams", "share"):  # the group's timings are the brokers'
        brokers = {**(broker_settings or {}), **dict(cfg.broker_settings)}
        p = cfg.protocol
        session = _ms(brokers, f"group.{p}.session.timeout.ms", 45.0)
        beat = _ms(brokers, f"group.{p}.heartbeat.interval.ms", 5.0)
        session = (session[0], session[1].replace("the harness's setting", "Kafka's default"))
        beat = (beat[0], beat[1].replace("the harness's setting", "Kafka's default"))
    else:
        session = _ms(client, "session.timeout.ms", cfg.session_timeout_s)
        beat = _ms(client, "heartbeat.interval.ms", cfg.heartbeat_interval_s)
    rebalance = _ms(client, "max.poll.interval.ms", cfg.max_poll_interval_s)
    hold = min(session[0], rebalance[0]) / 2
    return {"hold_bound_s": round(hold, 3), "delay_max_s": round(min(2 * beat[0], hold), 3),
            "from": {"session": session[1], "heartbeat": beat[1], "rebalance": rebalance[1]}}


def members_of(plan) -> list[str]:
    """The member ids a run may have: its first members and one for each scale-out's."""
    n = plan.scenario.members + sum(int((a.params or {}).get("count", 1)) for a in plan.schedule
                                    if a.kind == Step.SCALE_OUT)
    return [f"m{i}" for i in range(1, n + 1)]


def _draw(rng: random.Random, i: int, members, apis, limits: dict) -> Perturbation:
    member, api = rng.choice(members), rng.choice(apis)
    hold = rng.random() < 2 / 3
    return Perturbation(pid=f"x{i}", member=member, api=api, nth=rng.randint(1, POSITIONS.get(api, 3)),
                        side=rng.choice(("request", "answer")), action="hold" if hold else "delay",
                        until=tuple(m for m in members if m != member) if hold else (),
                        delay_s=0.0 if hold else round(rng.uniform(0, limits["delay_max_s"]), 3),
                        bound_s=limits["hold_bound_s"])


def _shape(ps) -> tuple:
    return tuple(sorted((p.member, p.api, p.nth, p.side, p.action) for p in ps))


def schedule(seed: int, runs: int, *, members, apis, limits: dict, depth: int = DEPTH) -> list[list[Perturbation]]:
    """Each run's perturbations: d - 1 draws (the module's docstring), seeded by `seed` and the run's number; a draw
    that repeats an earlier run's is drawn again (at most 50 times)."""
    out, shapes = [], set()
    for run in range(1, runs + 1):
        rng = random.Random(f"explore:{seed}:{run}")
        for _ in range(50):
            ps = [_draw(rng, i, members, apis, limits) for i in range(1, depth)]
            if _shape(ps) not in shapes:
                break
        shapes.add(_shape(ps))
        out.append(ps)
    return out


def explored_run(run_dir, *, seed: int, number: int, limits: dict, planned, applied) -> None:
    """Write a run's explore.json: the strategy, its bounds, the run's planned and applied perturbations."""
    (Path(run_dir) / EXPLORE_JSON).write_text(json.dumps({
        "strategy": "pct", "seed": seed, "run": number, "depth": len(planned) + 1, "bounds": limits,
        "planned": [p.to_dict() for p in planned], "applied": applied}, indent=2))


def perturbations_of(run_dir) -> list[Perturbation]:
    """An explored run's planned perturbations ([] for a run not explored)."""
    path = Path(run_dir) / EXPLORE_JSON
    if not path.exists():
        return []
    return [Perturbation.of(d) for d in json.loads(path.read_text()).get("planned", [])]


def with_controller(cluster, controller):
    """Put a controller on the shared cluster's request proxy (BadInput when it has none)."""
    proxy = cluster.request_proxy() if hasattr(cluster, "request_proxy") else None
    if proxy is None:
        raise BadInput("the cluster has no request proxy: --explore and --exact need the local backend's")
    proxy.order.control = controller
    return proxy


def explorer_for(cluster, perturbations) -> Explorer:
    """An explorer that records through the cluster's event sink (the run attached to it hears it)."""
    return Explorer(perturbations, emit=lambda type_, **f: cluster.on_event(type_, **f), clock=time.monotonic)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """`harness run`'s --explore options."""
    p.add_argument("--explore", type=_positive, default=None, metavar="N",
                   help="run the scenario N times under --seed, each with a seeded perturbation of the order of the "
                        "members' requests at the request proxy (held or delayed, within bounds from the group's "
                        "timings; docs/repeat.md, \"Explore\"); the perturbations are recorded and are causes; the "
                        "first failure's perturbations are shrunk and its exact replay printed (local backend only); with "
                        "--until-fail it stops at the first failing run")
    p.add_argument("--explore-depth", type=_positive, default=None, metavar="D",
                   help=f"with --explore: the depth PCT aims at, D - 1 perturbations a run (default: {DEPTH})")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is less than 1")
    return value


def check(cfg, args) -> None:
    """Refuse what --explore cannot do, before anything starts."""
    if getattr(args, "repeat", None):
        raise BadInput("--explore makes its own runs: give it without --repeat (--until-fail stops them at the first "
                       "failure)")
    if cfg.backend != "local":
        raise BadInput(f"--explore needs the request proxy, which only the local backend has (not {cfg.backend})")


def seeded(cfg, runs_root: str):
    """The config of one explored run: the same seed, its directory under the exploration's."""
    return replace(cfg, runs_root=runs_root)
