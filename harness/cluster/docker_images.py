"""The images of the docker backend, built on this machine and cached by the content of their inputs.

- base: a Debian root file system (debootstrap, the packages in docker/base/packages), then `docker
  import`. Where a registry is reachable a public image stands in for it (`base=`, e.g. eclipse-temurin:17-jre).
- kafka: docker/kafka/Dockerfile on the base, with the jars `harness.kafka.dist` resolves for a version.
- toxiproxy: docker/toxiproxy/Dockerfile on the base, with the server `harness.cluster.toxiproxy` builds.

Every tag ends in a digest of what went into the image (Dockerfile, scripts, every input file's bytes,
the base image's tag), so the same inputs never rebuild and changed inputs never reuse a stale image.
"""
from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from harness.kafka import dist as kafka_dist
from harness.cluster import toxiproxy
from harness.base.errors import SetupError
from harness.base.tools import cache_dir

_log = logging.getLogger(__name__)

DOCKER_DIR = Path(__file__).resolve().parents[2] / "docker"
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
LABEL = "org.harness.inputs"


@dataclass(frozen=True)
class Images:
    """The tags a docker cluster runs: one Kafka image per version, one Toxiproxy image."""

    kafka: dict[str, str]
    toxiproxy: str


def digest(parts: list[tuple[str, bytes]]) -> str:
    """A short digest of named inputs (order-independent: the names sort them)."""
    h = hashlib.sha256()
    for name, data in sorted(parts):
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()[:16]


def file_parts(root: Path, *, prefix: str = "") -> list[tuple[str, bytes]]:
    """(relative name, bytes) of every file under root, for `digest`."""
    return [(prefix + str(p.relative_to(root)), p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()]


def base_packages() -> list[str]:
    lines = (DOCKER_DIR / "base" / "packages").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def base_tag() -> str:
    """The tag of the harness's own base image, from what debootstrap is given."""
    spec = f"{SUITE} {MIRROR} minbase {','.join(base_packages())}".encode()
    return f"harness/base:{SUITE}-{digest([('debootstrap', spec)])}"


def _exists(client, tag: str) -> bool:
    import docker.errors
    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def ensure_base(client, *, progress=_log.info) -> str:
    """The base image: debootstrap into the cache, then import (skipped when the tag exists)."""
    tag = base_tag()
    if _exists(client, tag):
        return tag
    debootstrap = shutil.which("debootstrap")
    if not debootstrap or os.getuid() != 0:
        raise SetupError("building the base image needs debootstrap run as root (./dev setup installs it); "
                         "where a registry is reachable, give a public base image instead (docs/docker.md)")
    work = cache_dir() / "docker" / tag.split(":")[1]
    root, tarball, log = work / "rootfs", work / "rootfs.tar", work / "debootstrap.log"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    progress(f"building the base image {tag}: debootstrap {SUITE} from {MIRROR} (a minute or so) ...")
    t0 = time.monotonic()
    with open(log, "w") as out:
        r = subprocess.run([debootstrap, "--variant=minbase", f"--include={','.join(base_packages())}", SUITE,
                            str(root), MIRROR], stdout=out, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise SetupError(f"debootstrap of the base image failed (see {log})")
        subprocess.run(["tar", "-C", str(root), "-cf", str(tarball), "."], stdout=out, stderr=subprocess.STDOUT,
                       check=True)
    shutil.rmtree(root, ignore_errors=True)
    repo, version = tag.split(":")
    client.api.import_image(src=str(tarball), repository=repo, tag=version,
                            changes=["ENV LANG=C.UTF-8", f"LABEL {LABEL}={version}"])
    tarball.unlink()
    progress(f"base image {tag} built in {time.monotonic() - t0:.0f}s")
    return tag


def _build(client, *, name: str, context: Path, inputs: list[tuple[str, bytes]], base: str, tag_prefix: str,
           progress) -> str:
    """Build docker/<name>/Dockerfile over context unless an image of the same inputs exists."""
    inputs = inputs + file_parts(DOCKER_DIR / name, prefix="docker/") + [("BASE", base.encode())]
    tag = f"harness/{name}:{tag_prefix}-{digest(inputs)}"
    if _exists(client, tag):
        return tag
    for f in (DOCKER_DIR / name).iterdir():
        shutil.copy2(f, context / f.name)
    progress(f"building the image {tag} ...")
    t0 = time.monotonic()
    try:
        client.images.build(path=str(context), tag=tag, buildargs={"BASE": base}, rm=True, forcerm=True,
                            labels={LABEL: tag.split(":")[1]})
    except Exception as e:
        raise SetupError(f"building the image {tag} failed: {str(e).splitlines()[0][:300]}") from None
    progress(f"image {tag} built in {time.monotonic() - t0:.0f}s")
    return tag


def ensure_kafka(client, version: str, *, base: str, progress=_log.info) -> str:
    """The Kafka image of a version (resolved through Maven as the local backend does)."""
    dist = kafka_dist.resolve(version, progress=progress)
    context = cache_dir() / "docker" / "context" / f"kafka-{dist.version}"
    shutil.rmtree(context, ignore_errors=True)
    (context / "libs").mkdir(parents=True)
    for jar in dist.libs.glob("*.jar"):
        os.link(jar, context / "libs" / jar.name) if _same_fs(jar, context) else shutil.copy2(jar, context / "libs")
    inputs = file_parts(context / "libs", prefix="libs/")
    return _build(client, name="kafka", context=context, inputs=inputs, base=base, tag_prefix=dist.version,
                  progress=progress)


def ensure_toxiproxy(client, *, base: str, progress=_log.info) -> str:
    """The Toxiproxy image, with the server binary built by go install."""
    binary = toxiproxy.server_binary(progress=progress)
    context = cache_dir() / "docker" / "context" / "toxiproxy"
    shutil.rmtree(context, ignore_errors=True)
    context.mkdir(parents=True)
    shutil.copy2(binary, context / "toxiproxy-server")
    inputs = [("toxiproxy-server", (context / "toxiproxy-server").read_bytes())]
    return _build(client, name="toxiproxy", context=context, inputs=inputs, base=base,
                  tag_prefix=toxiproxy.TOXIPROXY_VERSION, progress=progress)


def _same_fs(a: Path, b: Path) -> bool:
    return a.stat().st_dev == b.stat().st_dev


def ensure_images(client, versions: list[str], *, base: str | None = None, progress=_log.info) -> Images:
    """Every image a cluster of these Kafka versions needs, built where missing. base: a public image to
    start from instead of the harness's own Debian one (HARNESS_DOCKER_BASE does the same)."""
    lock_path = cache_dir() / "docker" / ".lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:  # two runs building at once: the second waits, then finds the tags
        fcntl.flock(lock, fcntl.LOCK_EX)
        base = base or os.environ.get("HARNESS_DOCKER_BASE") or ensure_base(client, progress=progress)
        kafka = {}
        for v in versions:
            tag = ensure_kafka(client, v, base=base, progress=progress)
            kafka[v] = kafka[tag.split(":")[1].rsplit("-", 1)[0]] = tag
        return Images(kafka=kafka, toxiproxy=ensure_toxiproxy(client, base=base, progress=progress))
