#!/usr/bin/env python3
"""Copies the InferenceDeployment CRD from crds/ into the chart and its spec schema
into values.schema.json (definitions.inferenceDeploymentSpec, used by example.spec).

  helm/sync-crds.py          write the chart's copies
  helm/sync-crds.py --check  exit 1, naming the stale files, if they differ from crds/

Helm can read only files inside the chart, so the chart carries a copy of crds/;
tests/helm/chart.test.mjs runs --check so the two cannot drift. Run this after every
change to crds/*.yaml.
"""
import json
import pathlib
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
CRDS = ROOT / "crds"
CHART = ROOT / "helm" / "orca"
CHART_CRDS = CHART / "files" / "crds"
SCHEMA = CHART / "values.schema.json"
SPEC_DEF = "inferenceDeploymentSpec"


def to_json_schema(node):
    """Structural schema -> JSON schema: drops x-kubernetes-*, descriptions and defaults,
    and closes objects that list their properties (the API server would prune unknown
    fields; in values they are typos)."""
    if isinstance(node, list):
        return [to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key.startswith("x-kubernetes-") or key in ("description", "default"):
            continue
        if key == "properties":
            out[key] = {name: to_json_schema(sub) for name, sub in value.items()}
        else:
            out[key] = to_json_schema(value)
    if (node.get("type") == "object" and "properties" in node
            and not node.get("x-kubernetes-preserve-unknown-fields")
            and "additionalProperties" not in node):
        out["additionalProperties"] = False
    return out


def wanted_files():
    files = {}
    for src in sorted(CRDS.glob("*.yaml")):
        files[CHART_CRDS / src.name] = src.read_text()
    crd = yaml.safe_load((CRDS / "inferencedeployments.serving.orca.dev.yaml").read_text())
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    spec_schema = to_json_schema(version["schema"]["openAPIV3Schema"]["properties"]["spec"])
    schema = json.loads(SCHEMA.read_text())
    schema.setdefault("definitions", {})[SPEC_DEF] = spec_schema
    files[SCHEMA] = json.dumps(schema, indent=2) + "\n"
    return files


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    files = wanted_files()
    extra = [p for p in CHART_CRDS.glob("*.yaml") if p not in files] if CHART_CRDS.exists() else []
    for path, text in files.items():
        if not path.exists() or path.read_text() != text:
            stale.append(path)
            if not check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    for path in extra:
        stale.append(path)
        if not check:
            path.unlink()
    for path in stale:
        print(f"{'stale' if check else 'updated'}: {path.relative_to(ROOT)}")
    if check and stale:
        print("run helm/sync-crds.py to copy crds/ into the chart")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
