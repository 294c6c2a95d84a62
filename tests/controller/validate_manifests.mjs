// Validates orca's Kubernetes manifests with the official schemas.
//
//   node tests/controller/validate_manifests.mjs DIR
//
// DIR (written by schema_test.cc) holds crd.json, examples/*.json (InferenceDeployments),
// invalid/*.json (InferenceDeployments that must fail the CRD schema), rendered/*.json
// (arrays of objects from `orca-controller render`) and docs/*.json (arrays of the
// objects of the YAML examples in docs/). Checks:
//   - the CRD is a valid apiextensions.k8s.io/v1 CustomResourceDefinition (kubernetes-models);
//   - every example validates against the CRD's own openAPIV3Schema (ajv, after converting
//     the structural schema), and its defaulted form is written to defaulted/*.json;
//   - every invalid example is rejected;
//   - every rendered object validates against its kind's schema (kubernetes-models,
//     @kubernetes-models/keda for ScaledObjects, INFERENCE_POOL_V1 below for
//     InferencePools);
//   - every docs object validates likewise (@kubernetes-models/gateway-api for Gateways
//     and HTTPRoutes; InferenceDeployments against the CRD), and every HTTPRoute
//     backendRef to an InferencePool names one that the docs define.
// Exits 1 with one line per problem.
import fs from "node:fs";
import path from "node:path";
import Ajv from "ajv";
import addFormats from "ajv-formats";

const dir = process.argv[2];
const problems = [];
const read = (p) => JSON.parse(fs.readFileSync(p, "utf8"));
const list = (sub) =>
  fs.existsSync(path.join(dir, sub))
    ? fs.readdirSync(path.join(dir, sub)).filter((f) => f.endsWith(".json")).sort()
    : [];

// InferencePool inference.networking.k8s.io/v1 as JSON Schema, written from the Gateway
// API Inference Extension's v1 API reference: kubernetes-sigs/gateway-api-inference-extension
// api/v1/inferencepool_types.go and api/v1/shared_types.go (the kubebuilder markers:
// required fields, MinItems/MaxItems, Enum, Minimum/Maximum, Pattern, MaxLength), and its
// two CEL rules (XValidation), checked in inferencePoolRules(). No npm package ships this
// CRD's schema. Stricter than the CRD in one place: label keys are checked as Kubernetes
// qualified names (LabelKey's intent; a CRD cannot validate map keys). Required
// endpointPickerRef as in v1.0 (optional at the API level from v1.5, still required by
// most implementations).
const PORT_NUMBER = { type: "integer", minimum: 1, maximum: 65535 };
const PORT = { type: "object", additionalProperties: false, required: ["number"], properties: { number: PORT_NUMBER } };
const DNS_SUBDOMAIN = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const INFERENCE_POOL_V1 = {
  type: "object",
  required: ["apiVersion", "kind", "metadata", "spec"],
  properties: {
    apiVersion: { const: "inference.networking.k8s.io/v1" },
    kind: { const: "InferencePool" },
    metadata: { type: "object", required: ["name"], properties: { name: { type: "string", minLength: 1 } } },
    spec: {
      type: "object",
      additionalProperties: false,
      required: ["selector", "targetPorts", "endpointPickerRef"],
      properties: {
        selector: {
          type: "object",
          additionalProperties: false,
          required: ["matchLabels"],
          properties: {
            matchLabels: {
              type: "object",
              minProperties: 1,
              maxProperties: 64,
              propertyNames: {
                maxLength: 253,
                pattern: `^(${DNS_SUBDOMAIN}/)?([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$`,
              },
              additionalProperties: { type: "string", maxLength: 63, pattern: "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$" },
            },
          },
        },
        targetPorts: { type: "array", minItems: 1, maxItems: 8, items: PORT },
        appProtocol: { enum: ["http", "kubernetes.io/h2c"] },
        endpointPickerRef: {
          type: "object",
          additionalProperties: false,
          required: ["name"],
          properties: {
            group: { type: "string", maxLength: 253, pattern: `^$|^${DNS_SUBDOMAIN}$` },
            kind: { type: "string", minLength: 1, maxLength: 63, pattern: "^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$" },
            name: { type: "string", minLength: 1, maxLength: 253 },
            port: PORT,
            failureMode: { enum: ["FailOpen", "FailClose"] },
          },
        },
      },
    },
    status: { type: "object" },
  },
};

