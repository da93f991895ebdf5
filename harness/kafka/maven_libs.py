"""A Java member's libraries from Maven Central: a generated pom's runtime dependencies copied into the
cache once (the Streams member's kafka-streams, the Connect worker's connect-runtime), the same way
`harness/kafka/dist.py` resolves the brokers."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
from pathlib import Path

from harness.base.errors import BadInput, SetupError
from harness.base.tools import require_tool

DAY_S = 24 * 3600


def local_repository() -> Path:
    """Maven's local repository as the harness uses it: ~/.m2/repository of $HOME. Maven itself would take Java's
    user.home (the account's home from the password database), which differs where HOME is set elsewhere (a CI
    job's, a clean set-up's): every Maven call is told this one, so what it fetches is where the harness reads it."""
    return Path.home() / ".m2" / "repository"


def mvn_command(*, why: str) -> list[str]:
    """`mvn` in batch mode, quiet, with the local repository above; SetupError naming `why` when Maven is missing."""
    return [require_tool("mvn", why=why), "-B", "-q", f"-Dmaven.repo.local={local_repository()}"]


def resolve_libs(pom: str, base: Path, *, artifact: str, version: str, progress) -> Path:
    """The runtime dependencies of `pom` in base/libs, resolved once per pom text; BadInput when Maven
    Central has no such `artifact` `version` (or one of its dependencies: remembered for a day, so that a
    caller falling back to an older release does not ask Maven again on every run), SetupError when Maven
    fails otherwise."""
    libs, done, missing = base / "libs", base / "RESOLVED", base / "UNRESOLVABLE"
    stamp = hashlib.sha256(pom.encode()).hexdigest()[:16]
    if done.exists() and done.read_text().strip() == stamp:
        return libs
    if missing.exists() and missing.read_text().strip() == stamp and time.time() - missing.stat().st_mtime < DAY_S:
        raise BadInput(f"{artifact} {version} cannot be resolved from Maven Central (see {base / 'resolve.log'}; "
                       f"tried within the last day)")
    mvn = mvn_command(why=f"resolve {artifact} from Maven Central")
    done.unlink(missing_ok=True)
    shutil.rmtree(libs, ignore_errors=True)
    (base / "pom.xml").write_text(pom)
    progress(f"resolving {artifact} {version} from Maven Central ...")
    log = base / "resolve.log"
    with open(log, "w") as out:
        r = subprocess.run([*mvn, "dependency:copy-dependencies", "-DoutputDirectory=libs",
                            "-DincludeScope=runtime"], cwd=base, stdout=out, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        text = log.read_text(errors="replace")
        if "Could not find artifact" in text or "Could not resolve dependencies" in text:
            missing.write_text(stamp + "\n")
            raise BadInput(f"{artifact} {version} cannot be resolved from Maven Central (see {log})")
        raise SetupError(f"Maven failed to resolve {artifact} {version} (see {log})")
    done.write_text(stamp + "\n")
    return libs
