"""The Kubernetes Indexed Job of docker/k8s: its pods run shard K of N of one night with options the CLI takes."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from harness.cli import _parser
from harness.drive.nightly import parse_shard

MANIFEST = Path(__file__).resolve().parents[2] / "docker" / "k8s" / "nightly-indexed-job.yaml"


def pod_args(job: dict, index: int) -> list[str]:
    """The harness arguments pod `index` runs: the shell line with the pod's environment filled in."""
    c = job["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in c["env"]} | {"JOB_COMPLETION_INDEX": str(index)}
    line = re.sub(r"\$\(\(JOB_COMPLETION_INDEX \+ 1\)\)", str(index + 1), c["args"][0])
    line = re.sub(r"\$(\w+)", lambda m: env[m.group(1)], line)
    words = shlex.split(line)
    assert words[:2] == ["exec", "harness"]
    return words[2:]


def test_every_pod_runs_its_own_shard_of_one_night():
    docs = list(yaml.safe_load_all(MANIFEST.read_text()))
    job = next(d for d in docs if d["kind"] == "Job")
    spec = job["spec"]
    n = spec["completions"]
    assert spec["completionMode"] == "Indexed" and spec["parallelism"] == n
    parsed = [_parser().parse_args(pod_args(job, i)) for i in range(n)]
    assert [parse_shard(a.shard) for a in parsed] == [(k, n) for k in range(1, n + 1)]
    assert len({(a.seed, a.runs, a.budget, a.runs_root) for a in parsed}) == 1 and parsed[0].seed is not None
    # a shard whose night found a failure exits 1: its index fails alone, the others run on (a Job-wide
    # backoffLimit of 0 would fail the Job at the first such pod and terminate the shards still running)
    assert spec["backoffLimitPerIndex"] == 0 and "backoffLimit" not in spec and "maxFailedIndexes" not in spec
    claim = spec["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]
    pvc = next(d for d in docs if d["kind"] == "PersistentVolumeClaim")
    assert pvc["metadata"]["name"] == claim and pvc["spec"]["accessModes"] == ["ReadWriteMany"]