// The CEL rules of the v1 CRD (XValidation markers of inferencepool_types.go).
function inferencePoolRules(obj) {
  const errors = [];
  const ref = obj.spec?.endpointPickerRef;
  if (ref && (ref.kind ?? "Service") === "Service" && ref.port === undefined) {
    errors.push("spec.endpointPickerRef: port is required when kind is 'Service' or unspecified (defaults to 'Service')");
  }
  const ports = (obj.spec?.targetPorts ?? []).map((p) => p.number);
  if (new Set(ports).size !== ports.length) errors.push("spec.targetPorts: port number must be unique");
  return errors;
}

const ajvPool = new Ajv({ allErrors: true, strict: false });
const validatePool = ajvPool.compile(INFERENCE_POOL_V1);
class InferencePoolModel {
  constructor(obj) { this.obj = obj; }
  validate() {
    const errors = validatePool(this.obj) ? [] : [ajvPool.errorsText(validatePool.errors)];
    errors.push(...inferencePoolRules(this.obj));
    if (errors.length > 0) throw new Error(errors.join("; "));
  }
}

let validateCr = null;  // the CRD's schema, set once crd.json is read
class InferenceDeploymentModel {
  constructor(obj) { this.obj = obj; }
  validate() {
    if (!validateCr(structuredClone(this.obj))) throw new Error(ajv.errorsText(validateCr.errors));
  }
}

async function modelFor(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "keda.sh") {
    return (await import(`@kubernetes-models/keda/keda.sh/${version}/${kind}`))[kind];
  }
  if (group === "gateway.networking.k8s.io") {
    return (await import(`@kubernetes-models/gateway-api/${group}/${version}/${kind}`))[kind];
  }
  if (apiVersion === "inference.networking.k8s.io/v1" && kind === "InferencePool") {
    return InferencePoolModel;
  }
  if (apiVersion === "serving.orca.dev/v1alpha1" && kind === "InferenceDeployment") {
    return InferenceDeploymentModel;
  }
  const prefix = group ? `${group}/${version}` : version;
  return (await import(`kubernetes-models/${prefix}/${kind}`))[kind];
}

async function validateObject(obj, where) {
  let Model;
  try {
    Model = await modelFor(obj.apiVersion, obj.kind);
  } catch (e) {
    problems.push(`${where}: no schema for ${obj.apiVersion} ${obj.kind}: ${e.message}`);
    return;
  }
  try {
    new Model(obj).validate();
  } catch (e) {
    problems.push(`${where}: ${obj.kind} ${obj.metadata?.name}: ${e.message}`);
  }
}

// Structural schema -> JSON Schema: drop x-kubernetes-* and close objects that list
// their properties (the API server prunes unknown fields; here they are typos).
function toJsonSchema(s) {
  if (Array.isArray(s)) return s.map(toJsonSchema);
  if (s === null || typeof s !== "object") return s;
  const out = {};
  for (const [k, v] of Object.entries(s)) {
    if (k.startsWith("x-kubernetes-")) continue;
    out[k] = k === "properties" ? Object.fromEntries(Object.entries(v).map(([p, ps]) => [p, toJsonSchema(ps)])) : toJsonSchema(v);
  }
  if (s.type === "object" && s.properties && !s["x-kubernetes-preserve-unknown-fields"] && s.additionalProperties === undefined) {
    out.additionalProperties = false;
  }
  return out;
}

