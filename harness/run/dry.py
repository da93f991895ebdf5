"""`harness run SCENARIO --dry-run`: every check of a run that needs no cluster and starts nothing, then the schedule
it would run.

Checked: the scenario (built-in or file), the run's settings, each step against its row of the table of steps (its
bounds, the backend's abilities, the kind of group), the request faults against the Kafka APIs, and the version gates
of the brokers' release, when that release is known without a lookup (a release named x.y.z, or an alias or prefix
resolved on this machine before: `harness kafka latest`); the broker and group setting keys against the names that
release defines, when this machine keeps them (read from its jars by an earlier run: harness/kafka/config_names.py),
a misspelt key naming the one meant. Not checked, since each starts a process: resolving the release's jars
(Maven), reading its setting names when they are not kept, the client library's acceptance of the client settings,
the Java clients' releases, a docker engine; the dry run says so.
"""
from __future__ import annotations

import sys

from harness.base.errors import BadInput
from harness.base.steps import Step
from harness.base.versions import GROUP_CONFIGS_SINCE, major_minor
from harness.plan.config import RunConfig, RunPlan, plan, precheck

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
    names = _setting_names(p)  # before a line is printed: a refusal is the one line said
    where = f"file {cfg.scenario_file}" if cfg.scenario_file else "built-in"
    said = version if version == asked else f"{version} ({asked}, as last resolved here)"
    out.write(f"scenario {cfg.scenario} ({where}), {sc.kind} group, protocol {cfg.protocol}, seed {cfg.seed}, "
              f"Kafka {said}, {cfg.brokers} brokers, backend {cfg.backend}\n")
    out.write(f"members: {sc.members} ({cfg.member} member{', its own program' if cfg.member_command else ''})\n")
    out.write(f"schedule ({len(p.schedule)} steps):\n")
    for i, a in enumerate(p.schedule, 1):
        out.write(f"  {i:>3}. {a.kind} {a.params or ''}\n".rstrip() + "\n")
    out.write("checked: the scenario, the run's settings, each step's parameters and bounds, the backend's abilities, "
              "the request faults against the APIs, the brokers' version gates"
              + (", the broker and group setting keys (the names the release defines, kept here)" if names else "")
              + "\n")
    unchecked = [*NOT_CHECKED] + (["the broker and group setting keys (the release's names are not kept here)"]
                                  if names is False else [])
    out.write(f"not checked (each starts a process; the run checks them before its cluster starts): "
              f"{', '.join(unchecked)}\n")
    return 0


def _setting_names(p: RunPlan) -> bool | None:
    """The run's broker and group setting keys (its own, its group_config steps') checked against the names its
    releases define, where this machine keeps them (no JVM starts): True; False when one release's are not kept
    (the run reads them before its cluster starts); None when there is no key to check. BadInput, naming the close
    key, for a key no release defines."""
    from harness.kafka import config_names
    from harness.kafka import dist as kafka_dist
    cfg = p.cfg
    broker_keys = [k for k, _ in cfg.broker_settings]
    group_keys = [k for k, _ in cfg.group_settings if f"group.{k}" not in p.broker_settings]
    group_keys += [k for a in p.schedule if a.kind == Step.GROUP_CONFIG for k in a.params.get("settings") or {}]
    if not (broker_keys or group_keys):
        return None
    versions = [p.kafka_version] + [kafka_dist.remembered(a.params["version"]) for a in p.schedule
                                    if a.kind == Step.BROKER_UPGRADE and a.params.get("version")]
    wanted = [(kind, v) for v in versions if v is not None
              for kind, keys in (("broker", broker_keys), ("group", group_keys))
              if keys and (kind == "broker" or major_minor(v) >= GROUP_CONFIGS_SINCE)]
    if None in versions or not all(_kept(kind, v) for kind, v in wanted):
        return False
    config_names.check(broker_keys, group_keys, versions)
    return True


def _kept(kind: str, version: str) -> bool:
    """Whether this machine keeps the `kind` setting names of Kafka `version` (so reading them starts nothing)."""
    from harness.base.tools import cache_dir
    from harness.kafka import config_names
    path = cache_dir() / "config-names" / version / f"{kind}.txt"
    return config_names._kept(path, config_names._key(kind)) is not False
