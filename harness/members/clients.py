"""Isolated installs of the confluent-kafka client, one per version, so a run can pick (or roll) versions."""
from __future__ import annotations

import logging

import json
import os
import subprocess
import sys
from pathlib import Path

from harness.kafka.config_keys import setting_text  # noqa: F401 - the members' callers find it here
from harness.base.errors import BadInput, SetupError
from harness.base.tools import cache_dir
from harness.base.versions import is_release


_log = logging.getLogger(__name__)
#: the Python member (harness/members/python_member.py), run by the pool and, to check its settings, here
MEMBER_SCRIPT = Path(__file__).with_name("python_member.py")
#: the settings a client install took, as (path, protocol, settings, commit mode): a suite's runs, checked when the
#: suite plans them and again as each starts, make the consumer once per distinct settings
_accepted: set[tuple] = set()


def bundled_version() -> str:
    """The confluent-kafka version installed with the harness itself."""
    from harness.members.python_member import client_version
    return client_version()


def client_path(version: str | None, *, progress=_log.info) -> tuple[str, str | None]:
    """(version, directory to put first on PYTHONPATH, or None for the harness's own install)."""
    if not version or version in ("default", bundled_version()):
        return bundled_version(), None
    if not is_release(version, post=True):
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


def version_at(path: str | None) -> str:
    """The confluent-kafka release of an isolated install `client_path` made (None: the harness's own)."""
    if not path:
        return bundled_version()
    done = Path(path) / "COMPLETE"
    return done.read_text().strip() if done.exists() else Path(path).name.removeprefix("confluent-kafka-")


def check_settings(path: str | None, version: str, protocol: str, conf: dict, *, commit_mode: str = "") -> None:
    """Construct the Python member's consumer with `conf` under the confluent-kafka install at `path` (no
    broker needed: librdkafka refuses an unknown property or a bad value when the consumer is made), in the commit
    mode it will run with (its own settings are checked against it). BadInput with librdkafka's own words (or the
    member's) when it refuses; settings an install took once are not made again."""
    key = (path, protocol, json.dumps(conf, sort_keys=True), commit_mode)
    if key in _accepted:
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env.update({"HARNESS_CHECK_CONFIG": "1", "HARNESS_PROTOCOL": protocol, "HARNESS_CLIENT_CONFIG": json.dumps(conf),
                "HARNESS_COMMIT_MODE": commit_mode})
    if path:
        env["PYTHONPATH"] = os.pathsep.join([path, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    r = subprocess.run([sys.executable, str(MEMBER_SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()] or [f"exit code {r.returncode}"]
        raise BadInput(f"confluent-kafka {version} refuses the client settings: "
                       f"{lines[-1].removeprefix('member: ').removeprefix('the client refused its settings: ')}")
    _accepted.add(key)