const crd = read(path.join(dir, "crd.json"));
await validateObject(crd, "crd");
const version = crd.spec.versions.find((v) => v.name === "v1alpha1");
const schema = toJsonSchema(version.schema.openAPIV3Schema);
schema.properties.metadata = { type: "object" };
const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false });
addFormats(ajv);
ajv.addFormat("int32", true);
ajv.addFormat("int64", true);
const validate = ajv.compile(schema);
validateCr = validate;

// Sanity: the validators are live (a broken object must fail).
try {
  const Pod = await modelFor("v1", "Pod");
  new Pod({ metadata: { name: "x" }, spec: { containers: [{ name: "c", ports: [{ containerPort: "x" }] }] } }).validate();
  problems.push("sanity: kubernetes-models accepted a Pod with a string containerPort");
} catch (e) { /* expected */ }
for (const [bad, why] of [
  [{ targetPortNumber: 8000, selector: { app: "x" }, extensionRef: { name: "e" } }, "a v1alpha2 spec"],
  [{ selector: { matchLabels: { app: "x" } }, targetPorts: [{ number: 8000 }], endpointPickerRef: { name: "e" } }, "an endpointPickerRef without port"],
  [{ selector: { matchLabels: { app: "x" } }, targetPorts: [{ number: 8000 }, { number: 8000 }], endpointPickerRef: { name: "e", port: { number: 9002 } } }, "duplicate targetPorts"],
]) {
  try {
    new InferencePoolModel({ apiVersion: "inference.networking.k8s.io/v1", kind: "InferencePool", metadata: { name: "p" }, spec: bad }).validate();
    problems.push(`sanity: the InferencePool schema accepted ${why}`);
  } catch (e) { /* expected */ }
}

fs.mkdirSync(path.join(dir, "defaulted"), { recursive: true });
let checked = 0;
for (const f of list("examples")) {
  const cr = read(path.join(dir, "examples", f));
  const copy = structuredClone(cr);
  if (!validate(copy)) {
    problems.push(`examples/${f}: ${ajv.errorsText(validate.errors)}`);
  }
  fs.writeFileSync(path.join(dir, "defaulted", f), JSON.stringify(copy, null, 2));
  checked++;
}
for (const f of list("invalid")) {
  const cr = read(path.join(dir, "invalid", f));
  if (validate(cr)) problems.push(`invalid/${f}: accepted by the CRD schema, expected a rejection`);
  checked++;
}
for (const f of list("rendered")) {
  const objects = read(path.join(dir, "rendered", f));
  for (const obj of objects) {
    await validateObject(obj, `rendered/${f}`);
    checked++;
  }
}
// The docs' YAML examples: every object validates, and HTTPRoutes reference InferencePools
// that the same page defines.
for (const f of list("docs")) {
  const objects = read(path.join(dir, "docs", f));
  const pools = new Set(objects.filter((o) => o.kind === "InferencePool" || o.kind === "InferenceDeployment").map((o) => o.metadata.name));
  for (const obj of objects) {
    await validateObject(obj, `docs/${f}`);
    checked++;
    if (obj.kind !== "HTTPRoute") continue;
    for (const rule of obj.spec?.rules ?? []) {
      for (const ref of rule.backendRefs ?? []) {
        if (ref.kind !== "InferencePool") continue;
        if (ref.group !== "inference.networking.k8s.io") {
          problems.push(`docs/${f}: HTTPRoute ${obj.metadata.name}: an InferencePool backendRef needs group inference.networking.k8s.io`);
        }
        if (!pools.has(ref.name)) {
          problems.push(`docs/${f}: HTTPRoute ${obj.metadata.name}: no InferencePool (or InferenceDeployment rendering one) named ${ref.name}`);
        }
      }
    }
  }
}
for (const p of problems) console.log(p);
console.log(`${checked} documents checked, ${problems.length} problems`);
process.exit(problems.length === 0 ? 0 : 1);
