// Helpers of the chart tests: run helm, parse its YAML output, validate objects with
// the official schemas (kubernetes-models, @kubernetes-models/prometheus-operator,
// @kubernetes-models/keda). tests/helm/run.sh checks the tools exist before any test.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Ajv from "ajv";

export const ROOT = process.env.ORCA_SOURCE_DIR ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const CHART = path.join(ROOT, "helm/orca");
export const ALL_OPTIONS = path.join(ROOT, "tests/helm/values/all-options.yaml");
export const HELM = process.env.ORCA_HELM ?? path.join(ROOT, ".cache/bin/helm");
// The Kubernetes version the chart is rendered for (Chart.yaml kubeVersion >= 1.28).
export const KUBE_VERSION = "1.30.0";

// Runs helm; returns {code, stdout, stderr}.
export function helm(args) {
  const r = spawnSync(HELM, args, { encoding: "utf8", cwd: ROOT, maxBuffer: 64 << 20 });
  if (r.error) throw r.error;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

// Returns the documents of a YAML stream as JSON values (PyYAML, safe loader; the
// chart's output must be plain YAML), dropping empty documents.
export function parseYamlStream(text) {
  const py = "import sys, json, yaml\n" +
    "json.dump([d for d in yaml.safe_load_all(sys.stdin) if d is not None], sys.stdout)";
  const r = spawnSync("python3", ["-c", py], { input: text, encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`YAML parse failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

export function readYaml(file) {
  return parseYamlStream(fs.readFileSync(file, "utf8"));
}

// Renders the chart (release "orca" in namespace "orca-system"); returns the objects,
// hooks included. Throws with helm's message when rendering fails.
export function render({ values = [], set = [], namespace = "orca-system", release = "orca" } = {}) {
  const args = ["template", release, CHART, "--namespace", namespace, "--kube-version", KUBE_VERSION];
  for (const v of values) args.push("-f", v);
  for (const s of set) args.push("--set", s);
  const r = helm(args);
  if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  return parseYamlStream(r.stdout);
}

export const find = (objects, kind, name) =>
  objects.find((o) => o.kind === kind && (name === undefined || o.metadata?.name === name));
export const findAll = (objects, kind) => objects.filter((o) => o.kind === kind);

async function modelFor(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "keda.sh") return (await import(`@kubernetes-models/keda/keda.sh/${version}/${kind}`))[kind];
  if (group === "monitoring.coreos.com") {
    return (await import(`@kubernetes-models/prometheus-operator/monitoring.coreos.com/${version}/${kind}`))[kind];
  }
  return (await import(`kubernetes-models/${group ? `${group}/${version}` : version}/${kind}`))[kind];
}

// Validates one object against its kind's official schema; returns an error message
// or null. A kind without a schema is an error.
export async function validateObject(obj) {
  let Model;
  try {
    Model = await modelFor(obj.apiVersion, obj.kind);
  } catch (e) {
    return `no schema for ${obj.apiVersion} ${obj.kind}`;
  }
  if (typeof Model !== "function") return `no schema for ${obj.apiVersion} ${obj.kind}`;
  try {
    new Model(obj).validate();
    return null;
  } catch (e) {
    return `${obj.kind} ${obj.metadata?.name}: ${e.message}`;
  }
}

// Structural schema -> JSON schema: drops x-kubernetes-*, closes objects that list
// their properties (the API server would prune unknown fields; here they are typos).
function toJsonSchema(s) {
  if (Array.isArray(s)) return s.map(toJsonSchema);
  if (s === null || typeof s !== "object") return s;
  const out = {};
  for (const [k, v] of Object.entries(s)) {
    if (k.startsWith("x-kubernetes-")) continue;
    out[k] = k === "properties"
      ? Object.fromEntries(Object.entries(v).map(([p, ps]) => [p, toJsonSchema(ps)]))
      : toJsonSchema(v);
  }
  if (s.type === "object" && s.properties && !s["x-kubernetes-preserve-unknown-fields"] &&
      s.additionalProperties === undefined) {
    out.additionalProperties = false;
  }
  return out;
}

// Returns a function that validates an InferenceDeployment against the openAPIV3Schema
// of crds/ (returns an error message or null).
export function inferenceDeploymentValidator() {
  const [crd] = readYaml(path.join(ROOT, "crds/inferencedeployments.serving.orca.dev.yaml"));
  const version = crd.spec.versions.find((v) => v.storage);
  const schema = toJsonSchema(version.schema.openAPIV3Schema);
  schema.properties.metadata = { type: "object" };
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addFormat("int32", true);
  ajv.addFormat("int64", true);
  const validate = ajv.compile(schema);
  return (obj) => (validate(structuredClone(obj)) ? null : ajv.errorsText(validate.errors));
}
