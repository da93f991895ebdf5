"""A Java member's libraries from Maven Central: a generated pom's runtime dependencies copied into the
cache once (the Streams member's kafka-streams, the Connect worker's connect-runtime), the same way
`harness/kafka_dist.py` resolves the brokers."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from harness.errors import BadInput, SetupError
from harness.tools import require_tool


def resolve_libs(pom: str, base: Path, *, artifact: str, version: str, progress) -> Path:
    """The runtime dependencies of `pom` in base/libs, resolved once per pom text; BadInput when Maven
    Central has no such `artifact` `version`, SetupError when Maven fails otherwise."""
    libs, done = base / "libs", base / "RESOLVED"
    stamp = hashlib.sha256(pom.encode()).hexdigest()[:16]
    if done.exists() and done.read_text().strip() == stamp:
        return libs
    mvn = require_tool("mvn", why=f"resolve {artifact} from Maven Central")
    done.unlink(missing_ok=True)
    shutil.rmtree(libs, ignore_errors=True)
    (base / "pom.xml").write_text(pom)
    progress(f"resolving {artifact} {version} from Maven Central ...")
    log = base / "resolve.log"
    with open(log, "w") as out:
        r = subprocess.run([mvn, "-B", "-q", "dependency:copy-dependencies", "-DoutputDirectory=libs",
                            "-DincludeScope=runtime"], cwd=base, stdout=out, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        text = log.read_text(errors="replace")
        if "Could not find artifact" in text or "Could not resolve dependencies" in text:
            raise BadInput(f"{artifact} {version} cannot be resolved from Maven Central (see {log})")
        raise SetupError(f"Maven failed to resolve {artifact} {version} (see {log})")
    done.write_text(stamp + "\n")
    return libs
