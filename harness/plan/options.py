"""The command line's options read into a run configuration's fields: shared by the CLI (`harness run`, `nightly`)
and the pytest plugin's `--harness-*` options, so both say the same thing the same way.
"""
from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

from harness.base.errors import BadInput


def settings(items: list[str], flag: str) -> tuple[tuple[str, str], ...]:
    """KEY=VALUE pairs of a --*-set flag, values as text (as server.properties and librdkafka take them)."""
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise BadInput(f"{flag} wants KEY=VALUE, got {item!r}")
        _check_text(flag, key.strip(), value)
        out[key.strip()] = value
    return tuple(out.items())


def _check_text(flag: str, key: str, value: str) -> None:
    """BadInput when a setting could write a line of its own into a properties file (harness/base/properties.py)."""
    from harness.base.properties import setting_problem
    if (why := setting_problem(key, value)) is not None:
        raise BadInput(f"{flag} {key[:60]!r} refused: {why}")


def member_commands(items: list[str]) -> tuple[tuple[str, ...] | None, tuple[tuple[int, tuple[str, ...]], ...]]:
    """--member-command values: 'CMD ARGS' for every slot, slotN='CMD ARGS' for slot N (0-based)."""
    every, slots = None, {}
    for item in items:
        m = re.match(r"^slot(\d+)=(.*)$", item, re.S)
        try:
            cmd = tuple(shlex.split(m.group(2) if m else item))
        except ValueError as e:
            raise BadInput(f"--member-command {item!r} cannot be split into words: {e}") from None
        if not cmd:
            raise BadInput(f"--member-command {item!r} names no program")
        if m:
            slots[int(m.group(1))] = cmd
        elif every is not None:
            raise BadInput("--member-command without slotN= given twice: one command for every slot, or name slots")
        else:
            every = cmd
    return every, tuple(sorted(slots.items()))


def member_options(args) -> dict:
    """RunConfig fields from --member, --member-command, --commit-mode, --processing-ms, --revoke-delay-ms,
    --members-per-process and
    the --*-set flags (only those given)."""
    every, slots = member_commands(args.member_command)
    per_process = getattr(args, "members_per_process", None)
    if per_process is not None and (isinstance(per_process, bool) or not isinstance(per_process, int) or per_process < 1):
        raise BadInput(f"--members-per-process {per_process!r}: a count of 1 or more consumers per member process")
    out = {"member": args.member if args.member != "python" else None, "member_command": every,
           "slot_commands": slots, "client_settings": settings(args.client_set, "--client-set"),
           "broker_settings": settings(args.broker_set, "--broker-set"),
           "group_settings": settings(args.group_set, "--group-set"),
           "commit_mode": getattr(args, "commit_mode", None), "processing_ms": getattr(args, "processing_ms", None),
           "revoke_delay_ms": getattr(args, "revoke_delay_ms", None),
           "members_per_process": per_process}
    return {k: v for k, v in out.items() if v}


def key_values(items: list[str], flag: str = "--streams-set") -> tuple[tuple[str, object], ...]:
    """KEY=VALUE pairs, values read as JSON where they parse (numbers, true/false), else as text."""
    out = []
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise BadInput(f"{flag} wants KEY=VALUE, got {item!r}")
        _check_text(flag, key, value)
        try:
            out.append((key, json.loads(value)))
        except json.JSONDecodeError:
            out.append((key, value))
    return tuple(out)


def check_runs_root(path, flag: str = "--runs-root") -> None:
    """BadInput when run directories cannot go under `path`: it, or the nearest part of it that exists, is not a
    directory (a file, say), or that directory cannot be written."""
    p = Path(path).absolute()
    existing = next((q for q in (p, *p.parents) if q.exists() or q.is_symlink()), None)
    if existing is None:
        return
    if not existing.is_dir():
        what = "is" if existing == p else f"lies under {existing}, which is"
        raise BadInput(f"{flag} {path}: {what} not a directory (run directories go under it)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise BadInput(f"{flag} {path}: {existing} cannot be written (run directories go under it)")
