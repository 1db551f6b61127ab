"""Validates Kubernetes manifests against the Kubernetes schemas.

    python validate_k8s.py FILE.yaml...

Built-in kinds (Deployment, Service, ...) are checked with
kubernetes-validate's strict schemas (unknown fields are errors) for every
Kubernetes version in VERSIONS. agent-sandbox's SandboxTemplate and
SandboxWarmPool are checked against their CRD's openAPIV3Schema
(agent-sandbox-crds.json beside this file: kubernetes-sigs/agent-sandbox,
k8s/crds at commit 2fd412d55ecae90861a101a5424a75473de97c36, Apache-2.0,
version v1beta1), with a field the schema does not know counted as an error
(the API server would drop it silently); the pod template inside a
SandboxTemplate is checked as a core Pod spec, and its volume claim
templates as PersistentVolumeClaims.

Prints one JSON object: {"checked": [...], "errors": [...]}; exits 1 when
there are errors.
"""

import json
import pathlib
import sys

import jsonschema
import kubernetes_validate
import yaml

VERSIONS = ["1.31.0", "1.37.0"]
CRDS = json.loads((pathlib.Path(__file__).parent / "agent-sandbox-crds.json").read_text())


def unknown_fields(value, schema, path):
    """Fields of `value` that `schema` has no place for (structural pruning)."""
    out = []
    if isinstance(value, dict) and schema.get("type") == "object":
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields")
        for k, v in value.items():
            if props is not None and k in props:
                out += unknown_fields(v, props[k], f"{path}.{k}")
            elif isinstance(extra, dict):
                out += unknown_fields(v, extra, f"{path}.{k}")
            elif props is not None and not preserve and path != "$.metadata":
                out.append(f"{path}.{k}: unknown field")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(value):
            out += unknown_fields(v, schema["items"], f"{path}[{i}]")
    return out


def core(doc, where, errors):
    for version in VERSIONS:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            errors.append(f"{where} (Kubernetes {version}): {e.message} at {list(e.path)}")
        except kubernetes_validate.SchemaNotFoundError as e:
            errors.append(f"{where}: no schema: {e}")


def custom(doc, where, errors):
    crd = CRDS[doc["kind"]]
    want = f"{crd['group']}/{crd['version']}"
    if doc.get("apiVersion") != want:
        errors.append(f"{where}: apiVersion {doc.get('apiVersion')!r}, expected {want!r}")
    for e in jsonschema.Draft7Validator(crd["schema"]).iter_errors(doc):
        errors.append(f"{where}: {e.message} at {list(e.path)}")
    errors += [f"{where}: {u}" for u in unknown_fields(doc, crd["schema"], "$")]
    if doc["kind"] == "SandboxTemplate":
        spec = doc.get("spec", {})
        pod = spec.get("podTemplate", {})
        core(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "template", **pod.get("metadata", {})}, "spec": pod.get("spec", {})},
            f"{where} podTemplate",
            errors,
        )
        for i, claim in enumerate(spec.get("volumeClaimTemplates", [])):
            core({"apiVersion": "v1", "kind": "PersistentVolumeClaim", **claim}, f"{where} volumeClaimTemplates[{i}]", errors)


def main(files):
    checked, errors = [], []
    for name in files:
        for n, doc in enumerate(yaml.safe_load_all(pathlib.Path(name).read_text())):
            if doc is None:
                continue
            where = f"{name}#{n} {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
            checked.append(where)
            if doc.get("kind") in CRDS:
                custom(doc, where, errors)
            else:
                core(doc, where, errors)
    print(json.dumps({"checked": checked, "errors": errors}))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
