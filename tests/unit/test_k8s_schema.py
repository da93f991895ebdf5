"""docker/k8s/nightly-indexed-job.yaml against the Kubernetes schema, with a schema validator and no cluster.

The schemas are Kubernetes 1.37's strict JSON schemas (no field a type does not have), vendored under fixtures/k8s/
from the `kubernetes-validate` package (fixtures/k8s/README.md: origin, version, how to refresh), validated with
jsonschema (Draft 2020-12). Kubernetes' published schema has no enum for `completionMode`, `restartPolicy` or
`accessModes` and makes a container's image optional: those are checks in kube-apiserver's validation code, written
down for this manifest's fields in fixtures/k8s/apiserver-rules.schema.json and applied on top. Every broken variant
below must fail, at its field, and the real manifest must pass both.
"""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "docker" / "k8s" / "nightly-indexed-job.yaml"
SCHEMAS = ROOT / "fixtures" / "k8s"
KIND_FILES = {("batch/v1", "Job"): "job-batch-v1.json", ("v1", "PersistentVolumeClaim"): "persistentvolumeclaim-v1.json"}


def _load(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text())


REGISTRY = Resource.from_contents(_load("_definitions.json")) @ Registry()
RULES = _load("apiserver-rules.schema.json")


def kubernetes_errors(doc: dict) -> list[str]:
    """Where `doc` breaks Kubernetes' own schema for its apiVersion and kind ('path: message' each)."""
    name = KIND_FILES.get((doc.get("apiVersion"), doc.get("kind")))
    if name is None:
        return [f"no schema for apiVersion {doc.get('apiVersion')!r} kind {doc.get('kind')!r}"]
    v = jsonschema.Draft202012Validator(_load(name), registry=REGISTRY)
    return [f"{e.json_path}: {e.message}" for e in v.iter_errors(doc)]


def apiserver_errors(doc: dict) -> list[str]:
    """Where `doc` breaks the apiserver's rules the schema leaves out (fixtures/k8s/apiserver-rules.schema.json)."""
    schema = {**RULES, "$ref": f"#/$defs/{doc.get('kind')}"}
    return [f"{e.json_path}: {e.message}" for e in jsonschema.Draft202012Validator(schema).iter_errors(doc)]


def errors(doc: dict) -> list[str]:
    return kubernetes_errors(doc) + apiserver_errors(doc)


def manifest() -> list[dict]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


def _job(docs):
    return next(d for d in docs if d["kind"] == "Job")


def _container(docs):
    return _job(docs)["spec"]["template"]["spec"]["containers"][0]


def test_the_schemas_are_the_vendored_kubernetes_ones():
    assert _load("job-batch-v1.json")["$id"] == "https://kubernetes.io/api/job/batch/v1"
    assert _load("job-batch-v1.json")["additionalProperties"] is False  # strict: an unknown field is an error
    assert "io.k8s.api.core.v1.PodSpec" in _load("_definitions.json")["$defs"]


def test_the_real_manifest_validates():
    docs = manifest()
    assert {(d["apiVersion"], d["kind"]) for d in docs} == set(KIND_FILES)
    for doc in docs:
        assert errors(doc) == [], doc["kind"]


def _sideways(docs):
    _job(docs)["spec"]["completionMode"] = "Sideways"


def _no_image(docs):
    del _container(docs)["image"]


def _typo(docs):
    _job(docs)["spec"]["completion"] = _job(docs)["spec"].pop("completions")


def _words_for_a_number(docs):
    _job(docs)["spec"]["parallelism"] = "four"


def _nameless_container(docs):
    del _container(docs)["name"]


def _always_restart(docs):
    _job(docs)["spec"]["template"]["spec"]["restartPolicy"] = "Always"


def _per_index_backoff_without_index(docs):
    _job(docs)["spec"]["completionMode"] = "NonIndexed"


def _per_index_backoff_restarting(docs):
    _job(docs)["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"


def _no_template(docs):
    del _job(docs)["spec"]["template"]


def _env_without_name(docs):
    _container(docs)["env"].append({"value": "x"})


def _bad_access_mode(docs):
    next(d for d in docs if d["kind"] == "PersistentVolumeClaim")["spec"]["accessModes"] = ["ReadWriteSometimes"]


def _wrong_api_version(docs):
    _job(docs)["apiVersion"] = "batch/v2"


BROKEN = {  # how it is broken -> (what breaks it, where the error must point)
    "completionMode: Sideways": (_sideways, "$.spec.completionMode"),
    "a container without image": (_no_image, "$.spec.template.spec.containers[0]"),
    "completion (a typo for completions)": (_typo, "$.spec"),
    "parallelism: four": (_words_for_a_number, "$.spec.parallelism"),
    "a container without name": (_nameless_container, "$.spec.template.spec.containers[0]"),
    "restartPolicy: Always in a Job": (_always_restart, "$.spec.template.spec.restartPolicy"),
    "backoffLimitPerIndex on a NonIndexed Job": (_per_index_backoff_without_index, "$.spec.completionMode"),
    "backoffLimitPerIndex with restartPolicy OnFailure": (_per_index_backoff_restarting,
                                                          "$.spec.template.spec.restartPolicy"),
    "a Job without template": (_no_template, "$.spec"),
    "an env entry without name": (_env_without_name, "$.spec.template.spec.containers[0].env[4]"),
    "accessModes: ReadWriteSometimes": (_bad_access_mode, "$.spec.accessModes[0]"),
    "apiVersion batch/v2": (_wrong_api_version, "no schema for apiVersion 'batch/v2' kind 'Job'"),
}


@pytest.mark.parametrize("how", list(BROKEN))
def test_a_broken_manifest_fails_at_its_field(how):
    breaks, where = BROKEN[how]
    docs = manifest()
    breaks(docs)
    found = [e for d in docs for e in errors(d)]
    assert found, f"{how}: validated"
    assert where in {e.split(": ", 1)[0] for e in found}, found


def test_what_the_kubernetes_schema_leaves_to_the_apiserver_is_caught_by_the_rules():
    """What the published schema lets through (no enum, image optional, no rule between fields): only the rules
    catch it, so the rules file is needed and is what fails it."""
    for breaks in (_sideways, _no_image, _always_restart, _bad_access_mode, _per_index_backoff_without_index,
                   _per_index_backoff_restarting):
        docs = manifest()
        breaks(docs)
        assert not [e for d in docs for e in kubernetes_errors(d)], breaks.__name__
        assert [e for d in docs for e in apiserver_errors(d)], breaks.__name__

