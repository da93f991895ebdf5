"""`harness replay RUN --exact`: the recorded schedule again, and the recorded order re-imposed at the request proxy
(docs/repeat.md, "Exact replay").

The order is the run's `order` events (harness/kproxy/order.py): the requests of the imposed APIs (`IMPOSED`) in the
order they went on to the brokers. On a fresh cluster with the request proxy, each member's requests are matched by
API and position in that member's stream, and each is held until the other members' requests recorded before it
went on (harness/kproxy/perturb.py, `Imposer`; a JoinGroup's position counts joins: a JoinGroup answered
MEMBER_ID_REQUIRED and its resend with the member id are one step, `Imposed`), for at most the hold bound the
explorer uses (half the smaller of the session and rebalance timeouts, harness/drive/explore.py `bounds`). Past it, or when a member sends more of an
API than was recorded, the replay says where it diverged (`order_diverged` in the history, `exact.json` in the new
run's directory, a progress line) and holds nothing more. Its cluster's directory is
`<runs-root>/exact-<time>-<run>/cluster`, a new one for each replay. An explored run's perturbations (its explore.json) are
applied again too. Heartbeats and the fetch path are recorded but not imposed: how many there are follows the clock.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from harness.base.errors import BadInput
from harness.cluster.backends import new_backend
from harness.cluster.base import BrokerSettings
from harness.drive import explore as ex
from harness.drive.repeat import _new_dir
from harness.kproxy.perturb import Chain, Imposed, Imposer
from harness.kproxy.wire import API_NAMES
from harness.plan.config import replay_config
from harness.record.format import read_file
from harness.record.rundir import CLUSTER, HARNESS_HISTORY, RunDir
from harness.run.progress import log
from harness.run.resolve import resolve
from harness.run.runner import run_scenario

#: the requests whose order is imposed: those a rebalance is made of, whose number does not follow the clock
IMPOSED = ("JoinGroup", "SyncGroup", "LeaveGroup", "OffsetCommit")
EXACT_JSON = "exact.json"


def recorded_order(events, *, apis=IMPOSED) -> list[tuple[str, str]]:
    """(member, API) of every recorded request of `apis` that went on to a broker, in the order it went on."""
    rows = [(row[3], ev["member"], API_NAMES.get(row[1], f"api-{row[1]}")) for ev in events if ev.get("type") == "order"
            for row in ev["rows"] if row[3] is not None]
    return [(m, a) for _, m, a in sorted(rows, key=lambda r: r[0]) if a in apis]


def _order_of(run_dir) -> list[tuple[str, str]]:
    path = RunDir.open(run_dir).history_file(HARNESS_HISTORY)
    if not path.exists():
        raise BadInput(f"{run_dir} has no harness history ({path.name}): no order to re-impose")
    order = recorded_order(read_file(path)[1])
    if not order:
        raise BadInput(f"{run_dir} recorded no order of {', '.join(IMPOSED)} requests (a run without the request "
                       f"proxy, or from before it recorded the order): --exact needs one")
    return order


def _failed(verdicts: dict) -> list[str]:
    return sorted(n for n, v in verdicts.items() if (v.get("status") if isinstance(v, dict) else v.status) == "invalid")


def replay_exact(run_dir, *, runs_root: str, progress=log.info, **overrides):
    """The exact replay of `run_dir` (the module's docstring); its RunResult. BadInput before anything starts when
    the run recorded no order or the backend has no request proxy."""
    order = _order_of(run_dir)
    cfg = replay_config(Path(run_dir), runs_root=runs_root, **overrides)
    if cfg.backend != "local":
        raise BadInput(f"--exact needs the request proxy, which only the local backend has (not {cfg.backend})")
    plan = resolve(cfg, progress=progress)
    limits, perts = ex.bounds(cfg, plan.broker_settings), ex.perturbations_of(run_dir)
    progress(f"replaying {run_dir} exactly: {len(order)} requests in order ({', '.join(IMPOSED)}), each held at most "
             f"{limits['hold_bound_s']:g} s ({limits['from']['session']}; {limits['from']['rebalance']})"
             + (f", and its {len(perts)} explored perturbations" if perts else ""))
    work = _new_dir(Path(runs_root), f"exact-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{Path(run_dir).name}")
    cluster = new_backend(cfg.backend, work_dir=work / CLUSTER, version=plan.kafka_version, brokers=cfg.brokers,
                          progress=progress, request_faults=True,
                          settings=BrokerSettings.for_brokers(cfg.brokers, {**plan.broker_settings,
                                                                      **dict(cfg.broker_settings)}))
    imposer = Imposer(Imposed(order), apis=IMPOSED, bound_s=limits["hold_bound_s"],
                      emit=lambda type_, **f: cluster.on_event(type_, **f))
    explorer = ex.explorer_for(cluster, perts) if perts else None
    try:
        cluster.start()
        ex.with_controller(cluster, Chain(explorer, imposer))
        result = run_scenario(cfg, cluster=cluster, progress=progress)
    finally:
        cluster.stop()
    (Path(result.run_dir) / EXACT_JSON).write_text(json.dumps({
        "of": str(run_dir), "imposed": len(order), "apis": list(IMPOSED), "bound_s": limits["hold_bound_s"],
        "held": imposer.held, "divergence": imposer.divergence, "perturbations": [p.to_dict() for p in perts],
        "applied": explorer.applied if explorer else [], "failed": _failed(result.verdicts),
        "recorded_failed": _failed(RunDir.open(run_dir).verdicts())}, indent=2))
    d = imposer.divergence
    progress(f"the order diverged: {d['why']}" if d else
             f"the recorded order held to the end ({imposer.held} requests held for it)")
    progress(f"invariants violated: recorded {', '.join(_failed(RunDir.open(run_dir).verdicts())) or 'none'}; "
             f"this replay {', '.join(_failed(result.verdicts)) or 'none'}")
    return result
