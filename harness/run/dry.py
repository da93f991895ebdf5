"""`harness run SCENARIO --dry-run`: every check of a run that needs no cluster and starts nothing, then the schedule
it would run.

Checked: the scenario (built-in or file), the run's settings, each step against its row of the table of steps (its
bounds, the backend's abilities, the kind of group), the request faults against the Kafka APIs, and the version gates
of the brokers' release, when that release is known without a lookup (a release named x.y.z, or an alias or prefix
resolved on this machine before: `harness kafka latest`). Not checked, since each starts a process: resolving the
release's jars (Maven), the client library's acceptance of the client settings, the Java clients' releases, a docker
engine; the dry run says so.
"""
from __future__ import annotations

import sys

from harness.base.errors import BadInput
from harness.plan.config import RunConfig, plan, precheck

#: what a dry run leaves to the run itself, each of which starts a process
NOT_CHECKED = ("the release's jars (Maven)", "the client library accepting the client settings",
               "the Java clients' releases (Maven)", "a docker engine")


def dry_run(cfg: RunConfig, *, out=None) -> int:
    """Check cfg as far as nothing has to start, print the planned schedule; 0, or BadInput (exit 2)."""
    from harness.kafka import dist as kafka_dist
    out = out or sys.stdout
    precheck(cfg)  # the configuration alone: the scenario, protocol, members, settings
    sc = cfg.scenario_spec
    asked = sc.initial_kafka or cfg.kafka_version
    version = kafka_dist.remembered(asked)
    if version is None:
        raise BadInput(f"--dry-run: Kafka {asked!r} has not been resolved on this machine yet, so its version gates "
                       f"cannot be checked without a lookup; name a release (--kafka-version 4.4.0) or resolve it "
                       f"once (harness kafka {asked})")
    p = plan(cfg, version=version)
    where = f"file {cfg.scenario_file}" if cfg.scenario_file else "built-in"
    said = version if version == asked else f"{version} ({asked}, as last resolved here)"
    out.write(f"scenario {cfg.scenario} ({where}), {sc.kind} group, protocol {cfg.protocol}, seed {cfg.seed}, "
              f"Kafka {said}, {cfg.brokers} brokers, backend {cfg.backend}\n")
    out.write(f"members: {sc.members} ({cfg.member} member{', its own program' if cfg.member_command else ''})\n")
    out.write(f"schedule ({len(p.schedule)} steps):\n")
    for i, a in enumerate(p.schedule, 1):
        out.write(f"  {i:>3}. {a.kind} {a.params or ''}\n".rstrip() + "\n")
    out.write("checked: the scenario, the run's settings, each step's parameters and bounds, the backend's abilities, "
              "the request faults against the APIs, the brokers' version gates\n")
    out.write(f"not checked (each starts a process; the run checks them before its cluster starts): "
              f"{', '.join(NOT_CHECKED)}\n")
    return 0
