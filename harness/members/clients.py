"""Isolated installs of the confluent-kafka client, one per version, so a run can pick (or roll) versions."""
from __future__ import annotations

import logging

import re
import subprocess
import sys
from pathlib import Path

from harness.errors import BadInput, SetupError
from harness.tools import cache_dir

_log = logging.getLogger(__name__)

VERSION_RE = re.compile(r"^\d+\.\d+\.\d+(\.post\d+)?$")


def bundled_version() -> str:
    """The confluent-kafka version installed with the harness itself."""
    from harness.members.python_member import client_version
    return client_version()


def client_path(version: str | None, *, progress=_log.info) -> tuple[str, str | None]:
    """(version, directory to put first on PYTHONPATH, or None for the harness's own install)."""
    if not version or version in ("default", bundled_version()):
        return bundled_version(), None
    if not VERSION_RE.match(version):
        raise BadInput(f"bad confluent-kafka version {version!r}: expected x.y.z")
    target = cache_dir() / "clients" / f"confluent-kafka-{version}"
    if (target / "COMPLETE").exists():
        return version, str(target)
    target.mkdir(parents=True, exist_ok=True)
    progress(f"installing confluent-kafka {version} (isolated) ...")
    log = target.with_suffix(".log")
    with open(log, "w") as out:
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--only-binary=:all:", "--upgrade",
                            "--target", str(target), f"confluent-kafka=={version}"], stdout=out, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        text = Path(log).read_text(errors="replace")
        if "No matching distribution" in text or "Could not find a version" in text:
            raise BadInput(f"confluent-kafka {version} is not available from PyPI for this Python")
        raise SetupError(f"installing confluent-kafka {version} failed (see {log})")
    (target / "COMPLETE").write_text(version)
    return version, str(target)
